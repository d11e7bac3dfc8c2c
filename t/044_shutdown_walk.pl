# Copyright (c) 2026, pg_warmcache developers
#
# The shutdown dump's walk of the relation files for the OS page cache is
# bounded: it stops at a second shutdown request, and after 10 s
# (WC_SHUTDOWN_WALK_MS in src/oswalk.c), and the dump keeps what it found
# until then.
#
# The postmaster signals each child twice (to its process and to its
# process group); a request within 1 s of the walk's start is that copy.
#
# The walk opens every file whose name is a relation file's.  A FIFO under
# such a name in the database's directory holds the walk in open() until a
# writer comes, as a file on a stalled device would; the test then sends a
# second SIGTERM to the autowarm worker, or waits past the bound, and lets
# the open return.  A walk that ignored both would go on to the files after
# the FIFO: it logs no stop, and the whole of the hot table is in the OS
# tier.  The FIFO's name sorts last in readdir order nowhere, so the
# assertion is the log line and the stop's outcome, not what was found.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use Fcntl qw(O_WRONLY O_NONBLOCK);
use POSIX qw(mkfifo);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use WarmCache::Cluster qw(start_node create_extensions status wait_for_restore);
use WarmCache::DumpFormat qw(MAGIC slurp_bin header);

use constant WALK_BOUND_S => 10;

my $node = start_node('walk', "pg_warmcache.dump_os_cache = on\n");
create_extensions($node);
my $file = $node->data_dir . '/pg_warmcache.blocks';
my $dir = $node->data_dir . '/'
  . $node->safe_psql('postgres',
	"SELECT pg_relation_filepath('pg_class') AS p") =~ s{/[^/]+$}{}r;
ok(-d $dir, 'the database directory is found');

# Open the FIFO for writing once its reader (the walk) waits in open():
# non-blocking, a writer's open fails with ENXIO until then.  Dies when no
# reader came within $secs.
sub release_fifo
{
	my ($fifo, $secs) = @_;
	my $deadline = time + $secs;
	my $fh;
	until (sysopen($fh, $fifo, O_WRONLY | O_NONBLOCK))
	{
		die "no reader opened $fifo: $!" if time > $deadline;
		usleep(20_000);
	}
	close($fh);
	return;
}

# Stop the server with a FIFO in the database's directory: $how is
# 'second' (a second SIGTERM to the autowarm worker while the walk waits)
# or 'bound' (the walk waits longer than its bound).  Returns the log of
# the stop and how long the walk was held.
sub stop_with_stalled_walk
{
	my ($how) = @_;
	my $fifo = "$dir/999999999";
	mkfifo($fifo, 0600) or die "mkfifo: $!";
	my $pid = status($node, 'worker_pid');
	my $offset = -s $node->logfile;

	system_or_bail('pg_ctl', '-D', $node->data_dir, '-m', 'fast', '-W',
		'stop');
	my $started = time;

	# The walk is in open() once a writer's open succeeds; hold it first.
	my $hold = $how eq 'bound' ? WALK_BOUND_S + 2 : 2;
	sleep($hold);
	kill('TERM', $pid) if $how eq 'second';
	usleep(200_000);
	release_fifo($fifo, 60);
	my $held = time - $started;

	my $deadline = time + 60;
	usleep(100_000) while -e $node->data_dir . '/postmaster.pid'
	  && time < $deadline;
	ok(!-e $node->data_dir . '/postmaster.pid', "$how: the server stopped");
	$node->_update_pid(0);
	unlink($fifo);
	return (slurp_file($node->logfile, $offset), $held);
}

#---- A second shutdown request ----

my ($log, $held) = stop_with_stalled_walk('second');
like(
	$log,
	qr/LOG:  the shutdown dump stopped walking the relation files for the OS page cache\n.*DETAIL:  A second shutdown request came\./,
	'second request: the walk stops at it');
like($log, qr/LOG:  dumped \d+ blocks at shutdown/,
	'second request: the shutdown dump is written');
is(header(slurp_bin($file))->{magic}, MAGIC,
	'second request: the saved file is whole');

#---- The bound ----

# The start restores the file the first stop wrote; a stop during that
# restore keeps the saved file instead of dumping (the restore did not
# complete), which is not what this part is about.
$node->start;
wait_for_restore($node);
($log, $held) = stop_with_stalled_walk('bound');
cmp_ok($held, '>', WALK_BOUND_S, 'bound: the walk was held past its bound');
like(
	$log,
	qr/LOG:  the shutdown dump stopped walking the relation files for the OS page cache\n.*DETAIL:  The walk reached its limit of 10 s\./,
	'bound: the walk stops after 10 s');
like($log, qr/LOG:  dumped \d+ blocks at shutdown/,
	'bound: the shutdown dump is written');
is(header(slurp_bin($file))->{magic}, MAGIC, 'bound: the saved file is whole');

#---- Without a stall, the walk runs to its end ----

# The postmaster sends each child SIGTERM twice, to its process and to its
# process group: the copy often comes after the worker began its shutdown
# dump, and must not count as a second request.  It did in 10 of 12
# shutdowns on a 2-core machine; five in a row make a miss unlikely.
my $cut = 0;
for (1 .. 5)
{
	$node->start;
	my $offset = -s $node->logfile;
	$node->stop;
	$cut++
	  if slurp_file($node->logfile, $offset) =~
	  /stopped walking the relation files/;
}
is($cut, 0, 'ordinary shutdowns walk every file');

done_testing();
