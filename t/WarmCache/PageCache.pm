# Copyright (c) 2026, pg_warmcache developers
#
# WarmCache::PageCache - the OS page cache, as the tests look at it and
# empty it, apart from the server: the oracles of the modes that warm the
# OS cache and of the dump's OS tier.  Bytes of a file resident by
# util-linux's fincore, blocks resident by mincore(2) in
# t/os_cached_blocks.py, files evicted by posix_fadvise(POSIX_FADV_DONTNEED)
# through dd, files kept in use by a child that reads them, and the
# kernel's read-ahead.  None of it talks to a server.  A test imports what
# it uses by name:
#
#   use WarmCache::PageCache qw(evict_files resident_blocks OS_CACHE_SHARE);

package WarmCache::PageCache;

use strict;
use warnings;

use Exporter qw(import);
use PostgreSQL::Test::Utils;
use File::Basename ();
use POSIX ();
use WarmCache::Turnstile ();

our @EXPORT_OK = qw(
  OS_CACHE_SHARE
  os_cached_bytes
  os_cached_bytes_of
  os_cached_block_sets
  resident_blocks
  drop_os_cache
  evict_files
  keep_in_use
  stop_keeping
  read_ahead_blocks
);

# The share of what a check expects in the OS page cache that it requires.
# The machine's memory management may take pages of any file at any moment:
# memory pressure elsewhere, or the pageout scheme of the kernel's data
# access monitor that virtual machines run to hand memory back to their
# host, which CI runs have seen take a few pages of a file read a second
# before.  95% still tells a warm-up from one that did nothing.
use constant OS_CACHE_SHARE => 0.95;

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
# own (t/os_cached_blocks.py), all looked at within a moment: a hash
# reference, path to a hash reference of block numbers.
sub os_cached_block_sets
{
	my (@paths) = grep { -e $_ } @_;
	my %sets;
	return \%sets unless @paths;
	my $helper =
	  File::Basename::dirname(File::Basename::dirname(__FILE__))
	  . '/os_cached_blocks.py';
	open(my $fh, '-|', 'python3', $helper, 8192, @paths)
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

# The blocks of the file $path that the OS page cache holds (see
# os_cached_bytes).
sub resident_blocks
{
	my ($path, $block_size) = @_;
	return int(os_cached_bytes($path) / ($block_size // 8192));
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

1;
