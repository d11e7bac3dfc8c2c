# Copyright (c) 2026, pg_warmcache developers
#
# A SIGTERM of the autowarm worker that does not come from the postmaster
# is a termination, whoever sends it and whatever the data directory holds:
# the worker writes no dump, exits with code 1 and is started again after
# bgw_restart_time (10 s, WC_RESTART_S in src/autowarm.c).
#
# - kill -TERM from a shell, mid-restore: the restore ends incomplete with
#   the reason "the autowarm worker was terminated", as after
#   pg_terminate_backend() (t/037).
# - pg_terminate_backend() while postmaster.pid cannot be read (mode 000;
#   the server does not run as root, so its owner cannot read it either):
#   the worker is back within its restart time and wrote no shutdown dump
#   (which would keep the saved file: the first restore is incomplete).
#   The postmaster's own look at the file every minute only logs that it
#   cannot open it and goes on; the test gives the mode back at once.
#
# The oracles are the server log (PostgreSQL's line for a worker's exit
# code) and the worker's pid in warmcache_status().

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status cached
  fill_table new_worker_pid);

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
# Periodic dumps are off: a dump now could only be the shutdown dump, which
# keeps the saved file after the incomplete restore.
unlike(
	$log,
	qr/(dumped \d+ blocks at shutdown|kept the saved block list of \d+ blocks)/,
	'shell kill: no shutdown dump was written');

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
unlike(
	$log,
	qr/(dumped \d+ blocks at shutdown|kept the saved block list of \d+ blocks)/,
	'unreadable lock file: no shutdown dump was written');
like(
	$log,
	qr/background worker "pg_warmcache autowarm" \(PID $pid\) exited with exit code 1/,
	'unreadable lock file: the worker exited with code 1');

$node->stop;
done_testing();
