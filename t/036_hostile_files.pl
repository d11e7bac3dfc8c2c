# Copyright (c) 2026, pg_warmcache developers
#
# Hostile dump files: each has a valid checksum and this cluster's system
# identifier, so only the checks of what the runs say can refuse it.  Runs
# that overlap within a rank, a run past 2^32 blocks, a header that claims
# more blocks than the server could ever hold, and bytes that do not
# decode (a number too long or not in its shortest form, a run before any
# group header, a run past the largest block number), and files the
# writer would not make of their runs (runs that touch, a group opened
# again for its key, header flags): each is refused
# with a log line that names the problem, set aside as
# pg_warmcache.blocks.corrupt, and no block of the table it names is read,
# in shared buffers (pg_buffercache) or the OS page cache (fincore on the
# table's file, evicted before the start).  The OS tier
# naming the blocks of the buffer tier is by design, and such a file is
# restored.  A standby that follows its primary refuses the same hostile
# file when it is published in warmcache_published, and reads nothing.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_status wait_for_restore_line relation_blocks cached);
use WarmCache::ChannelKey qw(cluster_key signed_row);
use WarmCache::DumpFormat qw(MAGIC FORMAT_VERSION slurp_bin write_bin leb128
  encode_runs crc32c write_dump_file);
use WarmCache::PageCache qw(OS_CACHE_SHARE os_cached_bytes drop_os_cache);

# No autovacuum: it would read the table behind the oracles' back.
my $node = start_node('hostile', "shared_buffers = 32MB\nautovacuum = off\n",
	allows_streaming => 1);
create_extensions($node);
my $pgdata = $node->data_dir;
my $file = "$pgdata/pg_warmcache.blocks";
my $bad = "$pgdata/pg_warmcache.blocks.corrupt";

$node->safe_psql(
	'postgres', q{
CREATE TABLE t (id int, pad text);
INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series(1, 3000) g;
VACUUM (FREEZE, ANALYZE) t;
CHECKPOINT;});
my $n = relation_blocks($node, 't');
cmp_ok($n, '>', 300, 'table t has more than 300 blocks');
my $tfile = "$pgdata/" . $node->safe_psql('postgres', "SELECT pg_relation_filepath('t')");
my ($db, $spc) = split /\|/, $node->safe_psql('postgres',
	"SELECT oid, dattablespace FROM pg_database WHERE datname = 'postgres'");
my $rel = $node->safe_psql('postgres', "SELECT pg_relation_filenode('t')");
my $rel_re = qr{relation $spc/$db/$rel fork 0};

# The header of a file this cluster would write.
my %h = (
	magic => MAGIC,
	version => FORMAT_VERSION,
	pg_major => int($node->safe_psql('postgres', 'SHOW server_version_num') / 10000),
	blcksz => $node->safe_psql('postgres', 'SHOW block_size'),
	sysid => $node->safe_psql('postgres',
		'SELECT system_identifier FROM pg_control_system()'),
	dumped_at => 0);

# A run of table t's main fork.
sub trun
{
	my ($rank, $start, $count) = @_;
	return [ $rank, $db, $spc, $rel, 0, $start, $count ];
}

