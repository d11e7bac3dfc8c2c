# Copyright (c) 2026, pg_warmcache developers
#
# Memory stays bounded: a restore worker's while it goes through thousands
# of relations, the autowarm worker's across restores.  The oracle is
# PostgreSQL's own accounting: pg_log_backend_memory_contexts() makes the
# process log its memory contexts' "Grand total".
#
# 5,000 one-block tables are restored at 2 MB/s (256 blocks a second), and
# the worker is asked every 2 s while it works, with the restore's
# progress beside.  The budget (docs/rationale.md, "Costs at scale"): about
# 1.2 MB of its own; the relcache entries of at most 1,024 relations,
# which it then drops, about 4 MB; and PostgreSQL's per-process caches of
# each relation visited (the statistics system's reference, the
# relfilenode map's entry), about 150 bytes each.  So its total stays
# under 8 MB; and from 1,500 blocks after it began to grow (the tables'
# blocks come after the catalogs', and the relcache entries are then past
# their cap), it grows by less than 250 bytes a block: the read counts it
# kept until exit (about 230 bytes a relation) or the decoder's strings
# (800) fail that.  Then three
# restores in a row, of blocks already in place: the autowarm worker's
# total after each must be the same within 64 kB.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use WarmCache::Cluster qw(start_node create_extensions restart_cold
  wait_for_restore wait_for_restore_line);

use constant NTAB => 5000;

my $node = start_node('memory', "shared_buffers = 64MB\nmax_locks_per_transaction = 256\n");
create_extensions($node);
$node->safe_psql('postgres', 'CREATE SCHEMA many');
for (my $i = 1; $i <= NTAB; $i += 500)
{
	my $last = $i + 499;
	$node->safe_psql(
		'postgres', qq{
DO \$\$ BEGIN
  FOR i IN $i .. $last LOOP
    EXECUTE format('CREATE TABLE many.t%s (id int, pad text); INSERT INTO many.t%s VALUES (1, ''x'')', i, i);
  END LOOP;
END \$\$});
}
$node->safe_psql('postgres', 'CHECKPOINT');

# The saved set: the tables, read after a cold start.
restart_cold($node);
for (my $i = 1; $i <= NTAB; $i += 500)
{
	my $last = $i + 499;
	$node->safe_psql('postgres',
		"SELECT count(public.warm(('many.t' || g)::regclass)) FROM generate_series($i, $last) g"
	);
}
my $saved = $node->safe_psql('postgres', 'SELECT public.warmcache_dump_now()');
cmp_ok($saved, '>', NTAB, "the saved set holds $saved blocks");

# The grand total of memory the process $pid logs when asked, or undef if
# it is gone or does not answer within 5 s.
sub grand_total
{
	my ($pid) = @_;
	my $offset = -s $node->logfile;
	return undef
	  unless $node->safe_psql('postgres',
		"SELECT pg_log_backend_memory_contexts($pid)") eq 't';
	my $re = qr/\[$pid\] LOG:  Grand total: (\d+) bytes/;
	for (1 .. 50)
	{
		my $log = slurp_file($node->logfile, $offset);
		return $1 if $log =~ $re;
		usleep(100_000);
	}
	return undef;
}

# A slow restore: one worker, 2 MB/s.
$node->append_conf('postgresql.conf',
	"pg_warmcache.max_restore_rate = 2\npg_warmcache.restore_workers = 1\n");
