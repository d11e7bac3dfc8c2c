# Copyright (c) 2026, pg_warmcache developers
#
# warmcache_estimate() reads the saved set's blocks to time the device only
# if the saved file passes every check.  The running server's file is made
# another cluster's after its dump (its system identifier changed: its
# runs still decode); the estimate then says the file is not usable, and
# the session that asked read nothing from the device (its read_bytes in
# /proc, the kernel's count, which direct reads are part of).  Then the
# file is made again and the same session's estimate probes: the oracle
# sees the reads it does.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions fill_table);
use WarmCache::PageCache qw(evict_files);

my $node = start_node('estimate', "shared_buffers = 64MB\n");
create_extensions($node);
fill_table($node, 'big', 24);
$node->safe_psql('postgres', 'CHECKPOINT');
my $file = $node->data_dir . '/pg_warmcache.blocks';
my $saved = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok($saved, '>', 3000, "the saved file holds $saved blocks");
my $relpath =
  $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('big')");
evict_files($relpath);

# What the session's process has read from the device so far.
my $session = $node->background_psql('postgres', on_error_stop => 1);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
sub read_bytes
{
	my ($io) = slurp_file("/proc/$pid/io") =~ /^read_bytes: (\d+)$/m;
	return $io;
}

# The header's system identifier (bytes 16 to 23, include/format.h)
# changed, as in a file of another cluster's: the runs still decode.
my $at = 16;
open(my $fh, '+<', $file) or die "could not open $file: $!";
binmode $fh;
sysseek($fh, $at, 0) or die "could not seek in $file: $!";
sysread($fh, my $byte, 1) == 1 or die "could not read $file: $!";
sysseek($fh, $at, 0) or die "could not seek in $file: $!";
syswrite($fh, chr(ord($byte) ^ 0xff), 1) == 1 or die "could not write $file: $!";
close($fh);

my $before = read_bytes();
my $basis = $session->query_safe(
	'SELECT restore_basis, read_mb_per_s IS NULL FROM warmcache_estimate()');
my $read = read_bytes() - $before;
like($basis, qr/^no usable saved file: .*\|t$/,
	'the estimate says the damaged file is not usable');
cmp_ok($read, '<', 1024 * 1024,
	"the session read $read bytes from the device, under 1 MB");

# The file made again: the estimate now probes, and the oracle sees it.
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
evict_files($relpath);
$before = read_bytes();
$basis = $session->query_safe('SELECT restore_basis FROM warmcache_estimate()');
$read = read_bytes() - $before;
like($basis, qr/a probe begun at/, 'with the file made again, the estimate probes');
cmp_ok($read, '>', 4 * 1024 * 1024,
	"and the session read $read bytes from the device, over 4 MB");

$session->quit;
$node->stop;
done_testing();
