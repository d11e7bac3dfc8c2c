# Copyright (c) 2026, pg_warmcache developers
#
# The dump's walk for the OS tier first counts what the page cache holds of
# each segment (cachestat(), where the kernel has it): a segment cached
# whole goes into the dump as one run, one not cached at all is passed
# over, and only one cached in part is mapped and asked about page by page
# (mincore()).  Three tables, cached whole, in part and not at all: the
# dump's OS tier must hold exactly as many blocks of each as the page cache
# does, by util-linux fincore, the oracle.  The count goes by spans of
# 4096 blocks and a segment turns to mincore() at its first span cached in
# part: a fourth table of five spans is cached whole in its first, not at
# all in its second, whole in its third, in part in its fourth, and whole
# in the rest, and each span's blocks in the dump must be the ones left
# cached.  On a kernel
# without the count, every segment takes the mincore() path and the same
# must hold.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache;

plan skip_all => 'fincore (util-linux) is not installed'
  if system('fincore --version >/dev/null 2>&1') != 0;

# No autowarm: no shutdown dump and no restore put blocks back.
my $node = start_node(
	'os_walk', q{
shared_buffers = 16MB
pg_warmcache.autowarm = off
pg_warmcache.dump_os_cache = on
autovacuum = off
});
create_extensions($node);
my %blocks = map { $_ => fill_table($node, $_, 8) } qw(whole part none);
$blocks{spans} = fill_table($node, 'spans', 150);
die "spans has $blocks{spans} blocks, not more than 4 spans of 4096"
  unless $blocks{spans} > 4 * 4096 && $blocks{spans} <= 131072;
$node->safe_psql('postgres', 'CHECKPOINT');
my %path = map {
	$_ => $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$_')")
} keys %blocks;

# Shared buffers empty, the page cache as each table's name says.
$node->stop;
evict_files(values %path);
system("cat '$path{whole}' '$path{part}' '$path{spans}' >/dev/null") == 0
  or die 'cat failed';
# part: its second half dropped again, block by block range (dd reads it,
# then advises the kernel to drop what it read), whatever readahead did.
my $half = int($blocks{part} / 2);
system('dd', "if=$path{part}", 'of=/dev/null', 'iflag=nocache', 'bs=8192',
	"skip=$half", 'count=' . ($blocks{part} - $half), 'status=none') == 0
  or die 'dd failed';
# spans: its second span dropped, and the second half of its fourth.  One
# read and one drop each: dd drops what each read covered, and the page
# cache keeps a folio of several pages that no single drop covers whole.
for my $drop ([ 4096, 4096 ], [ 3 * 4096 + 2048, 2048 ])
{
	my ($skip, $count) = map { $_ * 8192 } @$drop;
	system('dd', "if=$path{spans}", 'of=/dev/null',
		'iflag=nocache,skip_bytes,count_bytes', "bs=$count", "skip=$skip",
		"count=$count", 'status=none') == 0
	  or die 'dd failed';
}
$node->start;

my $res = os_cached_bytes_of(values %path);
my %resident = map { $_ => int($res->{ $path{$_} } / 8192) } keys %path;
is($resident{whole}, $blocks{whole}, 'fincore: whole is cached whole');
cmp_ok($resident{part}, '>=', $half, 'fincore: part is cached in part');
cmp_ok($resident{part}, '<', $blocks{part}, 'fincore: not all of part');
is($resident{none}, 0, 'fincore: none is not cached');
is($resident{spans}, $blocks{spans} - 4096 - 2048,
	'fincore: spans is cached but for the blocks dropped');
is(cached($node, $_), 0, "$_ is not in shared buffers") for sort keys %path;

$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
for my $t (qw(whole part none spans))
{
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM warmcache_blocks()
 WHERE tier = 'os' AND relfilenode = pg_relation_filenode('$t')
   AND fork = 'main'}),
		$resident{$t},
		"the dump's OS tier holds the $resident{$t} cached blocks of $t");
}
# The blocks of part that it holds are the cached ones: the first half.
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE tier = 'os' AND relfilenode = pg_relation_filenode('part')
   AND fork = 'main' AND block < } . $half), $half,
	"part's first $half blocks, the ones read, are in the OS tier");

# spans, span by span: whole, none, whole, the first half, whole.
my $last = $blocks{spans};
for my $span (
	[ 0, 4096, 4096 ],
	[ 4096, 8192, 0 ],
	[ 8192, 12288, 4096 ],
	[ 12288, 14336, 2048 ],
	[ 14336, 16384, 0 ],
	[ 16384, $last, $last - 16384 ])
{
	my ($from, $to, $want) = @$span;
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM warmcache_blocks()
 WHERE tier = 'os' AND relfilenode = pg_relation_filenode('spans')
   AND fork = 'main' AND block >= $from AND block < $to}),
		$want,
		"spans: blocks $from to $to in the OS tier are the $want cached");
}

done_testing();
