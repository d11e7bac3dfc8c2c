# Copyright (c) 2026, pg_warmcache developers
#
# Objects dropped between the dump and the restart: a dropped table, a
# truncated one (new relfilenode) and a dropped database.  The restore skips
# and counts their blocks, caches none of them, and restores the rest.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions wait_for_restore_line);

# autowarm off for now: no dump at shutdown may replace the file that
# warmcache_dump_now() writes before the objects go.
my $node = start_node(
	'dropped', q{
shared_buffers = 128MB
pg_warmcache.autowarm = off
autovacuum = off
});
create_extensions($node);
$node->safe_psql(
	'postgres', q{
CREATE TABLE keep (id int PRIMARY KEY, filler text);
INSERT INTO keep SELECT g, repeat('k', 200) FROM generate_series(1, 30000) g;
CREATE TABLE dropme (id int PRIMARY KEY, filler text, big text);
INSERT INTO dropme SELECT g, repeat('d', 200), NULL FROM generate_series(1, 20000) g;
-- some TOAST too: incompressible values of 4 kB
INSERT INTO dropme SELECT 100000 + g, 'd',
  (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 128) i)
  FROM generate_series(1, 300) g;
CREATE TABLE trunc (id int PRIMARY KEY, filler text);
INSERT INTO trunc SELECT g, repeat('t', 200) FROM generate_series(1, 20000) g;
VACUUM ANALYZE keep;
VACUUM ANALYZE dropme;
VACUUM ANALYZE trunc;
SELECT warm_table('keep'), warm_table('dropme'), warm_table('trunc');
});
$node->safe_psql('postgres', 'CREATE DATABASE gone');
$node->safe_psql('gone', 'CREATE EXTENSION pg_warmcache');
$node->safe_psql(
	'gone', q{
CREATE TABLE g (id int PRIMARY KEY, filler text);
INSERT INTO g SELECT x, repeat('g', 200) FROM generate_series(1, 10000) x;
VACUUM ANALYZE g;
SELECT warm_table('g');
});
my $gone_oid = $node->safe_psql('postgres',
	"SELECT oid FROM pg_database WHERE datname = 'gone'");
my $me_oid = $node->safe_psql('postgres',
	"SELECT oid FROM pg_database WHERE datname = current_database()");

# The relfilenodes of dropme and trunc with their indexes and TOAST.
sub filenodes
{
	my ($node, $table) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT string_agg(pg_relation_filenode(c.oid)::text, ',')
  FROM pg_class c
 WHERE c.oid = '$table'::regclass
    OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = '$table'::regclass)
    OR c.oid IN (SELECT indexrelid FROM pg_index
                  WHERE indrelid IN ('$table'::regclass,
                                     (SELECT reltoastrelid FROM pg_class
                                       WHERE oid = '$table'::regclass)))});
}
my $old_nodes = join(',', filenodes($node, 'dropme'), filenodes($node, 'trunc'));
note "filenodes of dropme and trunc: $old_nodes";

my $n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my $gone_blocks = $node->safe_psql('postgres',
	"SELECT count(*) FROM warmcache_blocks() WHERE database = $gone_oid");
my $old_blocks = $node->safe_psql('postgres',
	"SELECT count(*) FROM warmcache_blocks()
	  WHERE database = $me_oid AND relfilenode IN ($old_nodes)");
my $keep_blocks = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE relfilenode IN (pg_relation_filenode('keep'),
                       pg_relation_filenode('keep_pkey'))
   AND fork = 'main'});
note "dumped $n blocks: $gone_blocks of database gone, $old_blocks of "
  . "dropme and trunc, $keep_blocks of keep";
cmp_ok($gone_blocks, '>', 100, 'the file holds blocks of database gone');
# The shared catalogs go with the database that has the most blocks; here
# that is this one.  (The case where it is the dropped one comes last.)
cmp_ok($gone_blocks, '<',
	$node->safe_psql('postgres',
		"SELECT count(*) FROM warmcache_blocks() WHERE database = $me_oid"),
	'database gone is not the largest in the file');
cmp_ok($old_blocks, '>', 1000, 'the file holds blocks of dropme and trunc');
cmp_ok($keep_blocks, '>', 500, 'the file holds keep');
my $toast_blocks = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE relfilenode = (SELECT pg_relation_filenode(reltoastrelid)
                        FROM pg_class WHERE oid = 'dropme'::regclass)});
cmp_ok($toast_blocks, '>', 0, "the file holds dropme's TOAST");

# Between the dump and the restart.
$node->safe_psql(
	'postgres', q{
DROP TABLE dropme;
TRUNCATE trunc;
INSERT INTO trunc VALUES (1, 'after');
DROP DATABASE gone;
});

my $offset = -s $node->logfile;
$node->stop;
unlike(slurp_file($node->logfile, $offset), qr/dumped \d+ blocks?\b/,
	'no dump at shutdown replaced the file');

$node->append_conf('postgresql.conf', 'pg_warmcache.autowarm = on');
$offset = -s $node->logfile;
$node->start;

ok( $node->poll_query_until(
		'postgres',
		'SELECT restore_finished_at IS NOT NULL FROM warmcache_status()'),
	'the start-up restore finished');
my $line = wait_for_restore_line($node, $offset);
my $log = slurp_file($node->logfile, $offset);
note $line;

