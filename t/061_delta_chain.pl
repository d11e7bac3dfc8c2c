# Copyright (c) 2026, pg_warmcache developers
#
# A standby that is out of date by several deltas makes the latest file in
# one pass: it reads the file it follows once and writes the new one once,
# not once per delta.  And a delta cannot announce a file far larger than
# what its bytes can change: it is refused before anything is written.
# The publications are written here (a superuser's rows in the channel's
# table, as t/036 does): a file of 100,000 runs of a relation that does not
# exist, then eight deltas of one run each, made by the tests' own encoder
# (t/WarmCache/DumpFormat.pm).  Oracles: the followed file against the
# file the deltas make, byte for byte, and the bytes the standby's
# processes wrote, from the kernel's count for the postmaster
# (/proc/<pid>/io, which takes in each child it has reaped, such as the
# channel worker).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions following_standby
  wait_for_followed_pass);
use WarmCache::ChannelKey qw(cluster_key signed_row);
use WarmCache::DumpFormat qw(MAGIC HEADER_SIZE FORMAT_VERSION slurp_bin
  header encode_runs crc32c write_dump_file);

my $primary = start_node('primary', "autovacuum = off\n", allows_streaming => 1);
create_extensions($primary);
my $standby = following_standby($primary, 'standby');

my ($db, $spc) = split /\|/, $primary->safe_psql('postgres',
	"SELECT oid, dattablespace FROM pg_database WHERE datname = 'postgres'");
my %h = (
	magic => MAGIC,
	version => FORMAT_VERSION,
	pg_major => int($primary->safe_psql('postgres', 'SHOW server_version_num') / 10000),
	blcksz => $primary->safe_psql('postgres', 'SHOW block_size'),
	sysid => $primary->safe_psql('postgres',
		'SELECT system_identifier FROM pg_control_system()'));

# The TimestampTz of $when: microseconds since 2000-01-01 UTC.
sub tstz
{
	my ($when) = @_;
	return $primary->safe_psql('postgres',
		"SELECT ((extract(epoch FROM '$when'::timestamptz) - 946684800) * 1000000)::bigint"
	);
}

# The bytes of a dump file of the runs @$runs, dumped at $when.
sub file_bytes
{
	my ($runs, $when) = @_;
	my $tmp = $primary->data_dir . '/chain.tmp';
	write_dump_file($tmp, { %h, dumped_at => tstz($when) }, $runs);
	my $bytes = slurp_bin($tmp);
	unlink $tmp;
	return $bytes;
}

# A delta from the publication of $base_when to the file $file, adding
# the runs @$added (a run of the file's encoding alone: its own group).
sub delta_bytes
{
	my ($base_when, $added, $file) = @_;
	my $add = encode_runs(@$added);
	my $hdr = pack('L L q Q Q', 0x44525757, 1, tstz($base_when), 0,
		length($add)) . substr($file, 0, HEADER_SIZE);
	my $crc = crc32c(crc32c(0xFFFFFFFF, $add), $hdr) ^ 0xFFFFFFFF;
	return $hdr . pack('L L', $crc, 0) . $add;
}

# The row $bytes of chunk $chunk and dump time $when, signed with the
# cluster's key, as a bytea literal.
my $key = cluster_key($primary);

sub row_of
{
	my ($chunk, $when, $bytes) = @_;
	return "'\\x" . unpack('H*', signed_row($key, $chunk, tstz($when), $bytes)) . "'::bytea";
}

# What the standby's processes wrote, reaped children included.
sub standby_wchar
{
	my $pid = (split /\n/, slurp_file($standby->data_dir . '/postmaster.pid'))[0];
	my ($wchar) = slurp_file("/proc/$pid/io") =~ /^wchar: (\d+)$/m;
	return $wchar;
}

# The whole publication: every other block of relation 900000, which does
# not exist, so that following it reads nothing.
my @runs = map { [ 1, $db, $spc, 900000, 0, 2 * $_, 1 ] } 0 .. 99_999;
my @when = map { sprintf('2030-01-01 00:%02d:00+00', $_) } 0 .. 9;
my $file = file_bytes(\@runs, $when[0]);
cmp_ok(length($file), '>', 200_000, 'the whole publication is over 200 kB');
$primary->safe_psql('postgres',
	"INSERT INTO public.warmcache_published VALUES (0, '$when[0]', "
	  . row_of(0, $when[0], $file) . ')');
wait_for_followed_pass($primary, $standby, $when[0]);
my $sfile = $standby->data_dir . '/pg_warmcache.followed';
ok(slurp_bin($sfile) eq $file, 'the standby follows the whole publication');

# Eight deltas at once: the standby is out of date by all of them.
my @rows;
for my $k (1 .. 8)
{
	my $added = [ 1, $db, $spc, 900001, 0, 10 * $k, 1 ];
	push @runs, $added;
	my $next = file_bytes(\@runs, $when[$k]);
	push @rows,
	  "(-$k, '$when[$k]', "
	  . row_of(-$k, $when[$k], delta_bytes($when[ $k - 1 ], [$added], $next)) . ')';
	$file = $next;
}
my $before = standby_wchar();
ok(defined $before, "the postmaster's write count can be read");
my $offset = -s $standby->logfile;
$primary->safe_psql('postgres',
	'INSERT INTO public.warmcache_published VALUES ' . join(', ', @rows));
wait_for_followed_pass($primary, $standby, $when[8]);
my $written = standby_wchar() - $before;
ok(slurp_bin($sfile) eq $file,
	'the standby follows the file the eight deltas make, byte for byte');
cmp_ok($written, '<', 2 * length($file),
	"the standby wrote $written bytes for a file of " . length($file)
	  . ' bytes: once, not once per delta');
unlike(slurp_file($standby->logfile, $offset), qr/not usable/,
	'the standby found the publication usable');

# A delta of one run that announces 100,000 runs more than the file holds
# is refused before anything is written.
my $h8 = header($file);
my $claim = pack('L4 Q q Q Q L L', $h8->{magic}, $h8->{version}, $h8->{pg_major},
	$h8->{blcksz}, $h8->{sysid}, tstz($when[9]), $h8->{nblocks} + 1,
	$h8->{nruns} + 100_000, 0, 0);
my $forged = delta_bytes($when[8], [ [ 1, $db, $spc, 900002, 0, 0, 1 ] ], $claim);
$before = standby_wchar();
$offset = -s $standby->logfile;
$primary->safe_psql('postgres',
	"INSERT INTO public.warmcache_published VALUES (-9, '$when[9]', "
	  . row_of(-9, $when[9], $forged) . ')');
$primary->wait_for_catchup($standby);
ok( $standby->wait_for_log(
		qr/delta 9 announces a file of \d+ runs, but its \d+ bytes of runs can make at most \d+ of the \d+ it applies to/,
		$offset),
	'the standby refuses a delta that claims more runs than its bytes can make');
$written = standby_wchar() - $before;
cmp_ok($written, '<', length($file) / 4,
	"the standby wrote $written bytes for it: no file");
ok(slurp_bin($sfile) eq $file, 'the standby keeps the file it follows');
ok(!-e "$sfile.tmp" && !-e "$sfile.part", 'no scratch file is left');

$standby->stop;
$primary->stop;
done_testing();
