# Copyright (c) 2026, pg_warmcache developers
#
# The restore lets go of a relation that a lock request wants, cleanly:
# during a slow restore of a table (rate-capped, one worker), LOCK TABLE
# ... IN ACCESS EXCLUSIVE MODE and then TRUNCATE of that table are each
# granted within half a second, measured on the server's clock.  The
# restore comes back to the table after the first; after the TRUNCATE it
# counts the table's blocks as gone, with no error.  The log has no
# WARNING (such as "you don't own a lock" from releasing a lock the restore
# had already let go of) and no ERROR.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_restore relation_blocks cached fill_table lock_wait);

my $max_wait = 0.5;

# One worker at 1 MB/s: the 24 MB table takes about 25 s to restore.
my $node = start_node(
	'lock_probe_yield', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 1
shared_buffers = 128MB
autovacuum = off
});
create_extensions($node);
my $big_blocks = fill_table($node, 'big', 24);
cmp_ok($big_blocks, '>', 2500, "table big has $big_blocks blocks");

$node->restart;
my $total =
  $node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()');
$node->poll_query_until('postgres',
	"SELECT count(*) >= 64 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')")
  or die 'timed out waiting for the restore to reach big';

my $wait = lock_wait($node, 'LOCK TABLE big IN ACCESS EXCLUSIVE MODE', 15);
note('waited ' . ($wait // 'until lock_timeout') . ' s');
ok(defined $wait && $wait < $max_wait,
	"LOCK TABLE big IN ACCESS EXCLUSIVE MODE during the restore is granted within $max_wait s"
);
my $after_lock = cached($node, 'big');
$node->poll_query_until('postgres',
	"SELECT count(*) >= $after_lock + 64 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')")
  or die 'timed out waiting for the restore to come back to big';
ok(1, 'the restore reads big again after the lock');
my $before_truncate = cached($node, 'big');
cmp_ok($before_truncate, '<', $big_blocks / 2,
	'the restore is still early in big');

# TRUNCATE gives big new, empty storage: the blocks left are gone.
$wait = lock_wait($node, 'TRUNCATE big', 15);
note('waited ' . ($wait // 'until lock_timeout') . ' s');
ok(defined $wait && $wait < $max_wait,
	"TRUNCATE big during the restore is granted within $max_wait s");

$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
wait_for_restore($node);
my $gone = status($node, 'restore_skipped_gone');
my $rest_all = status($node,
	    'restore_incomplete, restore_skipped_locked, restore_skipped_failed, '
	  . 'restore_blocks_done + restore_skipped_gone + restore_skipped_excluded'
);
is($rest_all, "f|0|0|$total",
	'the restore is complete: nothing skipped for a lock or an error');
cmp_ok($gone, '>=', $big_blocks - $before_truncate - 64 * 4,
	"the restore counts big's blocks after the TRUNCATE as gone ($gone)");
is(relation_blocks($node, 'big'), 0, 'big is empty');

my $log = slurp_file($node->logfile);
unlike($log, qr/WARNING/, 'the log has no WARNING');
unlike($log, qr/ERROR/, 'the log has no ERROR');

$node->stop;
done_testing();
