# Copyright (c) 2026, pg_warmcache developers
#
# Backends that have exited do not count as queries running on a CPU.
#
# The restore looks at the other backends' PGPROCs (src/pg_internals.c)
# and takes the CPUs for the queries' while as many of them run on a CPU
# as there are CPUs.  A PGPROC freed by an exit keeps its pid up to 16,
# with no wait event: taken for a live one, it would make every later
# restore take the CPUs for the queries'.  From 17 a freed PGPROC's pid is
# 0.  Either way, after 50 connections have ended, a restore beside
# processes that keep every CPU busy (not backends) must not: the pacer's
# line at DEBUG1 says "CPUs busy 0.0 s" and no sleep for the CPU budget,
# and the whole table goes into shared buffers, none of it to the OS cache
# only.  Nor beside one backend fewer running than CPUs: load from outside
# the server is not the queries' (1.3 read the machine's run queue and
# held back here).  A last restore beside as many running backends as
# CPUs must find the CPUs busy, which shows that the pacer does see them,
# so that the first cases tested something.  The busy loops would slow any
# test beside this one: it runs alone.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use WarmCache::Turnstile qw(:machine_alone);
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  wait_for_restore_line cached fill_table busy_backends);

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
	  /DEBUG:  pacer over the buffer tier: (.*)\n/g;
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
	like($p, qr/^CPUs busy 0\.0 s, .* slept 0\.0 s for the CPU budget/,
		'ended connections: the restore never found the CPUs busy and never slept for the CPU budget'
	);
}
is(cached($node, 't'), $blocks,
	'ended connections: all of t went into shared buffers');
is(status($node, 'restore_blocks_os_only'), '0',
	'ended connections: no block went to the OS cache only');

# Load from outside the server does not hold the restore back: with one
# CPU fewer than there are running backends of this server, the restore
# never finds the CPUs busy, though the spinners keep the machine's run queue full.
SKIP:
{
	skip 'one CPU only', 3 if $ncpus < 2;
	($line, @pacer) = restore_busy(sub { busy_backends($node, $ncpus - 1) });
	note "restore beside " . ($ncpus - 1) . " busy backends and the spinners: $line";
	ok(!(grep { !/^CPUs busy 0\.0 s, .* slept 0\.0 s for the CPU budget/ } @pacer),
		'busy backends fewer than CPUs, the machine loaded from outside: the restore never found the CPUs busy'
	) or diag(join("\n", @pacer));
	is(cached($node, 't'), $blocks,
		'busy backends fewer than CPUs: all of t went into shared buffers');
	is(status($node, 'restore_blocks_os_only'), '0',
		'busy backends fewer than CPUs: no block went to the OS cache only');
}

# The control: as many backends as CPUs run throughout.
($line, @pacer) = restore_busy(sub { busy_backends($node, $ncpus) });
note "restore beside $ncpus busy backends: $line";
ok( (grep { /^CPUs busy (\d+\.\d) s/ && $1 > 0 } @pacer),
	'as many backends running as CPUs: the restore found the CPUs busy'
) or diag(join("\n", @pacer));

my $log = slurp_file($node->logfile);
unlike($log, qr/PostgreSQL's .* pg_warmcache expects/,
	'no self-check of the module that reads PostgreSQL internals failed');

$node->stop;
done_testing();
