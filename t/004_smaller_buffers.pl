# Copyright (c) 2026, pg_warmcache developers
#
# Hottest first: when the saved blocks do not all fit in shared buffers any
# more, the restore fills shared buffers with the hottest blocks (highest
# usage count at dump time), never evicts, and sends the rest to the OS
# cache.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  wait_for_restore_line relation_blocks);

my $node = start_node(
	'smaller', q{
shared_buffers = 64MB
pg_warmcache.restore_workers = 1
autovacuum = off
});
create_extensions($node);
$node->safe_psql(
	'postgres', q{
CREATE TABLE hot (id int, filler text);
INSERT INTO hot SELECT g, repeat('h', 1000) FROM generate_series(1, 7000) g;
CREATE TABLE cold (id int, filler text);
INSERT INTO cold SELECT g, repeat('c', 1000) FROM generate_series(1, 21000) g;
VACUUM ANALYZE hot;
VACUUM ANALYZE cold;
CHECKPOINT;
});
my $hot_blocks = relation_blocks($node, 'hot');
my $cold_blocks = relation_blocks($node, 'cold');
note "hot: $hot_blocks blocks, cold: $cold_blocks blocks";

# Empty shared buffers (autowarm off: nothing restored), then autowarm on.
restart_cold($node);

# cold read once: usage count 1.  hot read six times: each read of a cached
# block adds one to its usage count, up to 5.
$node->safe_psql('postgres', "SELECT warm('cold')");
$node->safe_psql('postgres', "SELECT warm('hot')") for 1 .. 6;

# Usage counts of a table's main fork in shared buffers: "min|max|count".
sub usage
{
	my ($node, $table) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT min(usagecount), max(usagecount), count(*) FROM pg_buffercache
 WHERE relfilenode = pg_relation_filenode('$table') AND relforknumber = 0
   AND reldatabase = (SELECT oid FROM pg_database
                       WHERE datname = current_database())});
}
is(usage($node, 'hot'), "5|5|$hot_blocks", 'hot is cached with usage count 5');
is(usage($node, 'cold'), "1|1|$cold_blocks", 'cold is cached with usage count 1');

# Ranks of a table's main fork in the dump file: "min|max|count".
sub ranks
{
	my ($node, $table) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT min(rank), max(rank), count(*) FROM warmcache_blocks()
 WHERE relfilenode = pg_relation_filenode('$table') AND fork = 'main'
   AND database = (SELECT oid FROM pg_database
                    WHERE datname = current_database())});
}
# What the restore did, seen from shared buffers and the file:
#  hot_cached, cold_cached: main fork blocks of hot and cold in shared buffers
#  file_cached: blocks of the file in shared buffers
#  after_cold: blocks the restore reads after cold's main fork (file order:
#    rank descending, then database, tablespace, relation, fork, block; the
#    first database's worker also restores the shared catalogs)
#  other_dbs: blocks of other databases, restored afterwards (one restore
#    worker at a time, largest database first)
my $measure_sql = q{
WITH me AS (SELECT oid FROM pg_database WHERE datname = current_database()),
f AS (SELECT w.*, CASE fork WHEN 'main' THEN 0 WHEN 'fsm' THEN 1
                            WHEN 'vm' THEN 2 WHEN 'init' THEN 3 END AS forknum
        FROM warmcache_blocks() w),
b AS (SELECT * FROM pg_buffercache WHERE relfilenode IS NOT NULL),
c AS (SELECT rank, relfilenode FROM f
       WHERE relfilenode = pg_relation_filenode('cold') AND forknum = 0
         AND database = (SELECT oid FROM me) LIMIT 1)
SELECT
 (SELECT count(*) FROM b WHERE relfilenode = pg_relation_filenode('hot')
     AND relforknumber = 0 AND reldatabase = (SELECT oid FROM me)),
 (SELECT count(*) FROM b WHERE relfilenode = pg_relation_filenode('cold')
     AND relforknumber = 0 AND reldatabase = (SELECT oid FROM me)),
 (SELECT count(*) FROM f JOIN b
     ON b.reldatabase = f.database AND b.reltablespace = f.tablespace
    AND b.relfilenode = f.relfilenode AND b.relforknumber = f.forknum
    AND b.relblocknumber = f.block),
 (SELECT count(*) FROM f, c
   WHERE f.database IN (0, (SELECT oid FROM me))
     AND (f.rank < c.rank
          OR (f.rank = c.rank AND f.database = (SELECT oid FROM me)
              AND (f.relfilenode > c.relfilenode
                   OR (f.relfilenode = c.relfilenode AND f.forknum > 0))))),
 (SELECT count(*) FROM f WHERE database NOT IN (0, (SELECT oid FROM me)))};

