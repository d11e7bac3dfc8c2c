# Copyright (c) 2026, pg_warmcache developers
#
# Before a restart: warmcache_relations() says per relation fork what the
# saved set, shared buffers and the OS page cache hold, and
# warmcache_estimate() how long the restore and a warm-up without it would
# take.  The oracles share no code with them: pg_buffercache (what shared
# buffers held at the dump, at which usage count, and hold now), util-linux
# fincore and mincore() (what the page cache holds), pg_relation_size(), and
# warmcache_status() for the rate of a restore, and the kernel's count of
# the bytes a backend read from storage (/proc/self/io, read by the backend
# itself before and after the call).  The estimate's figures are
# judged against measured warm-ups by the benchmarks, not here; here, what
# they are made of, and that asking makes the server read no more than the
# probe's bound.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  wait_for_restore relation_blocks cached fill_table);
use WarmCache::PageCache qw(OS_CACHE_SHARE resident_blocks
  os_cached_block_sets evict_files keep_in_use stop_keeping);

my $node = start_node(
	'census', q{
shared_buffers = 128MB
autovacuum = off
});
create_extensions($node);
my %blocks;
$blocks{hot} = fill_table($node, 'hot', 8);
$blocks{cold} = fill_table($node, 'cold', 64);
$blocks{gone} = fill_table($node, 'gone', 2);
my %file = map {
	$_ => $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$_')")
} qw(hot cold gone);

restart_cold($node);
$node->safe_psql('postgres', "SELECT warm('$_')") for qw(cold gone hot);
$node->safe_psql('postgres', 'SELECT count(*) FROM hot') for 1 .. 3;

# What shared buffers hold of the three, per usage count, just before the
# dump: the saved set's ranks.
my %usage;
for my $row (
	split /\n/,
	$node->safe_psql(
		'postgres', q{
SELECT c.relname, b.usagecount, count(*)
  FROM pg_buffercache b JOIN pg_class c ON c.relfilenode = b.relfilenode
 WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND b.relforknumber = 0 AND c.relname IN ('hot', 'cold', 'gone')
 GROUP BY 1, 2}))
{
	my ($rel, $u, $n) = split /\|/, $row;
	$usage{$rel}[$u] = $n;
}
my $buffers_at_dump = $node->safe_psql('postgres',
	'SELECT count(*) FROM pg_buffercache WHERE relfilenode IS NOT NULL');
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');

sub census_row
{
	my ($rel) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT size_blocks, saved_buffer_tier, saved_by_usage, saved_os_tier,
       in_shared_buffers, in_os_cache
  FROM warmcache_relations() WHERE relation = '$rel'::regclass AND fork = 'main'});
}

