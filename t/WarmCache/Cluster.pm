# Copyright (c) 2026, pg_warmcache developers
#
# WarmCache::Cluster - the nodes of pg_warmcache's TAP tests and the
# queries on them that several tests repeat: a node with pg_warmcache
# preloaded, a cold restart, warmcache_status() and the waits on it, the
# restore workers, blocks in shared buffers by pg_buffercache, filled
# tables, timed statements and lock waits, backends that keep a CPU busy,
# parallel queries that hold worker slots, a walk held in open() and a
# server stopped without waiting, and the standby channel's standbys and
# publications.  The tests keep their assertions; nothing here checks
# anything, but psql_fails, which counts the failure it expects as one
# test.  A test in t/ imports what it uses by name:
#
#   use FindBin;
#   use lib $FindBin::RealBin;
#   use WarmCache::Cluster qw(start_node create_extensions status);
#
# The dump file is WarmCache::DumpFormat's, the OS page cache
# WarmCache::PageCache's.

package WarmCache::Cluster;

use strict;
use warnings;

use Exporter qw(import);
use IPC::Run ();
use Fcntl ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use WarmCache::Turnstile ();

our @EXPORT_OK = qw(
  start_node
  create_extensions
  restart_cold
  status
  wait_for_status
  wait_for_restore
  wait_for_restore_line
  psql_fails
  relation_blocks
  cached
  fill_table
  wait_for_restore_worker
  new_worker_pid
  wait_for_kept_file
  timed_psql
  lock_wait
  busy_backends
  occupy_worker_slots
  free_worker_slots
  database_dir
  release_fifo_reader
  wait_until_stopped
  following_standby
  publish_dump
  wait_for_followed_pass
);

