# Copyright (c) 2026, pg_warmcache developers
#
# During the shutdown dump, only a SIGTERM from someone other than the
# postmaster is a second shutdown request, one that cuts the dump's walk
# of the relation files for the OS page cache short (t/044).  More
# shutdown requests to the postmaster while the walk runs (pg_ctl stop
# again, fast or smart) are not: whatever the postmaster does with them,
# the walk runs to its end and the dump is written.  A kill -TERM of the
# worker from a shell after them is one.
#
# As in t/044, a FIFO under a relation file's name in the database's
# directory holds the walk in open() until a writer comes.  The walk is
# held 3 s, well within its 10 s bound (WC_SHUTDOWN_WALK_MS in
# src/oswalk.c), so a walk that stops logs the second request as the
# cause; one that does not stop logs nothing about stopping.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use POSIX qw(mkfifo);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status database_dir
  release_fifo_reader wait_until_stopped wait_for_restore);
use WarmCache::DumpFormat qw(MAGIC slurp_bin header);

use constant HOLD_S => 3;

my $node = start_node('requests', "pg_warmcache.dump_os_cache = on\n");
create_extensions($node);
my $file = $node->data_dir . '/pg_warmcache.blocks';
my $dir = database_dir($node);
ok(-d $dir, 'the database directory is found');

# Ask the postmaster to stop, in mode $mode, without waiting for it.
sub pg_ctl_stop
{
	my ($mode) = @_;
	system_or_bail('pg_ctl', '-D', $node->data_dir, '-m', $mode, '-W',
		'stop');
	return;
}

# Stop the server fast with a FIFO in the database's directory.  While the
# walk waits on it: a second fast stop and a smart one, then, if
# $shell_kill, a kill -TERM of the autowarm worker from a shell.  Returns
# the log of the stop.
sub stop_with_held_walk
{
	my ($shell_kill) = @_;
	my $fifo = "$dir/999999999";
	mkfifo($fifo, 0600) or die "mkfifo: $!";
	my $pid = status($node, 'worker_pid');
	my $offset = -s $node->logfile;

	# The walk is held HOLD_S in all: the later requests come 1 s after
	# the first, the kill 1 s after them.
	pg_ctl_stop('fast');
	sleep(1);
	pg_ctl_stop('fast');
	pg_ctl_stop('smart');
	sleep(1);
	system("kill -TERM $pid") if $shell_kill;
	sleep(HOLD_S - 2);
	release_fifo_reader($fifo, 60);

	ok(wait_until_stopped($node, 60), 'the server stopped');
	unlink($fifo);
	return slurp_file($node->logfile, $offset);
}

#---- More requests to the postmaster ----

my $log = stop_with_held_walk(0);
unlike($log, qr/stopped walking the relation files/,
	'more requests to the postmaster: the walk is not stopped');
like($log, qr/LOG:  dumped \d+ blocks at shutdown/,
	'more requests to the postmaster: the shutdown dump is written');
unlike($log, qr/pg_warmcache autowarm.*exited with exit code/,
	'more requests to the postmaster: the worker exits with code 0');
is(header(slurp_bin($file))->{magic}, MAGIC, 'the saved file is whole');

#---- Then a kill from a shell ----

# The start restores the file the first stop wrote; a stop during that
# restore keeps the saved file instead of dumping (t/044 says more).
$node->start;
wait_for_restore($node);
$log = stop_with_held_walk(1);
like(
	$log,
	qr/LOG:  the shutdown dump stopped walking the relation files for the OS page cache\n.*DETAIL:  A second shutdown request came\./,
	'a shell kill after them: the walk stops at it');
like($log, qr/LOG:  dumped \d+ blocks at shutdown/,
	'a shell kill after them: the shutdown dump is written');
is(header(slurp_bin($file))->{magic}, MAGIC, 'the saved file is still whole');

done_testing();
