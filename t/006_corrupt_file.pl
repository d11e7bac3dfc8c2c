# Copyright (c) 2026, pg_warmcache developers
#
# A dump file that cannot be used (truncated, bad checksum, wrong magic,
# version or major, another cluster's, trailing garbage, empty) does not
# keep the server from starting: the autowarm worker logs one WARNING that
# names the file and the problem, renames the file to
# pg_warmcache.blocks.corrupt with its bytes intact, and the next dump
# writes a good file.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node wait_for_status);
use WarmCache::DumpFormat qw(MAGIC HEADER_SIZE FORMAT_VERSION slurp_bin
  write_bin header runs whole_file write_dump_file);

# Replace the 32-bit field at $off of a copy of the file.
sub set_u32
{
	my ($bytes, $off, $value) = @_;
	substr($bytes, $off, 4) = pack('L', $value);
	return $bytes;
}

my $node = start_node('corrupt');
my $pgdata = $node->data_dir;
my $file = "$pgdata/pg_warmcache.blocks";
my $bad = "$pgdata/pg_warmcache.blocks.corrupt";

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION pg_warmcache;
	CREATE TABLE t (id int, pad text);
	INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 5000) g;
});
my $n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok($n, '>', 0, 'a dump of the buffer cache holds blocks');
my $good = slurp_bin($file);
my $h = header($good);
cmp_ok($h->{nruns}, '>=', 4, 'the good file holds several runs');
ok(whole_file($good), 'the good file holds the runs its header announces');
is($h->{nblocks}, $n, 'the header counts the blocks the dump returned');
my $major = $h->{pg_major};

# A file of another cluster: same major and format, another system
# identifier (its own initdb: a copy of the tests' template would share
# the identifier).
my $other = start_node('other', undef, force_initdb => 1);
$other->safe_psql('postgres', 'CREATE EXTENSION pg_warmcache');
cmp_ok($other->safe_psql('postgres', 'SELECT warmcache_dump_now()'),
	'>', 0, 'the other cluster dumps its buffer cache');
$other->stop;
my $foreign = slurp_bin($other->data_dir . '/pg_warmcache.blocks');
isnt(header($foreign)->{sysid}, $h->{sysid},
	'the other cluster has another system identifier');

# A bit flipped in the file's last byte, the end of the last run's block
# count: the runs stay well formed and in order, only the checksum tells.
my $flipped = $good;
my $last = ord(substr($good, -1));
substr($flipped, -1, 1) = chr($last ^ ($last == 1 ? 2 : 1));

# The first two runs swapped, with a valid checksum: out of order.
my @good_runs = runs($good);
my $swapped_path = "$pgdata/swapped.tmp";
write_dump_file($swapped_path, $h, [ @good_runs[ 1, 0 ], @good_runs[ 2 .. $#good_runs ] ]);
my $swapped = slurp_bin($swapped_path);
unlink($swapped_path);

my $cut = HEADER_SIZE + int((length($good) - HEADER_SIZE) / 2);

my @cases = (
	[
		'truncated in the middle of the runs',
		substr($good, 0, $cut),
		qr/file is truncated: $cut bytes, (the header announces $h->{nruns} runs|it holds \d+ of the $h->{nruns} runs its header announces)/
	],
	[
		'shorter than the header', substr($good, 0, 30),
		qr/file is truncated: 30 bytes, shorter than its header/
	],
	[ 'empty', '', qr/file is truncated: 0 bytes, shorter than its header/ ],
	[
		'a bit flipped in a run', $flipped,
		qr/checksum mismatch \(stored [0-9A-F]{8}, computed [0-9A-F]{8}\)/
	],
	[
		'runs out of order', $swapped,
		qr/run 1 is invalid or out of order/
	],
	[
		'wrong magic number', set_u32($good, 0, 0x12345678),
		qr/not a pg_warmcache dump file \(bad magic number 12345678\)/
	],
	[
		'wrong format version', set_u32($good, 4, 99),
		qr/unsupported format version 99, expected 1/
	],
	[
		'wrong PostgreSQL major', set_u32($good, 8, $major + 1),
		qr/written by PostgreSQL major version ${\($major + 1)}, this server is $major/
	],
	[
		"another cluster's file", $foreign,
		qr/written by another database system \(system identifier \d+, this one is $h->{sysid}\)/
	],
	[
		'trailing garbage', $good . 'GARBAGE',
		qr/file has 7 bytes of trailing data/
	],);

for my $case (@cases)
{
	my ($name, $bytes, $problem) = @$case;

	# The .corrupt file of the case before, if any, is replaced.
	$node->stop;
	write_bin($file, $bytes);
	my $offset = -s $node->logfile;
	$node->start;

	# The worker checks the file right after start; it is idle again once
	# it has dealt with it.
	$node->wait_for_log(
		qr/WARNING:  dump file "pg_warmcache\.blocks" is not usable: /,
		$offset);
	wait_for_status($node, "state = 'idle' AND worker_pid IS NOT NULL",
		'the worker to go idle');

	is($node->safe_psql('postgres', 'SELECT 1 + 1'),
		'2', "$name: the server serves queries");

	my $log = slurp_file($node->logfile, $offset);
	my @warnings = ($log =~ /^.*WARNING:.*$/mg);
	is(scalar(@warnings), 1, "$name: exactly one WARNING in the log")
	  or diag(join("\n", @warnings));
	like(
		$warnings[0] // '',
		qr/WARNING:  dump file "pg_warmcache\.blocks" is not usable: $problem/,
		"$name: the WARNING names the file and the problem");
	like($log, qr/DETAIL:  It has been renamed to "pg_warmcache\.blocks\.corrupt"/,
		"$name: the log says where the file went");
	unlike($log, qr/restoring \d+ blocks/, "$name: no restore was started");

	ok(!-e $file, "$name: pg_warmcache.blocks is gone");
	ok(-e $bad && slurp_bin($bad) eq $bytes,
		"$name: pg_warmcache.blocks.corrupt holds the bad bytes");
	is( $node->safe_psql('postgres',
			'SELECT restore_started_at IS NULL FROM warmcache_status()'),
		't',
		"$name: the status shows no restore");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()'),
		'0', "$name: warmcache_blocks() sees no file");

	# The next dump writes a good file.
	my $dumped = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
	cmp_ok($dumped, '>', 0, "$name: warmcache_dump_now() writes a new file");
	my $new = slurp_bin($file);
	my $nh = header($new);
	ok( $nh->{magic} == MAGIC
		  && $nh->{version} == FORMAT_VERSION
		  && $nh->{sysid} == $h->{sysid}
		  && $nh->{nblocks} == $dumped
		  && whole_file($new),
		"$name: the new file has a good header");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()'),
		$dumped, "$name: warmcache_blocks() reads the new file");
	ok(slurp_bin($bad) eq $bytes,
		"$name: the set-aside file is left alone by the dump");
	ok(!-e "$file.tmp", "$name: no temporary file is left");
}

# And a good file is restored at start again, without a warning.
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
$node->stop;
my $offset = -s $node->logfile;
$node->start;
wait_for_status($node, 'restore_finished_at IS NOT NULL', 'the restore');
is( $node->safe_psql(
		'postgres',
		'SELECT restore_incomplete, restore_blocks_total > 0 FROM warmcache_status()'
	),
	'f|t',
	'a good file is restored at start');
unlike(slurp_file($node->logfile, $offset),
	qr/WARNING/, 'a good file causes no warning');

$node->stop;
done_testing();
