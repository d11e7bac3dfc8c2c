# Copyright (c) 2026, pg_warmcache developers
#
# Restart fidelity: the blocks in shared buffers at a clean shutdown are in
# shared buffers again once the start-up restore has finished.
# pg_buffercache is the oracle.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions relation_blocks);

my $node = start_node(
	'restart', q{
shared_buffers = 128MB
autovacuum = off
});
create_extensions($node);

# test/run's io_uring pass runs this test once more with PGWC_IO_METHOD set
# and the setting in TEMP_CONFIG: the server must read with it.
if ($ENV{PGWC_IO_METHOD})
{
	is($node->safe_psql('postgres', 'SHOW io_method'),
		$ENV{PGWC_IO_METHOD}, "the server reads with io_method = $ENV{PGWC_IO_METHOD}");
}

# Some tens of MB: a table with two indexes, and an unlogged table (its blocks
# are dumped at a clean shutdown too).
$node->safe_psql(
	'postgres', q{
CREATE TABLE big (id int PRIMARY KEY, val text, filler text);
INSERT INTO big SELECT g, md5(g::text), repeat('x', 100)
  FROM generate_series(1, 150000) g;
CREATE INDEX big_val ON big (val);
CREATE UNLOGGED TABLE scratch (id int, filler text);
INSERT INTO scratch SELECT g, repeat('y', 200) FROM generate_series(1, 10000) g;
VACUUM ANALYZE big;
VACUUM ANALYZE scratch;
});
my $loaded = $node->safe_psql('postgres',
	"SELECT warm_table('big') + warm_table('scratch')");
cmp_ok($loaded, '>', 3000, "warm_table loaded the tables ($loaded blocks)");

# The blocks in shared buffers, as db/tablespace/relfilenode/fork/block, of
# this database and the shared catalogs.
sub cached_blocks
{
	my ($node) = @_;
	my $out = $node->safe_psql(
		'postgres', q{
SELECT concat_ws('/', reldatabase, reltablespace, relfilenode,
                 relforknumber, relblocknumber)
  FROM pg_buffercache
 WHERE relfilenode IS NOT NULL
   AND reldatabase IN (0, (SELECT oid FROM pg_database
                            WHERE datname = current_database()))});
	return { map { $_ => 1 } split /\n/, $out };
}

# Sanity: the tables are in shared buffers, whole.
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_buffercache
 WHERE relfilenode = pg_relation_filenode('big') AND relforknumber = 0}),
	relation_blocks($node, 'big'),
	'all of big is cached before shutdown');

my $before = cached_blocks($node);
my $nbefore = scalar keys %$before;
note "blocks cached before shutdown: $nbefore";

my $log_offset = -s $node->logfile;
$node->restart;

# The start-up restore runs by itself; wait for it to end.
ok( $node->poll_query_until(
		'postgres',
		'SELECT restore_finished_at IS NOT NULL FROM warmcache_status()'),
	'the start-up restore finished');
$node->wait_for_log(qr/restore of the saved set finished: restored \d+ of \d+ blocks/,
	$log_offset);
my $log = slurp_file($node->logfile, $log_offset);

like($log, qr/dumped \d+ blocks at shutdown/,
	'the shutdown dump was logged');
my ($dumped) = $log =~ /dumped (\d+) blocks at shutdown/;
my ($restored, $total, $os, $skipped) = $log =~
  /restore of the saved set finished: restored (\d+) of (\d+) blocks \((\d+) into the OS cache only\), skipped (\d+)/;
ok(defined $total, 'the restore logged its end');
is($total, $dumped, 'the restore read the file dumped at shutdown');
is($restored, $total, 'log: every block restored');
is($skipped, 0, 'log: no block skipped');
is($os, 0, 'log: nothing went to the OS cache only');
unlike($log, qr/restore of the saved set stopped/, 'the restore was not stopped');

# The status row says the same.
is( $node->safe_psql(
		'postgres', qq{
SELECT state, restore_mode, restore_blocks_total, restore_blocks_done,
       restore_blocks_skipped, restore_blocks_os_only, restore_incomplete,
       restore_finished_at >= restore_started_at,
       restore_seconds_left IS NULL
  FROM warmcache_status()}),
	"idle|buffer|$total|$total|0|0|f|t|t",
	'status: idle, every block done, none skipped');
is($node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()'),
	$total, 'the file holds the blocks the restore counted');

# Blocks cached before the shutdown, of relations that still exist.
my %rels;
for my $b (keys %$before)
{
	my ($db, $spc, $rfn) = split m{/}, $b;
	$rels{"$spc/$rfn"} = 1;
}
my $values = join(',',
	map { my ($s, $f) = split m{/}; "(${s}::oid, ${f}::oid)" } sort keys %rels);
my %exists = map { $_ => 1 } split /\n/,
  $node->safe_psql(
	'postgres', qq{
SELECT s || '/' || f FROM (VALUES $values) v(s, f)
 WHERE pg_filenode_relation(s, f) IS NOT NULL});
my @wanted = grep {
	my ($db, $spc, $rfn) = split m{/};
	$exists{"$spc/$rfn"}
} keys %$before;

my $after = cached_blocks($node);
my @back = grep { $after->{$_} } @wanted;
my @missing = grep { !$after->{$_} } @wanted;
note sprintf('%d of %d blocks cached before shutdown are cached again',
	scalar @back, scalar @wanted);
note 'missing, e.g.: ' . join(' ', (sort @missing)[ 0 .. ($#missing < 9 ? $#missing : 9) ])
  if @missing;
cmp_ok(scalar @wanted, '>=', 0.99 * $nbefore,
	'nearly all the cached relations still exist');
cmp_ok(scalar @back, '>=', 0.99 * scalar @wanted,
	'at least 99% of the blocks cached before shutdown are cached again');

# Every block of the big table and of its indexes in particular.
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE b.relblocknumber IS NULL)
  FROM (SELECT c.oid, c.relfilenode,
               pg_relation_size(c.oid) / current_setting('block_size')::int AS n
          FROM pg_class c
         WHERE c.relname IN ('big', 'big_pkey', 'big_val', 'scratch')) r
  CROSS JOIN LATERAL generate_series(0, r.n - 1) blk
  LEFT JOIN pg_buffercache b
    ON b.relfilenode = r.relfilenode AND b.relforknumber = 0
   AND b.relblocknumber = blk
   AND b.reldatabase = (SELECT oid FROM pg_database
                         WHERE datname = current_database())}),
	'0', 'the main forks of the tables and indexes are cached whole');

$node->stop;
done_testing();
