# Copyright (c) 2026, pg_warmcache developers
#
# WarmCache - what pg_warmcache's TAP tests share: the node set-up, reading
# and writing the dump file, and the queries on warmcache_status() and
# pg_buffercache that several tests repeat.  The tests keep their
# assertions; nothing here checks anything, but psql_fails, which counts the
# failure it expects as one test.  A test in t/ loads it with
#
#   use FindBin;
#   use lib $FindBin::RealBin;
#   use WarmCache;

package WarmCache;

use strict;
use warnings;

use Exporter ();
use IPC::Run ();
use Fcntl qw(:flock);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename ();
use Time::HiRes ();
use POSIX ();

our @EXPORT = qw(
  MAGIC
  HEADER_SIZE
  RUN_SIZE
  FORMAT_VERSION

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
  wait_for_restore_worker
  new_worker_pid
  wait_for_kept_file
  timed_psql
  lock_wait
  busy_backends
  fill_table
  drop_os_cache
  database_dir
  release_fifo_reader
  wait_until_stopped
  os_cached_bytes
  os_cached_bytes_of
  os_cached_block_sets
  OS_CACHE_SHARE
  slurp_bin
  write_bin
  header
  runs
  encode_runs
  leb128
  whole_file
  crc32c
  write_dump_file
  evict_files
  keep_in_use
  stop_keeping
  resident_blocks
  read_ahead_blocks
  following_standby
  publish_dump
  wait_for_followed_pass
);

# Taking turns with the tests of other majors.  test/run runs the suites of
# several majors side by side (PGWC_JOBS), and PGWC_TURNSTILE names a
# directory, shared by all of them and by their chroots, that holds two
# lock files.  Every test holds "room" shared for as long as it runs.  A
# test whose outcome depends on CPU left free (t/033: the restore must tell
# busy queries from a machine kept busy by other tests) loads this module
# with "use WarmCache qw(:machine_alone)" and holds "room" exclusively, so
# that no test of another major runs beside it.  "gate" keeps that test's
# place in the queue: while it waits for the room, no new test enters.
# The lock is the test process's and ends with it; Perl opens files
# close-on-exec, so no server or program a test starts keeps it.  Without
# PGWC_TURNSTILE nothing is taken.
my $room;

sub take_turn
{
	my ($mode) = @_;
	my $dir = $ENV{PGWC_TURNSTILE};
	return if !defined $dir || $dir eq '';
	if ($room)
	{
		flock($room, LOCK_UN) or die "could not unlock \"$dir/room\": $!";
	}
	else
	{
		open($room, '<', "$dir/room")
		  or die "could not open \"$dir/room\": $!";
	}
	open(my $gate, '<', "$dir/gate")
	  or die "could not open \"$dir/gate\": $!";
	flock($gate, LOCK_EX) or die "could not lock \"$dir/gate\": $!";
	flock($room, $mode) or die "could not lock \"$dir/room\": $!";
	close($gate);
	return;
}

take_turn(LOCK_SH);

sub import
{
	my @args = grep { $_ ne ':machine_alone' } @_;
	take_turn(LOCK_EX) if @args != @_;
	@_ = @args;
	goto &Exporter::import;
}

# The share of what a check expects in the OS page cache that it requires.
# The machine's memory management may take pages of any file at any moment:
# memory pressure elsewhere, or the pageout scheme of the kernel's data
# access monitor that virtual machines run to hand memory back to their
# host, which CI runs have seen take a few pages of a file read a second
# before.  95% still tells a warm-up from one that did nothing.
use constant OS_CACHE_SHARE => 0.95;

# The magic number that starts a dump file: WC_FILE_MAGIC in
# include/pg_warmcache.h, "WWRM" in a little-endian file.
use constant MAGIC => 0x4D525757;

# The sizes of the dump file's header and of one run record in it:
# WarmFileHeader and WarmRun in include/pg_warmcache.h.
use constant HEADER_SIZE => 56;
use constant RUN_SIZE => 28;

