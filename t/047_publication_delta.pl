# Copyright (c) 2026, pg_warmcache developers
#
# Publications after the first are deltas.  A primary publishes what
# changed in its hot set since its last publication; a following standby
# makes the primary's file from the file it follows and the delta, or from
# the full publication and every delta after it when it follows none of
# them.  Oracles: the primary's dump file, byte for byte, and its
# pg_buffercache, decoded and compared block by block for the tables the
# test changes.  Forged delta rows (a damaged byte, blocks removed that the
# file does not hold) are refused with a log line, and the standby keeps
# what it follows; the next dump then publishes whole again.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions following_standby
  publish_dump wait_for_followed_pass);
use WarmCache::ChannelKey qw(cluster_key signed_row);
use WarmCache::DumpFormat qw(slurp_bin header runs encode_runs crc32c);

my $primary = start_node('primary',
	"shared_buffers = 64MB\nwal_keep_size = 256MB\n",
	allows_streaming => 1);
create_extensions($primary);

# big: every other block of it cached, 3,000 runs of one block, a file of
# some kilobytes; gone: dropped after the first publication; later: read
# after it.
$primary->safe_psql(
	'postgres', q{
CREATE TABLE big (id int, pad text);
INSERT INTO big SELECT g, repeat('x', 600) FROM generate_series(1, 72000) g;
CREATE TABLE gone (id int, pad text);
INSERT INTO gone SELECT g, repeat('y', 600) FROM generate_series(1, 2400) g;
CREATE TABLE later (id int, pad text);
INSERT INTO later SELECT g, repeat('z', 600) FROM generate_series(1, 2400) g;
VACUUM big, gone, later;
CHECKPOINT;});
$primary->restart;
$primary->safe_psql('postgres',
	"SELECT count(public.warm('big', 'buffer', 'main', b, b)) FROM generate_series(0, 5999, 2) b"
);
$primary->safe_psql('postgres', "SELECT public.warm('gone')");

my $standby = following_standby($primary, 'standby',
	"log_min_messages = debug1\n");
my $pdata = $primary->data_dir;
my $sdata = $standby->data_dir;

# The blocks of the tables the test changes: in the file $bytes (decoded
# here) and in the primary's shared buffers, as "relfilenode/block" lists.
my %tables = map { split /\|/ } split /\n/,
  $primary->safe_psql('postgres',
	"SELECT pg_relation_filenode(c::regclass), c FROM unnest(array['big', 'gone', 'later']) c"
  );
sub file_blocks
{
	my ($bytes) = @_;
	my @b;
	for my $r (runs($bytes))
	{
		next unless exists $tables{ $r->[3] } && $r->[4] == 0 && $r->[0] != 0x100;
		push @b, "$tables{$r->[3]}/$_" for $r->[5] .. $r->[5] + $r->[6] - 1;
	}
	return join(',', sort @b);
}
sub buffer_blocks
{
	my $list = $primary->safe_psql(
		'postgres', q{
SELECT string_agg(c.relname || '/' || b.relblocknumber, ',' ORDER BY c.relname || '/' || b.relblocknumber)
FROM pg_buffercache b JOIN pg_class c ON c.relfilenode = b.relfilenode
WHERE c.relname IN ('big', 'gone', 'later') AND b.relforknumber = 0
  AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())});
	return join(',', sort split(/,/, $list));
}

# What the standby follows after the publication of $dumped_at: the
# primary's file, byte for byte, whose blocks are the buffer cache's.
sub check_followed
{
	my ($dumped_at, $what) = @_;
	wait_for_followed_pass($primary, $standby, $dumped_at);
	my $dump = slurp_bin("$pdata/pg_warmcache.blocks");
	my $followed = slurp_bin("$sdata/pg_warmcache.followed");
	ok($followed eq $dump,
		"$what: the followed file is the primary's dump file, byte for byte");
	is(file_blocks($followed), buffer_blocks(),
		"$what: its blocks of the changed tables are the primary's buffers'");
	ok(!-e "$sdata/pg_warmcache.followed.tmp" && !-e "$sdata/pg_warmcache.followed.part",
		"$what: no scratch file is left");
	return;
}

sub rows
{
	return $primary->safe_psql('postgres',
		"SELECT string_agg(chunk::text, ',' ORDER BY chunk) FROM public.warmcache_published"
	);
}

sub row_bytes
{
	my ($where) = @_;
	return $primary->safe_psql('postgres',
		"SELECT coalesce(sum(octet_length(data)), 0) FROM public.warmcache_published WHERE $where"
	);
}

# 1. The first publication is whole.
my $t = publish_dump($primary);
like(rows(), qr/^0(,\d+)*$/, 'the first publication is whole');
ok(-e "$pdata/pg_warmcache.published" && !-e "$pdata/pg_warmcache.published.tmp",
	'the primary keeps its copy of what it published');
check_followed($t, 'full publication');
my $full = row_bytes('chunk >= 0');
cmp_ok($full, '>', 5000, "the full publication holds $full bytes");

# 2. A change: a table dropped, one read.  The next publication is a delta.
$primary->safe_psql('postgres', 'DROP TABLE gone');
$primary->safe_psql('postgres', "SELECT public.warm('later')");
my $log_at = -s $standby->logfile;
$t = publish_dump($primary);
like(rows(), qr/^-1,0(,\d+)*$/, 'the second publication is a delta');
my $delta = row_bytes('chunk < 0');
cmp_ok($delta, '<', $full / 4,
	"the delta ($delta bytes) is a small part of the full publication ($full)");
