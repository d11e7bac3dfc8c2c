# Copyright (c) 2026, pg_warmcache developers
#
# The count of warm workers and of the slots of max_worker_processes that
# parallel warming keeps.  A call that ends by a statement timeout or a
# cancel gives back the workers it counted: the same session's next call,
# and another session's, still start pg_warmcache.max_warm_workers
# workers.  With a parallel query's workers holding slots, a warm() leaves
# free the slots that the restore and the standby channel need, and a
# restore started meanwhile gets its workers at once and completes.  The
# oracles: pg_stat_activity, sampled while the calls run, and the server
# log.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use WarmCache::Cluster qw(start_node create_extensions relation_blocks
  occupy_worker_slots free_worker_slots);

# Eight slots: the logical replication launcher and the autowarm worker
# hold two; the restore (two workers) and the channel (one) need three.
my $node = start_node(
	'worker_count', q{
shared_buffers = 128MB
max_worker_processes = 8
max_parallel_workers = 8
pg_warmcache.restore_workers = 2
pg_warmcache.max_warm_workers = 2
pg_warmcache.min_parallel_warm_size = '1MB'
autovacuum = off
});
create_extensions($node);
$node->safe_psql(
	'postgres', q{
	CREATE TABLE t (id int, pad text);
	INSERT INTO t SELECT g, repeat('x', 600) FROM generate_series(1, 20000) g;
	CREATE TABLE small AS SELECT g FROM generate_series(1, 1000) g;
	ANALYZE small;
});
cmp_ok(relation_blocks($node, 't'), '>', 1500, 'table t is large enough to split');

# The warm workers pg_stat_activity shows now.
my $warm_sql =
  "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_warmcache warm'";

# Wait until $n warm workers run, or time out: the most seen.
sub wait_for_warm_workers
{
	my ($n) = @_;
	my $max = 0;
	foreach (1 .. 1000)
	{
		my $seen = $node->safe_psql('postgres', $warm_sql);
		$max = $seen if $seen > $max;
		last if $max >= $n;
		usleep(20_000);
	}
	return $max;
}

# Run warm('t') in session $s, every process waiting $delay before each
# stripe; sample pg_stat_activity until the call ends, calling $during
# once when the first warm worker is seen.  Returns the most warm workers
# seen at once.
sub sampled_warm
{
	my ($s, $delay, $during) = @_;
	my $pid = $s->query_safe(
		"SET pg_warmcache.warm_worker_delay = '$delay'; SELECT pg_backend_pid()");
	$s->query_until(qr/warming/, "\\echo warming\nSELECT warm('t');\n");
	my ($max, $called, $samples) = (0, 0, 0);
	foreach (1 .. 3000)
	{
		my ($seen, $active) = split /\|/,
		  $node->safe_psql('postgres',
			"SELECT ($warm_sql), count(*) FROM pg_stat_activity WHERE pid = $pid AND state = 'active'"
		  );
		$samples++;
		$max = $seen if $seen > $max;
		if ($during && !$called && $seen > 0)
		{
			$during->();
			$called = 1;
		}
		last if $active == 0 && $samples > 1;
		usleep(20_000);
	}
	$s->query_safe('SELECT 1');
	return $max;
}

#---- A call that ends early gives its workers back ----

my $s = $node->background_psql('postgres', on_error_stop => 0);
my $spid = $s->query_safe('SELECT pg_backend_pid()');
is(sampled_warm($s, '100ms'), 2,
	'first call: max_warm_workers workers ran');

# Ended by a statement timeout while its workers wait in their stripes.
$s->query_safe(
	"SET pg_warmcache.warm_worker_delay = '60s'; SET statement_timeout = '5s'");
$s->query_until(qr/warming/, "\\echo warming\nSELECT warm('t');\n");
is(wait_for_warm_workers(2), 2, 'timed out call: its workers ran');
$node->poll_query_until('postgres', "SELECT ($warm_sql) = 0")
  or die 'the workers of the timed out call are still there';
ok(1, 'timed out call: its workers are gone');
$s->query('SELECT 1');
like($s->{stderr}, qr/canceling statement due to statement timeout/,
	'the call ended by the statement timeout');
$s->{stderr} = '';
$s->query_safe('SET statement_timeout = 0');

is(sampled_warm($s, '200ms'), 2,
	'after a timed out call: the same session starts max_warm_workers workers'
);

# Ended by pg_cancel_backend().
$s->query_safe("SET pg_warmcache.warm_worker_delay = '60s'");
$s->query_until(qr/warming/, "\\echo warming\nSELECT warm('t');\n");
is(wait_for_warm_workers(2), 2, 'cancelled call: its workers ran');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($spid)");
$node->poll_query_until('postgres', "SELECT ($warm_sql) = 0")
  or die 'the workers of the cancelled call are still there';
$s->query('SELECT 1');
like($s->{stderr}, qr/canceling statement due to user request/,
	'the call was cancelled');
$s->{stderr} = '';

is(sampled_warm($s, '200ms'), 2,
	'after a cancelled call: the same session starts max_warm_workers workers'
);
my $other = $node->background_psql('postgres');
is(sampled_warm($other, '200ms'), 2,
	'after a cancelled call: another session starts max_warm_workers workers'
);
$other->quit;

#---- Other workers hold slots: the reserved ones stay free ----

# A parallel query whose two workers sleep until it is cancelled: with the
# two static workers, four slots are in use, and the three of the restore
# and the channel leave one for warm workers.
$node->safe_psql('postgres',
	'ALTER SYSTEM SET pg_warmcache.max_warm_workers = 6; SELECT pg_reload_conf()');
$node->poll_query_until('postgres',
	"SELECT current_setting('pg_warmcache.max_warm_workers') = '6'")
  or die 'max_warm_workers was not reloaded';
my ($h, $qpid) = occupy_worker_slots($node, 2, 'small');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type IN ('logical replication launcher', 'pg_warmcache autowarm', 'parallel worker')"
	),
	'4',
	'four slots are in use');

$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my $offset = -s $node->logfile;
my $max = sampled_warm(
	$s, '300ms',
	sub {
		$node->safe_psql('postgres', 'SELECT warmcache_restore_now()');
	});
cmp_ok($max, '>=', 1, 'beside the parallel query: a warm worker ran');
cmp_ok($max, '<=', 1,
	"beside the parallel query: the restore's and the channel's slots stay free (at most $max warm workers)"
);
$node->wait_for_log(qr/restore of the saved set (finished|incomplete): /,
	$offset);
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/could not start a restore worker/,
	"the restore's workers started at once");
like($log, qr/restore of the saved set finished: restored (\d+) of \1 blocks/,
	'the restore completed');

free_worker_slots($node, $h, $qpid);
$s->quit;

$node->stop;
done_testing();
