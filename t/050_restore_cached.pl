# Copyright (c) 2026, pg_warmcache developers
#
# A restore reads only what is not in the OS cache yet.  After a restart of
# the server alone, the page cache still holds much of the saved set, and
# reading it again is CPU taken from the queries.  The oracle is util-linux
# fincore on the server's own files: before the restart, one table is
# dropped from the page cache and the other is resident; the restore (mode
# read) must bring the first back, and say that it found the second (and
# no block of the first) in the cache already.  The dump has no OS tier
# (start_node's dump_os_cache = off), so that each block is in the saved
# file once: the restore cannot find one it read itself.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions wait_for_restore_line
  fill_table);
use WarmCache::PageCache qw(OS_CACHE_SHARE resident_blocks evict_files);

plan skip_all => 'fincore (util-linux) is not installed'
  if system('fincore --version >/dev/null 2>&1') != 0;
plan skip_all => 'the OS cache is seen only on Linux' if $^O ne 'linux';

my $node = start_node(
	'restore_cached', q{
shared_buffers = 64MB
pg_warmcache.restore_mode = 'read'
pg_warmcache.restore_workers = 1
});
create_extensions($node);

# kept and lost: each some 2,000 blocks in shared buffers, the whole of the
# hot set but for catalogs.
my $data = $node->data_dir;
my (%blocks, %path);
for my $t ('kept', 'lost')
{
	$blocks{$t} = fill_table($node, $t, 16);
	$path{$t} = "$data/"
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$t')");
	cmp_ok($blocks{$t}, '>', 1500, "$t has some blocks");
}

# The shutdown dump saves both; lost then leaves the page cache.
$node->stop;
evict_files($path{lost});
is(resident_blocks($path{lost}), 0, 'lost was dropped from the page cache');
cmp_ok(resident_blocks($path{kept}), '>=', OS_CACHE_SHARE * $blocks{kept},
	'kept is still in the page cache');
my $offset = -s $node->logfile;
$node->start;
my $line = wait_for_restore_line($node, $offset);
my ($done, $total) = $line =~ /restored (\d+) of (\d+) blocks/
  or die "no count in the restore's line: $line";
my $log = slurp_file($node->logfile, $offset);
my ($found) = $log =~ /In the OS cache already, not read again: (\d+)\./
  or die "no count of cached blocks in the log:\n$log";

is($done, $total, 'every block of the saved set is accounted for');
cmp_ok(resident_blocks($path{lost}), '>=', OS_CACHE_SHARE * $blocks{lost},
	'lost is back in the page cache');
cmp_ok($found, '>=', OS_CACHE_SHARE * $blocks{kept},
	'the blocks of kept, resident, were not read again');
cmp_ok($found, '<=', $total - $blocks{lost},
	'no block of lost, not resident, was taken as cached');

$node->stop;
done_testing();