# The dump file's format version (WC_DUMP_VERSION in include/dumpfile.h);
# version 1, without the OS tier, and version 2, with runs of RUN_SIZE
# bytes, are still read.  Version 3 encodes the runs (src/runcodec.c).
use constant FORMAT_VERSION => 3;

# A new node, initialized with the arguments %init of init() and started,
# with pg_warmcache preloaded, its periodic dumps off
# (pg_warmcache.dump_interval = 0), the dumps' OS tier off (most tests
# compare the dump with shared buffers; the OS tier's own tests turn it on)
# and the lines $conf added to postgresql.conf.
sub start_node
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
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
	$node->poll_query_until('postgres', "SELECT EXISTS ($query)")
	  or die 'timed out waiting for a restore worker in '
	  . ($dbname // 'any database');
	return $node->safe_psql('postgres', $query);
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

# Drop the pages of file $path from the OS page cache, as far as the kernel
# lets an unprivileged user: fsync it (sync), since dirty pages would stay,
# then posix_fadvise(POSIX_FADV_DONTNEED) on the whole file, through dd's
# iflag=nocache.  Shared buffers are not the OS cache: checkpoint first.
sub drop_os_cache
{
	my ($path) = @_;
	system('sync', $path) == 0 or die "could not sync \"$path\"";
	system('dd', "if=$path", 'iflag=nocache', 'count=0', 'status=none') == 0
	  or die "dd could not drop \"$path\" from the OS cache";
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

# Die, saying why, unless fincore is installed: the tests that need the
# OS page cache's oracle fail clearly rather than of a missing command.
sub need_fincore
{
	return if system('fincore --version >/dev/null 2>&1') == 0;
	die 'fincore, the OS page cache\'s oracle, is not installed '
	  . '(Debian ships it in util-linux-extra from 12 on; test/install-deps '
	  . 'installs it)';
}

# Bytes of file $path resident in the OS page cache, by util-linux's
# fincore (mincore(2)): the oracle of the modes that warm the OS cache.
sub os_cached_bytes
{
	my ($path) = @_;
	need_fincore();
	my $out = `fincore --bytes --noheadings --output RES '$path'`;
	die "fincore failed on \"$path\"" if $? != 0;
	$out =~ s/\s+//g;
	return $out;
}

# Bytes of each existing file of @paths resident in the OS page cache, by
# one run of fincore (see os_cached_bytes), so that all are looked at
# within a moment: a hash reference, path to bytes.
sub os_cached_bytes_of
{
	my (@paths) = grep { -e $_ } @_;
	my %bytes;
	return \%bytes unless @paths;
	need_fincore();
	open(my $fh, '-|', 'fincore', '--bytes', '--noheadings', '--raw',
		'--output', 'RES,FILE', @paths)
	  or die "could not run fincore: $!";
	while (my $line = <$fh>)
	{
		chomp $line;
		my ($res, $file) = split / /, $line, 2;
		$bytes{$file} = $res;
	}
	close $fh or die 'fincore failed';
	return \%bytes;
}

# The blocks of each existing file of @paths that the OS page cache holds,
# all of their OS pages resident, by mincore(2) in a helper of the tests'
# own (os_cached_blocks.py), all looked at within a moment: a hash
# reference, path to a hash reference of block numbers.
sub os_cached_block_sets
{
	my (@paths) = grep { -e $_ } @_;
	my %sets;
	return \%sets unless @paths;
	open(my $fh, '-|', 'python3', File::Basename::dirname(__FILE__) . '/os_cached_blocks.py',
		8192, @paths)
	  or die "could not run os_cached_blocks.py: $!";
	while (my $line = <$fh>)
	{
		chomp $line;
		my ($file, $ranges) = split /\t/, $line, 2;
		my %blocks;
		for my $range (split /,/, $ranges // '')
		{
			my ($first, $last) = split /-/, $range;
			$blocks{$_} = 1 for $first .. $last;
		}
		$sets{$file} = \%blocks;
	}
	close $fh or die 'os_cached_blocks.py failed';
	return \%sets;
}

# The bytes of the file $path, e.g. a dump file.
sub slurp_bin
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "could not read \"$path\": $!";
	binmode $fh;
	local $/;
	my $bytes = <$fh>;
	close $fh;
	return $bytes // '';
}

# Write the bytes $bytes to the file $path, replacing it.
sub write_bin
{
	my ($path, $bytes) = @_;
	open(my $fh, '>', $path) or die "could not write \"$path\": $!";
	binmode $fh;
	print $fh $bytes;
	close $fh or die "could not write \"$path\": $!";
	return;
}

# The header fields of the dump file $bytes, in the machine's byte order as
# the server writes them, as a hash reference.
sub header
{
	my ($bytes) = @_;
	my %h;
	@h{qw(magic version pg_major blcksz sysid dumped_at nblocks nruns flags crc)}
	  = unpack('L4 Q q Q Q L L', $bytes);
	return \%h;
}

# The runs of the dump file $bytes, as array references
# [rank, db, spc, relnumber, fork, start, count]: records of RUN_SIZE
# bytes up to version 2, decoded from version 3 on.
sub runs
{
	my ($bytes) = @_;
	my $h = header($bytes);
	my @runs;
	if ($h->{version} < 3)
	{
		for my $i (0 .. $h->{nruns} - 1)
		{
			push @runs,
			  [ unpack('L7', substr($bytes, HEADER_SIZE + $i * RUN_SIZE, RUN_SIZE)) ];
		}
		return @runs;
	}
	# Unsigned LEB128, lowest 7 bits first (Perl's 'w' is highest first).
	my @b = unpack('C*', substr($bytes, HEADER_SIZE));
	my @num;
	my ($v, $shift) = (0, 0);
	for my $byte (@b)
	{
		$v |= ($byte & 0x7F) << $shift;
		$shift += 7;
		next if $byte & 0x80;
		push @num, $v;
		($v, $shift) = (0, 0);
	}
	my (@key, $end);
	while (@num)
	{
		my $head = shift @num;
		if ($head == 0)
		{
			@key = splice(@num, 0, 5);
			$end = 0;
			$head = shift @num;
		}
		my $count = shift(@num) + 1;
		my $start = $end + $head - 1;
		push @runs, [ @key, $start, $count ];
		$end = $start + $count;
	}
	return @runs;
}

# Whether the dump file $bytes holds exactly what its header announces:
# nruns records of RUN_SIZE bytes up to version 2; from version 3 on,
# nruns runs that encode_runs() writes back byte for byte.
sub whole_file
{
	my ($bytes) = @_;
	my $h = header($bytes);
	return length($bytes) == HEADER_SIZE + $h->{nruns} * RUN_SIZE
	  if $h->{version} < 3;
	my @runs = runs($bytes);
	return scalar(@runs) == $h->{nruns}
	  && encode_runs(@runs) eq substr($bytes, HEADER_SIZE);
}

# The number $v as version 3 of the file encodes it: unsigned LEB128, 7
# bits a byte, the lowest first.
sub leb128
{
	my ($v) = @_;
	my $out = '';
	while ($v >= 0x80)
	{
		$out .= chr(($v & 0x7F) | 0x80);
		$v >>= 7;
	}
	return $out . chr($v);
}

# The runs @runs (array references as runs() returns them, in file order)
# encoded as version 3 does (src/runcodec.c).
sub encode_runs
{
	my (@runs) = @_;
	my $leb = \&leb128;
	my ($body, $key, $end) = ('', '', 0);
	for my $r (@runs)
	{
		my $k = join(',', @$r[ 0 .. 4 ]);
		# A run that does not move on (a hostile file's) starts a group again.
		if ($k ne $key || $r->[5] < $end)
		{
			$body .= chr(0) . join('', map { $leb->($_) } @$r[ 0 .. 4 ]);
			($key, $end) = ($k, 0);
		}
		$body .= $leb->($r->[5] - $end + 1) . $leb->($r->[6] - 1);
		$end = $r->[5] + $r->[6];
	}
	return $body;
}

# CRC-32C (Castagnoli) of $bytes, continuing from $crc (a running value
# before finalization; start with 0xFFFFFFFF), not finalized.
my @crc_table;
sub crc32c
{
	my ($crc, $bytes) = @_;
	if (!@crc_table)
	{
		for my $n (0 .. 255)
		{
			my $c = $n;
			$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
			$crc_table[$n] = $c;
		}
	}
	$crc = $crc_table[ ($crc ^ $_) & 0xFF ] ^ ($crc >> 8) for unpack('C*', $bytes);
	return $crc;
}

# Write a dump file at $path with the header fields %$h (nblocks, nruns
# and crc computed) and the runs @$runs, as the server would: in records
# of RUN_SIZE bytes for a version below 3, encoded from 3 on.
sub write_dump_file
{
	my ($path, $h, $runs) = @_;
	my $body =
	  $h->{version} < 3
	  ? join('', map { pack('L7', @$_) } @$runs)
	  : encode_runs(@$runs);
	my $nblocks = 0;
	$nblocks += $_->[6] for @$runs;
	my $head = pack('L4 Q q Q Q L', $h->{magic}, $h->{version}, $h->{pg_major},
		$h->{blcksz}, $h->{sysid}, $h->{dumped_at}, $nblocks, scalar(@$runs),
		$h->{flags} // 0);
	my $crc = crc32c(crc32c(0xFFFFFFFF, $body), $head) ^ 0xFFFFFFFF;
	write_bin($path, $head . pack('L', $crc) . $body);
	return;
}

# Evict the files @paths from the OS page cache (see drop_os_cache).
sub evict_files
{
	my (@paths) = @_;
	drop_os_cache($_) for @paths;
	return;
}

# Read the files @paths through, over and over, in a child process until
# stop_keeping: pages in use, as a query's would be.  The pageout scheme of
# the kernel's data access monitor (see OS_CACHE_SHARE) takes page cache
# pages that nobody touched for a second or so, in scattered stretches; a
# check that a pass leaves out what is cached must not lose its cached
# file to it between the look and the pass.  Returns the child's pid.
sub keep_in_use
{
	my (@paths) = @_;
	my $parent = $$;
	my $pid = fork();
	die "could not fork: $!" unless defined $pid;
	return $pid if $pid;
	# The child must not run the test's signal handlers or END blocks,
	# which would stop the nodes: it is killed, never ends on its own.
	$SIG{$_} = 'DEFAULT' for ('TERM', 'INT', 'HUP');
	while (1)
	{
		# A test that died before stop_keeping leaves the child behind,
		# holding prove's pipe: it ends when its parent is gone.
		POSIX::_exit(0) if getppid() != $parent;
		for my $path (@paths)
		{
			open(my $fh, '<', $path) or next;
			binmode $fh;
			my $buf;
			1 while sysread($fh, $buf, 1 << 20);
			close $fh;
		}
		select(undef, undef, undef, 0.2);
	}
}

# Stop the child of keep_in_use.
sub stop_keeping
{
	my ($pid) = @_;
	kill 'KILL', $pid;
	waitpid($pid, 0);
	return;
}

# The blocks of the file $path that the OS page cache holds (see
# os_cached_bytes).
sub resident_blocks
{
	my ($path, $block_size) = @_;
	return int(os_cached_bytes($path) / ($block_size // 8192));
}


# How far the kernel reads ahead of a sequential reader of a file under
# $path, in blocks of 8 kB: the read_ahead_kb of the block device that holds
# it (its disk's, for a partition).  On a file system of no single device
# (tmpfs, overlay) the largest of any disk, an upper bound.
sub read_ahead_blocks
{
	my ($path) = @_;
	my $dev = (stat $path)[0];
	my $major = (($dev >> 8) & 0xfff) | (($dev >> 32) & ~0xfff);
	my $minor = ($dev & 0xff) | (($dev >> 12) & ~0xff);
	my ($kb) = map { slurp_file($_) + 0 }
	  grep { -r $_ } map { "/sys/dev/block/$major:$minor/$_/read_ahead_kb" }
	  'queue', '../queue';
	if (!defined $kb)
	{
		$kb = 0;
		for (glob '/sys/block/*/queue/read_ahead_kb')
		{
			my $each = slurp_file($_) + 0;
			$kb = $each if $each > $kb;
		}
	}
	return int($kb / 8);
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