# $node->init(%init), with a copy of $ENV{INITDB_TEMPLATE} (test/run makes
# one per major) where init() would run initdb with no options of its own.
# From 17 on init() copies the template itself; on 15, whose init() does
# not know it, its call of initdb is made a copy here, for the time of the
# call.  initdb is the larger part of a small test's CPU.  Every copy has
# the template's system identifier and mock authentication nonce: a test
# that needs a cluster of its own passes force_initdb => 1.
sub init_from_template
{
	my ($node, %init) = @_;
	my $template = $init{force_initdb} ? undef : $ENV{INITDB_TEMPLATE};
	my $run = \&PostgreSQL::Test::Utils::system_or_bail;
	no warnings 'redefine';
	local *PostgreSQL::Test::Utils::system_or_bail = sub {
		return $run->('cp', '-RPp', $template, $_[2])
		  if defined $template
		  && join(' ', @_[ 0, 1, 3 .. $#_ ]) eq 'initdb -D -A trust -N';
		return $run->(@_);
	};
	$node->init(%init);
	return;
}

# A new node, initialized with the arguments %init of init() and started,
# with pg_warmcache preloaded, its periodic dumps off
# (pg_warmcache.dump_interval = 0), the dumps' OS tier off (most tests
# compare the dump with shared buffers; the OS tier's own tests turn it on)
# and the lines $conf added to postgresql.conf.
sub start_node
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	init_from_template($node, %init);
	$node->append_conf('postgresql.conf',
		    "shared_preload_libraries = 'pg_warmcache'\n"
		  . "pg_warmcache.dump_interval = 0\n"
		  . "pg_warmcache.dump_os_cache = off\n"
		  . ($conf // ''));
	$node->start;
	return $node;
}

# CREATE EXTENSION pg_warmcache and pg_buffercache in database postgres.
sub create_extensions
{
	my ($node) = @_;
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_warmcache');
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_buffercache');
	return;
}

# Empty shared buffers: restart with pg_warmcache.autowarm = off, so that
# nothing is restored, wait for the autowarm worker, then turn autowarm back
# on by a reload.
sub restart_cold
{
	my ($node) = @_;
	$node->append_conf('postgresql.conf', 'pg_warmcache.autowarm = off');
	$node->restart;
	wait_for_status($node, 'worker_pid IS NOT NULL',
		'the autowarm worker to start');
	$node->append_conf('postgresql.conf', 'pg_warmcache.autowarm = on');
	$node->reload;
	return;
}

# The columns (or expressions) $cols of warmcache_status(), as psql prints
# them: "a|b|...".
sub status
{
	my ($node, $cols) = @_;
	return $node->safe_psql('postgres',
		"SELECT $cols FROM warmcache_status()");
}

# Wait until the condition $cond on warmcache_status() holds; die after the
# default timeout, saying that it was waiting for $what.
sub wait_for_status
{
	my ($node, $cond, $what) = @_;
	$node->poll_query_until('postgres',
		"SELECT $cond FROM warmcache_status()")
	  or die "timed out waiting for $what";
	return;
}

# Wait until no restore runs and one has finished since the server started;
# die after the default timeout, saying that it was waiting for $what
# ('the restore to finish' by default).
sub wait_for_restore
{
	my ($node, $what) = @_;
	wait_for_status($node,
		"state = 'idle' AND restore_finished_at IS NOT NULL",
		$what // 'the restore to finish');
	return;
}

# Wait for the log line that ends a restore, in the server log after byte
# $offset, and return it without its newline.
sub wait_for_restore_line
{
	my ($node, $offset) = @_;
	$node->wait_for_log(qr/restore of the saved set finished: .*\n/, $offset);
	my ($line) = slurp_file($node->logfile, $offset) =~
	  /(restore of the saved set finished: .*)\n/;
	return $line;
}

# Run $sql in database postgres, which must fail: one test, named $name,
# that psql exits non-zero.  Returns psql's stderr, with the SQLSTATE
# (VERBOSITY verbose).
sub psql_fails
{
	my ($node, $sql, $name) = @_;
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	isnt($ret, 0, $name);
	return $stderr;
}

# The size of the main fork of relation $rel, in blocks.
sub relation_blocks
{
	my ($node, $rel) = @_;
	return $node->safe_psql('postgres',
		"SELECT pg_relation_size('$rel') / current_setting('block_size')::int"
	);
}

# Blocks of relation $rel of database $dbname (postgres by default) in
# shared buffers, by pg_buffercache, which must be installed there: of its
# fork $fork ('main', the default, 'fsm', 'vm' or 'init'), or of all its
# forks if $fork is 'all'.
sub cached
{
	my ($node, $rel, $fork, $dbname) = @_;
	my %forknum = (main => 0, fsm => 1, vm => 2, init => 3);
	my $forks = '';
	$fork //= 'main';
	if ($fork ne 'all')
	{
		die "unknown fork \"$fork\"" unless exists $forknum{$fork};
		$forks = "\n   AND relforknumber = $forknum{$fork}";
	}
	return $node->safe_psql(
		$dbname // 'postgres', qq{
SELECT count(*) FROM pg_buffercache
 WHERE reldatabase = (SELECT oid FROM pg_database
                       WHERE datname = current_database())
   AND relfilenode = pg_relation_filenode('$rel')$forks});
}

# Create table $table in database $dbname (postgres by default) with about
# $mb MB of rows, vacuumed, and bring all of it into shared buffers with
# warm(), so that the next dump holds all of it; return its size in
# blocks.  pg_warmcache must be installed in that database.
sub fill_table
{
	my ($node, $table, $mb, $dbname) = @_;
	$dbname //= 'postgres';
	my $rows = int($mb * 1024 * 1024 / 700);
	$node->safe_psql(
		$dbname, qq{
CREATE TABLE $table (id int, pad text);
INSERT INTO $table SELECT g, repeat('x', 600) FROM generate_series(1, $rows) g;
VACUUM $table;
SELECT warm('$table');});
	return $node->safe_psql($dbname,
		"SELECT pg_relation_size('$table') / current_setting('block_size')::int"
	);
}

# Wait until a restore worker is connected to database $dbname, or, if
# $dbname is undefined, until some restore worker runs; return its pid.
# Dies after the default timeout.
sub wait_for_restore_worker
{
	my ($node, $dbname) = @_;
	my $cond = defined $dbname ? "datname = '$dbname'" : 'true';
	my $query = qq{
SELECT pid FROM pg_stat_activity
 WHERE backend_type = 'pg_warmcache restore' AND $cond LIMIT 1};

	# The pid from the query that found the worker: one seen by a first
	# query may be gone by a second (the shared catalogs' worker connects
	# to postgres too, and is over in milliseconds).
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		my $pid = $node->safe_psql('postgres', $query);
		return $pid if $pid ne '';
		Time::HiRes::usleep(100_000);
	}
	die 'timed out waiting for a restore worker in '
	  . ($dbname // 'any database');
}

# The autowarm worker's pid once it is another than $old, waiting $secs
# at most; undef if none came.  Bounded, not dying: a worker that does not
# come back is a failed test, and the scenarios after it still run.
sub new_worker_pid
{
	my ($node, $old, $secs) = @_;
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		my $pid = status($node, 'worker_pid');
		return $pid if $pid ne '' && $pid ne $old;
		Time::HiRes::usleep(100_000);
	}
	return undef;
}

# Turn on a dump every second (pg_warmcache.dump_interval = 1, by a reload)
# and wait for the log line of a periodic dump that kept the saved file of
# $nblocks blocks rather than replace it; die after the default timeout.
sub wait_for_kept_file
{
	my ($node, $nblocks) = @_;
	my $offset = -s $node->logfile;
	$node->append_conf('postgresql.conf', 'pg_warmcache.dump_interval = 1');
	$node->reload;
	$node->wait_for_log(
		qr/LOG:  kept the saved block list of $nblocks blocks/,
		$offset);
	return;
}

# Run $sql in database $dbname with psql, which waits at most the default
# timeout; return its exit code, the seconds it took as the test sees them
# (psql's start included), its stdout and its stderr.
sub timed_psql
{
	my ($node, $dbname, $sql) = @_;
	my $t0 = Time::HiRes::time();
	my ($ret, $stdout, $stderr) = $node->psql($dbname, $sql);
	return ($ret, Time::HiRes::time() - $t0, $stdout, $stderr);
}

# Take the lock (or run the DDL) $sql in a transaction of its own in
# database postgres, giving up after $timeout seconds (lock_timeout), and
# return how long the statement waited, in seconds, as the server's clock
# tells: from the transaction's start to right after $sql.  Returns undef,
# with psql's stderr as a diagnostic, if the statement failed.
sub lock_wait
{
	my ($node, $sql, $timeout) = @_;
	my ($ret, $stdout, $stderr) = $node->psql(
		'postgres', qq{
SET lock_timeout = '${timeout}s';
BEGIN;
$sql;
SELECT extract(epoch FROM clock_timestamp() - now());
COMMIT;});
	if ($ret != 0)
	{
		diag("\"$sql\" failed: $stderr");
		return undef;
	}
	return $stdout;
}

# Start $n backends that run on a CPU throughout (loops in PL/pgSQL, no
# reads) and wait until all of them show as active.  Returns the sub that
# cancels them, which returns how many ran until then.
sub busy_backends
{
	my ($node, $n) = @_;
	my $query = q{SET statement_timeout = '180s'; DO $$BEGIN LOOP END LOOP; END$$};
	my @loops;
	for (1 .. $n)
	{
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $query ],
			'>', \$out, '2>', \$err,
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		push @loops, [ $h, \$err ];
	}
	$node->poll_query_until('postgres',
		qq{SELECT count(*) = $n FROM pg_stat_activity
 WHERE state = 'active' AND query LIKE 'SET statement_timeout = ''180s''; DO%'})
	  or die 'the busy backends did not start';
	return sub {
		my $ran = 0;
		$node->safe_psql('postgres',
			q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
 WHERE query LIKE 'SET statement_timeout = ''180s''; DO%'});
		for my $loop (@loops)
		{
			my ($h, $err) = @$loop;
			$h->finish;
			$ran++ if $$err =~ /canceling statement due to user request/;
		}
		return $ran;
	};
}

