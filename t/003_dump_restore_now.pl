# Copyright (c) 2026, pg_warmcache developers
#
# warmcache_dump_now() and warmcache_restore_now() in each mode, with
# pg_buffercache as the oracle.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  wait_for_restore_line relation_blocks);

my $node = start_node(
	'now', q{
shared_buffers = 128MB
autovacuum = off
});
create_extensions($node);
$node->safe_psql(
	'postgres', q{
CREATE TABLE t (id int PRIMARY KEY, filler text);
INSERT INTO t SELECT g, repeat('x', 150) FROM generate_series(1, 100000) g;
VACUUM ANALYZE t;
SELECT warm_table('t');
});
my $t_blocks = relation_blocks($node, 't');
my $i_blocks = relation_blocks($node, 't_pkey');
note "t: $t_blocks blocks, t_pkey: $i_blocks blocks";

# Cached blocks of the main forks of t and its index.
my $t_cached_sql = q{
SELECT count(*) FROM pg_buffercache
 WHERE relfilenode IN (pg_relation_filenode('t'), pg_relation_filenode('t_pkey'))
   AND relforknumber = 0
   AND reldatabase = (SELECT oid FROM pg_database
                       WHERE datname = current_database())};
is($node->safe_psql('postgres', $t_cached_sql),
	$t_blocks + $i_blocks, 't and its index are cached');

# The blocks of the file, of this database and the shared catalogs, that are
# in shared buffers, and all of them.
my $file_vs_cache_sql = q{
WITH f AS (
  SELECT database, tablespace, relfilenode,
         CASE fork WHEN 'main' THEN 0 WHEN 'fsm' THEN 1
                   WHEN 'vm' THEN 2 WHEN 'init' THEN 3 END AS forknum,
         block
    FROM warmcache_blocks()
   WHERE database IN (0, (SELECT oid FROM pg_database
                           WHERE datname = current_database())))
SELECT count(b.relblocknumber), count(*)
  FROM f LEFT JOIN pg_buffercache b
    ON b.reldatabase = f.database AND b.reltablespace = f.tablespace
   AND b.relfilenode = f.relfilenode AND b.relforknumber = f.forknum
   AND b.relblocknumber = f.block};

# Ask for a restore, check what it returns, wait for it to end; returns the
# log line that ends it.
sub restore_now
{
	my ($node, $mode, $expect, $what) = @_;
	my $start = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	my $offset = -s $node->logfile;
	my $arg = defined $mode ? "'$mode'" : '';
	is($node->safe_psql('postgres', "SELECT warmcache_restore_now($arg)"),
		$expect, "$what: warmcache_restore_now() returns the file's block count");
	ok( $node->poll_query_until(
			'postgres', qq{
SELECT state = 'idle' AND restore_finished_at IS NOT NULL
       AND restore_started_at >= '$start'
  FROM warmcache_status()}),
		"$what: the restore finished");
	return wait_for_restore_line($node, $offset);
}

# warmcache_dump_now() returns what the file then holds.
my $n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok($n, '>=', $t_blocks + $i_blocks, "warmcache_dump_now() dumped $n blocks");
is($node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()'),
	$n, 'warmcache_blocks() shows as many blocks');
is(status($node, 'last_dump_blocks'), $n, 'status: last_dump_blocks');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE relfilenode IN (pg_relation_filenode('t'), pg_relation_filenode('t_pkey'))
   AND fork = 'main'}),
	$t_blocks + $i_blocks,
	'the file holds the main forks of t and its index');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (SELECT DISTINCT database, tablespace, relfilenode,
                             fork, block
                        FROM warmcache_blocks()) d}),
	$n, 'no block is in the file twice');
my ($in_cache, $in_file) = split /\|/,
  $node->safe_psql('postgres', $file_vs_cache_sql);
is($in_cache, $in_file, 'every block of the file is in shared buffers');

# Mode buffer (the default of restore_mode).
restart_cold($node);
is($node->safe_psql('postgres', $t_cached_sql), 0, 'evicted: t is not cached');
my $file_n = $node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()');
my $line = restore_now($node, undef, $file_n, 'buffer');
is( status(
		$node,
		'restore_mode, restore_blocks_total, restore_blocks_done, '
		  . 'restore_blocks_skipped, restore_blocks_os_only, restore_incomplete'),
	"buffer|$file_n|$file_n|0|0|f",
	'buffer: status counts every block done, none skipped');
like($line, qr/restored $file_n of $file_n blocks \(0 into the OS cache only\), skipped 0/,
	'buffer: the log line counts every block');
is($node->safe_psql('postgres', $t_cached_sql),
	$t_blocks + $i_blocks, 'buffer: t and its index are cached again');
($in_cache, $in_file) = split /\|/,
  $node->safe_psql('postgres', $file_vs_cache_sql);
cmp_ok($in_cache, '>=', 0.99 * $in_file,
	"buffer: $in_cache of the file's $in_file blocks are cached");

# Modes read and prefetch warm the OS cache: shared buffers stay empty.
restart_cold($node);
is($node->safe_psql('postgres', $t_cached_sql), 0, 'evicted: t is not cached');
$file_n = $node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()');
cmp_ok($file_n, '>=', $t_blocks + $i_blocks,
	'the shutdown dump holds what the restore brought back');
for my $mode ('read', 'prefetch')
{
	$line = restore_now($node, $mode, $file_n, $mode);
	is( status(
			$node,
			'restore_mode, restore_blocks_total, restore_blocks_done, '
			  . 'restore_blocks_skipped, restore_blocks_os_only, restore_incomplete'),
		"$mode|$file_n|$file_n|0|$file_n|f",
		"$mode: status counts every block done, all into the OS cache only");
	like($line,
		qr/restored $file_n of $file_n blocks \($file_n into the OS cache only\), skipped 0/,
		"$mode: the log line counts every block");
	is($node->safe_psql('postgres', $t_cached_sql),
		0, "$mode: t is not in shared buffers");
}

$node->stop;
done_testing();
