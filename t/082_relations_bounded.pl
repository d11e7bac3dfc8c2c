# Copyright (c) 2026, pg_warmcache developers
#
# warmcache_relations() keeps an entry per relation fork that the saved
# set or a cache holds a block of, not per file, and its entries must fit
# in work_mem: past that it stops with an error that says what it needs.
# A database of 1,000 one-block tables, all in shared buffers, and 3,000
# empty ones, whose files hold nothing: with work_mem too small for the
# forks it lists, the call fails with errcode 54000 and the figures; with
# work_mem for those forks and far fewer than the files, it succeeds and
# lists the cached tables and none of the empty ones.  The oracles are
# pg_buffercache and the files in the database's directory.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions);

my $node = start_node('census', "shared_buffers = 64MB\nautovacuum = off\n");
create_extensions($node);
$node->safe_psql(
	'postgres', q{
DO $$
BEGIN
	FOR i IN 1..1000 LOOP
		EXECUTE format('CREATE TABLE full_%s AS SELECT 1 AS id', i);
	END LOOP;
	FOR i IN 1..3000 LOOP
		EXECUTE format('CREATE TABLE empty_%s (id int)', i);
	END LOOP;
END
$$;
});
$node->safe_psql('postgres',
	q{DO $$ BEGIN FOR i IN 1..1000 LOOP EXECUTE format('SELECT * FROM full_%s', i); END LOOP; END $$});

is( $node->safe_psql(
		'postgres', q{
SELECT count(DISTINCT c.oid) FROM pg_buffercache b
  JOIN pg_class c ON c.relfilenode = b.relfilenode
 WHERE c.relname LIKE 'full\_%' AND b.relforknumber = 0}), '1000',
	'pg_buffercache: the 1,000 one-block tables are in shared buffers');
my $dir = $node->data_dir . '/'
  . $node->safe_psql('postgres',
	"SELECT 'base/' || oid FROM pg_database WHERE datname = 'postgres'");
opendir(my $dh, $dir) or die "could not open \"$dir\": $!";
my $files = grep { /^\d+/ } readdir($dh);
closedir($dh);
cmp_ok($files, '>', 4000, "the database's directory holds $files relation files");

my $listed = $node->safe_psql('postgres',
	'SELECT count(*) FROM warmcache_relations()');
cmp_ok($listed, '>', 1000, "with the default work_mem it lists $listed forks");
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE relation::text LIKE 'full\_%' AND in_shared_buffers = 1),
       count(*) FILTER (WHERE relation::text LIKE 'empty\_%')
  FROM warmcache_relations()}), '1000|0',
	'each cached table is listed, and no empty one');

# Too little memory: the error, with what an entry costs.
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSET work_mem = '64kB';\nSELECT count(*) FROM warmcache_relations();"
);
isnt($ret, 0, 'work_mem of 64 kB: the call fails');
like(
	$stderr,
	qr/ERROR:  54000: warmcache_relations\(\) needs more memory than "work_mem" allows\nDETAIL:  It keeps about (\d+) bytes for each relation fork that the saved set or a cache holds a block of, and more than (\d+) such forks were found\.\nHINT:  Raise "work_mem"/,
	'the error says what it needs, and how to give it');
my ($entry) = $stderr =~ /about (\d+) bytes/;
$entry //= 1000;

# Enough for the forks listed, far from enough for an entry per file.
my $kb = int(($listed + 100) * $entry / 1024) + 1;
cmp_ok(($listed + 100) * $entry, '<', $files * $entry / 2,
	"$kb kB hold the forks listed, not half the files");
is( $node->safe_psql(
		'postgres',
		"SET work_mem = '${kb}kB'; SELECT count(*) FILTER (WHERE relation::text LIKE 'full\\_%' AND in_shared_buffers = 1), count(*) FILTER (WHERE relation::text LIKE 'empty\\_%') FROM warmcache_relations()"
	),
	'1000|0',
	"work_mem of $kb kB: the call lists each cached table, and no empty one");

$node->stop;
done_testing();
