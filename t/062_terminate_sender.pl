# Copyright (c) 2026, pg_warmcache developers
#
# A SIGTERM of the autowarm worker is a request to stop, whoever sends it:
# the worker writes its dump before it exits, so that no way of stopping
# the server loses the saved set.  The sender decides only the exit code:
# the postmaster's request is a shutdown (code 0, not started again),
# anyone else's a termination (code 1, started again after
# bgw_restart_time, 10 s, WC_RESTART_S in src/autowarm.c).
#
# - kill -TERM from a shell, mid-restore: the restore ends incomplete with
#   the reason "the autowarm worker was terminated", as after
#   pg_terminate_backend() (t/037), and the worker's dump keeps the saved
#   file.
# - pg_terminate_backend() while postmaster.pid cannot be read (mode 000;
#   the server does not run as root, so its owner cannot read it either):
#   the worker is back within its restart time; the sender is told by the
#   signal, not by that file.  The postmaster's own look at the file every
#   minute only logs that it cannot open it and goes on; the test gives
#   the mode back at once.
# - A service manager that stops the server by signalling every process
#   (systemd's KillMode=control-group, a stop script's kill): SIGTERM to
#   the autowarm worker and then to the postmaster, and in the other order
#   (the postmaster first, as pg_ctl stop does, then the worker).  With
#   periodic dumps off, the saved file after the stop can only be the stop's
#   dump; it is there both times, and holds big.
#
# The oracles are the server log (PostgreSQL's line for a worker's exit
# code), the worker's pid in warmcache_status(), and the saved file's
# header, read by the tests' own decoder.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status cached
  fill_table new_worker_pid);
use WarmCache::DumpFormat qw(slurp_bin header);

# The autowarm worker's bgw_restart_time (WC_RESTART_S in src/autowarm.c)
use constant RESTART_S => 10;

# A restore of big at 1 MB/s takes about 25 s: long enough to act on.
my $node = start_node(
	'sender', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 1
shared_buffers = 128MB
autovacuum = off
});
my $pidfile = $node->data_dir . '/postmaster.pid';
create_extensions($node);
my $big_blocks = fill_table($node, 'big', 24);

#---- kill -TERM from a shell, mid-restore ----

$node->restart;
$node->poll_query_until('postgres',
	"SELECT count(*) >= 32 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')"
) or die 'timed out waiting for the restore to reach big';
my $pid = status($node, 'worker_pid');
my $offset = -s $node->logfile;
is(system("kill -TERM $pid"), 0, 'shell kill: the autowarm worker is signalled');
my $new = new_worker_pid($node, $pid, RESTART_S + 20);
ok(defined $new, 'shell kill: the autowarm worker is started again');
is( status(
		$node,
		'restore_finished_at IS NOT NULL, restore_incomplete, restore_incomplete_reason'
	),
	't|t|the autowarm worker was terminated',
	'shell kill: the restore is incomplete, the worker was terminated');
cmp_ok(cached($node, 'big'), '<', $big_blocks, 'shell kill: big is only partly cached');
my $log = slurp_file($node->logfile, $offset);
like(
	$log,
	qr/background worker "pg_warmcache autowarm" \(PID $pid\) exited with exit code 1/,
	'shell kill: the worker exited with code 1');
# Periodic dumps are off: a dump now is the worker's before it exits,
# which keeps the saved file after the incomplete restore.
like(
	$log,
	qr/LOG:  kept the saved block list of \d+ blocks/,
	'shell kill: the worker\'s dump before it exited kept the saved file');

#---- pg_terminate_backend() while postmaster.pid cannot be read ----

$pid = $new;
$offset = -s $node->logfile;
my $mode = (stat($pidfile))[2] & 07777;
chmod(0000, $pidfile) or die "chmod \"$pidfile\": $!";
ok(!open(my $fh, '<', $pidfile),
	'unreadable lock file: postmaster.pid cannot be read by its owner');
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"),
	't', 'unreadable lock file: the autowarm worker is terminated');
$new = new_worker_pid($node, $pid, RESTART_S + 10);
chmod($mode, $pidfile) or die "chmod \"$pidfile\": $!";
ok(defined $new,
	'unreadable lock file: the worker is started again within its restart time and 10 s'
);
$log = slurp_file($node->logfile, $offset);
like(
	$log,
	qr/background worker "pg_warmcache autowarm" \(PID $pid\) exited with exit code 1/,
	'unreadable lock file: the worker exited with code 1');
unlike($log, qr/dumped \d+ blocks at shutdown/,
	'unreadable lock file: its dump is not taken for a shutdown dump');

#---- A service manager signals every process ----

my $file = $node->data_dir . '/pg_warmcache.blocks';

# Stop the server by SIGTERM to its autowarm worker and its postmaster, in
# the order $order; return the log of the stop.  The saved file is removed
# first: after the stop, one exists only if the stop wrote it.
sub stop_by_signals
{
	my ($order) = @_;
	$node->restart;
	$node->safe_psql('postgres', 'SELECT count(*) FROM big');
	$node->poll_query_until('postgres',
		"SELECT state = 'idle' FROM warmcache_status()")
	  or die 'timed out waiting for the autowarm worker to be idle';
	my $worker = status($node, 'worker_pid');
	my ($pm) = split /\n/, slurp_file($node->data_dir . '/postmaster.pid');
	unlink($file) or die "could not remove \"$file\": $!";
	my $offset = -s $node->logfile;
	my @pids = $order eq 'worker first' ? ($worker, $pm) : ($pm, $worker);
	kill 'TERM', @pids;
	foreach (1 .. 600)
	{
		last unless kill 0, $pm;
		Time::HiRes::usleep(100_000);
	}
	ok(!kill(0, $pm), "$order: the server stopped");
	$node->_update_pid(0);    # the test framework learns it stopped
	return slurp_file($node->logfile, $offset);
}

foreach my $order ('worker first', 'postmaster first')
{
	my $log = stop_by_signals($order);
	like($log, qr/LOG:  dumped \d+ blocks (at shutdown|before the autowarm worker exits)/,
		"$order: the autowarm worker wrote its dump");
	ok(-e $file, "$order: the saved file is there after the stop");
	cmp_ok(header(slurp_bin($file))->{nblocks},
		'>=', $big_blocks, "$order: it holds at least big's $big_blocks blocks");
	$node->start;
}

$node->stop;
done_testing();
