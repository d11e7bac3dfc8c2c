# Copyright (c) 2026, pg_warmcache developers
#
# Readiness: warmcache_is_warm() and warmcache_wait_warm().  A node with
# nothing to do is ready at once.  A node restoring under a rate cap says
# "not yet" right after its start and while it restores, and "ready" once
# it holds the fraction asked for; the waiting variant gives up at its
# timeout with the fraction reached, and a cancel stops it at once,
# holding no lock.  A standby that follows its primary's hot set is ready
# once a pass holds it, and again after its promotion has loaded it.  The
# oracles are pg_buffercache (the saved set's blocks in shared buffers) and
# util-linux fincore (the followed table in the standby's OS cache).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use WarmCache::Cluster qw(start_node create_extensions wait_for_restore
  cached fill_table wait_for_restore_worker timed_psql);
use WarmCache::PageCache qw(resident_blocks evict_files);

# The fraction now: a wait of 0 s for everything looks once.
my $fraction_sql = 'SELECT warmcache_wait_warm(1.0, 0)';

# The blocks of the saved set that can be restored (status, now), and how
# many of the saved set's blocks shared buffers hold (pg_buffercache).
my $denominator_sql = q{
SELECT restore_blocks_total - restore_skipped_gone - restore_skipped_excluded
  FROM warmcache_status()};
my $in_buffers_sql = q{
SELECT count(*) FROM warmcache_blocks() w
  JOIN pg_buffercache b
    ON b.reldatabase = w.database AND b.reltablespace = w.tablespace
   AND b.relfilenode = w.relfilenode AND b.relblocknumber = w.block
   AND b.relforknumber = CASE w.fork WHEN 'main' THEN 0 WHEN 'fsm' THEN 1
                         WHEN 'vm' THEN 2 ELSE 3 END};

# ---- A node with nothing to do: no dump file.

my $node = start_node(
	'ready', q{
shared_buffers = 128MB
autovacuum = off
}, allows_streaming => 1);
create_extensions($node);
my $t0 = Time::HiRes::time();
is($node->safe_psql('postgres', 'SELECT warmcache_is_warm(1.0)'),
	't', 'nothing to restore: warm at once');
is($node->safe_psql('postgres', 'SELECT warmcache_wait_warm(1.0, 60)'),
	'1', 'nothing to restore: the wait returns 1');
cmp_ok(Time::HiRes::time() - $t0, '<', 10, '... without waiting');

# ---- A node restoring under a rate cap: about 24 MB at 2 MB/s.

my $blocks = fill_table($node, 'hot', 24);
my $dumped = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok($dumped, '>=', $blocks, 'the dump holds the hot table');
$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 2');
$node->restart;

# Right after the start, whether or not the worker took the restore on yet.
is($node->safe_psql('postgres', 'SELECT warmcache_is_warm(0.9)'),
	'f', 'right after the start: not warm yet');
cmp_ok(cached($node, 'hot'), '<', 0.9 * $blocks,
	'... and shared buffers do not hold 90% of the hot table');

wait_for_restore_worker($node);
cmp_ok($node->safe_psql('postgres', $fraction_sql),
	'<', 0.9, 'while restoring under the cap: the fraction is below 0.9');

# The fraction agrees with pg_buffercache, both ways: what it says is held
# is in shared buffers, and what shared buffers hold of the set is no more
# than it says, give or take the set's blocks outside the hot table, which
# the server's own queries may have read.
my $outside = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE NOT (relfilenode = pg_relation_filenode('hot')
            AND database = (SELECT oid FROM pg_database WHERE datname = 'postgres'))});
for my $i (1 .. 3)
{
	my $f1 = $node->safe_psql('postgres', $fraction_sql);
	my $den = $node->safe_psql('postgres', $denominator_sql);
	my $held = $node->safe_psql('postgres', $in_buffers_sql);
	my $f2 = $node->safe_psql('postgres', $fraction_sql);
	note("sample $i: fraction $f1 .. $f2 of $den; in shared buffers $held");
	cmp_ok($held, '>=', int($f1 * $den) - 8,
		"sample $i: shared buffers hold what the fraction says");
	cmp_ok($held, '<=', $f2 * $den + $outside,
		"sample $i: and not more of the set than it says");
}

# The wait gives up at its timeout with the fraction reached.
my ($ret, $secs, $out) =
  timed_psql($node, 'postgres', 'SELECT warmcache_wait_warm(0.99, 1)');
