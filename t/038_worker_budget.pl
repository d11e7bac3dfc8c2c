# Copyright (c) 2026, pg_warmcache developers
#
# The worker budget of parallel warming.  A non-superuser's concurrent
# warm() calls never run more warm workers than max_parallel_workers (they
# count with parallel query's), nor, when the session raises that setting,
# more than leave the slots of max_worker_processes that the restore and
# the standby channel need (a restore started meanwhile gets its worker at
# once and completes), nor more than pg_warmcache.max_warm_workers in all
# sessions together; the non-superuser cannot raise that limit.  And a
# cancelled call's workers are gone when the error reaches the caller,
# whose DROP TABLE right after reads nothing dropped.  The oracles:
# pg_stat_activity, sampled while the calls run, and the server log.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use WarmCache::Cluster qw(start_node create_extensions relation_blocks
  fill_table);

# Eight slots: the logical replication launcher and the autowarm worker
# hold two; the restore (two workers) and the channel (one) need three of
# the other six, so warm workers may hold three at most.  Every process of
# a split warm waits before each stripe, so that the calls last a while.
my $node = start_node(
	'budget', q{
shared_buffers = 128MB
max_worker_processes = 8
max_parallel_workers = 2
pg_warmcache.restore_workers = 2
pg_warmcache.max_warm_workers = 6
pg_warmcache.min_parallel_warm_size = '1MB'
pg_warmcache.warm_worker_delay = '100ms'
autovacuum = off
});
create_extensions($node);
$node->safe_psql(
	'postgres', q{
	CREATE TABLE t (id int, pad text);
	INSERT INTO t SELECT g, repeat('x', 600) FROM generate_series(1, 20000) g;
	CREATE ROLE alice LOGIN;
	GRANT SELECT ON t TO alice;
	CREATE TABLE warm_stop (stop bool);
	GRANT SELECT ON warm_stop TO alice;
});
fill_table($node, 'r', 4);
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok(relation_blocks($node, 't'), '>', 1500, 'table t is large enough to split');

#---- The limit is the DBA's ----

{
	my ($ret, $stdout, $stderr) = $node->psql(
		'postgres', "\\set VERBOSITY verbose\nSET pg_warmcache.max_warm_workers = 64",
		extra_params => [ '-U', 'alice' ]);
	isnt($ret, 0, 'a non-superuser cannot SET max_warm_workers');
	like(
		$stderr,
		qr/42501: permission denied to set parameter "pg_warmcache.max_warm_workers"/,
		'the error says so');
	($ret, $stdout, $stderr) = $node->psql(
		'postgres', 'ALTER ROLE alice SET pg_warmcache.max_warm_workers = 64',
		extra_params => [ '-U', 'alice' ]);
	like($stderr, qr/permission denied to set parameter/,
		'nor make it the default of its role');
	is( $node->safe_psql(
			'postgres', 'SHOW pg_warmcache.max_warm_workers',
			extra_params => [ '-U', 'alice' ]),
		'6',
		'the DBA\'s value holds');
	$node->safe_psql('postgres', 'ALTER ROLE alice RESET ALL');
}

# Worker processes by kind, as pg_stat_activity shows them now.
my $count_sql = q{
SELECT count(*) FILTER (WHERE backend_type = 'pg_warmcache warm'),
       count(*) FILTER (WHERE backend_type = 'pg_warmcache restore'),
       count(*) FILTER (WHERE usename = 'alice' AND state = 'active'
                          AND backend_type = 'client backend')
  FROM pg_stat_activity};

# Run warm('t') over and over in each of $n sessions of alice at once,
# after the statements $setup; start a restore once warm workers run, and
# sample pg_stat_activity from one session (a connection per sample would
# cost more than the calls it watches): at least $min_samples times while
# the calls go on (a fixed count of calls could end between two samples on
# a fast machine), then until they end.  Returns the most warm workers seen
# at once, the number of samples, the log after the calls began, and
# whether the restore's worker was seen.
my $min_samples = 30;

sub concurrent_warms
{
	my ($n, $setup) = @_;
	my $offset = -s $node->logfile;
	my @sessions;
	$node->safe_psql('postgres', 'TRUNCATE warm_stop');
	foreach my $i (1 .. $n)
	{
		my $s = $node->background_psql('postgres',
			extra_params => [ '-U', 'alice' ]);
		$s->query_until(qr/warming/, qq{$setup
\\echo warming
DO \$\$
BEGIN
	LOOP
		PERFORM warm('t');
		EXIT WHEN EXISTS (SELECT FROM warm_stop);
	END LOOP;
END
\$\$;
});
		push @sessions, $s;
	}
	my ($max, $samples, $restore_started, $restore_seen) = (0, 0, 0, 0);
	my $stopped = 0;
	my $sampler = $node->background_psql('postgres');
	foreach (1 .. 3000)
	{
		my ($warm, $restore, $active) = split /\|/,
		  $sampler->query_safe($count_sql);
		$samples++;
		$max = $warm if $warm > $max;
		$restore_seen = 1 if $restore > 0;
		if (!$restore_started && $warm > 0)
		{
			$node->safe_psql('postgres', 'SELECT warmcache_restore_now()');
			$restore_started = 1;
		}
		if (!$stopped && $restore_started && $samples >= $min_samples)
		{
			$node->safe_psql('postgres', 'INSERT INTO warm_stop VALUES (true)');
			$stopped = 1;
		}
		last if $stopped && $active == 0;
		usleep(20_000);
	}
	$sampler->quit;
	$_->quit foreach @sessions;
	ok($restore_started, "$n calls: warm workers ran, and a restore started");
	$node->wait_for_log(qr/restore of the saved set (finished|incomplete): /,
		$offset);
	return ($max, $samples, slurp_file($node->logfile, $offset),
		$restore_seen);
}

