# Copyright (c) 2026, pg_warmcache developers
#
# While queries keep every CPU busy and none waits for a read, the restore reads
# the buffer tier into the OS cache only: copying a block into shared
# buffers is CPU the queries would pay now, for a block none of them has
# asked for yet, and the first query that wants it copies it from the page
# cache.  The oracles: pg_buffercache (the table did not come back into
# shared buffers), util-linux fincore (its file did come back into the page
# cache), and the next dump, which still holds every block of it (its OS
# tier).  Without the busy queries, the same restore fills shared buffers: the
# control that tells this apart from an engine that does nothing.  Advice is
# off (maintenance_io_concurrency = 0), so that the page cache holds only
# what the restore read; the rate cap makes the restore last long enough.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Turnstile qw(:machine_alone);
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  wait_for_restore wait_for_restore_line cached fill_table busy_backends);
use WarmCache::PageCache qw(resident_blocks evict_files);

my $node = start_node(
	'busy', q{
shared_buffers = 64MB
pg_warmcache.dump_os_cache = on
pg_warmcache.restore_workers = 1
pg_warmcache.max_restore_rate = 4
maintenance_io_concurrency = 0
autovacuum = off
});
create_extensions($node);
my $blocks = fill_table($node, 'big', 16);
my $file = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('big')");
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');

# Restore big from a cold start: shared buffers empty, its file evicted;
# $during runs after the start, before the restore.
sub restore_cold
{
	my ($during) = @_;
	restart_cold($node);
	$node->safe_psql('postgres', 'CHECKPOINT');
	evict_files($file);
	cmp_ok(resident_blocks($file), '<', $blocks / 10,
		'big left the page cache');
	$during->() if $during;
	# Waiting on the log, not by polling: a poll's connections take CPU.
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SELECT warmcache_restore_now('buffer')");
	wait_for_restore_line($node, $offset);
	wait_for_restore($node);
	is(status($node, 'restore_incomplete'), 'f', 'the restore is complete');
	return;
}

# Without busy queries, the restore fills shared buffers (short queries,
# the test's own among them, leave CPUs free).
restore_cold();
cmp_ok(cached($node, 'big'), '>=', 0.98 * $blocks,
	'without busy queries, big came back into shared buffers');

# The busy queries' canceller: returns how many ran until then.
my $stop_busy;

chomp(my $ncpus = `nproc`);
$ncpus = 1 unless $ncpus && $ncpus =~ /^\d+$/;

# With a CPU left free, the restore takes that one: it costs the queries
# nothing, and most of big goes into shared buffers (other processes take
# the free CPU now and then; without the look at the CPUs none would).
SKIP:
{
	skip 'one CPU only', 4 if $ncpus < 2;
	restore_cold(sub { $stop_busy = busy_backends($node, $ncpus - 1) });
	is($stop_busy->(), $ncpus - 1,
		'the busy queries, one fewer than CPUs, ran through the restore');
	cmp_ok(cached($node, 'big'), '>=', 0.5 * $blocks,
		'beside a free CPU, big came back into shared buffers');
}

# With every CPU busy, the restore gives way.
restore_cold(sub { $stop_busy = busy_backends($node, $ncpus) });
is($stop_busy->(), $ncpus, "the $ncpus busy queries ran through the restore");

cmp_ok(cached($node, 'big'), '<', $blocks / 4,
	'beside busy queries, big did not go into shared buffers');
cmp_ok(resident_blocks($file), '>=', 0.95 * $blocks,
	'but into the page cache');
cmp_ok(status($node, 'restore_blocks_os_only'), '>=', 0.75 * $blocks,
	'and the restore counts it as into the OS cache only');

# The saved set keeps big: the next dump has it in its OS tier, as far as
# the page cache still holds it (as above; nothing of ours evicts it, but
# the kernel may, and then no dump can know of it).
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok(
	$node->safe_psql(
		'postgres', q{
	SELECT count(DISTINCT block) FROM warmcache_blocks()
	 WHERE fork = 'main' AND relfilenode = pg_relation_filenode('big')}),
	'>=', 0.95 * $blocks, 'the next dump still holds big');

$node->stop;
done_testing();
