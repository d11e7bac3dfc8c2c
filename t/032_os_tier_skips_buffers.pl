# Copyright (c) 2026, pg_warmcache developers
#
# The OS tier of a dump also holds the blocks that are in shared buffers
# (PostgreSQL reads through the page cache).  Restoring the OS tier must not
# read those again: after the buffer tier they are in shared buffers, and a
# read would be CPU spent for nothing, which a restore beside a CPU-bound
# workload pays ten times over (its CPU budget).  The oracle: a table whose
# blocks are all in shared buffers but whose file left the page cache stays
# out of the page cache through a restore (util-linux fincore), while a
# table in the OS tier alone comes back.  Advice is off
# (maintenance_io_concurrency = 0): it would ask the kernel for the blocks
# ahead of the engine's own decision.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  wait_for_restore relation_blocks cached);
use WarmCache::PageCache qw(resident_blocks evict_files);

my $node = start_node(
	'skips', q{
shared_buffers = 32MB
pg_warmcache.dump_os_cache = on
pg_warmcache.restore_workers = 1
maintenance_io_concurrency = 0
});
create_extensions($node);
$node->safe_psql(
	'postgres', q{
CREATE TABLE hot (id int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO hot SELECT g, repeat('h', 900) FROM generate_series(1, 8000) g;
CREATE TABLE side (id int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO side SELECT g, repeat('s', 900) FROM generate_series(1, 8000) g;
CHECKPOINT;
});
my $pgdata = $node->data_dir;
my %file = map {
	$_ => "$pgdata/"
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$_')")
} ('hot', 'side');
my $blocks = relation_blocks($node, 'hot');

# hot in shared buffers (and so in the page cache), side in the page cache
# only: the dump's OS tier holds both.
restart_cold($node);
$node->safe_psql('postgres', "SELECT warm('hot'), warm('side', 'read')");
is(cached($node, 'hot'), $blocks, 'hot is in shared buffers');
is(cached($node, 'side'), 0, 'side is not');
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok(
	$node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM warmcache_blocks()
	 WHERE tier = 'os' AND fork = 'main'
	   AND relfilenode = pg_relation_filenode('hot')}),
	'>=', $blocks, 'the OS tier holds hot too');

# Both files leave the page cache; hot stays in shared buffers.
$node->safe_psql('postgres', 'CHECKPOINT');
evict_files($file{hot}, $file{side});
cmp_ok(resident_blocks($file{hot}), '<', $blocks / 10,
	'hot left the page cache');

$node->safe_psql('postgres', "SELECT warmcache_restore_now('buffer')");
wait_for_restore($node);
is(status($node, 'restore_incomplete'), 'f', 'the restore is complete');
cmp_ok(resident_blocks($file{side}), '>=', 0.95 * $blocks,
	'side, in the OS tier only, came back into the page cache');
cmp_ok(resident_blocks($file{hot}), '<', $blocks / 10,
	'hot, in shared buffers, was not read again');
is(cached($node, 'hot'), $blocks, 'and is still in shared buffers');
cmp_ok(status($node, 'restore_os_tier_done'), '>=', 2 * $blocks,
	'both count as restored');

$node->stop;
done_testing();
