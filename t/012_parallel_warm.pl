# Copyright (c) 2026, pg_warmcache developers
#
# Parallel warming: warm() and warm_table() of a relation fork of at least
# pg_warmcache.min_parallel_warm_size split it among background workers.
# The results are those of a single process in every mode (the count, and
# in mode buffer the very blocks pg_buffercache shows), with and without
# preloading, with no free worker slots, for a relation that DROP TABLE is
# waiting for (the lock queue hazard: workers join the caller's lock group),
# when a worker is terminated (the caller warms its stripe), and a cancelled
# call terminates its workers.  Its own temporary tables, storage created in
# the same transaction and a missing privilege never start workers.  In mode
# buffer the workers prefault the memory of the buffers the call fills,
# after a restart, unless I/O workers copy the blocks (18, io_method =
# worker), and in no other mode.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use WarmCache::Cluster qw(start_node create_extensions relation_blocks);

my $node = start_node(
	'parallel_warm', q{
shared_buffers = 128MB
max_worker_processes = 8
pg_warmcache.autowarm = off
log_statement = none
});
create_extensions($node);
$node->safe_psql(
	'postgres', q{
	CREATE TABLE t (id int PRIMARY KEY, pad text) WITH (autovacuum_enabled = off);
	INSERT INTO t SELECT g, repeat('x', 600) FROM generate_series(1, 20000) g;
	VACUUM t;
	CREATE ROLE nobody LOGIN;
});
my $blocks = relation_blocks($node, 't');
my $prefaults = $node->safe_psql('postgres',
	"SELECT coalesce(current_setting('io_method', true), 'sync') <> 'worker'")
  eq 't';
cmp_ok($blocks, '>', 1500, "table t has $blocks blocks");

# Settings that make t large enough to be split, and every process wait
# 10 ms before each stripe, so that the workers get some.
my $parallel = q{SET client_min_messages = debug1;
SET pg_warmcache.min_parallel_warm_size = '1MB';
SET pg_warmcache.warm_worker_delay = '10ms';
};

# Run $call with $workers workers at most; returns its result, the
# numbers of workers started and planned (-1 if no workers were planned),
# the stripes the workers warmed and the buffers they prefaulted.
sub warm_with
{
	my ($call, $workers, $n) = @_;
	my ($ret, $stdout, $stderr) = ($n // $node)->psql(
		'postgres', "$parallel SET pg_warmcache.max_warm_workers = $workers;
SELECT $call;",
		on_error_stop => 1);
	die "$call failed: $stderr" if $ret != 0;
	my ($started, $planned, $by_workers, $prefaulted) = (-1, -1, 0, 0);
	if ($stderr =~ /with (\d+) of (\d+) workers/)
	{
		($started, $planned) = ($1, $2);
	}
	$by_workers += $1 while ($stderr =~ /the workers warmed (\d+) of/g);
	$prefaulted += $1 while ($stderr =~ /and prefaulted (\d+) buffers/g);
	return ($stdout, $started, $planned, $by_workers, $prefaulted);
}

# The blocks of t's main fork in shared buffers, by number.
sub cached_list
{
	my ($rel) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT coalesce(string_agg(relblocknumber::text, ',' ORDER BY relblocknumber), '')
  FROM pg_buffercache
 WHERE relfilenode = pg_relation_filenode('$rel') AND relforknumber = 0
   AND reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())});
}

#---- The same results in every mode ----

