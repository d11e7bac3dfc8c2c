# Copyright (c) 2026, pg_warmcache developers
#
# With every max_worker_processes slot taken (here by a parallel query's
# worker), the restore cannot start a worker: it says so once, waits, and
# starts it when the slot frees, then completes.  Aborted while it waits,
# it is incomplete, and the next automatic dump keeps the saved file.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  wait_for_restore cached fill_table wait_for_kept_file occupy_worker_slots
  free_worker_slots);
use WarmCache::DumpFormat qw(slurp_bin header);

# Three slots: the logical replication launcher, the autowarm worker, and
# one for a restore worker or a parallel worker.
my $node = start_node(
	'noslot', q{
max_worker_processes = 3
max_parallel_workers = 3
pg_warmcache.restore_workers = 1
shared_buffers = 128MB
autovacuum = off
});
my $file = $node->data_dir . '/pg_warmcache.blocks';
create_extensions($node);
my $big_blocks = fill_table($node, 'big', 8);
$node->safe_psql('postgres',
	'CREATE TABLE small AS SELECT g FROM generate_series(1, 1000) g; ANALYZE small'
);

my $warning =
  qr/WARNING:  could not start a restore worker\b/;

#---- The slot frees: the restore completes ----

restart_cold($node);
my $total = header(slurp_bin($file))->{nblocks};
my ($h, $pid) = occupy_worker_slots($node, 1, 'small');
ok(1, 'a parallel worker takes the last free slot');

my $offset = -s $node->logfile;
is($node->safe_psql('postgres', 'SELECT warmcache_restore_now()'),
	$total, 'a restore is asked for');
$node->wait_for_log($warning, $offset);
ok(1, 'the restore says that it cannot start a worker');
sleep(2);
is(status($node, "state, restore_blocks_done"),
	'restoring|0', 'the restore waits for a slot');

free_worker_slots($node, $h, $pid);
wait_for_restore($node);
my $log = slurp_file($node->logfile, $offset);
my @warnings = ($log =~ /$warning/g);
is(scalar(@warnings), 1, 'the restore said it once');
like($log, qr/restore of the saved set finished: restored \d+ of $total blocks/,
	'the log says the restore finished');
is( status(
		$node,
		'restore_incomplete, restore_blocks_done + restore_skipped_gone + restore_skipped_excluded'
	),
	"f|$total",
	'the restore is complete');
is(cached($node, 'big'), $big_blocks,
	'pg_buffercache shows every block of big restored');

#---- Aborted while it waits: the saved file is kept ----

restart_cold($node);
my $saved = slurp_bin($file);
$total = header($saved)->{nblocks};
($h, $pid) = occupy_worker_slots($node, 1, 'small');
$offset = -s $node->logfile;
$node->safe_psql('postgres', 'SELECT warmcache_restore_now()');
$node->wait_for_log($warning, $offset);
is($node->safe_psql('postgres', 'SELECT warmcache_restore_abort()'),
	't', 'the restore waiting for a slot is aborted');
wait_for_restore($node, 'the aborted restore to end');
is(status($node, 'restore_incomplete, restore_incomplete_reason IS NOT NULL'),
	't|t', 'the aborted restore is incomplete, with a reason');

wait_for_kept_file($node, $total);
ok(1, 'the periodic dump keeps the saved file');
ok(slurp_bin($file) eq $saved, 'the saved file is unchanged');

free_worker_slots($node, $h, $pid);
$node->stop;
done_testing();