my $n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
# Once now, so that the catalog blocks it needs are cached, dumped and
# restored, and it needs no buffer of its own after the restore.
$node->safe_psql('postgres', $measure_sql);
is(ranks($node, 'hot'), "5|5|$hot_blocks", 'dump: hot has rank 5');
is(ranks($node, 'cold'), "1|1|$cold_blocks", 'dump: cold has rank 1');

# Shared buffers for all that is not cold, and a little more.
my $others = $n - $cold_blocks;
my $margin = 256;
my $nbuffers = $others + $margin;
cmp_ok($nbuffers, '<', $hot_blocks + $cold_blocks,
	"hot and cold do not fit in $nbuffers buffers");
note "dumped $n blocks, $others of them not cold; restarting with "
  . "shared_buffers = $nbuffers";

$node->append_conf('postgresql.conf', "shared_buffers = $nbuffers");
my $offset = -s $node->logfile;
$node->restart;
# No connection until the restore has ended: a backend could need buffers.
note wait_for_restore_line($node, $offset);

# Measure first: any later query could need a buffer and evict.
my ($hot_cached, $cold_cached, $file_cached, $after_cold, $other_dbs) =
  split /\|/, $node->safe_psql('postgres', $measure_sql);

# The file that was restored: the shutdown dump, ranks unchanged.
is(ranks($node, 'hot'), "5|5|$hot_blocks", 'restored file: hot has rank 5');
is(ranks($node, 'cold'), "1|1|$cold_blocks", 'restored file: cold has rank 1');
my ($total, $done, $skipped, $os) = split /\|/,
  status($node,
	'restore_blocks_total, restore_blocks_done, restore_blocks_skipped, '
	  . 'restore_blocks_os_only');
note "status: total $total, done $done, skipped $skipped, os only $os";
note "cached: hot $hot_cached of $hot_blocks, cold $cold_cached of "
  . "$cold_blocks, file $file_cached of $total; after cold $after_cold, "
  . "other databases $other_dbs";
is($done, $total, 'every block was restored');
is($skipped, 0, 'no block was skipped');

cmp_ok($hot_cached, '>=', 0.98 * $hot_blocks, 'hot is (nearly) all cached');
cmp_ok($cold_cached, '<=', 0.5 * $cold_blocks, 'cold is mostly not cached');
cmp_ok($cold_cached, '>', 0, 'shared buffers ran full within cold');

# From there on, everything went to the OS cache: the rest of cold and the
# blocks after it.  Nobody else reads cold, and the blocks of cold loaded
# last are the last that an eviction would hit: cold_cached is what the
# restore loaded of cold.
cmp_ok($os, '>', 0, 'what did not fit went to the OS cache');
is($os, $cold_blocks - $cold_cached + $after_cold + $other_dbs,
	'restore_blocks_os_only counts exactly what went to the OS cache only');

# The restore does not evict: whatever it loaded into shared buffers (or
# found there) is still there.
my $evicted = $done - $os - $file_cached;
note "evicted by the restore: $evicted";
cmp_ok($evicted, '<=', 0, 'the restore evicted no buffer');

$node->stop;
done_testing();