# Take $n slots of max_worker_processes: start a parallel query over table
# $table of database postgres whose $n workers sleep until it is
# cancelled, and wait until they run.  Returns its psql (an IPC::Run
# harness) and the pid of its leader, for free_worker_slots.
sub occupy_worker_slots
{
	my ($node, $n, $table) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-XAtq', '-d', $node->connstr('postgres'),
			'-c', qq{
SET max_parallel_workers_per_gather = $n;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT count(*) FROM $table WHERE pg_sleep(600) IS NULL /* occupy */}
		],
		'>', \$out, '2>', \$err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	$node->poll_query_until('postgres',
		"SELECT count(*) = $n FROM pg_stat_activity WHERE backend_type = 'parallel worker'"
	) or die "timed out waiting for $n parallel workers";
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND query LIKE '%/* occupy */'"
	);
	return ($h, $pid);
}

# End the parallel query of occupy_worker_slots, whose psql is $h and
# leader $pid, and wait until its workers have freed their slots.
sub free_worker_slots
{
	my ($node, $h, $pid) = @_;
	$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	$h->finish;
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'parallel worker'"
	) or die 'timed out waiting for the parallel workers to end';
	return;
}

# The directory of database postgres's relation files, under the data
# directory.
sub database_dir
{
	my ($node) = @_;
	return $node->data_dir . '/'
	  . $node->safe_psql('postgres',
		"SELECT pg_relation_filepath('pg_class') AS p") =~ s{/[^/]+$}{}r;
}