# The server is healthy: the failed restore worker of the dropped database
# did not take it down.
is($node->safe_psql('postgres', 'SELECT count(*) FROM keep'),
	'30000', 'the server answers queries');
unlike($log, qr/terminated by signal|PANIC|all server processes terminated/,
	'no crash');
like($line, qr/restored \d+ of $n blocks/, 'the restore read the whole file');

my ($state, $total, $done, $skipped, $incomplete, $skipped_gone,
	$skipped_excluded)
  = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT state, restore_blocks_total, restore_blocks_done,
       restore_blocks_skipped, restore_incomplete, restore_skipped_gone,
       restore_skipped_excluded
  FROM warmcache_status()});

# Template databases are not restored (a worker connected to template1
# would make CREATE DATABASE fail): their blocks are skipped as excluded.
my $excluded_blocks = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE database IN (SELECT oid FROM pg_database
                     WHERE datistemplate OR NOT datallowconn)});
note "status: total $total, done $done, skipped $skipped";
is($state, 'idle', 'status: idle');
is($incomplete, 'f', 'status: the restore is complete');
is($total, $n, 'status: total is the file');
is($done + $skipped, $total, 'every block was restored or skipped');
is($skipped_gone, $gone_blocks + $old_blocks,
	'skipped as gone: exactly the blocks of the dropped and truncated objects'
);
is($skipped_excluded, $excluded_blocks,
	'skipped as excluded: exactly the blocks of template databases');
is($skipped, $skipped_gone + $skipped_excluded, 'nothing else was skipped');
like($line, qr/skipped $skipped,/, 'the log line counts the skipped blocks');

# Nothing of them is cached.
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_buffercache WHERE reldatabase = $gone_oid"),
	'0', 'no block of the dropped database is cached');
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM pg_buffercache
 WHERE reldatabase = $me_oid AND relfilenode IN ($old_nodes)}),
	'0', 'no block of the dropped or truncated relations is cached');

# The rest is.
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_buffercache
 WHERE relfilenode IN (pg_relation_filenode('keep'),
                       pg_relation_filenode('keep_pkey'))
   AND relforknumber = 0}),
	$keep_blocks, 'keep and its index are cached');
my ($in_cache, $in_file) = split /\|/,
  $node->safe_psql(
	'postgres', qq{
WITH f AS (
  SELECT database, tablespace, relfilenode,
         CASE fork WHEN 'main' THEN 0 WHEN 'fsm' THEN 1
                   WHEN 'vm' THEN 2 WHEN 'init' THEN 3 END AS forknum,
         block
    FROM warmcache_blocks()
   WHERE database <> $gone_oid
     AND database NOT IN (SELECT oid FROM pg_database
                           WHERE datistemplate OR NOT datallowconn)
     AND NOT (database = $me_oid AND relfilenode IN ($old_nodes)))
SELECT count(b.relblocknumber), count(*)
  FROM f LEFT JOIN pg_buffercache b
    ON b.reldatabase = f.database AND b.reltablespace = f.tablespace
   AND b.relfilenode = f.relfilenode AND b.relforknumber = f.forknum
   AND b.relblocknumber = f.block});
cmp_ok($in_cache, '>=', 0.99 * $in_file,
	"$in_cache of the $in_file other blocks of the file are cached");

# Last, the database dropped is the largest in the file, the first one a
# restore worker would be started for: the blocks of the shared catalogs,
# which have a worker of their own, are restored all the same.
$node->append_conf('postgresql.conf', 'pg_warmcache.autowarm = off');
$node->restart;
$node->safe_psql('postgres', 'CREATE DATABASE largest');
$node->safe_psql('largest', 'CREATE EXTENSION pg_warmcache');
$node->safe_psql(
	'largest', q{
CREATE TABLE l (id int PRIMARY KEY, filler text);
INSERT INTO l SELECT x, repeat('l', 200) FROM generate_series(1, 100000) x;
VACUUM ANALYZE l;
SELECT warm_table('l');
});
my $largest_oid = $node->safe_psql('postgres',
	"SELECT oid FROM pg_database WHERE datname = 'largest'");
$n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my ($largest_db, $largest_blocks) = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT database, count(*) FROM warmcache_blocks() WHERE database <> 0
 GROUP BY database ORDER BY count(*) DESC, database LIMIT 1});
is($largest_db, $largest_oid, 'database largest is the largest in the file');
my $global_blocks = $node->safe_psql('postgres',
	'SELECT count(*) FROM warmcache_blocks() WHERE database = 0');
cmp_ok($global_blocks, '>', 0, 'the file holds blocks of shared catalogs');
$node->safe_psql('postgres', 'DROP DATABASE largest');
$node->stop;
$node->append_conf('postgresql.conf', 'pg_warmcache.autowarm = on');
$offset = -s $node->logfile;
$node->start;
$line = wait_for_restore_line($node, $offset);
note $line;
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up');
($total, $done, $skipped, $skipped_gone) = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT restore_blocks_total, restore_blocks_done, restore_blocks_skipped,
       restore_skipped_gone
  FROM warmcache_status()});
is($done + $skipped, $total, 'every block was restored or skipped');
is($skipped_gone, $largest_blocks,
	'skipped as gone: the blocks of the dropped database, not the shared catalogs'
);

$node->stop;
done_testing();
