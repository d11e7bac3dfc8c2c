# Copyright (c) 2026, pg_warmcache developers
#
# The restore lets go of a relation only for a lock request that conflicts
# with its AccessShareLock on that relation.  During a slow restore of a
# table (rate-capped, one worker):
# - an AccessExclusiveLock request on another table, queued for seconds
#   behind a session idle in a transaction, does not make the restore let
#   go: pg_locks shows the restore worker holding its lock on the restored
#   table throughout;
# - CREATE INDEX on the restored table (ShareLock, which does not conflict
#   with AccessShareLock) is not waited for and does not either.
# The restore then completes, skips nothing, and pg_buffercache shows every
# block of the table in shared buffers.  The log has no WARNING.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_restore cached fill_table wait_for_restore_worker timed_psql);
use WarmCache::PageCache qw(drop_os_cache);

# One worker at 1 MB/s: the 64 MB table, out of the OS cache as far as the
# kernel lets us, takes up to a minute to restore, one batch from its
# start to its end (blocks found in the OS cache are not charged to the
# cap: then about 15 s).  It is more than a quarter of shared buffers, so
# that CREATE INDEX reads it through a small ring of buffers and leaves
# pg_buffercache's count of it to the restore.
my $node = start_node(
	'lock_probe_precise', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 1
shared_buffers = 160MB
autovacuum = off
});
create_extensions($node);
my $big_blocks = fill_table($node, 'big', 64);
cmp_ok($big_blocks, '>', 7500, "table big has $big_blocks blocks");
is(cached($node, 'big'), $big_blocks, 'all of big is cached before the restart');

my $big_file = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('big')");
$node->stop;
drop_os_cache($big_file);
$node->start;
my $total =
  $node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()');
my $worker = wait_for_restore_worker($node, 'postgres');
$node->poll_query_until('postgres',
	"SELECT count(*) >= 64 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')")
  or die 'timed out waiting for the restore to reach big';

# Created after the dump, so not restored: the restore never locks it.
$node->safe_psql('postgres', 'CREATE TABLE other (id int)');

# How many of $n looks at pg_locks, $ms apart, find the restore worker
# holding its AccessShareLock on big.
sub held_looks
{
	my ($n, $ms) = @_;
	my $held = 0;
	for (1 .. $n)
	{
		$held += $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM pg_locks
 WHERE pid = $worker AND locktype = 'relation'
   AND relation = 'big'::regclass AND mode = 'AccessShareLock' AND granted});
		Time::HiRes::usleep($ms * 1000);
	}
	return $held;
}

# An AccessExclusiveLock request on other waits behind a session that
# holds AccessShareLock on it, idle in a transaction.
my $holder = $node->background_psql('postgres', on_error_stop => 1);
$holder->query_safe('BEGIN');
$holder->query_safe('SELECT count(*) FROM other');
my $waiter = $node->background_psql('postgres', on_error_stop => 1);
$waiter->query_until(qr/waiting/,
	"BEGIN;\n\\echo waiting\nLOCK TABLE other IN ACCESS EXCLUSIVE MODE;\n");
$node->poll_query_until('postgres', q{
SELECT EXISTS (SELECT FROM pg_locks
                WHERE relation = 'other'::regclass
                  AND mode = 'AccessExclusiveLock' AND NOT granted)})
  or die 'timed out waiting for the lock request on other to queue';
my $before = cached($node, 'big');

# Five seconds of it: the restore goes on with big, holding its lock.
my $held = held_looks(25, 200);
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_locks
 WHERE relation = 'other'::regclass AND mode = 'AccessExclusiveLock'
   AND NOT granted}),
	1,
	'the AccessExclusiveLock request on other still waits');
cmp_ok($held, '>=', 24,
	"the restore worker held its lock on big in $held of 25 looks over 5 s");
cmp_ok(cached($node, 'big'), '>', $before + 256,
	'the restore read big on meanwhile');
is(status($node, 'state'), 'restoring', 'the restore goes on');
$holder->query_safe('COMMIT');
$holder->quit;
$waiter->quit;

# CREATE INDEX on big takes ShareLock: no conflict with the restore's lock,
# so neither waits for the other.
$before = cached($node, 'big');
my ($ret, $secs, $stdout, $stderr) = timed_psql($node, 'postgres',
	"SET lock_timeout = '5s'; CREATE INDEX big_id ON big (id)");
is($ret, 0, 'CREATE INDEX on big during the restore succeeds')
  or diag($stderr);
note("CREATE INDEX took $secs s");
$held = held_looks(10, 100);
cmp_ok($held, '>=', 9,
	"after CREATE INDEX, the restore worker held its lock on big in $held of 10 looks"
);
is(status($node, 'state'), 'restoring', 'the restore goes on after CREATE INDEX');

# Lift the cap: the restore finishes with all of big.
$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
wait_for_restore($node);
is( status(
		$node,
		'restore_incomplete, restore_skipped_locked, restore_skipped_failed, '
		  . 'restore_blocks_done + restore_skipped_gone + restore_skipped_excluded'
	),
	"f|0|0|$total",
	'the restore is complete, nothing skipped for a lock');
is(cached($node, 'big'), $big_blocks,
	'pg_buffercache shows every block of big restored');
unlike(slurp_file($node->logfile),
	qr/WARNING/, 'the log has no WARNING');

$node->stop;
done_testing();
