# Copyright (c) 2026, pg_warmcache developers
#
# pg_warmcache under a real high-availability manager: etcd and three
# Patroni members on loopback, the library and pg_warmcache.follow_primary
# = buffer set through Patroni's dynamic configuration, the extension in
# database postgres, a read-only pgbench load on the leader.  It checks a
# switchover there and back, a failover after the leader's postmaster gets
# SIGKILL, the old leader rejoining and following the new one, and a
# restart of a replica by patronictl with its own restore.  The oracle is
# pg_buffercache on the new leader right after it accepts writes: the hot
# table's blocks are in shared buffers.  Skipped if Patroni or etcd is
# missing (test/install-deps installs them).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use File::Path qw(make_path);
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use WarmCache::Turnstile ();    # takes this test's turn (test/run)

my $python = '/usr/bin/python3';
my $patroni = '/usr/bin/patroni';
my $patronictl = '/usr/bin/patronictl';
my $etcd = '/usr/bin/etcd';
for my $bin ($python, $patroni, $patronictl, $etcd)
{
	plan skip_all => "$bin is not installed (test/install-deps installs it)"
	  unless -x $bin;
}
plan skip_all => 'the Python module etcd is missing (python3-etcd)'
  if system("$python -c 'import etcd, psycopg2' 2>/dev/null") != 0;

# Patroni 3.0.2 (bookworm) predates PostgreSQL 16, but manages 18 here
# as well as 15: its list of known server parameters stops at 15 (it drops newer
# ones given in its configuration, with a warning; extension parameters
# pass), and it still lists promote_trigger_file among the recovery
# settings it compares, which 16 removed; neither matters to this test.
# 17 and 19 run with the Patroni of their own Debian suite (trixie's,
# sid's).
my $bindir = `pg_config --bindir`;
chomp $bindir;

# Every wait is bounded; the whole test takes a few minutes at most.
my $timeout = $PostgreSQL::Test::Utils::timeout_default;

my $base = "$PostgreSQL::Test::Utils::tmp_check/patroni";
my $sockdir = PostgreSQL::Test::Utils::tempdir_short();
make_path($base);
my @harnesses;
my %member;

# A test killed by a signal still runs its END block.
$SIG{$_} = sub { die "killed by SIG$_[0]\n" } for qw(INT TERM HUP);

END
{
	# The test's exit status, which what is run here would replace.
	local $?;

	# Whatever happened: Patroni first (it would restart its server),
	# then every server, then etcd.
	for my $h (reverse @harnesses)
	{
		eval { $h->kill_kill(grace => 10) if $h->pumpable; };
	}
	for my $m (values %member)
	{
		my $pidfile = "$m->{data}/postmaster.pid";
		next unless -f $pidfile;
		system("$bindir/pg_ctl", '-D', $m->{data}, '-m', 'immediate',
			'-w', 'stop');
	}
}

# ---- etcd

my $etcd_port = PostgreSQL::Test::Cluster::get_free_port();
my $peer_port = PostgreSQL::Test::Cluster::get_free_port();
push @harnesses,
  IPC::Run::start(
	[
		$etcd, '--name', 'pgwc', '--data-dir', "$base/etcd",
		'--listen-client-urls', "http://127.0.0.1:$etcd_port",
		'--advertise-client-urls', "http://127.0.0.1:$etcd_port",
		'--listen-peer-urls', "http://127.0.0.1:$peer_port",
		'--initial-advertise-peer-urls', "http://127.0.0.1:$peer_port",
		'--initial-cluster', "pgwc=http://127.0.0.1:$peer_port",
		'--enable-v2=true'
	],
	'<', \undef, '>', "$base/etcd.log", '2>&1');
poll(sub { system("curl -sf http://127.0.0.1:$etcd_port/health >/dev/null") == 0 },
	'etcd to answer');

# ---- Three Patroni members

for my $name (qw(m1 m2 m3))
{
	my $m = $member{$name} = {
		name => $name,
		port => PostgreSQL::Test::Cluster::get_free_port(),
		rest => PostgreSQL::Test::Cluster::get_free_port(),
		data => "$base/$name/data",
		log => "$base/$name/log",
		conf => "$base/$name.yml",
	};
	make_path("$base/$name/log");
	chmod 0700, "$base/$name";
	open(my $fh, '>', $m->{conf}) or die "could not write $m->{conf}: $!";
	print $fh <<"EOF";
scope: pgwc
name: $name
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$m->{rest}
  connect_address: 127.0.0.1:$m->{rest}
etcd:
  host: 127.0.0.1:$etcd_port
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    primary_start_timeout: 0
    maximum_lag_on_failover: 1073741824
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        shared_preload_libraries: pg_warmcache
        pg_warmcache.follow_primary: buffer
        pg_warmcache.dump_interval: 3
        shared_buffers: 64MB
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        hot_standby: 'on'
        autovacuum: 'off'
  initdb:
    - encoding: UTF8
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$m->{port}
  connect_address: 127.0.0.1:$m->{port}
  use_unix_socket: true
  data_dir: $m->{data}
  bin_dir: $bindir
  pgpass: $base/$name/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '$sockdir'
    logging_collector: 'on'
    log_directory: '$m->{log}'
    log_filename: 'postgresql.log'
    log_file_mode: '0640'
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
EOF
	close($fh);
}

