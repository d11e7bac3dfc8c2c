# Copyright (c) 2026, pg_warmcache developers
#
# Without shared_preload_libraries: the extension installs, warm() and
# warm_table() work, and the functions that need the shared state fail with
# SQLSTATE 55000 and a hint that names shared_preload_libraries.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(psql_fails relation_blocks cached);

my $node = PostgreSQL::Test::Cluster->new('not_preloaded');
$node->init;
$node->start;

is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'', 'pg_warmcache is not preloaded');

$node->safe_psql('postgres', 'CREATE EXTENSION pg_warmcache');
is( $node->safe_psql(
		'postgres',
		"SELECT extversion = default_version FROM pg_extension, pg_available_extensions
		  WHERE extname = 'pg_warmcache' AND name = extname"),
	't',
	'CREATE EXTENSION works without preloading');

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION pg_buffercache;
	CREATE TABLE t (id int PRIMARY KEY, pad text);
	INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 2000) g;
	VACUUM t;
});

my $heap_blocks = relation_blocks($node, 't');
cmp_ok($heap_blocks, '>', 1, 'the table has several blocks');

# What warm_table() covers: the heap's main and visibility map forks, the
# index, and the TOAST table with its index.
my $table_blocks = $node->safe_psql(
	'postgres', q{
	SELECT (pg_relation_size('t', 'main') + pg_relation_size('t', 'vm')
			+ pg_relation_size('t_pkey')
			+ pg_relation_size(c.reltoastrelid, 'main')
			+ pg_relation_size(c.reltoastrelid, 'vm')
			+ (SELECT sum(pg_relation_size(indexrelid)) FROM pg_index
			   WHERE indrelid = c.reltoastrelid)::bigint)
		   / current_setting('block_size')::int
	FROM pg_class c WHERE c.oid = 't'::regclass});

# A cold buffer cache, so that pg_buffercache tells what warming did.
$node->restart;
is(cached($node, 't'), 0, 'after a restart no block of the table is cached');
is($node->safe_psql('postgres', "SELECT warm('t')"),
	$heap_blocks, 'warm() warms every block of the table');
is(cached($node, 't'), $heap_blocks,
	'pg_buffercache shows every block of the table');
is($node->safe_psql('postgres', "SELECT warm('t', 'read')"),
	$heap_blocks, 'warm() in mode read works');

$node->restart;
is(cached($node, 't_pkey'), 0,
	'after a restart no block of the index is cached');
is($node->safe_psql('postgres', "SELECT warm_table('t')"),
	$table_blocks, 'warm_table() warms the table, its index and TOAST');
is(cached($node, 't'), $heap_blocks, 'the heap is in shared buffers');
is(cached($node, 't_pkey'),
	relation_blocks($node, 't_pkey'),
	'the index is in shared buffers');
cmp_ok(cached($node, 't', 'vm'), '>', 0,
	'the visibility map is in shared buffers');

# The functions that need the shared memory of a preloaded library.
for my $call (
	'warmcache_dump_now()', 'warmcache_restore_now()',
	"warmcache_restore_now('read')", 'warmcache_restore_abort()',
	'warmcache_status()', 'warmcache_relations()', 'warmcache_estimate()')
{
	my $stderr = psql_fails($node, "SELECT * FROM $call", "$call fails");
	like(
		$stderr,
		qr/ERROR:  55000: pg_warmcache must be loaded via "shared_preload_libraries"/,
		"$call fails with SQLSTATE 55000");
	like(
		$stderr,
		qr/HINT:  .*shared_preload_libraries/,
		"$call has a hint naming shared_preload_libraries");
}

# Nothing was written into the data directory.
ok(!-e $node->data_dir . '/pg_warmcache.blocks',
	'no dump file appears without preloading');

# Still a working server after all that.
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'),
	'2000', 'the server still serves queries');

$node->stop;
done_testing();
