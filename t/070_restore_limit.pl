# Copyright (c) 2026, pg_warmcache developers
#
# pg_warmcache.restore_limit caps what a restore puts into shared buffers:
# the hottest blocks come first within it, and the rest of the buffer tier
# goes into the OS cache only (pg_warmcache.past_restore_limit = os_cache)
# or is left out (skip).  The oracles: pg_buffercache, for what is in
# shared buffers and at which usage count the dump found it, and util-linux
# fincore, for what the OS page cache holds.  The control, the same restore
# without a limit, brings both tables back whole into shared buffers, so an
# engine that did nothing, or capped nothing, fails one of the two.
# Advice is off (maintenance_io_concurrency = 0) but in the last case, so
# that the page cache holds only what the restore read, and what the kernel
# read ahead of it.  The restore sends the buffer tier to
# the OS cache only while this server's processes take every CPU; they stay
# on a CPU longer on a machine that other tests load: it runs alone.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Turnstile qw(:machine_alone);
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  wait_for_restore cached fill_table);
use WarmCache::DumpFormat qw(slurp_bin write_bin);
use WarmCache::PageCache qw(resident_blocks evict_files read_ahead_blocks);

my $node = start_node(
	'limit', q{
shared_buffers = 128MB
pg_warmcache.restore_workers = 2
maintenance_io_concurrency = 0
autovacuum = off
});
# From 18 on, reads go to I/O worker processes, each one more reader of a
# file for the kernel to read ahead of (below); synchronous reads leave the
# restore workers the only readers.
if ($node->safe_psql('postgres', 'SHOW server_version_num') >= 180000)
{
	$node->append_conf('postgresql.conf', 'io_method = sync');
	$node->restart;
}
create_extensions($node);
my $hot = fill_table($node, 'hot', 8);
my $cold = fill_table($node, 'cold', 48);
my %file = map {
	$_ => $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$_')")
} qw(hot cold);

# Filling the tables touched each page many times: from empty shared
# buffers, cold is read once (usage count 1) and hot six times (5).  So
# the saved set's ranks are hot's 5 and cold's 1.
restart_cold($node);
$node->safe_psql('postgres', "SELECT warm('cold')");
$node->safe_psql('postgres', "SELECT warm('hot')");
$node->safe_psql('postgres', 'SELECT count(*) FROM hot') for 1 .. 5;
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(c.relname || ':' || b.usagecount || ':' || b.n, ',' ORDER BY c.relname)
  FROM (SELECT relfilenode, usagecount, count(*) AS n FROM pg_buffercache
         WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND relforknumber = 0
         GROUP BY 1, 2) b
  JOIN pg_class c ON c.relfilenode = b.relfilenode
 WHERE c.relname IN ('hot', 'cold')}),
	"cold:1:$cold,hot:5:$hot",
	'before the dump, hot has usage count 5 and cold 1 (pg_buffercache)');
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my $saved_path = $node->data_dir . '/pg_warmcache.blocks';
my $saved = slurp_bin($saved_path);

# Start from the saved file above, both files out of the page cache and
# shared buffers empty, with the given settings; wait for the start-up
# restore.
sub restore_with
{
	my ($limit, $past) = @_;
	$node->stop;
	write_bin($saved_path, $saved);
	evict_files(values %file);
	$node->append_conf('postgresql.conf',
		"pg_warmcache.restore_limit = '$limit'\n"
		  . "pg_warmcache.past_restore_limit = $past\n");
	$node->start;
	wait_for_restore($node);
	return;
}

sub in_page_cache
{
	return resident_blocks($file{ $_[0] });
}

# The control: no limit, both come back whole.
restore_with('', 'os_cache');
is(cached($node, 'hot'), $hot, 'no limit: all of hot in shared buffers');
is(cached($node, 'cold'), $cold, 'no limit: all of cold in shared buffers');
is(status($node, 'restore_skipped_limit'), '0', 'no limit: nothing skipped for it');

# A limit of hot and a quarter of cold: hot first, then cold until the
# limit; each of the two workers may pass it by one chunk (32 blocks).  The
# saved catalogs' blocks count too, so less of cold fits than a quarter.
my $limit = $hot + int($cold / 4);
my $slack = 2 * 32;
restore_with($limit * 8 . 'kB', 'os_cache');
my $cold_in = cached($node, 'cold');
is(cached($node, 'hot'), $hot, 'limit, os_cache: all of hot, the hottest, in shared buffers');
cmp_ok($cold_in, '<=', $cold / 4 + $slack,
	'limit, os_cache: no more of cold than the limit leaves');
cmp_ok($cold_in, '>=', $cold / 8,
	'limit, os_cache: cold filled shared buffers up to the limit');
my $used = $node->safe_psql('postgres',
	'SELECT count(*) FROM pg_buffercache WHERE relfilenode IS NOT NULL');
cmp_ok($used, '<=', $limit + $slack + 400,
	"limit, os_cache: shared buffers hold $used blocks, about the limit of $limit");
cmp_ok(in_page_cache('cold'), '>=', 0.95 * $cold,
	'limit, os_cache: the rest of cold went into the page cache (fincore)');
