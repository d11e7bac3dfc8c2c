# Copyright (c) 2026, pg_warmcache developers
#
# A follow pass reads only what is not in the OS cache yet.  A standby
# following in mode os goes over the whole followed set at each of the
# primary's dumps; what the pass before left in the page cache must not be
# read again, and what the cache lost since must be.  The oracle is
# util-linux fincore on the standby's own files: before the second pass,
# one table is dropped from the page cache and the other is resident; the
# pass must bring the first back, and say that it found the second (and no
# block of the first) in the cache already.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions following_standby
  publish_dump wait_for_followed_pass);
use WarmCache::PageCache qw(OS_CACHE_SHARE resident_blocks evict_files
  keep_in_use stop_keeping);

plan skip_all => 'fincore (util-linux) is not installed'
  if system('fincore --version >/dev/null 2>&1') != 0;
plan skip_all => 'the OS cache is seen only on Linux' if $^O ne 'linux';

my $primary = start_node('primary',
	"shared_buffers = 64MB\nwal_keep_size = 256MB\n",
	allows_streaming => 1);
create_extensions($primary);

# kept and lost: each some 2,000 blocks in the primary's shared buffers,
# the whole of its hot set but for catalogs.
$primary->safe_psql(
	'postgres', q{
CREATE TABLE kept (id int, pad text);
INSERT INTO kept SELECT g, repeat('k', 600) FROM generate_series(1, 24000) g;
CREATE TABLE lost (id int, pad text);
INSERT INTO lost SELECT g, repeat('l', 600) FROM generate_series(1, 24000) g;
VACUUM kept, lost;
CHECKPOINT;});
$primary->restart;
$primary->safe_psql('postgres', "SELECT public.warm('kept'), public.warm('lost')");
my %blocks = map {
	$_ => $primary->safe_psql('postgres',
		"SELECT pg_relation_size('$_') / current_setting('block_size')::int")
} ('kept', 'lost');
cmp_ok($blocks{$_}, '>', 1500, "$_ has some blocks") for ('kept', 'lost');

my $standby = following_standby($primary, 'standby',
	"shared_buffers = 32MB\npg_warmcache.dump_interval = 0\nlog_min_messages = debug1\n"
);
my $sdata = $standby->data_dir;
my %path = map {
	$_ => "$sdata/"
	  . $standby->safe_psql('postgres', "SELECT pg_relation_filepath('$_')")
} ('kept', 'lost');

# First pass: the standby's files, just copied by the base backup, are
# dropped from the page cache, and the pass reads them all.
evict_files(values %path);
wait_for_followed_pass($primary, $standby, publish_dump($primary));
for my $t ('kept', 'lost')
{
	cmp_ok(resident_blocks($path{$t}), '>=', OS_CACHE_SHARE * $blocks{$t},
		"first pass: $t is in the standby's page cache");
}

# Second pass over a new dump of the same set, with lost dropped from the
# page cache meanwhile, and kept in use until the pass is over: else the
# machine's memory management may take scattered pages of it in the
# seconds before the pass (keep_in_use), and the pass, which reads a short
# cached stretch with its neighbours, rightly reads them again.
evict_files($path{lost});
my $keeper = keep_in_use($path{kept});
is(resident_blocks($path{lost}), 0, 'lost was dropped from the page cache');
cmp_ok(resident_blocks($path{kept}), '>=', OS_CACHE_SHARE * $blocks{kept},
	'kept is still in the page cache');
my $offset = -s $standby->logfile;
wait_for_followed_pass($primary, $standby, publish_dump($primary));
stop_keeping($keeper);
cmp_ok(resident_blocks($path{lost}), '>=', OS_CACHE_SHARE * $blocks{lost},
	'second pass: lost is back in the page cache');

my $log = slurp_file($standby->logfile, $offset);
my ($done, $total) =
  $log =~ /pass over the followed set finished: restored (\d+) of (\d+) blocks/
  or die "no finished pass in the log:\n$log";
my ($found) = $log =~ /In the OS cache already, not read again: (\d+)\./
  or die "no count of cached blocks in the log:\n$log";
is($done, $total, 'second pass: every block of the set is accounted for');
cmp_ok($found, '>=', OS_CACHE_SHARE * $blocks{kept},
	'second pass: the blocks of kept, resident, were not read again');
cmp_ok($found, '<=', $total - $blocks{lost},
	'second pass: no block of lost, not resident, was taken as cached');

# A pass over a settled set reads nothing: everything it names is cached.
$offset = -s $standby->logfile;
$keeper = keep_in_use($path{kept}, $path{lost});
wait_for_followed_pass($primary, $standby, publish_dump($primary));
stop_keeping($keeper);
$log = slurp_file($standby->logfile, $offset);
($done, $total) = $log =~ /pass over the followed set finished: restored (\d+) of (\d+) blocks/
  or die "no finished pass in the log:\n$log";
($found) = $log =~ /In the OS cache already, not read again: (\d+)\./
  or die "no count of cached blocks in the log:\n$log";
cmp_ok($found, '>=', OS_CACHE_SHARE * ($blocks{kept} + $blocks{lost}),
	'third pass: the settled set was found cached, not read');

$standby->stop;
$primary->stop;
done_testing();
