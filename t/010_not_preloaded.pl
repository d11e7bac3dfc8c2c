# Copyright (c) 2026, pg_warmcache developers
#
# Without shared_preload_libraries: the extension installs, warm() and
# warm_table() work, and the functions that need the shared state fail with
# SQLSTATE 55000 and a hint that names shared_preload_libraries.

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('not_preloaded');
$node->init;
$node->start;

is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'', 'pg_warmcache is not preloaded');

$node->safe_psql('postgres', 'CREATE EXTENSION pg_warmcache');
is( $node->safe_psql(
		'postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache'"),
	'1.0',
	'CREATE EXTENSION works without preloading');

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION pg_buffercache;
	CREATE TABLE t (id int PRIMARY KEY, pad text);
	INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 2000) g;
	VACUUM t;
});

# Blocks of a relation fork in shared buffers, by pg_buffercache.
sub cached
{
	my ($rel, $fork) = @_;
	$fork //= 'main';
	return $node->safe_psql(
		'postgres', qq{
		SELECT count(*) FROM pg_buffercache
		WHERE reldatabase = (SELECT oid FROM pg_database
							 WHERE datname = current_database())
		  AND relfilenode = pg_relation_filenode('$rel')
		  AND relforknumber = CASE '$fork' WHEN 'main' THEN 0
							   WHEN 'fsm' THEN 1 WHEN 'vm' THEN 2 END});
}

my $heap_blocks = $node->safe_psql('postgres',
	"SELECT pg_relation_size('t') / current_setting('block_size')::int");
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
is(cached('t'), 0, 'after a restart no block of the table is cached');
is($node->safe_psql('postgres', "SELECT warm('t')"),
	$heap_blocks, 'warm() warms every block of the table');
is(cached('t'), $heap_blocks, 'pg_buffercache shows every block of the table');
is($node->safe_psql('postgres', "SELECT warm('t', 'read')"),
	$heap_blocks, 'warm() in mode read works');

$node->restart;
is(cached('t_pkey'), 0, 'after a restart no block of the index is cached');
is($node->safe_psql('postgres', "SELECT warm_table('t')"),
	$table_blocks, 'warm_table() warms the table, its index and TOAST');
is(cached('t'), $heap_blocks, 'the heap is in shared buffers');
is( cached('t_pkey'),
	$node->safe_psql('postgres',
		"SELECT pg_relation_size('t_pkey') / current_setting('block_size')::int"),
	'the index is in shared buffers');
cmp_ok(cached('t', 'vm'), '>', 0,
	'the visibility map is in shared buffers');

# The functions that need the shared memory of a preloaded library.
for my $call (
	'warmcache_dump_now()', 'warmcache_restore_now()',
	"warmcache_restore_now('read')", 'warmcache_restore_abort()',
	'warmcache_status()')
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT * FROM $call");
	isnt($ret, 0, "$call fails");
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