cmp_ok(status($node, 'restore_blocks_os_only'), '>=', $cold - $cold_in - $slack,
	'limit, os_cache: the status counts the rest as into the OS cache only');
is(status($node, 'restore_incomplete'), 'f', 'limit, os_cache: the restore is complete');

# A share of shared_buffers: 5% of 16384 buffers is 820 blocks, less than
# hot; what fits is hot's, beside the hottest catalogs' blocks.
restore_with('5%', 'os_cache');
cmp_ok(cached($node, 'hot'), '<=', 820 + $slack, 'limit 5%: hot capped');
cmp_ok(cached($node, 'hot'), '>=', 300, 'limit 5%: hot filled the share');
is(cached($node, 'cold'), '0', 'limit 5%: nothing of cold, the coldest');

# skip: the rest is left out, neither read nor counted as gone; the restore
# is complete and the server warm.
restore_with($limit * 8 . 'kB', 'skip');
$cold_in = cached($node, 'cold');
is(cached($node, 'hot'), $hot, 'limit, skip: all of hot in shared buffers');
cmp_ok($cold_in, '<=', $cold / 4 + $slack, 'limit, skip: cold capped');
cmp_ok($cold_in, '>=', $cold / 8, 'limit, skip: cold filled up to the limit');
# The kernel reads ahead of each reader of a file: the window it reads and
# the next one it begins, each up to the device's read_ahead_kb.  So past
# each worker's last block read, cold's file may hold up to twice that,
# which the engine did not read; more is the engine's.
my $read_ahead = read_ahead_blocks($node->data_dir);
my $kernel_bound = $cold_in + 2 * (2 * $read_ahead + 32);
note "cold: $cold blocks, $cold_in in shared buffers, the device reads "
  . "ahead $read_ahead blocks";
SKIP:
{
	skip "the device reads ahead too far to tell skip from os_cache", 1
	  if $kernel_bound >= 0.95 * $cold;
	my $in = in_page_cache('cold');
	cmp_ok($in, '<=', $kernel_bound,
		"limit, skip: the rest of cold was not read: $in blocks in the page cache (fincore)");
}
my ($skipped, $gone, $os_only, $incomplete) = split /\|/,
  status($node,
	'restore_skipped_limit, restore_skipped_gone, restore_blocks_os_only, restore_incomplete');
cmp_ok($skipped, '>=', $cold - $cold_in - $slack,
	"limit, skip: $skipped blocks counted as skipped for the limit");
is($gone, '0', 'limit, skip: none counted as gone');
is($os_only, '0', 'limit, skip: none into the OS cache only');
is($incomplete, 'f', 'limit, skip: the restore is complete');
is($node->safe_psql('postgres', 'SELECT warmcache_is_warm()'),
	't', 'limit, skip: the server is warm: what was left out was left by choice');
like(
	slurp_file($node->logfile),
	qr/unreadable, $skipped past the restore limit/,
	'limit, skip: the restore\'s log line counts them');

# A cut in hot leaves cold wholly past it: its relation is not even
# opened, so nothing of its file comes into the page cache, not even by
# the kernel's read-ahead.
restore_with('5%', 'skip');
is(cached($node, 'cold'), '0', 'limit 5%, skip: nothing of cold in shared buffers');
is(in_page_cache('cold'), '0',
	'limit 5%, skip: nothing of cold in the page cache (fincore)');
cmp_ok(status($node, 'restore_skipped_limit'), '>=', $cold + $hot - 820 - $slack,
	'limit 5%, skip: all of cold and the rest of hot counted as skipped');

# With advice on, the look-ahead in the cut's rank stops where what is
# left of the limit does: unchecked it would read each worker's stripe of
# cold far past it.  PostgreSQL's reads then find their blocks advised, and
# the kernel reads ahead of a reader only on a page it had to read itself,
# so no more than once per worker.
$node->append_conf('postgresql.conf', 'maintenance_io_concurrency = 64');
restore_with($limit * 8 . 'kB', 'skip');
$cold_in = cached($node, 'cold');
cmp_ok($cold_in, '<=', $cold / 4 + $slack, 'limit, skip, advice: cold capped');
SKIP:
{
	my $bound = $cold_in + 2 * ($read_ahead + 32);
	skip "the device reads ahead too far to tell the advice's cap", 1
	  if $bound >= 0.95 * $cold;
	my $in = in_page_cache('cold');
	cmp_ok($in, '<=', $bound,
		"limit, skip, advice: no advice past the limit: $in blocks in the page cache (fincore)");
}

# Bad values are refused, with the reason.
# A size under one block would round to 0, which is no limit at all.
for my $bad ('150%', 'lots', '-1', '4kB')
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"ALTER SYSTEM SET pg_warmcache.restore_limit = '$bad'");
	like($err, qr/invalid value for parameter "pg_warmcache.restore_limit"/,
		"restore_limit '$bad' is refused");
	like($err, qr/less than one block/, "restore_limit '$bad': the detail says why")
	  if $bad eq '4kB';
}

$node->stop;
done_testing();
