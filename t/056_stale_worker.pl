# Copyright (c) 2026, pg_warmcache developers
#
# A restore worker that does not stop when told (here: stopped with
# SIGSTOP, so SIGTERM waits) neither holds the restore nor gets its slot
# handed to the next restore's workers while it may still write into it.
# The restore is aborted: it must end within the grace and exit waits
# (5 s + 10 s), naming the worker.  The next restore must not start a
# worker in that slot while the process lives, and completes with the
# slots left.  Once the process is let go (SIGCONT: it takes its pending
# SIGTERM and ends), the slot is used again.  The oracles are the process
# itself (its pid from pg_stat_activity, signalled by the test), the
# server log and warmcache_status() against warmcache_blocks().

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use WarmCache::Cluster qw(start_node create_extensions status fill_table
  wait_for_restore_worker);

my $node = start_node(
	'stale', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 2
shared_buffers = 64MB
log_min_messages = debug1
});
create_extensions($node);
fill_table($node, 't', 16);
$node->restart;
my $pid = wait_for_restore_worker($node, 'postgres');
kill('STOP', $pid) or die "could not stop process $pid: $!";

# Whatever happens, the process is not left stopped.
END { kill('CONT', $pid) if $pid; }
my $offset = -s $node->logfile;
my $aborted_at = Time::HiRes::time();
$node->safe_psql('postgres', 'SELECT warmcache_restore_abort()');
$node->poll_query_until('postgres',
	"SELECT state = 'idle' FROM warmcache_status()")
  or die 'timed out waiting for the aborted restore to end';
my $secs = Time::HiRes::time() - $aborted_at;
cmp_ok($secs, '<', 15 + 15,
	'the aborted restore ends without the worker that does not stop');
ok(kill(0, $pid), "the stopped worker $pid still exists");
my ($slot) = slurp_file($node->logfile, $offset) =~
  /restore worker with PID $pid in slot (\d+) did not stop when asked/;
ok(defined $slot, 'the log names the worker left behind, and its slot');
$slot //= -1;

# The next restore runs without that slot.
$offset = -s $node->logfile;
$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
$node->safe_psql('postgres', 'SELECT warmcache_restore_now()');
$node->poll_query_until('postgres',
	"SELECT state = 'idle' AND restore_started_at > now() - interval '1 minute'"
	  . ' AND restore_finished_at >= restore_started_at FROM warmcache_status()')
  or die 'timed out waiting for the next restore';
my $log = slurp_file($node->logfile, $offset);
like($log, qr/starting the restore worker of stripe \d+ of database \d+ in slot \d+/,
	'the next restore started workers');
unlike($log, qr/starting the restore worker of stripe \d+ of database \d+ in slot $slot\b/,
	"none in slot $slot, while its old worker lives");
ok(kill(0, $pid), "the stopped worker $pid still existed meanwhile");
is( status(
		$node,
		'restore_incomplete, restore_blocks_done + restore_blocks_skipped = restore_blocks_total'),
	"f|t",
	'the next restore completes with the other slots');

# Let it go: it takes its SIGTERM and ends; then its slot is used again.
kill('CONT', $pid);
for (1 .. 100)
{
	last unless kill(0, $pid);
	Time::HiRes::usleep(100_000);
}
ok(!kill(0, $pid), "the old worker $pid ended once let go");
$offset = -s $node->logfile;
$node->append_conf('postgresql.conf', 'pg_warmcache.restore_workers = 8');
$node->reload;
$node->safe_psql('postgres', 'SELECT warmcache_restore_now()');
$node->wait_for_log(qr/the restore worker left in slot $slot has ended\n.*DETAIL:  The slot is used again\./,
	$offset);
pass("slot $slot is used again once its worker is gone");

$node->stop;
done_testing();
