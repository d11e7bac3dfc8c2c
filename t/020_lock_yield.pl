# Copyright (c) 2026, pg_warmcache developers
#
# The restore never makes a lock request wait: during a slow restore of a
# table (rate-capped, one worker), LOCK TABLE ... IN ACCESS EXCLUSIVE MODE
# and an ALTER TABLE on it are granted at once, measured on the server's
# clock.  What the restore gave up for them comes back: once the cap is
# lifted the restore completes, skips nothing for a lock, and the whole
# table is in shared buffers again (pg_buffercache).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_restore cached fill_table lock_wait);

# Granted within this many seconds: the restore looks for waiters every
# 10 ms; a restore that holds its lock for a whole batch makes them wait
# for tens of seconds at 1 MB/s.
my $max_wait = 1;

# One worker at 1 MB/s: the 24 MB table takes about 25 s to restore.
my $node = start_node(
	'lock_yield', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 1
shared_buffers = 128MB
autovacuum = off
});
create_extensions($node);
my $big_blocks = fill_table($node, 'big', 24);
cmp_ok($big_blocks, '>', 2500, "table big has $big_blocks blocks");
is(cached($node, 'big'), $big_blocks, 'all of big is cached before the restart');

# The shutdown dump saves big; the start-up restore brings it back, slowly.
$node->restart;
my $total =
  $node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()');
$node->poll_query_until('postgres',
	"SELECT count(*) >= 64 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')")
  or die 'timed out waiting for the restore to reach big';
cmp_ok(cached($node, 'big'), '<', $big_blocks / 2,
	'the restore is early in big');

my $wait = lock_wait($node, 'LOCK TABLE big IN ACCESS EXCLUSIVE MODE', 15);
note('waited ' . ($wait // 'until lock_timeout') . ' s');
ok(defined $wait && $wait < $max_wait,
	"LOCK TABLE big IN ACCESS EXCLUSIVE MODE during the restore is granted within $max_wait s"
);
is(status($node, 'state'), 'restoring', 'the restore goes on after the lock');

# The restore comes back to big: it reads it again.
my $after_lock = cached($node, 'big');
$node->poll_query_until('postgres',
	"SELECT count(*) >= $after_lock + 64 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')")
  or die 'timed out waiting for the restore to come back to big';
ok(1, 'the restore reads big again after the lock');

$wait = lock_wait($node, 'ALTER TABLE big ADD COLUMN extra int', 15);
note('waited ' . ($wait // 'until lock_timeout') . ' s');
ok(defined $wait && $wait < $max_wait,
	"ALTER TABLE big during the restore is granted within $max_wait s");
cmp_ok(cached($node, 'big'), '<', $big_blocks,
	'big is not yet fully restored after the two commands');

# Lift the cap: the restore finishes, and what yielded came back.
my $offset = -s $node->logfile;
$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
wait_for_restore($node);
like(
	slurp_file($node->logfile, $offset),
	qr/restore of the saved set finished: restored \d+ of $total blocks/,
	'the log says the restore finished');
is( status(
		$node,
		'restore_incomplete, restore_skipped_locked, restore_skipped_failed, '
		  . 'restore_blocks_done + restore_skipped_gone + restore_skipped_excluded'
	),
	"f|0|0|$total",
	'the restore is complete, nothing skipped for a lock');
is(cached($node, 'big'), $big_blocks,
	'pg_buffercache shows every block of big restored');

$node->stop;
done_testing();