# The restore ran beside the calls: no slot was missing for its worker.
sub restore_unhindered
{
	my ($log, $what) = @_;
	my @missed = $log =~ /(could not start a restore worker)/g;
	is(scalar @missed, 0, "$what: the restore's worker started at once");
	my ($line) = $log =~ /(restore of the saved set (?:finished|incomplete): .*)/;
	like($line, qr/^restore of the saved set finished: restored (\d+) of \1 blocks/,
		"$what: the restore completed");
	return;
}

#---- max_parallel_workers ----

my ($max, $samples, $log) = concurrent_warms(4, '');
cmp_ok($samples, '>=', $min_samples, "sampled $samples times");
cmp_ok($max, '>=', 1, 'warm workers ran');
cmp_ok($max, '<=', 2,
	"never more warm workers than max_parallel_workers (at most $max)");
restore_unhindered($log, 'within max_parallel_workers');

#---- The slots the restore and the channel need ----

# max_parallel_workers is a user setting: a session may raise it, for
# warm workers as for parallel query, but not into the reserved slots.
($max, $samples, $log) =
  concurrent_warms(4, 'SET max_parallel_workers = 8;');
cmp_ok($max, '>=', 1, 'max_parallel_workers raised: warm workers ran');
cmp_ok($max, '<=', 3,
	"max_parallel_workers raised: the restore's and the channel's slots stay free (at most $max warm workers)"
);
restore_unhindered($log, 'max_parallel_workers raised');

#---- pg_warmcache.max_warm_workers: all sessions together ----

$node->safe_psql('postgres',
	'ALTER SYSTEM SET pg_warmcache.max_warm_workers = 1; SELECT pg_reload_conf()');
$node->poll_query_until('postgres',
	"SELECT current_setting('pg_warmcache.max_warm_workers') = '1'")
  or die 'max_warm_workers was not reloaded';
($max, $samples, $log) =
  concurrent_warms(3, 'SET max_parallel_workers = 8;');
is($max, 1, 'max_warm_workers = 1: one warm worker at a time in the server');
$node->safe_psql('postgres',
	'ALTER SYSTEM RESET pg_warmcache.max_warm_workers; SELECT pg_reload_conf()');
$node->poll_query_until('postgres',
	"SELECT current_setting('pg_warmcache.max_warm_workers') = '6'")
  or die 'max_warm_workers was not reloaded';

#---- A cancelled call: its workers are gone when the error returns ----

# The processes wait a minute before each stripe; the caller is cancelled
# while its workers wait.  Inside its own statement, right where the error
# is caught, it notes the processes it sees (it may not see their kind:
# the workers run as the bootstrap superuser) and drops the table.  The workers
# are stopped (SIGSTOP) when the caller is cancelled and go on a second
# later, or once the caller has caught the error: they cannot be gone
# before then unless the caller waits for them.
$node->safe_psql(
	'postgres', q{
	CREATE TABLE c (id int, pad text);
	INSERT INTO c SELECT g, repeat('x', 600) FROM generate_series(1, 20000) g;
	ALTER TABLE c OWNER TO alice;
	ALTER ROLE alice SET pg_warmcache.warm_worker_delay = '60s';
	CREATE TABLE seen (pid int);
	GRANT INSERT, SELECT ON seen TO alice;
});
my $offset = -s $node->logfile;
my $caller = $node->background_psql('postgres',
	extra_params => [ '-U', 'alice' ]);
$caller->query_until(
	qr/warming/, q{\echo warming
DO $$
BEGIN
	PERFORM warm('c');
EXCEPTION WHEN query_canceled THEN
	INSERT INTO seen SELECT pid FROM pg_stat_activity;
	DROP TABLE c;
END
$$;
});
$node->poll_query_until('postgres',
	"SELECT count(*) >= 2 AND bool_and(query LIKE 'warming stripe%') FROM pg_stat_activity WHERE backend_type = 'pg_warmcache warm'"
) or die 'the warm workers do not wait in their stripes';
my @workers = split /\n/,
  $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_warmcache warm'");
my $workers = join(',', @workers);
kill 'STOP', @workers;
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'alice' AND backend_type = 'client backend'"
);
foreach (1 .. 10)
{
	last if $node->safe_psql('postgres', 'SELECT count(*) FROM seen') > 0;
	usleep(100_000);
}
kill 'CONT', @workers;
$caller->query_safe('SELECT 1');
$caller->quit;
is($node->safe_psql('postgres', "SELECT count(*) FROM seen WHERE pid IN ($workers)"),
	'0', 'cancelled: no warm worker is alive when the error reaches the caller');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM seen'),
	'>', 0, 'cancelled: the caller saw the processes there were');
is($node->safe_psql('postgres', "SELECT to_regclass('c') IS NULL"),
	't', 'cancelled: DROP TABLE in the same session right after goes through');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE pid IN ($workers)"),
	'0',
	'cancelled: the workers are gone');
$log = slurp_file($node->logfile, $offset);
like($log, qr/terminating background worker "pg_warmcache warm"/,
	'cancelled: the workers were terminated');
my @errors = $log =~ /((?:ERROR|could not (?:open|read)|does not exist).*)/g;
is(join("\n", @errors), '', 'cancelled: no worker read the dropped table');
unlike($log, qr/did not exit within/, 'cancelled: the workers exited in time');

$node->stop;
done_testing();
