# Copyright (c) 2026, pg_warmcache developers
#
# Every way out of the restore's processes keeps the saved set, and the
# autowarm worker comes back from a termination.
#
# - The autowarm worker, which leads the restore, is cancelled, then (after
#   another restart) terminated, mid-restore; then a restore worker is
#   terminated, then another one cancelled.  Each time the restore ends
#   incomplete with a reason and abort_requested cleared, the next
#   automatic dump keeps the saved file (its block count, read from its
#   header), and warmcache_restore_now() restores the whole table
#   (pg_buffercache counts it).
# - Terminated outside shutdown, the autowarm worker writes its dump
#   before it exits (mid-restore: it keeps the saved file), is started
#   again within bgw_restart_time, with a new pid, and dumps again; at a
#   real shutdown it writes the shutdown dump and exits quietly.
# - A backend's dump terminated while its scratch files exist (held up by a
#   FIFO in place of its temporary file) leaves neither the sorted chunks
#   nor the temporary file behind: the FATAL skips any PG_CATCH, an exit
#   callback removes them.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use Fcntl qw(O_RDONLY O_NONBLOCK);
use IPC::Run;
use POSIX qw(mkfifo);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use WarmCache::Cluster qw(start_node create_extensions status cached
  fill_table wait_for_restore_worker);
use WarmCache::DumpFormat qw(MAGIC slurp_bin header);

# The autowarm worker's bgw_restart_time (WC_RESTART_S in src/autowarm.c)
use constant RESTART_S => 10;

# A restore of big at 1 MB/s takes about 25 s: long enough to act on.
my $node = start_node(
	'exits', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 1
shared_buffers = 128MB
autovacuum = off
});
my $file = $node->data_dir . '/pg_warmcache.blocks';
create_extensions($node);
my $big_blocks = fill_table($node, 'big', 24);

sub set_conf
{
	my ($line) = @_;
	$node->append_conf('postgresql.conf', $line);
	$node->reload;
	return;
}

# Restart; the shutdown dump saves all of big, and the restore at start
# loads it at 1 MB/s.  Returns the saved file's block count once the
# restore has begun on big.
sub restart_into_restore
{
	$node->restart;
	my $total = header(slurp_bin($file))->{nblocks};
	$node->poll_query_until('postgres',
		"SELECT count(*) >= 32 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')"
	) or die 'timed out waiting for the restore to reach big';
	return $total;
}

# Whether the condition $cond on warmcache_status() holds within $secs
# seconds.  Bounded, not dying: a failure is a failed test, and the
# scenarios after it still run.
sub holds_within
{
	my ($cond, $secs) = @_;
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		return 1 if status($node, $cond) eq 't';
		usleep(100_000);
	}
	return 0;
}

# The autowarm worker's pid once it is not $old (undef for any), waiting
# $secs at most; undef if none came.
sub worker_pid_other_than
{
	my ($old, $secs) = @_;
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		my $pid = status($node, 'worker_pid');
		return $pid if $pid ne '' && (!defined $old || $pid ne $old);
		usleep(100_000);
	}
	return undef;
}

# After the restore ended incomplete: it says why, the abort flag is clear,
# and big is only partly cached.
sub check_incomplete
{
	my ($name, $reason) = @_;
	ok(holds_within("state = 'idle' AND restore_finished_at IS NOT NULL", 60),
		"$name: the restore ends");
	is( status($node, 'restore_incomplete, abort_requested'),
		't|f', "$name: the restore is incomplete, abort_requested is clear");
	my $got = status($node, 'restore_incomplete_reason');
	if (defined $reason)
	{
		is($got, $reason, "$name: the reason is \"$reason\"");
	}
	else
	{
		isnt($got, '', "$name: the restore says why it is incomplete ($got)");
	}
	cmp_ok(cached($node, 'big'), '<', $big_blocks, "$name: big is only partly cached");
	return;
}

# The next automatic dump keeps the saved file of $total blocks.  Dumps
# every second until one kept the file or wrote another; dumps off again.
sub next_dump_keeps
{
	my ($name, $total) = @_;
	my $offset = -s $node->logfile;
	my $before = status($node, "coalesce(last_dump_at::text, 'none')");
	my $kept = 0;
	set_conf('pg_warmcache.dump_interval = 1');
	my $deadline = time + 30;
	while (time < $deadline)
	{
		if (slurp_file($node->logfile, $offset) =~
			/LOG:  kept the saved block list of $total blocks/)
		{
			$kept = 1;
			last;
		}
		last
		  if status($node, "coalesce(last_dump_at::text, 'none')") ne $before;
		usleep(100_000);
	}
	set_conf('pg_warmcache.dump_interval = 0');
	ok($kept, "$name: the next automatic dump keeps the saved file");
	is(header(slurp_bin($file))->{nblocks},
		$total, "$name: the saved file still holds its $total blocks");
	return;
}

# warmcache_restore_now(), at full speed, restores all of big.
sub restore_now_restores_all
{
	my ($name) = @_;
	my $prev = status($node, "coalesce(restore_finished_at, '-infinity')");
	set_conf('pg_warmcache.max_restore_rate = 0');
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', 'SELECT warmcache_restore_now()');
	is($ret, 0, "$name: warmcache_restore_now() is accepted")
	  or diag($stderr);
	ok( holds_within(
			"state = 'idle' AND restore_finished_at > '$prev'::timestamptz", 60),
		"$name: the restore asked for ends");
	is(cached($node, 'big'), $big_blocks,
		"$name: warmcache_restore_now() then restores all of big");
	is( status($node, 'restore_incomplete, abort_requested'),
		'f|f', "$name: that restore is complete");
	set_conf('pg_warmcache.max_restore_rate = 1');
	return;
}