foreach my $call ("warm('t', '%s')", "warm('t', '%s', 'main', 100, 1499)",
	"warm('t_pkey', '%s')", "warm_table('t', '%s')")
{
	foreach my $mode ('buffer', 'read', 'prefetch')
	{
		my $sql = sprintf($call, $mode);
		my %res;
		foreach my $w (0, 2)
		{
			$node->restart;
			my ($n, $started, $planned, $by_workers, $prefaulted) =
			  warm_with($sql, $w);
			$res{$w} = [ $n, cached_list('t'), cached_list('t_pkey') ];
			if ($w == 0 || $mode eq 'prefetch' || $call =~ /t_pkey/)
			{
				# The index is small, prefetch is never split.
				is($started, -1, "$sql with $w workers: alone");
			}
			else
			{
				is($started, 2, "$sql: 2 workers started");
				cmp_ok($by_workers, '>', 0, "$sql: the workers warmed stripes");
				if ($mode eq 'buffer' && $prefaults)
				{
					cmp_ok($prefaulted, '>', 0,
						"$sql: the workers prefaulted buffers");
				}
				else
				{
					is($prefaulted, 0, "$sql: no prefaulting");
				}
			}
		}
		is($res{2}[0], $res{0}[0], "$sql: the same count with workers");
		is($res{2}[1], $res{0}[1],
			"$sql: the same blocks of t in shared buffers");
		is($res{2}[2], $res{0}[2],
			"$sql: the same blocks of t_pkey in shared buffers");
		if ($mode ne 'buffer')
		{
			is($res{2}[1], '', "$sql: shared buffers untouched");
		}
	}
}
my ($n) = warm_with("warm('t')", 2);
is($n, $blocks, 'warm() counts every block');
is(cached_list('t'), join(',', 0 .. $blocks - 1),
	'every block of t is in shared buffers');

#---- Never in parallel ----