$node->restart;
my $worker;
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_warmcache restore' AND datname = 'postgres'"
) or die 'no restore worker in database postgres';
$worker = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_warmcache restore' AND datname = 'postgres'"
);
my (@samples, @done);
for (1 .. 30)
{
	sleep 2;
	last
	  unless $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE pid = $worker") eq '1';
	my $total = grand_total($worker);
	next unless defined $total;
	push @samples, $total;
	push @done,
	  $node->safe_psql('postgres',
		'SELECT restore_blocks_done FROM public.warmcache_status()');
}
note("the restore worker's totals: @samples");
note("blocks done at each: @done");
cmp_ok(scalar(@samples), '>=', 5, 'the restore worker logged its memory at least 5 times');
my $max = (sort { $b <=> $a } @samples)[0] // 0;
cmp_ok($max, '<', 8 * 1024 * 1024, "the restore worker held at most $max bytes, under 8 MB");
my ($j) = grep { $samples[$_] > 1.5 * $samples[0] } 0 .. $#samples;
my ($k) = grep { defined $j && $done[$_] >= $done[$j] + 1500 } 0 .. $#done;
ok(defined $k && $done[-1] - $done[$k] >= 1500,
	'the samples past the relcache cap span at least 1,500 blocks');
my $slope = defined $k ? ($samples[-1] - $samples[$k]) / (($done[-1] - $done[$k]) || 1) : 0;
cmp_ok($slope, '<', 250,
	sprintf('past the relcache cap it grew by %.0f bytes a block, under 250', $slope));
wait_for_restore($node);

# Restores in a row: the autowarm worker's memory does not grow.
$node->append_conf('postgresql.conf', "pg_warmcache.max_restore_rate = 0\n");
$node->reload;
my $leader = $node->safe_psql('postgres', 'SELECT worker_pid FROM public.warmcache_status()');
my @totals;
for (1 .. 3)
{
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', 'SELECT public.warmcache_restore_now()');
	wait_for_restore_line($node, $offset);
	push @totals, grand_total($leader);
}
note("the autowarm worker's totals: @totals");
cmp_ok(abs($totals[2] - $totals[0]), '<', 64 * 1024,
	"the autowarm worker's memory is the same after three restores ($totals[0], $totals[2])");

# Batches deferred for their lock and tried again (up to 10 times, over
# about 11 s) are kept once each, not once per attempt.  A session holds
# 1,000 of the tables locked while the saved set is restored; the
# worker's context of deferred batches, logged every second until it
# ends, stays under 512 kB: one copy of each batch takes about 180 kB
# (the context's blocks doubling, 256 kB), ten about 1.8 MB.
my $holder = $node->background_psql('postgres', on_error_stop => 1);
$holder->query_safe('BEGIN');
$holder->query_safe(
	q{DO $$ BEGIN
  FOR i IN 1 .. 1000 LOOP
    EXECUTE format('LOCK TABLE many.t%s IN ACCESS EXCLUSIVE MODE', i);
  END LOOP;
END $$});
my $offset = -s $node->logfile;
$node->safe_psql('postgres', 'SELECT public.warmcache_restore_now()');
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_warmcache restore' AND datname = 'postgres'"
) or die 'no restore worker in database postgres';
$worker = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_warmcache restore' AND datname = 'postgres'"
);
my @deferred;
for (1 .. 30)
{
	last
	  unless $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE pid = $worker") eq '1';
	my $at = -s $node->logfile;
	last unless defined grand_total($worker);
	push @deferred, $1
	  if slurp_file($node->logfile, $at) =~
	  /\[$worker\] LOG:  level: \d+; pg_warmcache deferred batches: (\d+) total/;
	sleep 1;
}
$node->wait_for_log(qr/restore of the saved set incomplete: /, $offset);
$holder->query_safe('ROLLBACK');
$holder->quit;
note("the deferred batches' context: @deferred");
cmp_ok(scalar(@deferred), '>=', 5,
	'the restore worker logged its deferred batches at least 5 times');
my $skipped = $node->safe_psql('postgres',
	'SELECT restore_skipped_locked FROM public.warmcache_status()');
cmp_ok($skipped, '>=', 1000,
	"the locked tables' blocks were skipped as locked ($skipped)");
my $deferred_max = (sort { $b <=> $a } @deferred)[0] // 0;
cmp_ok($deferred_max, '<', 512 * 1024,
	"the deferred batches took at most $deferred_max bytes, under 512 kB");

done_testing();
