# Copyright (c) 2026, pg_warmcache developers
#
# Template databases and databases that do not allow connections are not
# restored: a restore worker there would make CREATE DATABASE fail (it
# copies template1, and refuses while anyone is connected to it) or could
# not connect at all.  Their blocks count as skipped, excluded, the restore
# is complete, the log has no FATAL, and a CREATE DATABASE right after
# start-up, while the restore runs, succeeds at once.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_restore fill_table wait_for_restore_worker timed_psql);

# CREATE DATABASE waits 5 s for the sessions in its template to leave.
my $max_secs = 2;

# Slow enough that the restore still runs when CREATE DATABASE comes, with
# a worker for every database if they were all restored.
my $node = start_node(
	'excluded', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 4
max_worker_processes = 12
shared_buffers = 128MB
autovacuum = off
});
create_extensions($node);
fill_table($node, 'big', 8);

# template1 with a table of its own, cached as every CREATE DATABASE
# caches some of template1.
$node->safe_psql('template1', 'CREATE EXTENSION pg_warmcache');
fill_table($node, 't1', 6, 'template1');

# A database that refuses connections, with cached blocks.
$node->safe_psql('postgres', 'CREATE DATABASE nc');
fill_table($node, 'nc_table', 2, 'nc');
$node->safe_psql('postgres', 'ALTER DATABASE nc ALLOW_CONNECTIONS false');

# template0's blocks come into the cache by a copy of it.
$node->safe_psql('postgres', 'CREATE DATABASE from0 TEMPLATE template0');

my $offset = -s $node->logfile;
$node->restart;
wait_for_restore_worker($node);

# Right after start-up, with the restore running.
my ($ret, $secs, $stdout, $stderr) =
  timed_psql($node, 'postgres', 'CREATE DATABASE fresh');
note(sprintf('CREATE DATABASE fresh: %.3f s', $secs));
is($ret, 0, 'CREATE DATABASE during the start-up restore succeeds')
  or diag($stderr);
cmp_ok($secs, '<', $max_secs, "CREATE DATABASE takes less than $max_secs s");
is(status($node, 'state'), 'restoring', 'the restore still runs');

# What the file holds of each database left out.
my %in_file = split /[|\n]/, $node->safe_psql(
	'postgres', q{
SELECT d.datname, count(*) FROM warmcache_blocks() b
  JOIN pg_database d ON d.oid = b.database
 WHERE d.datname IN ('template0', 'template1', 'nc')
 GROUP BY 1});
my $excluded = 0;
for my $db (qw(template0 template1 nc))
{
	cmp_ok($in_file{$db} // 0, '>', 0, "the file holds blocks of $db");
	$excluded += $in_file{$db} // 0;
}
my $total =
  $node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()');

$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
wait_for_restore($node);
my $log = slurp_file($node->logfile, $offset);
like($log, qr/restore of the saved set finished: restored \d+ of $total blocks/,
	'the log says the restore finished');
# The log begins before the restart, whose fast shutdown ends this test's
# own sessions with a FATAL; any other FATAL is the restore's.
unlike(
	$log,
	qr/FATAL:  (?!terminating connection due to administrator command)/,
	'no FATAL in the log');

is( status(
		$node,
		'restore_incomplete, restore_skipped_excluded, restore_skipped_failed, '
		  . 'restore_blocks_done + restore_skipped_gone + restore_skipped_excluded'
	),
	"f|$excluded|0|$total",
	'the restore is complete; the blocks of template0, template1 and nc are excluded'
);

$node->stop;
done_testing();
