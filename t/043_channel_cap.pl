# Copyright (c) 2026, pg_warmcache developers
#
# What the primary's table holds is checked before the standby writes
# much of it: rows written by hand (as superuser, into the extension's
# table) whose header in chunk 0 announces more runs or blocks than the
# standby could ever hold, or whose rows do not add up to the size the
# header announces, are refused with a log line that gives the figures, and
# no followed file is written.  An honest publication is still followed.
# The oracles are the server log, the standby's data directory and
# /proc/meminfo for the cap.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  following_standby);
use WarmCache::ChannelKey qw(cluster_key signed_row);
use WarmCache::DumpFormat qw(MAGIC HEADER_SIZE RUN_SIZE slurp_bin);

my $primary = start_node('primary', "shared_buffers = 16MB\n",
	allows_streaming => 1);
create_extensions($primary);
$primary->safe_psql('postgres',
	"CREATE TABLE t AS SELECT g AS id, repeat('x', 500) AS pad FROM generate_series(1, 3000) g"
);
my $standby = following_standby($primary, 'standby',
	"pg_warmcache.dump_interval = 0\nlog_min_messages = debug1\n");
my $followed = $standby->data_dir . '/pg_warmcache.followed';
$standby->wait_for_log(qr/the primary has not published its hot set yet/);

# The most blocks the standby accepts: four times its memory or its shared
# buffers, in blocks, whichever is more.
my ($mem_kb) = slurp_file('/proc/meminfo') =~ /^MemTotal:\s+(\d+) kB/m;
my $nbuffers = $standby->safe_psql('postgres',
	"SELECT setting FROM pg_settings WHERE name = 'shared_buffers'");
my $bs = $standby->safe_psql('postgres', 'SHOW block_size');
my $mem_blocks = int($mem_kb * 1024 / $bs);
my $limit = 4 * ($mem_blocks > $nbuffers ? $mem_blocks : $nbuffers);
my $limit_bytes = HEADER_SIZE + $limit * RUN_SIZE;

# Headers of version 2, whose runs take RUN_SIZE bytes each: the size a
# header announces is exact.  (From version 3 on it is a range, checked
# the same way.)
my %h = (
	magic => MAGIC,
	version => 2,
	pg_major => int($primary->safe_psql('postgres', 'SHOW server_version_num') / 10000),
	blcksz => $bs,
	sysid => $primary->safe_psql('postgres',
		'SELECT system_identifier FROM pg_control_system()'),
	dumped_at => 0);
# Each publication's dump time, in microseconds since 2000, as the server
# keeps it; the rows carry it too.
my $dumped_at = 800_000_000_000_000;
my $run = pack('L7', 0, 5, 1663, 16384, 0, 0, 1);

# More runs than the cap: refused at chunk 0, whose 84 bytes are all there
# is (a file that big would not fit in any table).
my $runs = 1 << 40;
refused(
	[ head($runs, $runs) . $run ],
	qr/its header announces $runs blocks in $runs runs, a file of ${\(HEADER_SIZE + $runs * RUN_SIZE)} bytes; this server accepts at most $limit blocks, a file of $limit_bytes bytes/,
	'more runs than the standby could hold');

# Said once: the standby's next looks do not read it again.
my $offset = -s $standby->logfile;
for (1 .. 2)
{
	$standby->wait_for_log(
		qr/unregistering background worker "pg_warmcache follow"/, $offset);
	$offset = -s $standby->logfile;
}
my @lines = (slurp_file($standby->logfile) =~ /published hot set is not usable/g);
is(scalar @lines, 1, 'a publication found unusable is said once');

# Few runs, but more blocks than the cap.
my $blocks = $limit + 1;
refused(
	[ head($blocks, 1) . $run ],
	qr/its header announces $blocks blocks in 1 runs, a file of 84 bytes; this server accepts at most $limit blocks/,
	'more blocks than the standby could hold');

# Rows that hold more than the header announces: the 1 MB chunk after it
# is refused before it is read.
refused(
	[ head(1, 1) . $run, 'x' x (1024 * 1024) ],
	qr/the rows hold more than the 84 bytes the header announces/,
	'rows longer than announced');

# Rows that hold less.
refused(
	[ head(10, 10) . $run ],
	qr/the rows hold 84 bytes, the header announces 336 bytes/,
	'rows shorter than announced');

# An honest publication is followed.
$primary->safe_psql('postgres', "SELECT warm('t'), warmcache_dump_now()");
$primary->poll_query_until('postgres',
	'SELECT count(*) > 0 FROM public.warmcache_published')
  or die 'timed out waiting for the publication';
$primary->wait_for_catchup($standby);
$standby->poll_query_until('postgres',
	"SELECT follow_state = 'following' FROM warmcache_status()")
  or die 'timed out waiting for the standby to follow';
is(slurp_bin($followed), slurp_bin($primary->data_dir . '/pg_warmcache.blocks'),
	'an honest publication is followed: the followed file is the primary\'s dump');

$standby->stop;
$primary->stop;
done_testing();

# A dump file header announcing $nblocks blocks in $nruns runs, without a
# valid checksum (nothing gets as far as checking it), for the next
# publication.
sub head
{
	my ($nblocks, $nruns) = @_;
	$dumped_at += 1_000_000;
	return pack('L4 Q q Q Q L L', $h{magic}, $h{version}, $h{pg_major},
		$h{blcksz}, $h{sysid}, $dumped_at, $nblocks, $nruns, 0, 0);
}

# Publish the rows @$chunks by hand on the primary, with the dump time of
# the last header made, signed with the cluster's key so that the standby
# checks what they hold; the standby must log that they are not usable,
# matching $re, and write no followed file.
sub refused
{
	my ($chunks, $re, $what) = @_;
	my $offset = -s $standby->logfile;
	my $key = cluster_key($primary);
	my $i = 0;
	my $values = join(', ',
		map {
			my $n = $i++;
			sprintf(
				"(%d, timestamptz '2000-01-01 00:00:00+00' + %d * interval '1 microsecond', '\\x%s')",
				$n, $dumped_at, unpack('H*', signed_row($key, $n, $dumped_at, $_)))
		} @$chunks);
	$primary->safe_psql('postgres',
		"BEGIN; DELETE FROM public.warmcache_published; INSERT INTO public.warmcache_published VALUES $values; COMMIT;"
	);
	$standby->wait_for_log(
		qr/LOG:  the primary's published hot set is not usable: .*\n/,
		$offset);
	like(slurp_file($standby->logfile, $offset),
		qr/LOG:  the primary's published hot set is not usable: $re/,
		"$what: refused, with the figures");
	ok(!-e $followed && !-e "$followed.tmp", "$what: no followed file written");
	is(status($standby, 'follow_state'), 'published file not usable',
		"$what: the status says so");
	return;
}
