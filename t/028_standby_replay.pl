# Copyright (c) 2026, pg_warmcache developers
#
# On a hot standby, replay that needs an AccessExclusive lock on a table
# being restored gets it at once: the restore lets go, replay catches up
# with the primary, and the restore still brings the whole table back.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_restore cached fill_table);

# Replay is caught up within this many seconds; a restore holding its lock
# for a whole batch stalls it for tens of seconds at 1 MB/s (and for ever
# with max_standby_streaming_delay = -1).
my $max_secs = 2;

my $primary = start_node(
	'primary', "shared_buffers = 128MB\nautovacuum = off\n",
	allows_streaming => 1);
create_extensions($primary);
$primary->safe_psql('postgres', 'CREATE TABLE other (id int)');
my $big_blocks = fill_table($primary, 'big', 24);
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf(
	'postgresql.conf', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 1
max_standby_streaming_delay = -1
});
$standby->start;
$primary->wait_for_catchup($standby);

# Cache big on the standby; its shutdown dump saves it, and its start-up
# restore brings it back slowly.
$standby->safe_psql('postgres', "SELECT warm('big')");
is(cached($standby, 'big'), $big_blocks, 'big is cached on the standby');
$standby->restart;
$standby->poll_query_until('postgres',
	"SELECT count(*) >= 64 FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')")
  or die 'timed out waiting for the restore to reach big';
cmp_ok(cached($standby, 'big'), '<', $big_blocks / 2,
	'the standby\'s restore is early in big');

# An AccessExclusive lock on big, WAL-logged, and a write after it.
$primary->safe_psql('postgres',
	'BEGIN; LOCK TABLE big IN ACCESS EXCLUSIVE MODE; INSERT INTO other VALUES (1); COMMIT;'
);
my $lsn =
  $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my $t0 = Time::HiRes::time();
my $caught_up = 0;
while (Time::HiRes::time() - $t0 < 30)
{
	$caught_up = $standby->safe_psql('postgres',
		"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
	last if $caught_up eq 't';
	Time::HiRes::usleep(20_000);
}
my $secs = Time::HiRes::time() - $t0;
note(sprintf('replay caught up after %.3f s', $secs));
is($caught_up, 't', 'the standby replays the lock');
cmp_ok($secs, '<', $max_secs,
	"replay of the AccessExclusive lock catches up within $max_secs s");
is($standby->safe_psql('postgres', 'SELECT count(*) FROM other'),
	'1', 'the write after the lock is on the standby');

# The restore comes back to big and, uncapped, completes.
$standby->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$standby->reload;
wait_for_restore($standby);
is( status(
		$standby,
		'restore_incomplete, restore_skipped_locked, restore_blocks_done + restore_skipped_gone + restore_skipped_excluded = restore_blocks_total'
	),
	'f|0|t',
	'the standby\'s restore is complete, nothing skipped for a lock');
is(cached($standby, 'big'), $big_blocks,
	'pg_buffercache on the standby shows every block of big restored');

$standby->stop;
$primary->stop;
done_testing();
