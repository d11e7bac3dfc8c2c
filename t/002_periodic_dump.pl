# Copyright (c) 2026, pg_warmcache developers
#
# Automatic dumps: pg_warmcache.dump_interval > 0 dumps by itself, 0 only at
# shutdown; pg_warmcache.autowarm = off neither dumps at shutdown nor
# restores at start.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_status relation_blocks);
use WarmCache::DumpFormat qw(slurp_bin);

my $node = start_node(
	'periodic', q{
shared_buffers = 32MB
autovacuum = off
});

my $file = $node->data_dir . '/pg_warmcache.blocks';

create_extensions($node);
$node->safe_psql(
	'postgres', q{
CREATE TABLE t (id int, filler text);
INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g;
CREATE UNLOGGED TABLE u (id int, filler text);
INSERT INTO u SELECT g, repeat('y', 200) FROM generate_series(1, 2000) g;
SELECT warm('t'), warm('u');
});
my $t_blocks = relation_blocks($node, 't');
my $u_blocks = relation_blocks($node, 'u');
cmp_ok($t_blocks, '>', 500, "t has $t_blocks blocks");

# Blocks of a table's main fork in the dump file.
sub blocks_in_file
{
	my ($node, $table) = @_;
	return $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM warmcache_blocks()
 WHERE relfilenode = pg_relation_filenode('$table') AND fork = 'main'
   AND database = (SELECT oid FROM pg_database
                    WHERE datname = current_database())});
}

# The autowarm worker's pid, once it runs.
sub worker_pid
{
	my ($node) = @_;
	wait_for_status($node, 'worker_pid IS NOT NULL',
		'the autowarm worker to start');
	return status($node, 'worker_pid');
}

sub set_and_reload
{
	my ($node, $name, $value) = @_;
	$node->append_conf('postgresql.conf', "$name = $value");
	$node->reload;
}

# Wait until last_dump_at has not changed for $quiet seconds in a row, and
# return it; fail after the default timeout.  A negative check needs a
# window of time: a slow machine can only make it weaker, never fail it.
sub wait_for_quiet
{
	my ($node, $quiet) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $seen = status($node, 'last_dump_at');
	my $since = time();
	while (time() < $deadline)
	{
		usleep(200_000);
		my $now = status($node, 'last_dump_at');
		if ($now ne $seen)
		{
			$seen = $now;
			$since = time();
		}
		return (1, $seen) if time() - $since >= $quiet;
	}
	return (0, $seen);
}

# A fresh cluster: nothing dumped, nothing to restore.
ok(!-e $file, 'no dump file before the first dump');
ok( $node->poll_query_until(
		'postgres',
		"SELECT worker_pid IS NOT NULL AND state = 'idle' FROM warmcache_status()"),
	'the worker runs');
is(status($node, 'last_dump_at IS NULL, restore_started_at IS NULL'),
	't|t', 'status: no dump, and no restore without a file');

# dump_interval = 1: the worker dumps by itself, again and again.
set_and_reload($node, 'pg_warmcache.dump_interval', '1');
ok( $node->poll_query_until(
		'postgres', 'SELECT last_dump_at IS NOT NULL FROM warmcache_status()'),
	'a dump happened by itself');
ok(-e $file, 'the dump file appeared');
my $first_at = status($node, 'last_dump_at');
my $first = slurp_bin($file);
ok( $node->poll_query_until(
		'postgres',
		"SELECT last_dump_at > '$first_at' FROM warmcache_status()"),
	'another dump followed');
isnt(slurp_bin($file), $first, 'the dump file was rewritten');
is(blocks_in_file($node, 't'), $t_blocks, 'the periodic dump holds all of t');
is(blocks_in_file($node, 'u'), 0,
	'the periodic dump leaves out the unlogged table');
cmp_ok(status($node, 'last_dump_blocks'), '>=', $t_blocks,
	'status: last_dump_blocks counts the dumped blocks');

# Back to dump_interval = 0 by a reload: the dumps stop.  With an interval of
# 1 s, three quiet seconds in a row cannot happen while they go on.
set_and_reload($node, 'pg_warmcache.dump_interval', '0');
my ($quiet, $last_at) = wait_for_quiet($node, 3);
ok($quiet, 'dump_interval = 0 after a reload: the periodic dumps stopped');
my $last = slurp_bin($file);
wait_for_quiet($node, 3);
is(status($node, 'last_dump_at'), $last_at,
	'dump_interval = 0: no dump afterwards');
is(slurp_bin($file), $last, 'dump_interval = 0: the file did not change');

# ... but the shutdown dump still happens, unlogged blocks included.
my $offset = -s $node->logfile;
$node->stop;
like(slurp_file($node->logfile, $offset),
	qr/dumped \d+ blocks at shutdown/,
	'dump_interval = 0: dumped at shutdown');
isnt(slurp_bin($file), $last, 'the shutdown dump rewrote the file');

# Started with dump_interval = 0: the start-up restore, and no dump.
$node->start;
ok( $node->poll_query_until(
		'postgres',
		'SELECT restore_finished_at IS NOT NULL FROM warmcache_status()'),
	'the start-up restore finished');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_buffercache
 WHERE relfilenode = pg_relation_filenode('t') AND relforknumber = 0}),
	$t_blocks, 'the start-up restore brought t back');
# The status shows the dump the restore came from, of unknown duration; a
# dump by this server would set last_dump_seconds.
my $restored = slurp_bin($file);
my $restored_at = status($node, 'last_dump_at');
wait_for_quiet($node, 3);
is(status($node, 'last_dump_at, last_dump_seconds IS NULL'),
	"$restored_at|t", 'started with dump_interval = 0: no dump');
is(slurp_bin($file), $restored,
	'started with dump_interval = 0: the file did not change');
$node->stop;

# autowarm = off: no restore at start ...
$node->append_conf('postgresql.conf', 'pg_warmcache.autowarm = off');
$offset = -s $node->logfile;
$node->start;
is(blocks_in_file($node, 't'), $t_blocks, 'the file holds all of t');
is(blocks_in_file($node, 'u'), $u_blocks,
	'the shutdown dump holds the unlogged table too');
worker_pid($node);    # the worker decides on the restore as it starts
is( status(
		$node, 'state, restore_started_at IS NULL, restore_blocks_total IS NULL'),
	'idle|t|t',
	'autowarm = off: no restore at start');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_buffercache
 WHERE relfilenode IN (pg_relation_filenode('t'), pg_relation_filenode('u'))}),
	'0', 'autowarm = off: the tables are not cached');
unlike(slurp_file($node->logfile, $offset), qr/restoring \d+ blocks|restore of the saved set/,
	'autowarm = off: no restore logged');

# ... and no dump at shutdown: the file stays as it is.
$node->safe_psql('postgres', "SELECT warm('t')");
my $kept = slurp_bin($file);
$offset = -s $node->logfile;
$node->stop;
unlike(slurp_file($node->logfile, $offset), qr/dumped \d+ blocks?\b/,
	'autowarm = off: no dump at shutdown');
is(slurp_bin($file), $kept, 'autowarm = off: the file did not change');

done_testing();
