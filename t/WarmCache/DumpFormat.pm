# Copyright (c) 2026, pg_warmcache developers
#
# WarmCache::DumpFormat - the dump file pg_warmcache.blocks, read and
# written by the tests: its header, its runs (records of 28 bytes up to
# version 2, encoded from version 3 on), its CRC-32C, and the bytes of a
# file.  A second implementation of the format, independent of the
# server's (include/format.h, src/dumpfile.c, src/runcodec.c; the format
# is described in docs/design.md), so that a test can check the files the
# server writes and hand it files of its own making, good or broken.
# Nothing here checks anything or talks to a server.  A test imports what
# it uses by name:
#
#   use WarmCache::DumpFormat qw(MAGIC header runs slurp_bin);

package WarmCache::DumpFormat;

use strict;
use warnings;

use Exporter qw(import);
use WarmCache::Turnstile ();

our @EXPORT_OK = qw(
  MAGIC
  HEADER_SIZE
  RUN_SIZE
  FORMAT_VERSION
  slurp_bin
  write_bin
  header
  runs
  whole_file
  leb128
  encode_runs
  crc32c
  write_dump_file
);

# The magic number that starts a dump file: WC_DUMP_MAGIC in
# include/format.h, "WWRM" in a little-endian file.
use constant MAGIC => 0x4D525757;

# The sizes of the dump file's header and of one run record in it:
# WarmFileHeader and WarmRun in include/format.h.
use constant HEADER_SIZE => 56;
use constant RUN_SIZE => 28;

# The dump file's format version (WC_DUMP_VERSION in include/format.h);
# version 1, without the OS tier, and version 2, with runs of RUN_SIZE
# bytes, are still read.  Version 3 encodes the runs (src/runcodec.c).
use constant FORMAT_VERSION => 3;

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

1;
