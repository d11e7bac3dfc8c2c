# Copyright (c) 2026, pg_warmcache developers
#
# Warm after a major upgrade: a cluster of an older major (15) fills its
# caches and dumps; pg_upgrade --link makes it a cluster of this major;
# the old cluster's saved file, copied in as pg_warmcache.import, warms the
# first start on a cold OS cache.  Checked:
# - pg_upgrade's own runs of both servers (binary-upgrade mode) start no
#   pg_warmcache worker: the old saved file is untouched, their log has no
#   line of ours;
# - the user relations' saved blocks are back, in shared buffers
#   (pg_buffercache) and in the OS cache (fincore);
# - the import restores exactly the blocks of user relations that this
#   cluster has under the file's numbers, within their size; catalogs
#   (one rewritten by VACUUM FULL in the old cluster among them) are left
#   out and never read, and the log line says how much and why;
# - the import is used once, and a damaged one is set aside;
# - a file from an unrelated cluster warms nothing wrong, by the same
#   count.
#
# It needs pg_warmcache installed for the older major: test/run sets
# PGWC_UPGRADE_FROM to that installation (/usr/lib/postgresql/15) once
# both majors' passes installed the module, and runs this test then.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use File::Copy qw(copy);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(cached relation_blocks);
use WarmCache::DumpFormat qw(slurp_bin write_bin runs);
use WarmCache::PageCache qw(evict_files resident_blocks);

my $old_install = $ENV{PGWC_UPGRADE_FROM};
plan skip_all => 'PGWC_UPGRADE_FROM names no older installation '
  . '(test/run sets it once both majors are installed)'
  unless $old_install && -x "$old_install/bin/pg_ctl";

my $conf = q{
shared_preload_libraries = 'pg_warmcache'
pg_warmcache.dump_interval = 0
pg_warmcache.dump_os_cache = on
shared_buffers = 32MB
autovacuum = off
};

# An older cluster with pg_warmcache, of its own (its own initdb).
sub old_node
{
	my ($name) = @_;
	my $node =
	  PostgreSQL::Test::Cluster->new($name, install_path => $old_install);
	$node->init(force_initdb => 1);
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
	$node->safe_psql('postgres',
		'CREATE EXTENSION pg_warmcache; CREATE EXTENSION pg_buffercache');
	return $node;
}

# The old cluster: a table in shared buffers, one in the OS cache only,
# one that shrinks after the dump, and a catalog rewritten by VACUUM FULL
# whose new file number is in the saved file.
my $old = old_node('old');
$old->safe_psql(
	'postgres', q{
CREATE TABLE hot (id int PRIMARY KEY, pad text);
INSERT INTO hot SELECT g, repeat('h', 500) FROM generate_series(1, 8000) g;
CREATE TABLE oscold (id int, pad text);
INSERT INTO oscold SELECT g, repeat('o', 500) FROM generate_series(1, 6000) g;
CREATE TABLE shrink (id int, pad text);
INSERT INTO shrink SELECT g, repeat('s', 500) FROM generate_series(1, 4000) g;
VACUUM hot; VACUUM oscold; VACUUM shrink;
VACUUM FULL pg_description;
SELECT count(*) FROM pg_description;
SELECT warm('hot'), warm('hot_pkey'), warm('shrink'), warm('oscold', 'read');
});
# This machine's 15 package gives every column an attribute option of its
# own (pg_attver) that pg_dump carries and 18 refuses, which stops
# pg_upgrade; the test's tables do without it.
$old->safe_psql('postgres',
	'UPDATE pg_attribute SET attoptions = NULL WHERE attrelid >= 16384');
my %path = map {
	$_ => $old->safe_psql('postgres', "SELECT pg_relation_filepath('$_')")
} qw(hot hot_pkey oscold shrink pg_description);
my %old_blocks = map { $_ => relation_blocks($old, $_) } qw(hot shrink oscold);
my $catalog_file = $old->safe_psql('postgres',
	"SELECT pg_relation_filenode('pg_description')");
cmp_ok($catalog_file, '>=', 16384,
	"VACUUM FULL gave pg_description a new file number ($catalog_file)");
$old->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my $saved = slurp_bin($old->data_dir . '/pg_warmcache.blocks');
ok( (grep { $_->[1] != 0 && $_->[3] == $catalog_file } runs($saved)),
	'the saved file names the rewritten catalog\'s file');
ok((grep { $_->[0] == 0x100 } runs($saved)), 'the saved file has an OS tier');
my $import = PostgreSQL::Test::Utils::tempdir() . '/import';
copy($old->data_dir . '/pg_warmcache.blocks', $import) or die "copy: $!";

# After the dump, shrink loses its tail: the import's blocks of it past
# its end are left out.
$old->safe_psql('postgres',
	'DELETE FROM shrink WHERE id > 500; VACUUM shrink');
$old->stop;
my $old_file = $old->data_dir . '/pg_warmcache.blocks';
my $old_bytes = slurp_bin($old_file);
my $old_mtime = (stat $old_file)[9];

