# Copyright (c) 2026, pg_warmcache developers
#
# The modes read and prefetch warm the OS page cache, and the regression
# tests only see what warm() returns.  Here the OS itself is the oracle:
# the table's file is dropped from the page cache, then warm() in each mode
# (and a restore in mode read) must leave its pages resident, as mincore(2)
# tells through util-linux's fincore.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions restart_cold
  wait_for_restore cached fill_table);
use WarmCache::PageCache qw(OS_CACHE_SHARE os_cached_bytes drop_os_cache);

plan skip_all => 'fincore (util-linux) is not installed'
  if system('fincore --version >/dev/null 2>&1') != 0;

my $node = start_node(
	'oscache', q{
shared_buffers = 128MB
autovacuum = off
});
create_extensions($node);
my $blocks = fill_table($node, 't', 16);
$node->safe_psql('postgres', 'CHECKPOINT');
my $path = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('t')");
my $size = -s $path;
is($size, $blocks * 8192, 'the table is one file of 16 MB');

# Less than a tenth of the file resident counts as cold.
sub os_cold
{
	drop_os_cache($path);
	my $res = os_cached_bytes($path);
	cmp_ok($res, '<', $size / 10, "$_[0]: the file is out of the OS cache");
	return;
}

# The file counts as warm when the OS cache holds nearly all of it, where an
# engine that did nothing would leave it cold (os_cold checks that first).
# Not all of it: mode prefetch only advises, and the kernel may leave out a
# few pages (one run here missed 3 of 2000 blocks after 10 s); and this
# kind of machine may hand back pages of a file read a second earlier (one
# CI run found all but 12 kB of 16 MB after warm() in mode read).  So each
# check waits up to 10 s for OS_CACHE_SHARE of the file.
sub os_warm
{
	my ($name) = @_;
	my $res = os_cached_bytes($path);
	for (my $i = 0; $res < OS_CACHE_SHARE * $size && $i < 100; $i++)
	{
		Time::HiRes::usleep(100_000);
		$res = os_cached_bytes($path);
	}
	cmp_ok($res, '>=', OS_CACHE_SHARE * $size,
		"$name: the file is in the OS cache, but for at most 5%");
	return;
}

# read, with its look-ahead advice off: only its reads can bring pages in.
os_cold('read without advice');
is( $node->safe_psql(
		'postgres',
		"SET maintenance_io_concurrency = 0; SELECT warm('t', 'read')"),
	$blocks,
	'warm(t, read) without advice returns every block');
os_warm('warm(t, read) without advice');

os_cold('read');
is($node->safe_psql('postgres', "SELECT warm('t', 'read')"),
	$blocks, 'warm(t, read) returns every block');
os_warm('warm(t, read)');

# prefetch only asks: the pages arrive a little later.
os_cold('prefetch');
is($node->safe_psql('postgres', "SELECT warm('t', 'prefetch')"),
	$blocks, 'warm(t, prefetch) returns every block');
os_warm('warm(t, prefetch)');

# A restore in mode read, of a dump that holds t, with t out of the OS
# cache and out of shared buffers (restarted without autowarm).
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
restart_cold($node);
is(cached($node, 't'), 0, 't is not in shared buffers');
os_cold('restore in mode read');
is($node->safe_psql('postgres', "SELECT warmcache_restore_now('read')"),
	$node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()'),
	'a restore in mode read is asked for');
wait_for_restore($node);
os_warm('a restore in mode read');
is(cached($node, 't'), 0, 'the restore in mode read left shared buffers alone');

$node->stop;
done_testing();
