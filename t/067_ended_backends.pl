# Copyright (c) 2026, pg_warmcache developers
#
# Backends that have exited do not count as queries running on a CPU.
#
# The restore looks at the other backends' PGPROCs (src/pg_internals.c) and
# becomes frugal while one runs on a CPU and every CPU is taken.  A PGPROC
# freed by an exit keeps its pid up to 16, with no wait event: taken for a
# live one, it would make every later restore frugal.  From 17 a freed
# PGPROC's pid is 0.  Either way, after 50 connections have ended, a
# restore beside processes that keep every CPU busy (not backends) must
# not be frugal: the pacer's line at DEBUG1 says "frugal 0.0 s" and no
# sleep for the CPU budget, and the whole table goes into shared buffers,
# none of it to the OS cache only.  A second restore beside one backend
# that does run on a CPU must be frugal, which shows that the machine
# looked busy to the pacer, so that the first case tested something.  The
# busy loops would slow any test beside this one: it runs alone.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use WarmCache qw(:machine_alone);

my $node = start_node(
	'ended', q{
shared_buffers = 128MB
autovacuum = off
max_connections = 100
log_min_messages = debug1
pg_warmcache.restore_workers = 1
pg_warmcache.restore_mode = buffer
});
create_extensions($node);
my $blocks = fill_table($node, 't', 40);
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
note "t: $blocks blocks";

chomp(my $ncpus = `nproc`);
$ncpus = 1 unless $ncpus && $ncpus =~ /^\d+$/;

# One more busy loop than there are CPUs, outside the server: the run queue
# stays full, and no PGPROC shows them.
sub start_spinners
{
	my @pids;
	for (0 .. $ncpus)
	{
		my $pid = fork();
		die "could not fork: $!" unless defined $pid;
		if ($pid == 0)
		{
			1 while 1;
		}
		push @pids, $pid;
	}
	return @pids;
}

sub stop_spinners
{
	kill 'KILL', @_;
	waitpid($_, 0) for @_;
	return;
}

# Empty shared buffers, let $before run, then restore the file with the
# spinners running, without a connection of the test's own while it runs
# (a new backend runs on a CPU while it starts); returns the pacer's lines
# and the restore's closing line.
sub restore_busy
{
	my ($before) = @_;
	restart_cold($node);
	my $after_start = $before->();
	my @spin = start_spinners();
	Time::HiRes::usleep(200_000);
	my $offset = -s $node->logfile;
	my $session = $node->background_psql('postgres');
	$session->query_safe("SELECT warmcache_restore_now()");
	my $line = wait_for_restore_line($node, $offset);
	stop_spinners(@spin);
	$session->quit;
	$after_start->() if $after_start;
	my @pacer = slurp_file($node->logfile, $offset) =~
	  /pg_warmcache: pacer over the buffer tier: (.*)\n/g;
	return ($line, @pacer);
}

# 50 connections open at once, then all ended: up to 16, each leaves its pid
# in a PGPROC of its own.
my ($line, @pacer) = restore_busy(
	sub {
		my @sessions = map { $node->background_psql('postgres') } 1 .. 50;
		$_->query_safe('SELECT 1') for @sessions;
		my $pids = join ',',
		  map { $_->query_safe('SELECT pg_backend_pid()') } @sessions;
		$_->quit for @sessions;
		$node->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid IN ($pids)")
		  or die 'timed out waiting for the 50 connections to end';
		return undef;
	});
note "restore after 50 ended connections: $line";
ok(scalar(@pacer) > 0, 'ended connections: the pacer says where its time went')
  or diag("no pacer line at DEBUG1");
for my $p (@pacer)
{
	like($p, qr/^frugal 0\.0 s, .* slept 0\.0 s for the CPU budget/,
		'ended connections: the restore was never frugal and never slept for the CPU budget'
	);
}
is(cached($node, 't'), $blocks,
	'ended connections: all of t went into shared buffers');
is(status($node, 'restore_blocks_os_only'), '0',
	'ended connections: no block went to the OS cache only');

# The control: one backend that runs on a CPU throughout.
my $loop;
($line, @pacer) = restore_busy(
	sub {
		$loop = $node->background_psql('postgres', on_error_stop => 0);
		$loop->query_until(qr/busy/,
			"\\echo busy\nSET statement_timeout = '180s';\n"
			  . "DO \$\$BEGIN LOOP END LOOP; END\$\$;\n");
		$node->poll_query_until('postgres',
			q{SELECT count(*) = 1 FROM pg_stat_activity
 WHERE state = 'active' AND query LIKE 'DO $$BEGIN LOOP%'})
		  or die 'the busy loop did not start';
		return sub {
			$node->safe_psql('postgres',
				q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
 WHERE query LIKE 'DO $$BEGIN LOOP%'});
			$loop->quit;
		};
	});
note "restore beside a busy backend: $line";
ok( (grep { /^frugal (\d+\.\d) s/ && $1 > 0 } @pacer),
	'a backend running on a CPU: the restore was frugal (the machine looked busy)'
) or diag(join("\n", @pacer));

my $log = slurp_file($node->logfile);
unlike($log, qr/PostgreSQL's .* pg_warmcache expects/,
	'no self-check of the module that reads PostgreSQL internals failed');

$node->stop;
done_testing();
