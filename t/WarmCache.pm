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

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(
  MAGIC
  HEADER_SIZE
  RUN_SIZE

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
  slurp_bin
  write_bin
  header
);

# The magic number that starts a dump file: WC_FILE_MAGIC in
# include/pg_warmcache.h, "WWRM" in a little-endian file.
use constant MAGIC => 0x4D525757;

# The sizes of the dump file's header and of one run record in it:
# WarmFileHeader and WarmRun in include/pg_warmcache.h.
use constant HEADER_SIZE => 56;
use constant RUN_SIZE => 28;

# A new node, initialized with the arguments %init of init() and started,
# with pg_warmcache preloaded, its periodic dumps off
# (pg_warmcache.dump_interval = 0) and the lines $conf added to
# postgresql.conf.
sub start_node
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
	$node->append_conf('postgresql.conf',
		    "shared_preload_libraries = 'pg_warmcache'\n"
		  . "pg_warmcache.dump_interval = 0\n"
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
	$node->wait_for_log(qr/pg_warmcache: restore finished: .*\n/, $offset);
	my ($line) = slurp_file($node->logfile, $offset) =~
	  /(pg_warmcache: restore finished: .*)\n/;
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

# Blocks of relation $rel of the current database in shared buffers, by
# pg_buffercache: of its fork $fork ('main', the default, 'fsm', 'vm' or
# 'init'), or of all its forks if $fork is 'all'.
sub cached
{
	my ($node, $rel, $fork) = @_;
	my %forknum = (main => 0, fsm => 1, vm => 2, init => 3);
	my $forks = '';
	$fork //= 'main';
	if ($fork ne 'all')
	{
		die "unknown fork \"$fork\"" unless exists $forknum{$fork};
		$forks = "\n   AND relforknumber = $forknum{$fork}";
	}
	return $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM pg_buffercache
 WHERE reldatabase = (SELECT oid FROM pg_database
                       WHERE datname = current_database())
   AND relfilenode = pg_relation_filenode('$rel')$forks});
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

1;