# m1 bootstraps the cluster alone and gets the hot table, so that the
# others clone it cold: replay of its loading would warm their buffers.
start_member('m1');
poll(sub { (leader() // '') eq 'm1' }, 'm1 to bootstrap the cluster');
my $leader = 'm1';
sql($leader, 'CREATE EXTENSION pg_warmcache');
sql($leader, 'CREATE EXTENSION pg_buffercache');
system_or_bail("$bindir/pgbench", '-q', '-i', '-s', '1', '-h', $sockdir,
	'-p', $member{$leader}{port}, '-U', 'postgres', 'postgres');
# The hot set: the table pgbench -S reads, all of it in shared buffers.
sql($leader, "SELECT warm('pgbench_accounts')");
sql($leader, 'CHECKPOINT');
start_member($_) for qw(m2 m3);
wait_members(3, 'three members running');
is(leader(), 'm1', 'm1 leads');
is(sql($leader, "SHOW pg_warmcache.follow_primary"),
	'buffer', "Patroni's dynamic configuration set follow_primary");

# ---- Switchover there and back, failover, each under a read-only load.

my $load = start_load($leader);
settle($leader);
$leader = switch_to($leader, 'm2', 'switchover to m2');
$load->kill_kill;
$load = start_load($leader);
settle($leader);
$leader = switch_to($leader, 'm1', 'switchover back to m1');
$load->kill_kill;
$load = start_load($leader);
settle($leader);

# Failover: the leader's postmaster gets SIGKILL; Patroni does not restart
# it in place (primary_start_timeout 0) but lets a replica take over.
my $old = $leader;
my $pid = (split /\n/, slurp_file("$member{$old}{data}/postmaster.pid"))[0];
my $t0 = Time::HiRes::time();
kill 'KILL', $pid;
$load->kill_kill;
poll(sub { my $l = leader(); defined $l && $l ne $old && !in_recovery($l) },
	'a replica to take over after the SIGKILL');
$leader = leader();
note(sprintf('failover: %s leads after %.1f s', $leader,
		Time::HiRes::time() - $t0));
check_new_leader($leader, "failover from $old to $leader");
check_follows($old, $leader, "after the failover, $old");

# ---- patronictl restart of a replica: its own restore at start.

my ($replica) = grep { $_ ne $leader && $_ ne $old } sort keys %member;
my $log = "$member{$replica}{log}/postgresql.log";
my $offset = -s $log;
run_ctl('restart', 'pgwc', $replica, '--force');
poll(
	sub {
		substr(slurp_file($log), $offset) =~
		  /restore of the saved set (?:finished|incomplete): restored (\d+) of (\d+)/
		  && $1 > 0;
	},
	"$replica to restore its saved set after the restart");
like(substr(slurp_file($log), $offset),
	qr/restoring \d+ blocks .* from "pg_warmcache\.blocks"/,
	"the restarted replica $replica restored its own saved file");
check_follows($replica, $leader, "after the restart, $replica");

done_testing();

# ---- Helpers

sub start_member
{
	my ($name) = @_;
	push @harnesses,
	  IPC::Run::start([ $python, $patroni, $member{$name}{conf} ],
		'<', \undef, '>', "$base/$name/patroni.log", '2>&1');
	return;
}

# Call $cond until it is true, at most the default timeout; die saying
# what it waited for.
sub poll
{
	my ($cond, $what) = @_;
	my $end = Time::HiRes::time() + $timeout;
	while (Time::HiRes::time() < $end)
	{
		my $ok = eval { $cond->() };
		return 1 if $ok;
		Time::HiRes::sleep(0.25);
	}
	die "timed out waiting for $what";
}

# patronictl with member m1's configuration (any member's would do).
sub run_ctl
{
	my @args = @_;
	my ($out, $err);
	IPC::Run::run([ $python, $patronictl, '-c', $member{m1}{conf}, @args ],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($timeout));
	return ($? == 0, $out, $err);
}

# The members as patronictl lists them: name => {Role, State, ...}.
sub members
{
	my ($ok, $out) = run_ctl('list', '-f', 'json');
	return {} unless $ok;
	return { map { $_->{Member} => $_ } @{ decode_json($out) } };
}

sub leader
{
	my $m = members();
	my ($l) = grep { $m->{$_}{Role} eq 'Leader' && $m->{$_}{State} eq 'running' }
	  keys %$m;
	return $l;
}

sub wait_members
{
	my ($n, $what) = @_;
	poll(
		sub {
			my $m = members();
			(grep { $_->{State} =~ /^(running|streaming)$/ } values %$m) == $n;
		},
		$what);
	return;
}

# Run $sql on member $name's server in database postgres; its output.
sub sql
{
	my ($name, $sql) = @_;
	my ($out, $err);
	IPC::Run::run(
		[
			"$bindir/psql", '-XAtq', '-h', $sockdir, '-p', $member{$name}{port},
			'-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1',
			'-c', $sql
		],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($timeout));
	die "psql on $name failed: $err" if $?;
	chomp $out;
	return $out;
}

sub in_recovery
{
	my ($name) = @_;
	return sql($name, 'SELECT pg_is_in_recovery()') eq 't';
}

# A read-only pgbench on member $name's server, 2 clients, for 60 s at
# most; the caller kills it sooner.
sub start_load
{
	my ($name) = @_;
	return IPC::Run::start(
		[
			"$bindir/pgbench", '-n', '-S', '-c', '2', '-T', '60', '-h', $sockdir,
			'-p', $member{$name}{port}, '-U', 'postgres', 'postgres'
		],
		'<', \undef, '>', "$base/pgbench.log", '2>&1');
}

# The hot table's blocks in shared buffers of member $name, and its size.
sub hot_cached
{
	my ($name) = @_;
	return split /\|/, sql(
		$name, q{
SELECT (SELECT count(*) FROM pg_buffercache
         WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = 'postgres')
           AND relfilenode = pg_relation_filenode('pgbench_accounts')
           AND relforknumber = 0),
       pg_relation_size('pgbench_accounts') / 8192});
}

# Under the load, the leader dumps (every 3 s) and publishes; wait until
# every replica follows a dump that holds the hot table and a pass has
# warmed it.
sub settle
{
	my ($name) = @_;
	# Two statements: in one, warmcache_status() in FROM would be read
	# before warmcache_dump_now() ran, and say no dump on a new leader.
	sql($name, 'SELECT warmcache_dump_now()');
	my $dumped = sql($name, 'SELECT last_dump_at FROM warmcache_status()');
	die "no dump on $name" if $dumped eq '';
	for my $r (grep { $_ ne $name } sort keys %member)
	{
		poll(
			sub {
				sql($r,
					"SELECT follow_state = 'following' AND followed_dump_at >= '$dumped' AND warmcache_is_warm(0.9) FROM warmcache_status()"
				) eq 't';
			},
			"$r to follow $name");
	}
	return;
}

# The new leader holds the hot table in shared buffers the moment it
# accepts writes, and says it is warm.
sub check_new_leader
{
	my ($name, $what) = @_;
	poll(sub { !in_recovery($name) }, "$name to accept writes");
	my ($cached, $blocks) = hot_cached($name);
	cmp_ok($cached, '>=', 0.9 * $blocks,
		"$what: right after promotion, shared buffers hold the hot table ($cached of $blocks blocks)"
	);
	cmp_ok(sql($name, 'SELECT warmcache_wait_warm(0.9, 60)'),
		'>=', 0.9, "$what: and the new leader says it is warm");
	return;
}

# Member $name runs as a replica of $leader and follows its hot set: its
# followed dump is one $leader wrote after $name came back.
sub check_follows
{
	my ($name, $leader, $what) = @_;
	poll(
		sub {
			my $m = members();
			$m->{$name}{Role} ne 'Leader'
			  && $m->{$name}{State} =~ /^(running|streaming)$/
			  && in_recovery($name);
		},
		"$name to run as a replica");
	my $since = sql($name, 'SELECT now()');
	sql($leader, 'SELECT warmcache_dump_now()');
	poll(
		sub {
			sql($name,
				"SELECT follow_state = 'following' AND followed_dump_at > '$since' FROM warmcache_status()"
			) eq 't';
		},
		"$name to follow $leader");
	pass("$what follows the new leader's hot set");
	return;
}

# Switch the leadership from $from to $to with patronictl; check the new
# leader; return it.
sub switch_to
{
	my ($from, $to, $what) = @_;
	my ($ok, $out, $err) =
	  run_ctl('switchover', 'pgwc', '--leader', $from, '--candidate', $to,
		'--force');
	ok($ok, "$what: patronictl switchover") or diag("$out\n$err");
	poll(sub { (leader() // '') eq $to }, "$to to lead");
	check_new_leader($to, $what);
	check_follows($from, $to, "$what: the old leader $from");
	return $to;
}