check_followed($t, 'one delta');
ok( $standby->wait_for_log(
		qr/followed the publication of .*: the followed file kept; deltas applied: 1\n/,
		$log_at),
	'the standby applied the delta to the file it followed');

# 3. A standby that follows none of them: the full publication and every
# delta.  It stops following while two more deltas are published, then
# restarts without its followed file (a standby that kept it applies only
# the deltas it lacks, as in 2).
$standby->append_conf('postgresql.conf', 'pg_warmcache.follow_primary = off');
$standby->reload;
for my $range ([ 1, 399 ], [ 1001, 1399 ])
{
	$primary->safe_psql('postgres',
		"SELECT count(public.warm('big', 'buffer', 'main', b, b)) FROM generate_series($range->[0], $range->[1], 2) b"
	);
	$t = publish_dump($primary);
}
like(rows(), qr/^-3,-2,-1,0(,\d+)*$/, 'three deltas after the full publication');
$log_at = -s $standby->logfile;
$standby->append_conf('postgresql.conf', 'pg_warmcache.follow_primary = os');
$standby->stop;
unlink("$sdata/pg_warmcache.followed")
  or die "could not remove the standby's followed file: $!";
$standby->start;
check_followed($t, 'full publication and three deltas');
ok( $standby->wait_for_log(
		qr/followed the publication of .*: the full publication read; deltas applied: 3\n/,
		$log_at),
	'the restarted standby read the full publication and the three deltas');

# 4. Forged deltas are refused, and the standby keeps what it follows.
my $kept = slurp_bin("$sdata/pg_warmcache.followed");
# Each forged row is of another dump: a publication found unusable is not
# read again.  Its $bytes are signed with the cluster's key, so that the
# standby checks what they hold.
sub forged
{
	my ($forged_at, $bytes, $what, $problem) = @_;
	my $at = -s $standby->logfile;
	my $us = $primary->safe_psql('postgres',
		"SELECT ((extract(epoch FROM timestamptz '$forged_at') - 946684800) * 1000000)::int8"
	);
	my $row = signed_row(cluster_key($primary), -4, $us, $bytes);
	$primary->safe_psql('postgres',
		"INSERT INTO public.warmcache_published VALUES (-4, '$forged_at', '\\x"
		  . unpack('H*', $row) . "')");
	$primary->wait_for_catchup($standby);
	ok($standby->wait_for_log(qr/$problem/, $at), "$what: refused");
	$standby->poll_query_until('postgres',
		"SELECT follow_state <> 'following' FROM public.warmcache_status()")
	  or diag('the follow state stayed "following"');
	ok(slurp_bin("$sdata/pg_warmcache.followed") eq $kept,
		"$what: the followed file is kept");
	ok(!-e "$sdata/pg_warmcache.followed.tmp" && !-e "$sdata/pg_warmcache.followed.part",
		"$what: no scratch file is left");
	$primary->safe_psql('postgres',
		'DELETE FROM public.warmcache_published WHERE chunk = -4');
	return;
}

# A copy of delta 3, without its signature, with one byte of its runs
# changed.
my $damaged = $primary->safe_psql('postgres',
	"SELECT encode(set_byte(d, 100, get_byte(d, 100) # 1), 'hex') FROM "
	  . "(SELECT substring(data FOR octet_length(data) - 32) AS d "
	  . "FROM public.warmcache_published WHERE chunk = -3) s");
forged('2030-01-01 00:00:00+00', pack('H*', $damaged),
	'a damaged delta', "checksum does not match");

# A delta, checksum right, of the forged row's dump, that removes a block
# the file does not hold.
my $h = header($kept);
my $forged_at = '2030-01-02 00:00:00+00';
my $forged_ts = $primary->safe_psql('postgres',
	"SELECT ((extract(epoch FROM timestamptz '$forged_at') - 946684800) * 1000000)::int8"
);
my $removed = encode_runs([ 1, 5, 1663, 999999, 0, 7, 1 ]);
my $result = pack('L4 Q q Q Q L L', $h->{magic}, $h->{version}, $h->{pg_major},
	$h->{blcksz}, $h->{sysid}, $forged_ts, $h->{nblocks}, $h->{nruns},
	$h->{flags}, $h->{crc});
my $hdr = pack('L L q Q Q', 0x44525757, 1, $h->{dumped_at},
	length($removed), 0)
  . $result;
my $crc = crc32c(crc32c(0xFFFFFFFF, $removed), $hdr) ^ 0xFFFFFFFF;
my $bytes = $hdr . pack('L L', $crc, 0) . $removed;
forged($forged_at, $bytes,
	'a delta removing blocks not held',
	'it removes blocks the file does not hold');

# 5. With the forged rows gone, the next delta is followed again.
$primary->safe_psql('postgres',
	"SELECT count(public.warm('big', 'buffer', 'main', b, b)) FROM generate_series(2001, 2099, 2) b"
);
$t = publish_dump($primary);
like(rows(), qr/^-4,-3,-2,-1,0(,\d+)*$/, 'the next publication is delta 4');
check_followed($t, 'after the forged rows');

done_testing();
