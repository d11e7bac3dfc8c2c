# Copyright (c) 2026, pg_warmcache developers
#
# On a streaming hot standby the autowarm worker runs too: a dump taken on
# the standby is restored there at its next start, and replication goes on.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions wait_for_status
  wait_for_restore relation_blocks cached);
use WarmCache::DumpFormat qw(slurp_bin header);

my $primary =
  start_node('primary', "shared_buffers = 16MB\n", allows_streaming => 1);
create_extensions($primary);
$primary->safe_psql(
	'postgres', q{
	CREATE TABLE t (id int, pad text);
	INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 5000) g;
	VACUUM (FREEZE) t;
});
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->wait_for_catchup($standby);

# A restartpoint, so that the standby's next start replays nothing that
# reads t: if t is in its buffers after the restart, the restore put it there.
$standby->safe_psql('postgres', 'CHECKPOINT');

my $dir = $standby->data_dir;
ok(!-e "$dir/pg_warmcache.blocks", 'the standby has no dump file yet');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	't', 'the standby is in recovery');
wait_for_status($standby, "state = 'idle' AND worker_pid IS NOT NULL",
	'the worker on the standby');

my $t_blocks = relation_blocks($primary, 't');
cmp_ok($t_blocks, '>', 10, 'table t has some blocks');

# Read t on the standby, then dump there.
is($standby->safe_psql('postgres', 'SELECT count(*) FROM t'),
	'5000', 'the standby reads t');
is(cached($standby, 't'),
	$t_blocks, 'all of t is in the standby\'s shared buffers');
my $n = $standby->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok($n, '>=', $t_blocks, 'warmcache_dump_now() works on the standby');
ok(-e "$dir/pg_warmcache.blocks", 'the dump file is in the standby\'s data directory');
is( $standby->safe_psql(
		'postgres', q{
		SELECT count(*) FROM warmcache_blocks()
		WHERE relfilenode = pg_relation_filenode('t') AND fork = 'main'}),
	$t_blocks,
	'the standby\'s dump holds every block of t');
is( $standby->safe_psql(
		'postgres', 'SELECT last_dump_blocks FROM warmcache_status()'),
	$n,
	'the standby\'s status shows its dump');

my $offset = -s $standby->logfile;
$standby->stop;
like(
	slurp_file($standby->logfile, $offset),
	qr/dumped \d+ blocks at shutdown/,
	'the standby dumped at shutdown');
my $saved = slurp_bin("$dir/pg_warmcache.blocks");

# Control: without autowarm, the standby starts with t cold, so recovery
# itself does not read t.
$standby->append_conf('postgresql.conf', 'pg_warmcache.autowarm = off');
$standby->start;
wait_for_status($standby, "state = 'idle' AND worker_pid IS NOT NULL",
	'the worker on the standby');
is(cached($standby, 't'), 0,
	'without autowarm the standby starts with t cold');
is($standby->safe_psql('postgres',
		'SELECT restore_started_at IS NULL FROM warmcache_status()'),
	't', 'and restores nothing');
$standby->stop;
ok(slurp_bin("$dir/pg_warmcache.blocks") eq $saved,
	'without autowarm the standby writes no dump at shutdown');

$standby->append_conf('postgresql.conf', 'pg_warmcache.autowarm = on');
$offset = -s $standby->logfile;
$standby->start;
wait_for_restore($standby, 'the restore on the standby');

my $log = slurp_file($standby->logfile, $offset);
my $h_nblocks = header($saved)->{nblocks};
like($log, qr/restoring $h_nblocks blocks/,
	'the standby restored its own dump at start');
unlike($log, qr/WARNING/, 'without warnings');
is( $standby->safe_psql(
		'postgres',
		"SELECT restore_incomplete, restore_blocks_total = $h_nblocks, restore_blocks_done >= $t_blocks"
		  . ' FROM warmcache_status()'),
	'f|t|t',
	'the standby\'s status shows a finished restore');
is(cached($standby, 't'), $t_blocks,
	'pg_buffercache on the standby shows every block of t restored');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	't', 'the standby is still a standby');

# Replication still works.
$primary->safe_psql('postgres',
	"INSERT INTO t SELECT g, 'new' FROM generate_series(5001, 5100) g");
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', "SELECT count(*) FROM t WHERE pad = 'new'"),
	'100', 'changes on the primary still reach the standby');

$standby->stop;
$primary->stop;
done_testing();