# Its own temporary table lives in local buffers.
my ($out, $started) = warm_with(
	"1;
CREATE TEMP TABLE tt AS SELECT g, repeat('y', 600) AS pad FROM generate_series(1, 20000) g;
SELECT warm('tt')", 2);
like($out, qr/\b(\d{4,})$/, 'its own temporary table is warmed');
is($started, -1, 'its own temporary table is warmed alone');

# Storage made in the same transaction is not visible to workers.
($out, $started) = warm_with(
	"1;
BEGIN;
CREATE TABLE fresh AS SELECT g, repeat('z', 600) AS pad FROM generate_series(1, 20000) g;
SELECT warm('fresh') = pg_relation_size('fresh') / 8192;
TRUNCATE t;
INSERT INTO t SELECT g, repeat('x', 600) FROM generate_series(1, 20000) g;
SELECT warm('t') = pg_relation_size('t') / 8192;
ROLLBACK", 2);
is($out, "1\nt\nt", 'new storage of this transaction is warmed');
is($started, -1, 'new storage of this transaction is warmed alone');

# Privileges are checked before anything starts.
{
	my ($ret, $stdout, $stderr) = $node->psql(
		'postgres', "$parallel SET pg_warmcache.max_warm_workers = 2;
SET ROLE nobody; \\set VERBOSITY verbose\nSELECT warm('t')");
	like($stderr, qr/42501/, 'without SELECT: permission denied');
	unlike($stderr, qr/of \d+ workers/, 'without SELECT: no worker planned');
}

#---- No free worker slots ----

# The autowarm worker takes the only slot.
$node->append_conf('postgresql.conf',
	"max_worker_processes = 1\nmax_logical_replication_workers = 0");
$node->restart;
my ($count, $planned);
($count, $started, $planned) = warm_with("warm('t')", 2);
is($count, $blocks, 'without free slots: every block');
is("$started of $planned", '0 of 2', 'without free slots: alone');
is(cached_list('t'), join(',', 0 .. $blocks - 1),
	'without free slots: every block of t in shared buffers');
$node->append_conf('postgresql.conf',
	"max_worker_processes = 8\nmax_logical_replication_workers = 4");
$node->restart;

# Start warm('$rel') with 2 workers in the background session $session,
# every process waiting $delay before each stripe.
sub start_warm
{
	my ($session, $rel, $delay) = @_;
	$session->{stderr} = '';
	$session->query_until(qr/warming/,
		"$parallel SET pg_warmcache.max_warm_workers = 2;
SET pg_warmcache.warm_worker_delay = '$delay';
\\echo warming
SELECT warm('$rel');
");
	return;
}

#---- DROP TABLE waiting in the lock queue ----

# The caller holds its lock, and DROP TABLE queues behind it before the
# workers ask for theirs: outside the caller's lock group they would queue
# behind the DROP, which waits for the caller, which waits for them.
$node->safe_psql('postgres',
	"CREATE TABLE d AS SELECT g, repeat('x', 600) AS pad FROM generate_series(1, 20000) g"
);
my $d_blocks = relation_blocks($node, 'd');
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query_safe('BEGIN; LOCK TABLE d IN ACCESS SHARE MODE');
my $dropper = $node->background_psql('postgres');
$dropper->query_until(qr/dropping/, "\\echo dropping\nDROP TABLE d;\n");
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_locks WHERE NOT granted AND relation = 'd'::regclass AND mode = 'AccessExclusiveLock'"
) or die 'DROP TABLE does not wait';
$holder->{stderr} = '';
$out = $holder->query("$parallel SET pg_warmcache.max_warm_workers = 2;
SELECT warm('d')");
is($out, $d_blocks, 'with DROP TABLE waiting, warm() warms every block');
like($holder->{stderr}, qr/with 2 of 2 workers/, 'with DROP TABLE waiting: 2 workers');
unlike($holder->{stderr}, qr/again/, 'the workers did their stripes');
$holder->query('RESET client_min_messages; COMMIT');
$dropper->query_safe('SELECT 1');
is($node->safe_psql('postgres', "SELECT to_regclass('d') IS NULL"),
	't', 'then DROP TABLE goes through');
$dropper->quit;

#---- DROP TABLE while the workers run ----

# Every process waits 0.5 s before each stripe.
$node->safe_psql('postgres',
	"CREATE TABLE d2 AS SELECT g, repeat('x', 600) AS pad FROM generate_series(1, 20000) g"
);
my $d2_blocks = relation_blocks($node, 'd2');
start_warm($holder, 'd2', '500ms');
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'pg_warmcache warm'"
) or die 'no warm worker runs';
$dropper = $node->background_psql('postgres');
$dropper->query_until(qr/dropping/, "\\echo dropping\nDROP TABLE d2;\n");
$out = $holder->query('RESET pg_warmcache.warm_worker_delay');
like($out, qr/^$d2_blocks$/m, 'DROP TABLE during warm(): every block warmed');
$dropper->query_safe('SELECT 1');
is($node->safe_psql('postgres', "SELECT to_regclass('d2') IS NULL"),
	't', 'DROP TABLE during warm(): then the table is gone');
$dropper->quit;

#---- A terminated worker: the caller warms its stripe ----

$node->restart;
$holder = $node->background_psql('postgres', on_error_stop => 0);
start_warm($holder, 't', '300ms');
$node->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'pg_warmcache warm' AND query LIKE 'warming stripe%'"
) or die 'the warm workers do not claim stripes';
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'pg_warmcache warm'"
);
$out = $holder->query('RESET pg_warmcache.warm_worker_delay');
like($out, qr/^$blocks$/m, 'terminated workers: the same count');
like($holder->{stderr}, qr/warming stripe \d+ of "t" again/,
	'terminated workers: the caller warms their stripes');
is(cached_list('t'), join(',', 0 .. $blocks - 1),
	'terminated workers: every block of t in shared buffers');

#---- Cancel ----

# Every process would wait a minute before its first stripe; the
# cancelled caller must not leave its workers behind.
start_warm($holder, 't', '60s');
$node->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'pg_warmcache warm'"
) or die 'no warm worker runs';
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE '%SELECT warm(''t'')%' AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
);
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$holder->query('SELECT 1');
like($holder->{stderr}, qr/canceling statement due to user request/,
	'the call is cancelled');
my $gone = 0;
foreach (1 .. 100)
{
	if ($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_warmcache warm'"
		) == 0)
	{
		$gone = 1;
		last;
	}
	usleep(100_000);
}
ok($gone, 'cancelled: the workers end within 10 s, not after their minute');
$holder->quit;

#---- Without preloading ----

my $plain = PostgreSQL::Test::Cluster->new('parallel_warm_plain');
$plain->init;
$plain->start;
$plain->safe_psql(
	'postgres', q{
	CREATE EXTENSION pg_warmcache;
	CREATE TABLE t (id int, pad text);
	INSERT INTO t SELECT g, repeat('x', 600) FROM generate_series(1, 20000) g;
});
my $plain_blocks = relation_blocks($plain, 't');
$plain->restart;
($count, $started) = warm_with("warm('t')", 2, $plain);
is($count, $plain_blocks, 'without preloading: every block');
is($started, -1, 'without preloading: alone');
my ($alone) = warm_with("warm_table('t', 'read')", 0, $plain);
($count, $started) = warm_with("warm_table('t', 'read')", 2, $plain);
is($count, $alone, 'without preloading: warm_table() the same');
is($started, -1, 'without preloading: warm_table() alone');
$plain->stop;

$node->stop;
done_testing();
