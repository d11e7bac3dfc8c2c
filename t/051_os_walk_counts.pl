# Copyright (c) 2026, pg_warmcache developers
#
# The dump's walk for the OS tier first counts what the page cache holds of
# each segment (cachestat(), where the kernel has it): a segment cached
# whole goes into the dump as one run, one not cached at all is passed
# over, and only one cached in part is mapped and asked about page by page
# (mincore()).  Three tables, cached whole, in part and not at all: the
# dump's OS tier must name exactly the blocks of each that the page cache
# holds, by the tests' own mincore() helper, the oracle (os_cached_blocks.py),
# asked before the dump and after it, since the kernel may evict a page at
# any moment.  The count goes by spans of 4096 blocks and a segment turns
# to mincore() at its first span cached in part: a fourth table of five
# spans is cached whole in its first, not at all in its second, whole in
# its third, in part in its fourth, and whole in the rest, and the same must
# hold of it.  On a kernel without the count, every segment takes the
# mincore() path and the same must hold.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions cached fill_table);
use WarmCache::PageCache qw(os_cached_block_sets evict_files);

plan skip_all => 'python3 is not installed'
  if system('python3 -c 1 >/dev/null 2>&1') != 0;

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

# The page cache as the test left it.  The kernel may evict a page of it at
# any moment (memory pressure elsewhere on the machine), and nothing reads
# these files again: so a block the dump names must be cached before it,
# and a block cached after it must be named.  The oracle is mincore() in a
# helper of the tests' own, block by block.
my $before = os_cached_block_sets(values %path);
my %cached = map { $_ => $before->{ $path{$_} } } keys %path;
cmp_ok(cached_in(\%cached, 'whole', 0, $blocks{whole}),
	'>=', 0.9 * $blocks{whole}, 'whole is cached, nearly all of it');
cmp_ok(cached_in(\%cached, 'part', 0, $half), '>=', 0.9 * $half,
	'part is cached in its first half');
cmp_ok(cached_in(\%cached, 'part', $half, $blocks{part}),
	'<', $blocks{part} - $half, 'part is not cached in all of its second half');
is(cached_in(\%cached, 'none', 0, $blocks{none}), 0, 'none is not cached');
my @spans = (
	[ 0, 4096, 'whole' ],
	[ 4096, 8192, 'none' ],
	[ 8192, 12288, 'whole' ],
	[ 12288, 14336, 'whole' ],
	[ 14336, 16384, 'none' ],
	[ 16384, $blocks{spans}, 'whole' ]);
for my $span (@spans)
{
	my ($from, $to, $want) = @$span;
	my $n = cached_in(\%cached, 'spans', $from, $to);
	# All but 512 blocks: a drop beside a span has been seen to take 256
	# blocks (2 MB, a large folio) of it along, and the last span is short.
	if ($want eq 'whole')
	{
		cmp_ok($n, '>=', $to - $from - 512,
			"spans: blocks $from to $to are cached, nearly all of them");
	}
	else
	{
		is($n, 0, "spans: blocks $from to $to are not cached");
	}
}
is(cached($node, $_), 0, "$_ is not in shared buffers") for sort keys %path;

$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my $after = os_cached_block_sets(values %path);
for my $t (qw(whole part none spans))
{
	my %dumped = map { $_ => 1 } split /\n/, $node->safe_psql(
		'postgres', qq{
SELECT block FROM warmcache_blocks()
 WHERE tier = 'os' AND relfilenode = pg_relation_filenode('$t')
   AND fork = 'main'});
	my @extra = grep { !$before->{ $path{$t} }{$_} } keys %dumped;
	my @missed = grep { !$dumped{$_} } keys %{ $after->{ $path{$t} } };
	is(scalar(@extra), 0,
		"the dump's OS tier names no block of $t that was not cached")
	  or diag('for example block ' . (sort { $a <=> $b } @extra)[0]);
	is(scalar(@missed), 0,
		"the dump's OS tier names every block of $t cached throughout")
	  or diag('for example block ' . (sort { $a <=> $b } @missed)[0]);
	note(sprintf('%s: %d blocks cached before the dump, %d named, %d after',
		$t, scalar(keys %{ $before->{ $path{$t} } }),
		scalar(keys %dumped), scalar(keys %{ $after->{ $path{$t} } })));
}

done_testing();

# How many of blocks $from to $to - 1 of table $t the set says are cached.
sub cached_in
{
	my ($sets, $t, $from, $to) = @_;
	return scalar grep { $_ >= $from && $_ < $to } keys %{ $sets->{$t} };
}
