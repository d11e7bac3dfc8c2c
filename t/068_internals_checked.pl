# Copyright (c) 2026, pg_warmcache developers
#
# What pg_warmcache reads of PostgreSQL's buffer headers agrees with
# pg_buffercache, and the self-checks of src/pg_internals.c pass.
#
# The module reads each buffer's tag, usage count and permanent bit.  On a
# quiet server a dump (not at shutdown, so without unlogged relations'
# blocks) must hold, for each usage count, as many blocks as pg_buffercache
# shows valid buffers with that count, less those of an unlogged table's
# main fork (its init fork is WAL-logged, and is dumped).  A restore, which
# runs the module's checks of a buffer it reads and of its own PGPROC, and
# the dump must log none of their WARNINGs.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions restart_cold
  wait_for_restore_line cached fill_table);
use WarmCache::DumpFormat qw(slurp_bin runs);

my $node = start_node(
	'fence', q{
shared_buffers = 32MB
autovacuum = off
});
create_extensions($node);
my $blocks = fill_table($node, 't', 8);
$node->safe_psql(
	'postgres', q{
CREATE UNLOGGED TABLE u AS
  SELECT g AS id, repeat('y', 500) AS pad FROM generate_series(1, 5000) g;
SELECT warm('u');
});
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
restart_cold($node);
my $offset = -s $node->logfile;
$node->safe_psql('postgres', 'SELECT warmcache_restore_now()');
my $line = wait_for_restore_line($node, $offset);
note "restore: $line";
is(cached($node, 't'), $blocks, 'the restore brought t back');
# A dump but at shutdown leaves unlogged relations out: u was not restored.
$node->safe_psql('postgres', "SELECT warm('u')");

# Buffers per usage count that a dump writes, by pg_buffercache: valid
# ones, less the main fork of the unlogged table u.
my $expect_sql = q{
SELECT coalesce(string_agg(usagecount || ':' || n, ' ' ORDER BY usagecount), '')
  FROM (SELECT usagecount, count(*) AS n
          FROM pg_buffercache
         WHERE relfilenode IS NOT NULL
           AND NOT (relfilenode = pg_relation_filenode('u')
                    AND reldatabase = (SELECT oid FROM pg_database
                                        WHERE datname = current_database())
                    AND relforknumber <> 3)
         GROUP BY usagecount) c};

# One session, so that no new backend reads the catalogs; asked until the
# counts before and after a dump agree, so that the dump saw them.
my $session = $node->background_psql('postgres');
my ($before, $after, $dumped);
for my $attempt (1 .. 10)
{
	$before = $session->query_safe($expect_sql);
	$dumped = $session->query_safe('SELECT warmcache_dump_now()');
	$after = $session->query_safe($expect_sql);
	last if $before eq $after;
}
$session->quit;
is($before, $after, 'shared buffers held still around a dump');

my %by_usage;
for my $run (runs(slurp_bin($node->data_dir . '/pg_warmcache.blocks')))
{
	$by_usage{ $run->[0] } += $run->[6];
}
my $file = join ' ', map { "$_:$by_usage{$_}" } sort { $a <=> $b } keys %by_usage;
note "usage count:blocks, by pg_buffercache: $after; in the dump: $file";
is($file, $after,
	'the dump holds, per usage count, the valid buffers of permanent relations pg_buffercache shows'
);
my $total = 0;
$total += $_ for values %by_usage;
is($dumped, $total, 'warmcache_dump_now() returned what the file holds');
cmp_ok($total, '>=', $blocks, 'the dump holds t at least');
cmp_ok(cached($node, 'u'), '>', 0,
	'the unlogged table u was in shared buffers, so that leaving it out was tested'
);

my $log = slurp_file($node->logfile);
unlike($log, qr/PostgreSQL's .* pg_warmcache expects/,
	'no self-check of the module that reads PostgreSQL internals failed');

$node->stop;
done_testing();