# A FIFO under a relation file's name holds a walk of the relation files
# in open(), as a file on a stalled device would.  Let that open return:
# open the FIFO for writing once its reader waits (non-blocking, a
# writer's open fails with ENXIO until then), and close it.  Dies when no
# reader came within $secs.
sub release_fifo_reader
{
	my ($fifo, $secs) = @_;
	my $deadline = time + $secs;
	my $fh;
	until (sysopen($fh, $fifo, Fcntl::O_WRONLY() | Fcntl::O_NONBLOCK()))
	{
		die "no reader opened $fifo: $!" if time > $deadline;
		Time::HiRes::usleep(20_000);
	}
	close($fh);
	return;
}

# Wait until the server of $node, asked to stop without waiting, has
# stopped (its postmaster.pid is gone), $secs at most; returns whether it
# did, and tells $node it is stopped.
sub wait_until_stopped
{
	my ($node, $secs) = @_;
	my $pidfile = $node->data_dir . '/postmaster.pid';
	my $deadline = time + $secs;
	Time::HiRes::usleep(100_000) while -e $pidfile && time < $deadline;
	$node->_update_pid(0);
	return !-e $pidfile;
}

# A streaming standby of $primary, from a new base backup, that follows the
# primary's hot set in the OS cache, with $conf added; started, and caught
# up.
sub following_standby
{
	my ($primary, $name, $conf) = @_;
	$primary->backup("backup_$name");
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, "backup_$name", has_streaming => 1);
	$standby->append_conf('postgresql.conf',
		"shared_preload_libraries = 'pg_warmcache'\n"
		  . "pg_warmcache.follow_primary = os\n"
		  . ($conf // ''));
	$standby->start;
	$primary->wait_for_catchup($standby);
	return $standby;
}

# A dump on $node, published in its channel table; returns its dump time.
# Names are qualified: tests plant traps on the search path.
sub publish_dump
{
	my ($node) = @_;
	my $before = $node->safe_psql('postgres',
		"SELECT coalesce(max(dumped_at), '-infinity') FROM public.warmcache_published"
	);
	$node->safe_psql('postgres', 'SELECT public.warmcache_dump_now()');
	$node->poll_query_until('postgres',
		"SELECT max(dumped_at) > '$before' FROM public.warmcache_published")
	  or die 'timed out waiting for the publication';
	return $node->safe_psql('postgres',
		'SELECT max(dumped_at) FROM public.warmcache_published');
}

# Wait until $standby, caught up with $primary, followed the dump of
# $dumped_at and a pass over it ended.
sub wait_for_followed_pass
{
	my ($primary, $standby, $dumped_at) = @_;
	$primary->wait_for_catchup($standby);
	$standby->poll_query_until('postgres',
		"SELECT followed_dump_at = '$dumped_at' AND restore_source = 'follow'"
		  . " AND restore_finished_at >= restore_started_at AND state = 'idle'"
		  . ' FROM public.warmcache_status()')
	  or die 'timed out waiting for ' . $standby->name . ' to follow';
	return;
}

1;