is($ret, 0, 'a wait of 1 s returns');
cmp_ok($out, '<', 0.99, '... with a fraction short of 0.99');
cmp_ok($secs, '>=', 0.9, '... after its timeout');

# A wait is cancelled at once, and holds no lock while it waits.
my ($wout, $werr) = ('', '');
my $waiter = IPC::Run::start(
	[
		'psql', '-XAtq', '-d', $node->connstr('postgres'),
		'-c', 'SELECT warmcache_wait_warm(1.0, 300)'
	],
	'>', \$wout, '2>', \$werr);
$node->poll_query_until(
	'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE query LIKE 'SELECT warmcache_wait_warm(1.0, 300)%'
   AND wait_event_type = 'Extension'})
  or die 'timed out waiting for the waiting query';
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT warmcache_wait_warm(1.0, 300)%'"
);
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_locks WHERE pid = $pid AND locktype <> 'virtualxid'"
	),
	'0',
	'a waiting call holds no lock but its own transaction id');
$t0 = Time::HiRes::time();
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$waiter->finish;
like($werr, qr/canceling statement due to user request/,
	'a cancel stops the wait');
cmp_ok(Time::HiRes::time() - $t0, '<', 30, '... at once');

# Still restoring, then ready: the wait returns once 90% is held.
my $f = $node->safe_psql('postgres', 'SELECT warmcache_wait_warm(0.9, 300)');
cmp_ok($f, '>=', 0.9, 'the wait returns once 90% is held');
is($node->safe_psql('postgres', 'SELECT warmcache_is_warm(0.9)'),
	't', 'then it is warm');
my $den = $node->safe_psql('postgres', $denominator_sql);
cmp_ok($node->safe_psql('postgres', $in_buffers_sql),
	'>=', int(0.9 * $den) - 8,
	'and shared buffers hold 90% of the saved set');
wait_for_restore($node);
is($node->safe_psql('postgres', 'SELECT warmcache_wait_warm(1.0, 60)'),
	'1', 'the restore finished: all of it held');
cmp_ok(cached($node, 'hot'), '>=', $blocks, 'all of the hot table is cached');

# ---- A standby that follows into its OS cache, then is promoted.

$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
$node->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('ready_standby');
$standby->init_from_backup($node, 'bk', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"pg_warmcache.follow_primary = os\npg_warmcache.autowarm = off\n");
$standby->start;
$node->wait_for_catchup($standby);

# Its copy of the hot table starts out of the OS cache.
my $hot_file = $standby->data_dir . '/'
  . $standby->safe_psql('postgres', "SELECT pg_relation_filepath('hot')");
evict_files($hot_file);
cmp_ok(resident_blocks($hot_file), '<', 0.1 * $blocks,
	'the standby starts with the hot table cold');

$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
$node->poll_query_until('postgres',
	'SELECT count(*) > 0 FROM warmcache_published')
  or die 'timed out waiting for the primary to publish';

# Until the standby has seen the publication it has nothing to follow,
# which is ready; from then on it is not, until a pass holds the set.
$standby->poll_query_until('postgres',
	"SELECT follow_state = 'following' FROM warmcache_status()")
  or die 'timed out waiting for the standby to follow';
$f = $standby->safe_psql('postgres', 'SELECT warmcache_wait_warm(0.9, 300)');
cmp_ok($f, '>=', 0.9, 'a following standby: warm once a pass holds the set');
cmp_ok(resident_blocks($hot_file), '>=', 0.9 * $blocks,
	'... and its OS cache holds the hot table');
cmp_ok(cached($standby, 'hot'), '<', 0.1 * $blocks,
	'... but not its shared buffers (follow_primary = os)');

# At promotion the set is loaded into shared buffers: ready once it is.
$standby->promote;
$f = $standby->safe_psql('postgres', 'SELECT warmcache_wait_warm(0.9, 300)');
cmp_ok($f, '>=', 0.9, 'promoted: warm once the load holds the set');
is( $standby->safe_psql(
		'postgres', 'SELECT follow_state FROM warmcache_status()'),
	'promoted',
	'... loaded at promotion');
cmp_ok(cached($standby, 'hot'), '>=', 0.9 * $blocks,
	'... and its shared buffers hold the hot table');

$standby->stop;
$node->stop;
done_testing();
