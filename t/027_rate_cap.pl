# Copyright (c) 2026, pg_warmcache developers
#
# pg_warmcache.max_restore_rate caps the whole restore, not each worker:
# with two workers restoring two databases at once, the rate measured from
# warmcache_status() over a few seconds stays near the cap, not twice it.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions wait_for_restore
  fill_table wait_for_restore_worker);

# MB/s; the measured rate may exceed it by this factor (a short burst is
# allowed); one cap per worker made it twice the cap.
my $cap = 2;
my $slack = 1.3;
my $window = 4;

my $node = start_node(
	'ratecap', qq{
pg_warmcache.max_restore_rate = $cap
pg_warmcache.restore_workers = 2
shared_buffers = 128MB
autovacuum = off
});
create_extensions($node);
for my $db (qw(db_a db_b))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION pg_warmcache');
	fill_table($node, 'big', 12, $db);
}

$node->restart;
wait_for_restore_worker($node, 'db_a');
wait_for_restore_worker($node, 'db_b');

# Blocks restored and the server's clock, at the start and the end of the
# window, while both workers run.
my $sample = q{SELECT restore_blocks_done || ' ' || extract(epoch FROM clock_timestamp())
  FROM warmcache_status()};
my ($b0, $t0) = split / /, $node->safe_psql('postgres', $sample);
sleep($window);
my ($b1, $t1) = split / /, $node->safe_psql('postgres', $sample);
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_warmcache restore' AND datname IN ('db_a', 'db_b')"
	),
	2,
	'both workers still run at the end of the window');
my $rate = ($b1 - $b0) * 8192 / (1024 * 1024) / ($t1 - $t0);
note(sprintf('%.2f MB/s over %.1f s', $rate, $t1 - $t0));
cmp_ok($rate, '>', 0, 'the restore makes progress');
cmp_ok($rate, '<=', $cap * $slack,
	"two workers restore at most ${slack}x max_restore_rate ($cap MB/s)");

$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
wait_for_restore($node);
$node->stop;
done_testing();
