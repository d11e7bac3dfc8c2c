# Copyright (c) 2026, pg_warmcache developers
#
# A restore worker that dies mid-way (here pg_terminate_backend) leaves the
# restore incomplete, with a reason; its unread blocks are not passed off as
# skipped.  The automatic dumps after it, periodic and at shutdown, keep
# the saved file, byte for byte, rather than replace it with the smaller
# set that made it into the cache.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_restore cached fill_table wait_for_restore_worker
  wait_for_kept_file);
use WarmCache::DumpFormat qw(slurp_bin header);

my $node = start_node(
	'terminated', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 1
shared_buffers = 128MB
autovacuum = off
});
my $file = $node->data_dir . '/pg_warmcache.blocks';
create_extensions($node);
my $big_blocks = fill_table($node, 'big', 16);

$node->restart;
my $saved = slurp_bin($file);
my $total = header($saved)->{nblocks};
cmp_ok($total, '>', $big_blocks, 'the saved file holds big and more');

# Terminate the worker of database postgres once it has begun on big.
# Its pid is asked for then: the worker that restores the shared catalogs
# connects to postgres as well, and is gone before big's blocks come.
$node->poll_query_until('postgres',
	"SELECT count(*) >= 32 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')")
  or die 'timed out waiting for the restore to reach big';
my $pid = wait_for_restore_worker($node, 'postgres');
my $offset = -s $node->logfile;
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"),
	't', 'the restore worker is terminated');
wait_for_restore($node, 'the restore to end');

my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/restore of the saved set finished/,
	'the log does not call the restore finished');
is( status(
		$node,
		'restore_incomplete, restore_incomplete_reason IS NOT NULL, '
		  . 'restore_blocks_done + restore_skipped_gone + restore_skipped_excluded < restore_blocks_total'
	),
	't|t|t',
	'the restore is incomplete, with a reason');
note('reason: ' . status($node, 'restore_incomplete_reason'));
cmp_ok(cached($node, 'big'), '<', $big_blocks, 'big is only partly cached');

# A periodic dump keeps the saved file.
wait_for_kept_file($node, $total);
ok(1, 'the periodic dump after the terminated worker keeps the saved file');
ok(slurp_bin($file) eq $saved, 'the saved file is unchanged');

# So does the shutdown dump.
$offset = -s $node->logfile;
$node->stop;
like(
	slurp_file($node->logfile, $offset),
	qr/LOG:  kept the saved block list of $total blocks/,
	'the shutdown dump keeps the saved file');
ok(slurp_bin($file) eq $saved, 'the saved file is still the same');

done_testing();
