# Copyright (c) 2026, pg_warmcache developers
#
# The restore never evicts: with a saved set three times shared_buffers,
# and the queries' pages already in shared buffers when the restore
# starts, the restore fills the buffers that hold no page and stops there,
# and every page the queries had read is still in shared buffers after it.
# Up to 18 the buffer free list says when no unused buffer is left; 19 has
# none, and the rule rests on the buffer headers (compat.h).  The oracle is
# pg_buffercache, before and after.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_restore relation_blocks cached fill_table);

my $node = start_node(
	'never_evict', q{
shared_buffers = 64MB
pg_warmcache.restore_workers = 1
autovacuum = off
});
create_extensions($node);
my $big_blocks = fill_table($node, 'big', 48);

# The saved set: big, whole, and more than shared buffers will hold.
my $saved = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok(cached($node, 'big'), '==', $big_blocks, 'big is cached and dumped');

# The queries' table is not in the saved set: no dump from here on, not
# even at shutdown, and none of the restore at the start.
$node->append_conf('postgresql.conf', 'pg_warmcache.autowarm = off');
$node->reload;
$node->safe_psql(
	'postgres', q{
CREATE TABLE queried (id int, filler text);
INSERT INTO queried SELECT g, repeat('q', 500) FROM generate_series(1, 3000) g;
VACUUM ANALYZE queried;
CHECKPOINT;
});
my $queried_blocks = relation_blocks($node, 'queried');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE relfilenode = pg_relation_filenode('queried')}),
	'0',
	'the saved set holds no page of the queried table');

# A quarter of the buffers now.
$node->append_conf('postgresql.conf', 'shared_buffers = 16MB');
$node->restart;
my $nbuffers =
  $node->safe_psql('postgres', 'SELECT count(*) FROM pg_buffercache');
cmp_ok($saved, '>', 2 * $nbuffers,
	"the saved set ($saved blocks) is over twice shared_buffers ($nbuffers)");

# The queries read their table, once, so that each of its pages has the
# lowest usage count a read gives: the first a sweep would take.
$node->safe_psql('postgres', 'SELECT count(*) FROM queried');
my $pages_sql = q{
SELECT string_agg(relblocknumber::text, ',' ORDER BY relblocknumber)
  FROM pg_buffercache
 WHERE relfilenode = pg_relation_filenode('queried') AND relforknumber = 0
   AND reldatabase = (SELECT oid FROM pg_database
                       WHERE datname = current_database())};
my $before = $node->safe_psql('postgres', $pages_sql);
is(cached($node, 'queried'), $queried_blocks,
	'every page of the queried table is in shared buffers');
my $unused_sql =
  'SELECT count(*) FROM pg_buffercache WHERE relfilenode IS NULL';
my $unused_before = $node->safe_psql('postgres', $unused_sql);
note "unused buffers before the restore: $unused_before of $nbuffers";

$node->safe_psql('postgres', "SELECT warmcache_restore_now('buffer')");
wait_for_restore($node);

# Measure the queried table first: any other query could need a buffer.
my $after = $node->safe_psql('postgres', $pages_sql);
my $big_cached = cached($node, 'big');
my $unused_after = $node->safe_psql('postgres', $unused_sql);
note "after the restore: big $big_cached blocks cached, "
  . "$unused_after buffers unused";
is($after, $before,
	'pg_buffercache: the restore evicted none of the queried pages');
cmp_ok($big_cached, '>=', 0.9 * $unused_before,
	'the restore filled the buffers that held no page');
cmp_ok($unused_after, '<=', 0.1 * $nbuffers,
	'few buffers are left unused after the restore');
cmp_ok(status($node, 'restore_blocks_os_only'),
	'>', 0, 'what did not fit went to the OS cache');

$node->stop;
done_testing();