# The bytes of a file with the runs @$runs, as write_dump_file writes it,
# dumped at $dumped_at (a TimestampTz, 0 if undefined).
sub dump_bytes
{
	my ($runs, $dumped_at) = @_;
	my $tmp = "$pgdata/hostile.tmp";
	write_dump_file($tmp, { %h, dumped_at => $dumped_at // 0 }, $runs);
	my $bytes = slurp_bin($tmp);
	unlink $tmp;
	return $bytes;
}

# The bytes of a file whose header claims $nblocks blocks in $nruns runs,
# followed by the bytes $body, with a valid checksum.
sub raw_bytes
{
	my ($nblocks, $nruns, $body) = @_;
	my $head = pack('L4 Q q Q Q L', @h{qw(magic version pg_major blcksz sysid dumped_at)},
		$nblocks, $nruns, 0);
	my $crc = crc32c(crc32c(0xFFFFFFFF, $body), $head) ^ 0xFFFFFFFF;
	return $head . pack('L', $crc) . $body;
}

# The same, followed by the runs @$runs.
sub claiming_bytes
{
	my ($nblocks, $nruns, $runs) = @_;
	return raw_bytes($nblocks, $nruns, encode_runs(@$runs));
}

# The encoding (version 3) of a group header of t's main fork in rank 1:
# a run of one block without its two bytes.
my $t_group = substr(encode_runs(trun(1, 0, 1)), 0, -2);

# 300 runs of one rank, each from block i to the end of t: ordered, but
# the restore would read t 300 times.
my $overlapping = dump_bytes([ map { trun(1, $_, $n - $_) } 0 .. 299 ]);

my @cases = (
	[
		'overlapping runs within one rank',
		$overlapping,
		qr/runs 0 and 1 overlap: both name block 1 of $rel_re in rank 1/
	],
	[
		'a run past 2^32 blocks',
		# 0xFFFFFF00 + 0x200 wraps to 0x100 in 32 bits
		dump_bytes([ trun(1, 0, $n), trun(1, 0xFFFFFF00, 0x200) ]),
		qr/run 1 ends past the largest possible relation: blocks 4294967040 to 4294967551, but a relation has at most 4294967295 blocks/
	],
	[
		'a consistent file naming more blocks than the server could hold',
		dump_bytes([ trun(1, 0, 0xFFFFFFFF) ]),
		qr/the header announces 4294967295 blocks, more than this server could ever hold \(at most \d+ blocks of $h{blcksz} bytes\)/
	],
	[
		'a header alone claiming 2^40 blocks in 2^40 runs',
		claiming_bytes(2**40, 2**40, []),
		qr/the header announces 1099511627776 blocks, more than this server could ever hold/
	],
	[
		'a truncated file claiming more runs than blocks',
		claiming_bytes(10, 1_000_000, [ trun(1, 0, 10) ]),
		qr/the header announces 1000000 runs for 10 blocks, but every run holds at least one block/
	],
	# Version 3's encoding, malformed.
	[
		'a number longer than 32 bits',
		raw_bytes(1, 1, $t_group . "\xFF\xFF\xFF\xFF\x7F\x00"),
		qr/run 0 is malformed: a run's gap is longer than 32 bits or not in its shortest form/
	],
	[
		'a number not in its shortest form',
		raw_bytes(1, 1, $t_group . "\x81\x00\x00"),
		qr/run 0 is malformed: a run's gap is longer than 32 bits or not in its shortest form/
	],
	[
		'a run before any group header',
		raw_bytes(1, 1, "\x01\x00"),
		qr/run 0 is malformed: a run comes before any group header/
	],
	[
		'a run that begins past the largest block number',
		raw_bytes($n + 1, 2, encode_runs(trun(1, 0, $n)) . leb128(0xFFFFFFFF) . "\x00"),
		qr/run 1 is malformed: a run begins past the largest possible block/
	],
	# Well formed, but not what the writer makes of its runs: every file
	# accepted is the encoding of its runs, byte for byte.
	[
		'two runs that touch',
		dump_bytes([ trun(1, 0, 10), trun(1, 10, $n - 10) ]),
		qr/runs 0 and 1 touch at block 10 of $rel_re in rank 1, where the writer makes one run/
	],
	[
		'a group opened again for the same key',
		raw_bytes($n - 1, 2, $t_group . "\x01\x09" . $t_group . leb128(12) . leb128($n - 12)),
		qr/run 1 opens a group for the relation fork and rank of the group before it/
	],
	[
		'header flags set',
		do
		{
			my $b = dump_bytes([ trun(1, 0, $n) ]);
			substr($b, 48, 4) = pack('L', 1);
			$b;
		},
		qr/the header's flags are 00000001, no version writes any/
	],);

# Stop, put $bytes in place of the dump file, evict t from the OS cache
# and start: the autowarm worker checks the file right after the start.
# Returns the log's offset before the start.
sub start_with_file
{
	my ($name, $bytes) = @_;
	$node->stop;
	write_bin($file, $bytes);
	drop_os_cache($tfile);
	is(os_cached_bytes($tfile), 0, "$name: t is out of the OS cache before the start");
	my $offset = -s $node->logfile;
	$node->start;
	return $offset;
}

for my $case (@cases)
{
	my ($name, $bytes, $problem) = @$case;
	my $offset = start_with_file($name, $bytes);

	# Refused, or, if the check let it through, restored: a restore is
	# stopped, for it may not end (a run of 2^32 blocks takes hours).
	$node->wait_for_log(
		qr/(dump file "pg_warmcache\.blocks" is not usable|restoring \d+ blocks)/,
		$offset);
	my $log = slurp_file($node->logfile, $offset);
	$node->safe_psql('postgres', 'SELECT warmcache_restore_abort()')
	  if $log =~ /restoring \d+ blocks/;
	wait_for_status($node, "state = 'idle' AND worker_pid IS NOT NULL",
		'the worker to go idle');

	like($log,
		qr/WARNING:  dump file "pg_warmcache\.blocks" is not usable: $problem/,
		"$name: the WARNING names the problem");
	like($log, qr/DETAIL:  It has been renamed to "pg_warmcache\.blocks\.corrupt"/,
		"$name: the file is set aside");
	unlike($log, qr/restoring \d+ blocks/, "$name: no restore was started");
	ok(!-e $file, "$name: pg_warmcache.blocks is gone");
	ok(-e $bad && slurp_bin($bad) eq $bytes,
		"$name: pg_warmcache.blocks.corrupt holds its bytes");
	is(cached($node, 't'), 0, "$name: no block of t is in shared buffers");
	is(os_cached_bytes($tfile), 0, "$name: t's file was not read");
}

# The positive control: the OS tier names the very blocks of the buffer
# tier, by design; the file is restored.
{
	my $name = 'the OS tier overlapping the buffer tier';
	my $offset = start_with_file($name,
		dump_bytes([ trun(1, 0, $n), trun(0x100, 0, $n) ]));
	my $line = wait_for_restore_line($node, $offset);
	like($line, qr/restore of the saved set finished: restored \d+ of ${\(2 * $n)} blocks/,
		"$name: the restore ran") or diag($line);
	unlike(slurp_file($node->logfile, $offset), qr/WARNING/,
		"$name: no warning");
	ok(-e $file, "$name: the file is kept");
	is(cached($node, 't'), $n, "$name: shared buffers hold all of t");
	cmp_ok(os_cached_bytes($tfile), '>=', OS_CACHE_SHARE * $n * $h{blcksz},
		"$name: the OS cache holds all of t");
}

# A run that ends near the largest block number passes every check (it is
# within a relation's possible size) and names blocks past t's end.  Split
# among two workers, its stripes' ends once wrapped around 2^32 and kept
# the workers going round forever; now its blocks are skipped as gone.
{
	my $name = 'a run at the end of the block numbers';
	my $offset = start_with_file($name,
		dump_bytes([ trun(1, 0, $n), trun(1, 0xFFFFF000, 16) ]));
	my $line = wait_for_restore_line($node, $offset);
	like($line, qr/restore of the saved set finished: restored $n of ${\($n + 16)} blocks/,
		"$name: the restore ends") or diag($line);
	is(cached($node, 't'), $n, "$name: shared buffers hold all of t");
}

# Through the standby channel: the primary's table holds a hostile file,
# written there by hand, as a superuser could.
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"shared_preload_libraries = 'pg_warmcache'\n"
	  . "pg_warmcache.follow_primary = os\n"
	  . "autovacuum = off\n");

# The backup holds the primary's dump file: the standby starts without one.
unlink($standby->data_dir . '/pg_warmcache.blocks')
  or die "could not remove the standby's dump file: $!";
$standby->start;
$node->wait_for_catchup($standby);
my $sfile = $standby->data_dir . '/' . $standby->safe_psql('postgres',
	"SELECT pg_relation_filepath('t')");
$standby->wait_for_log(qr/the primary has not published its hot set yet/);
drop_os_cache($sfile);
is(os_cached_bytes($sfile), 0, 'standby: t is out of its OS cache');

# Publish $bytes in pieces of at most 3000 bytes, as of $when and signed
# with the cluster's key, so that the standby checks what they hold; wait
# until the standby follows it or, unless $good, has found it not usable;
# return its follow state.
sub publish
{
	my ($bytes, $when, $good) = @_;
	my $unusable = $good ? 'false' : "follow_state = 'published file not usable'";
	my ($key, $at) = (cluster_key($node), tstz($when));
	my @rows;
	for (my ($i, $pos) = (0, 0); $pos < length($bytes); $i++, $pos += 3000)
	{
		push @rows, sprintf("(%d, '%s', '\\x%s')", $i, $when,
			unpack('H*', signed_row($key, $i, $at, substr($bytes, $pos, 3000))));
	}
	$node->safe_psql('postgres',
		"BEGIN; DELETE FROM warmcache_published; INSERT INTO warmcache_published (chunk, dumped_at, data) VALUES "
		  . join(', ', @rows)
		  . '; COMMIT;');
	$node->wait_for_catchup($standby);
	$standby->poll_query_until('postgres',
		"SELECT $unusable OR followed_dump_at = '$when' FROM warmcache_status()"
	) or die "timed out waiting for the standby to fetch the file of $when";
	return status($standby, 'follow_state');
}

# The TimestampTz of $when: microseconds since 2000-01-01 UTC.
sub tstz
{
	my ($when) = @_;
	return $node->safe_psql('postgres',
		"SELECT ((extract(epoch FROM '$when'::timestamptz) - 946684800) * 1000000)::bigint"
	);
}

my $offset = -s $standby->logfile;
my $when = '2026-01-01 00:00:00+00';
my $state =
  publish(dump_bytes([ map { trun(1, $_, $n - $_) } 0 .. 299 ], tstz($when)),
	$when);
is($state, 'published file not usable',
	'standby: the status says the file is not usable');
$standby->wait_for_log(qr/the primary's published hot set is not usable: .*\n/, $offset)
  if $state eq 'published file not usable';
like(
	slurp_file($standby->logfile, $offset),
	qr/LOG:  the primary's published hot set is not usable: runs 0 and 1 overlap: both name block 1 of $rel_re in rank 1/,
	'standby: the log says why');
ok(!-e $standby->data_dir . '/pg_warmcache.followed',
	'standby: no followed file');
ok(!-e $standby->data_dir . '/pg_warmcache.followed.tmp',
	'standby: no scratch file is left');
is(cached($standby, 't'), 0, 'standby: no block of t is in shared buffers');
is(os_cached_bytes($sfile), 0, 'standby: t\'s file was not read');

# The positive control: the same channel with a good file is followed.
$when = '2026-01-01 00:01:00+00';
is(publish(dump_bytes([ trun(1, 0, $n) ], tstz($when)), $when, 1),
	'following', 'standby: a good file is followed');
$standby->poll_query_until('postgres',
	"SELECT restore_source = 'follow' AND restore_finished_at IS NOT NULL FROM warmcache_status()")
  or die 'timed out waiting for the follow pass';
# Nearly all: the page cache may lose pages between the pass and the look
# (OS_CACHE_SHARE).
cmp_ok(os_cached_bytes($sfile), '>=', OS_CACHE_SHARE * $n * $h{blcksz},
	'standby: the follow pass read all of t into the OS cache');

$standby->stop;
$node->stop;
done_testing();