# The new cluster, of this major, as pg_upgrade wants it: 15 had no data
# checksums by default.
my $new = PostgreSQL::Test::Cluster->new('new');
$new->init(extra => ['--no-data-checksums']);
$new->append_conf('postgresql.conf', $conf);
my $bindir = $new->config_data('--bindir');
my $sockets = PostgreSQL::Test::Utils::tempdir_short();
my $t0 = time;
command_ok(
	[
		"$bindir/pg_upgrade", '--link', '--no-sync', '--retain',
		'--old-bindir' => "$old_install/bin",
		'--new-bindir' => $bindir,
		'--old-datadir' => $old->data_dir,
		'--new-datadir' => $new->data_dir,
		'--old-port' => $old->port,
		'--new-port' => $new->port,
		'--socketdir' => $sockets,
	],
	'pg_upgrade --link from the older major');
note 'pg_upgrade took ' . (time - $t0) . ' s';

# Binary-upgrade mode: no worker ran in pg_upgrade's servers.
is(slurp_bin($old_file), $old_bytes,
	'pg_upgrade\'s runs of the old server left its saved file as it was');
is((stat $old_file)[9], $old_mtime, '... and its time of change');
my @server_logs = glob($new->data_dir
	  . '/pg_upgrade_output.d/*/log/pg_upgrade_server.log');
ok(@server_logs, 'pg_upgrade kept its servers\' log');
my $upgrade_log = join '', map { slurp_file($_) } @server_logs;
unlike(
	$upgrade_log,
	qr/autowarm|restoring \d+ blocks|restore of the saved set|dumped \d+ block|import (?:finished|stopped|incomplete)|pg_warmcache restore/,
	'no pg_warmcache worker logged in pg_upgrade\'s servers');
ok(!-e $new->data_dir . '/pg_warmcache.blocks',
	'pg_upgrade\'s run of the new server wrote no dump');

# What an import may restore, by this cluster's catalogs: per block of
# the file, a catalog (the shared ones, or a file number of a relation
# whose OID is below FirstNormalObjectId), a user relation within its
# size (restored), or nothing of this cluster (gone).  Only database
# postgres holds user relations here.
sub expected
{
	my ($node, $bytes) = @_;
	my $postgres = $node->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = 'postgres'");
	my %e = (catalog => 0, gone => 0, restored => 0, excluded => 0);
	my @runs = runs($bytes);

	# Each relation fork of database postgres that the file names, looked
	# up in one query: -1 a catalog, -2 none, else its size in blocks.
	my %keys = map { ("$_->[3]/$_->[4]" => 1) } grep { $_->[1] == $postgres } @runs;
	my %size;
	if (%keys)
	{
		my $values = join ',', map { my ($r, $f) = split m{/}; "($r, $f)" } keys %keys;
		my $out = $node->safe_psql(
			'postgres', qq{
SELECT rel || '/' || fork, coalesce(CASE WHEN r < 16384 THEN -1
  ELSE pg_relation_size(r, (ARRAY['main','fsm','vm','init'])[fork + 1]) / 8192 END, -2)
  FROM (SELECT rel, fork, pg_filenode_relation(0, rel::oid)::oid AS r
          FROM (VALUES $values) v(rel, fork)) s});
		%size = map { split /\|/ } split /\n/, $out;
	}
	my %dbs = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
		'SELECT oid, datallowconn AND NOT datistemplate FROM pg_database');
	for my $run (@runs)
	{
		my ($rank, $db, $spc, $rel, $fork, $start, $count) = @$run;
		if ($db == 0)
		{
			$e{catalog} += $count;
			next;
		}
		if ($db != $postgres)
		{
			die "database $db of the import is one this test does not count"
			  if ($dbs{$db} // '') eq 't';
			$e{ exists $dbs{$db} ? 'excluded' : 'gone' } += $count;
			next;
		}
		my $size = $size{"$rel/$fork"};
		if ($size == -1) { $e{catalog} += $count; next }
		if ($size == -2) { $e{gone} += $count; next }
		my $within =
		    $start >= $size ? 0
		  : $start + $count > $size ? $size - $start
		  : $count;
		$e{restored} += $within;
		$e{gone} += $count - $within;
	}
	return \%e;
}

# Wait for the import's end line in $node's log after byte $offset;
# return its counts as a hash.
sub import_counts
{
	my ($node, $offset) = @_;
	$node->wait_for_log(qr/import finished: .*\n.*Left out: .*\n/, $offset);
	my $log = slurp_file($node->logfile, $offset);
	my ($done, $total) = $log =~ /import finished: restored (\d+) of (\d+) blocks/;
	my ($catalog, $gone, $excluded, $limit) =
	  $log =~ /Left out: (\d+) of catalogs, (\d+) of relations [^,]*, (\d+) in databases [^,]*, (\d+) past/;
	return {
		restored => $done,
		total => $total,
		catalog => $catalog,
		gone => $gone,
		excluded => $excluded
	};
}