sub usage_array
{
	my ($rel) = @_;
	return '[0:5]={' . join(',', map { $usage{$rel}[$_] // 0 } 0 .. 5) . '}';
}

for my $rel (qw(hot cold gone))
{
	my $saved = 0;
	$saved += $_ // 0 for @{ $usage{$rel} };
	is( census_row($rel),
		join('|',
			relation_blocks($node, $rel), $saved, usage_array($rel), 0,
			cached($node, $rel), resident_blocks($file{$rel})),
		"$rel: size, saved per usage count, in shared buffers and in the page cache as pg_relation_size, pg_buffercache and fincore say"
	);
}
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM warmcache_relations() WHERE relation IS NULL'),
	'0',
	'every file found belongs to a relation');
like(
	$node->safe_psql(
		'postgres',
		q{SELECT string_agg(DISTINCT fork, ',') FROM warmcache_relations()
		   WHERE relation = 'pg_class'::regclass}),
	qr/main/,
	'a mapped catalog is named');
ok( $node->safe_psql(
		'postgres',
		q{SELECT count(*) > 0 FROM warmcache_relations() WHERE relation = 'pg_database'::regclass}
	),
	'a shared catalog is listed');

# Out of the page cache, and dropped: cold stays in shared buffers, its
# file leaves the page cache; gone keeps its saved blocks under no name.
evict_files($file{cold});
$node->safe_psql('postgres', 'DROP TABLE gone');
my $gone_saved = 0;
$gone_saved += $_ // 0 for @{ $usage{gone} };
my $gone_relnumber = $file{gone} =~ s{.*/}{}r;
my $cold_saved = 0;
$cold_saved += $_ // 0 for @{ $usage{cold} };
is( census_row('cold'),
	join('|',
		$blocks{cold}, $cold_saved, usage_array('cold'), 0, cached($node, 'cold'),
		resident_blocks($file{cold})),
	'cold out of the page cache: in_os_cache as fincore says, still in shared buffers'
);
is( $node->safe_psql(
		'postgres', qq{
SELECT relation IS NULL, saved_buffer_tier, in_shared_buffers, coalesce(size_blocks, 0)
  FROM warmcache_relations() WHERE relfilenode = $gone_relnumber AND fork = 'main'}),
	"t|$gone_saved|0|0",
	'a dropped table keeps its saved blocks, under no name');

# A table made after the dump is in the caches, not in the saved set.
my $fresh = fill_table($node, 'fresh', 1);
is( $node->safe_psql(
		'postgres', q{
SELECT saved_buffer_tier + saved_os_tier, in_shared_buffers
  FROM warmcache_relations() WHERE relation = 'fresh'::regclass AND fork = 'main'}),
	'0|' . cached($node, 'fresh'),
	'a table made after the dump: nothing saved, in shared buffers as pg_buffercache says'
);

# What the backend of one session read from storage while it ran $sql
# (/proc/self/io before and after, in the same session), and the rows
# $sql returned.
sub device_reads
{
	my ($node, $sql) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT pg_read_file('/proc/self/io'); $sql; SELECT pg_read_file('/proc/self/io')");
	my @read = $out =~ /^read_bytes: (\d+)$/mg;
	my ($rows) = $out =~ /^cancelled_write_bytes: \d+\n+(.*?)\n+rchar:/ms;
	die "no I/O counts in: $out" unless @read == 2 && defined $rows;
	return ($read[1] - $read[0], $rows);
}

# The estimate.  Everything the saved set holds is in the page cache but
# cold: the probe times cold's blocks from the device, past the page
# cache, which it leaves as it was, and reads no block outside the saved
# set, such as fresh's, made after the dump.
my $fresh_file = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('fresh')");
$node->safe_psql('postgres', 'CHECKPOINT');
evict_files($fresh_file);
my $before = os_cached_block_sets($file{cold}, $file{hot});
my ($device, $row) = device_reads(
	$node, q{
SELECT distinct_bytes, shared_buffers_share,
       restore_seconds, restore_basis, natural_seconds, natural_basis,
       read_mb_per_s, random_read_ms,
       abs(restore_seconds - distinct_bytes / 1048576.0 / read_mb_per_s) < 1e-6,
       abs(natural_seconds - 0.9 * distinct_bytes / 8192 * random_read_ms / 1000) < 1e-6
  FROM warmcache_estimate()});
my ($bytes, $share, $restore_s, $restore_basis, $natural_s, $natural_basis,
	$rate, $random_ms, $check_restore, $check_natural) = split /\|/, $row;
# Blocks resident now that were not before: the machine's memory
# management may take pages meanwhile (see OS_CACHE_SHARE), so a count
# would not do.
my $after = os_cached_block_sets($file{cold}, $file{hot});
my $read = 0;
for my $path (keys %$after)
{
	$read += grep { !$before->{$path}{$_} } keys %{ $after->{$path} };
}
note "estimate: restore $restore_s s ($restore_basis); natural $natural_s s ($natural_basis)";
cmp_ok(abs($bytes / 8192 - $buffers_at_dump), '<=', 0.01 * $buffers_at_dump,
	"the saved bytes are the buffers pg_buffercache counted at the dump ($buffers_at_dump)");
ok($rate > 0 && $random_ms > 0, "the probe timed reads: $rate MB/s, $random_ms ms");
like($restore_basis, qr/a probe begun at .* that read \d+ MB/, 'with no restore, the rate is the probe\'s');
like($natural_basis, qr/^0\.9 x \d+ pages \(the saved set's, once each\) x [0-9.]+ ms/,
	'the natural warm-up names its inputs');
is($check_restore, 't', 'restore_seconds is the distinct bytes over the rate');
is($check_natural, 't', 'natural_seconds is 0.9 distinct pages x random read time');
like($restore_basis, qr/past the OS cache/, 'the probe read past the page cache');
cmp_ok($device, '>', 0, "the probe read $device bytes from the device (/proc/self/io)");
cmp_ok($device, '<=', 128 * 1048576 + 2 * 2048 * 8192,
	'no more than its bounds: 128 MB in pieces and 2048 single blocks');
is($read, 0, 'the probe read no block into the page cache (mincore)');
is(resident_blocks($fresh_file), 0, 'the probe read nothing outside the saved set (fincore)');

# Asked again at once, out of the page cache again: the kept result, no read.
evict_files($file{cold});
($device, $row) = device_reads($node,
	'SELECT read_mb_per_s, random_read_ms FROM warmcache_estimate()');
is($row, "$rate|$random_ms", 'asked again: the kept probe');
cmp_ok(resident_blocks($file{cold}), '<=', 64, 'asked again: nothing read into the page cache');
cmp_ok($device, '<', 1048576, "asked again: nothing read from the device ($device bytes)");

# A limit: the share of shared_buffers is the limit's.
$node->append_conf('postgresql.conf', "pg_warmcache.restore_limit = '10%'");
$node->reload;
$node->poll_query_until('postgres',
	"SELECT current_setting('pg_warmcache.restore_limit') = '10%'");
is( $node->safe_psql(
		'postgres', 'SELECT round(shared_buffers_share::numeric, 3) FROM warmcache_estimate()'),
	'0.100',
	'with restore_limit 10%, the restore fills a tenth of shared_buffers');
$node->append_conf('postgresql.conf', "pg_warmcache.restore_limit = ''");
$node->reload;

# A restore that found its blocks in the page cache read nothing from the
# device: its rate says nothing of the device, and is not taken.  The
# files are read over and over meanwhile (keep_in_use), so that the page
# cache holds them whole, whatever the machine's memory management takes.
my $keeper = keep_in_use($file{hot}, $file{cold});
for (1 .. 600)
{
	last
	  if (resident_blocks($file{cold}) + resident_blocks($file{hot})) * 8192 ==
	  (-s $file{cold}) + (-s $file{hot});
	select(undef, undef, undef, 0.1);
}
restart_cold($node);
$node->safe_psql('postgres', "SELECT warmcache_restore_now('buffer')");
wait_for_restore($node);
stop_keeping($keeper);
unlike(
	$node->safe_psql('postgres', 'SELECT restore_basis FROM warmcache_estimate()'),
	qr/the rate of this server's restore/,
	'after a restore out of the page cache, its rate is not taken');

# After a restore that read enough from the device, its rate: the bytes it
# brought into the page cache (fincore) over its duration (status).
restart_cold($node);
evict_files($file{cold}, $file{hot});
$node->safe_psql('postgres', "SELECT warmcache_restore_now('buffer')");
wait_for_restore($node);
my $seconds = status($node,
	'extract(epoch FROM restore_finished_at - restore_started_at)');
my $brought = (resident_blocks($file{cold}) + resident_blocks($file{hot})) * 8192;
my $oracle_rate = $brought / 1048576 / $seconds;
my ($estimate_rate, $basis) = split /\|/,
  $node->safe_psql('postgres', 'SELECT read_mb_per_s, restore_basis FROM warmcache_estimate()');
note "restore of $brought bytes from the device in $seconds s: $oracle_rate MB/s; estimate $estimate_rate MB/s";
cmp_ok($estimate_rate, '>=', 0.8 * $oracle_rate,
	'after a restore from the device, the rate is at least what it brought into the page cache over its time');
cmp_ok($estimate_rate, '<=', 1.5 * $oracle_rate,
	'and not much more (the catalogs and read-ahead)');
like($basis, qr/the rate of this server's restore begun at/, 'and the basis says so');

# With the OS tier, a block of shared buffers is in both tiers: counted
# once.  hot and cold are in shared buffers (pg_buffercache) and whole in
# the page cache (fincore), so each of their blocks is in both tiers.
$node->append_conf('postgresql.conf', 'pg_warmcache.dump_os_cache = on');
$node->reload;
$node->poll_query_until('postgres',
	"SELECT current_setting('pg_warmcache.dump_os_cache') = 'on'");
# The files are read over and over meanwhile, so that the page cache keeps
# them (keep_in_use); a block in shared buffers and in the page cache is
# in both tiers, and there are at least so many of those in a relation as
# its blocks in both caches over its size.
$keeper = keep_in_use($file{hot}, $file{cold});
sleep 1;
my $both = 0;
for my $rel (qw(hot cold))
{
	my $over = cached($node, $rel) + resident_blocks($file{$rel}) -
	  relation_blocks($node, $rel);
	$both += $over if $over > 0;
}
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
stop_keeping($keeper);
my ($bt, $ot, $distinct) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT buffer_tier_bytes / 8192, os_tier_bytes / 8192, distinct_bytes / 8192 FROM warmcache_estimate()');
note "tiers $bt and $ot blocks, $distinct distinct, $both of hot and cold in both";
cmp_ok($both, '>=', $blocks{hot}, 'hot and cold are in both caches');
cmp_ok($distinct, '<=', $bt + $ot - $both,
	'the distinct blocks leave out the second count of those in both tiers');
cmp_ok($distinct, '>=', ($bt > $ot ? $bt : $ot), 'and are no fewer than either tier');
$node->append_conf('postgresql.conf', 'pg_warmcache.dump_os_cache = off');
$node->reload;

# Granted to pg_monitor only (after the estimate's probe above: a call
# runs it).
$node->safe_psql('postgres',
	'CREATE ROLE plain LOGIN; CREATE ROLE watcher LOGIN IN ROLE pg_monitor');
for my $f (qw(warmcache_relations warmcache_estimate))
{
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM $f()",
		extra_params => [ '-U', 'plain' ]);
	like($err, qr/permission denied for function $f/, "$f(): refused to a plain role");
	($ret, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM $f()",
		extra_params => [ '-U', 'watcher' ]);
	is($ret, 0, "$f(): allowed to pg_monitor");
}

# Before a planned restart the page cache holds the whole saved set (here
# every file of the cluster's relations): the probe still times the
# device (a new server's first call probes anew), and the page cache stays
# as it was.
restart_cold($node);
for my $f (grep { -f } glob($node->data_dir . '/base/*/*'),
	glob($node->data_dir . '/global/*'))
{
	open my $fh, '<', $f or die "could not open $f: $!";
	binmode $fh;
	1 while read($fh, my $chunk, 1048576);
	close $fh;
}
my %whole = map { $_ => -s $file{$_} } qw(cold hot);
my $resident = resident_blocks($file{cold}) + resident_blocks($file{hot});
is($resident * 8192, $whole{cold} + $whole{hot},
	'a warm server: the page cache holds hot and cold whole (fincore)');
($device, $row) = device_reads($node,
	'SELECT natural_seconds > 0, random_read_ms > 0, natural_basis FROM warmcache_estimate()');
my ($natural_known, $random_known, $warm_basis) = split /\|/, $row;
note "a warm server: natural $warm_basis";
is("$natural_known|$random_known", 't|t',
	'a warm server: the natural warm-up and the random read time are known');
like($warm_basis, qr/past the OS cache/, 'a warm server: timed past the page cache');
cmp_ok($device, '>', 0, "a warm server: the probe read $device bytes from the device (/proc/self/io)");
# What the machine's memory management takes meanwhile is a few pages
# (OS_CACHE_SHARE); a probe that dropped what it read would take more.
cmp_ok(resident_blocks($file{cold}) + resident_blocks($file{hot}), '>=',
	OS_CACHE_SHARE * $resident,
	'a warm server: the page cache holds what it held (fincore)');

$node->stop;
done_testing();
