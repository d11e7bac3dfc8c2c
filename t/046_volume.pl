# Copyright (c) 2026, pg_warmcache developers
#
# Correctness at volume: a dump file of over 200,000 runs over 1,200
# relations in 24 databases restores exactly the set it names.
#
# Each database has 50 tables of about 50 blocks.  The file, written by
# hand as the server writes version 3, names every other block of every
# table (single-block runs: the worst case for the file) in each of the
# six ranks of the buffer tier and in the OS tier, which the format allows
# (runs are disjoint within a rank).  After a restart into that file,
# pg_buffercache must show every even block of every table in shared
# buffers and no odd one, database by database, and the restore must say
# it restored or found in place every block of the file.  The leader finds
# each database's runs of each rank once, and each worker reads only its
# own (restore.c, restore_worker.c): a worker that read another
# database's runs, or missed some of its own, fails here.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions wait_for_restore_line);
use WarmCache::DumpFormat qw(MAGIC FORMAT_VERSION write_dump_file);

use constant NDB => 24;
use constant NTAB => 50;

my $node = start_node(
	'volume', q{
shared_buffers = 512MB
pg_warmcache.restore_workers = 4
autovacuum = off
});
create_extensions($node);
my $file = $node->data_dir . '/pg_warmcache.blocks';

# The databases and their tables: relfilenode => blocks, per database OID.
my %tables;
for my $d (1 .. NDB)
{
	$node->safe_psql('postgres', "CREATE DATABASE vol$d");
	$node->safe_psql(
		"vol$d", qq{
DO \$\$
BEGIN
	FOR i IN 1 .. @{[NTAB]} LOOP
		EXECUTE format('CREATE TABLE t%s AS SELECT g AS id, repeat(''x'', 600) AS pad FROM generate_series(1, %s) g', i, 580 + i);
	END LOOP;
END \$\$;});
	my $oid = $node->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = 'vol$d'");
	for my $line (split /\n/, $node->safe_psql(
			"vol$d", q{
SELECT pg_relation_filenode(c.oid), pg_relation_size(c.oid) / current_setting('block_size')::int
  FROM pg_class c WHERE c.relname ~ '^t[0-9]+$'}))
	{
		my ($rel, $nblocks) = split /\|/, $line;
		$tables{$oid}{$rel} = $nblocks;
	}
}
my $nrels = 0;
$nrels += scalar(keys %{ $tables{$_} }) for keys %tables;
is($nrels, NDB * NTAB, 'every table was made');

# The runs, in the file's order: rank (5 down to 0, then the OS tier),
# database, tablespace, relation, fork, block.
my $spc = $node->safe_psql('postgres',
	"SELECT oid FROM pg_tablespace WHERE spcname = 'pg_default'");
my @runs;
for my $rank (5, 4, 3, 2, 1, 0, 0x100)
{
	for my $db (sort { $a <=> $b } keys %tables)
	{
		for my $rel (sort { $a <=> $b } keys %{ $tables{$db} })
		{
			for (my $b = 0; $b < $tables{$db}{$rel}; $b += 2)
			{
				push @runs, [ $rank, $db, $spc, $rel, 0, $b, 1 ];
			}
		}
	}
}
cmp_ok(scalar(@runs), '>', 200_000, 'the file has over 200,000 runs');

my %h = (
	magic => MAGIC,
	version => FORMAT_VERSION,
	pg_major => int($node->safe_psql('postgres', 'SHOW server_version_num') / 10000),
	blcksz => $node->safe_psql('postgres', 'SHOW block_size'),
	sysid => $node->safe_psql('postgres',
		'SELECT system_identifier FROM pg_control_system()'),
	dumped_at => 0);
$node->stop;
write_dump_file($file, \%h, \@runs);
my $offset = -s $node->logfile;
$node->start;
my $line = wait_for_restore_line($node, $offset);
like($line, qr/restore of the saved set finished: restored ${\scalar(@runs)} of ${\scalar(@runs)} blocks/,
	'the restore restored or found in place every block of the file')
  or diag($line);

# The oracle, database by database: every even block of its tables in
# shared buffers, no odd one.
my ($good, $bad) = (0, 0);
for my $db (sort { $a <=> $b } keys %tables)
{
	my $rels = join(',', keys %{ $tables{$db} });
	my ($e, $o) = split /\|/, $node->safe_psql(
		'postgres', qq{
SELECT count(*) FILTER (WHERE relblocknumber % 2 = 0),
       count(*) FILTER (WHERE relblocknumber % 2 = 1)
  FROM pg_buffercache
 WHERE reldatabase = $db AND relforknumber = 0 AND relfilenode IN ($rels)});
	my $want = 0;
	$want += int(($_ + 1) / 2) for values %{ $tables{$db} };
	$good++ if $e == $want;
	$bad += $o;
	diag("database $db: $e of $want even blocks cached") if $e != $want;
}
is($good, NDB, 'every database has each even block of its tables cached');
is($bad, 0, 'no odd block was read into shared buffers');

$node->stop;
done_testing();