# Install the import and evict every file it names from the OS cache: with
# --link they are the old cluster's files.
copy($import, $new->data_dir . '/pg_warmcache.import') or die "copy: $!";
chmod 0600, $new->data_dir . '/pg_warmcache.import';
my @files = map { $new->data_dir . "/$path{$_}" } qw(hot hot_pkey oscold shrink);
evict_files(@files);
is(resident_blocks($new->data_dir . "/$path{hot}"), 0, 'hot is evicted from the OS cache');

my $offset = -s $new->logfile // 0;
$new->start;
my $got = import_counts($new, $offset);
$new->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS pg_buffercache');
my $want = expected($new, $saved);
note explain { got => $got, want => $want };
is($got->{total}, WarmCache::DumpFormat::header($saved)->{nblocks},
	'the import read the whole file');
is($got->{restored}, $want->{restored},
	"the import restored exactly the user relations' blocks within their size ($want->{restored})");
is($got->{catalog}, $want->{catalog},
	"it left out the catalogs' blocks ($want->{catalog})");
is($got->{gone}, $want->{gone},
	"it left out the blocks this cluster does not have ($want->{gone})");
is($got->{excluded}, $want->{excluded},
	"and those of template databases ($want->{excluded})");
cmp_ok($want->{catalog}, '>', 0, 'the file has catalog blocks to leave out');

is(cached($new, 'hot'), relation_blocks($new, 'hot'),
	'all of hot is in shared buffers again');
is(cached($new, 'hot_pkey'), relation_blocks($new, 'hot_pkey'),
	'all of its index too');
is(cached($new, 'shrink'), relation_blocks($new, 'shrink'),
	'what is left of shrink is in shared buffers');
cmp_ok(relation_blocks($new, 'shrink'), '<', $old_blocks{shrink},
	'shrink is shorter than the import says');
cmp_ok(resident_blocks($new->data_dir . "/$path{oscold}"),
	'>=', 0.95 * $old_blocks{oscold},
	'the OS tier\'s table is in the OS cache again (fincore)');
is( $new->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_buffercache WHERE relfilenode = $catalog_file"),
	0,
	'no block of the old catalog\'s file number is in shared buffers');
ok(!-e $new->data_dir . '/pg_warmcache.import', 'the import is removed');
ok(!-e $new->data_dir . '/pg_warmcache.import.corrupt', 'nothing set aside');
ok(!glob($new->data_dir . '/pg_warmcache.*.tmp'), 'no scratch file is left');

# A damaged import is set aside, and imports nothing.
my $bad = $saved;
substr($bad, -1, 1) = chr(ord(substr($bad, -1, 1)) ^ 0xFF);
write_bin($new->data_dir . '/pg_warmcache.import', $bad);
$offset = -s $new->logfile;
$new->restart;
$new->wait_for_log(qr/file to import "pg_warmcache.import" is not usable: /,
	$offset);
ok(-e $new->data_dir . '/pg_warmcache.import.corrupt',
	'a damaged import is renamed aside');
ok(!-e $new->data_dir . '/pg_warmcache.import', '... and not left to import');
unlink($new->data_dir . '/pg_warmcache.import.corrupt');

# A file of an unrelated cluster of the older major: another system
# identifier, another database, and in postgres file numbers that may or
# may not name this cluster's relations.  It warms nothing wrong: the same
# count holds.
my $unrel = old_node('unrelated');
$unrel->safe_psql('postgres', 'CREATE DATABASE other');
$unrel->safe_psql('other',
	'CREATE EXTENSION pg_warmcache; CREATE TABLE t AS SELECT g FROM generate_series(1, 100000) g; SELECT warm(\'t\')');
$unrel->safe_psql('postgres',
	'CREATE TABLE u AS SELECT g, repeat(\'u\', 500) AS pad FROM generate_series(1, 20000) g; SELECT warm(\'u\'); SELECT warmcache_dump_now()');
my $unrel_bytes = slurp_bin($unrel->data_dir . '/pg_warmcache.blocks');
$unrel->stop;
write_bin($new->data_dir . '/pg_warmcache.import', $unrel_bytes);
$offset = -s $new->logfile;
$new->restart;
$got = import_counts($new, $offset);
$want = expected($new, $unrel_bytes);
note explain { got => $got, want => $want };
is($got->{restored}, $want->{restored},
	"an unrelated cluster's file restores only user relations of this cluster within their size ($want->{restored})");
is($got->{catalog}, $want->{catalog}, '... leaves its catalogs out');
is($got->{gone}, $want->{gone}, '... and what this cluster does not have');
is($got->{excluded}, $want->{excluded}, '... and template databases');
cmp_ok($got->{gone}, '>', 0, '... which the log counts');
ok(!-e $new->data_dir . '/pg_warmcache.import', 'that import is removed too');

$new->stop;
done_testing();