#---- The autowarm worker cancelled mid-restore ----

my $total = restart_into_restore();
cmp_ok($total, '>', $big_blocks, 'the saved file holds big and more');
my $pid = status($node, 'worker_pid');
my $offset = -s $node->logfile;
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"),
	't', 'the autowarm worker is cancelled mid-restore');
check_incomplete('cancelled leader', 'cancelled');
like(
	slurp_file($node->logfile, $offset),
	qr/restore of the saved set stopped: .*\n.*The saved block list is kept: cancelled/,
	'cancelled leader: the log says the restore stopped and the list is kept');
is(status($node, 'worker_pid'), $pid,
	'cancelled leader: the autowarm worker goes on');
next_dump_keeps('cancelled leader', $total);
restore_now_restores_all('cancelled leader');

#---- The autowarm worker terminated mid-restore ----

$total = restart_into_restore();
$pid = status($node, 'worker_pid');
$offset = -s $node->logfile;
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"),
	't', 'the autowarm worker is terminated mid-restore');
my $new = worker_pid_other_than($pid, RESTART_S + 20);
ok(defined $new, 'terminated leader: the autowarm worker is started again');
check_incomplete('terminated leader', 'the autowarm worker was terminated');
my $log = slurp_file($node->logfile, $offset);
like(
	$log,
	qr/LOG:  the autowarm worker was terminated/,
	'terminated leader: the log says so');
like(
	$log,
	qr/background worker "pg_warmcache autowarm" \(PID $pid\) exited with exit code 1/,
	'terminated leader: it exited with code 1');
like(
	$log,
	qr/LOG:  kept the saved block list of $total blocks/,
	'terminated leader: before it exited, its dump kept the saved file');
next_dump_keeps('terminated leader', $total);
restore_now_restores_all('terminated leader');

#---- A restore worker terminated, then one cancelled, mid-restore ----

for my $how ('terminate', 'cancel')
{
	my $name = ($how eq 'cancel' ? 'cancelled' : 'terminated') . ' restore worker';
	$total = restart_into_restore();
	my $wpid = wait_for_restore_worker($node, 'postgres');
	is($node->safe_psql('postgres', "SELECT pg_${how}_backend($wpid)"),
		't', "$name: it is signalled mid-restore");
	check_incomplete($name, undef);
	next_dump_keeps($name, $total);
	restore_now_restores_all($name);
}

#---- The autowarm worker terminated while idle ----

$pid = status($node, 'worker_pid');
$offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$new = worker_pid_other_than($pid, RESTART_S + 20);
ok(defined $new,
	'terminated idle worker: it is started again within bgw_restart_time');
my $before = status($node, 'last_dump_at');
set_conf('pg_warmcache.dump_interval = 1');
ok(holds_within("last_dump_at > '$before'::timestamptz", 30),
	'terminated idle worker: the new worker dumps again');
set_conf('pg_warmcache.dump_interval = 0');
$log = slurp_file($node->logfile, $offset);
like(
	$log,
	qr/LOG:  dumped \d+ blocks before the autowarm worker exits/,
	'terminated idle worker: it wrote its dump before it exited');
unlike($log, qr/dumped \d+ blocks at shutdown/,
	'terminated idle worker: the log does not call that a shutdown');

#---- A backend's dump terminated while its scratch files exist ----

# The temporary file is a FIFO: the dump spills its sorted chunks to the
# scratch file, then waits to open the FIFO until a reader comes.  Big in
# shared buffers makes more than one chunk of 1024.
$node->safe_psql('postgres', "SELECT warm('big')");
mkfifo("$file.tmp", 0600) or die "mkfifo: $!";
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
		'SET pg_warmcache.sort_chunk = 1024; SELECT warmcache_dump_now()'
	],
	'>', \$out, '2>', \$err,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
my $q = q{SELECT pid FROM pg_stat_activity
 WHERE query LIKE '%warmcache_dump_now%' AND pid <> pg_backend_pid()};
$node->poll_query_until('postgres', "SELECT EXISTS ($q)")
  or die 'timed out waiting for the dump';
my $dpid = $node->safe_psql('postgres', $q);
my $deadline = time + 60;
usleep(50_000) while !-e "$file.sort" && time < $deadline;
ok(-e "$file.sort", 'the dump has spilled sorted chunks to its scratch file');
$offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($dpid)");

# Let the dump open the FIFO (if it was not terminated before), so that it
# reaches its next interrupt check.
my $fifo;
sysopen($fifo, "$file.tmp", O_RDONLY | O_NONBLOCK);
$node->poll_query_until('postgres',
	"SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $dpid)")
  or die 'timed out waiting for the terminated dump to end';
$h->finish;
close($fifo) if $fifo;
like($err, qr/terminating connection due to administrator command/,
	'the dump was terminated (FATAL)');
ok(!-e "$file.sort", 'terminated dump: no pg_warmcache.blocks.sort is left');
ok(!-e "$file.tmp", 'terminated dump: no pg_warmcache.blocks.tmp is left');
unlink("$file.tmp");
is(header(slurp_bin($file))->{magic}, MAGIC, 'the saved file is whole');

#---- A real shutdown ----

$offset = -s $node->logfile;
$node->stop;
$log = slurp_file($node->logfile, $offset);
like($log, qr/LOG:  dumped \d+ blocks at shutdown/,
	'at shutdown the autowarm worker writes the shutdown dump');
unlike($log, qr/pg_warmcache autowarm.*exited with exit code/,
	'at shutdown the autowarm worker exits with code 0');

done_testing();
