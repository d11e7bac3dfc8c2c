# Copyright (c) 2026, pg_warmcache developers
#
# A restore worker terminated inside the engine's loop leaves the restore's
# shared measurement of read-ahead advice.  The engine counts the processes
# in its loop as members, and each phase of a measurement lasts as many
# times longer as there are members; a FATAL does not unwind, so an exit
# callback leaves the measurement.  Were the member kept, the worker left
# would measure for two for the rest of the restore.
#
# Two workers restore 40 small tables slowly (1 MB/s), each table a batch
# of its own, the tables dealt to the two stripes by their relation
# numbers.  One worker is terminated while both are at it (inside the
# engine, which the rate cap keeps them in, asleep), the cap is lifted, and
# each time the other goes on to its next table it joins the measurement:
# as its only member (a DEBUG2 line says how many processes are in it).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use WarmCache::Cluster qw(start_node create_extensions wait_for_status);

my $node = start_node(
	'members', q{
shared_buffers = 128MB
pg_warmcache.restore_workers = 2
autovacuum = off
});
create_extensions($node);
$node->safe_psql(
	'postgres', q{
DO $$
BEGIN
	FOR i IN 1 .. 40 LOOP
		EXECUTE format('CREATE TABLE t%s AS SELECT g AS id, repeat(''x'', 600) AS pad FROM generate_series(1, 700) g', i);
		EXECUTE format('SELECT warm(''t%s'')', i);
	END LOOP;
END $$;});

$node->append_conf('postgresql.conf',
	"pg_warmcache.max_restore_rate = 1\nlog_min_messages = debug2\n");
$node->restart;

# Both stripes of postgres running: two restore workers whose process
# title names the database (the shared catalogs' worker connects to it
# too, but its title says so).
my $dboid = $node->safe_psql('postgres',
	"SELECT oid FROM pg_database WHERE datname = 'postgres'");
sub stripe_workers
{
	my @pids = split /\n/, $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity
		   WHERE backend_type = 'pg_warmcache restore' ORDER BY pid});
	return grep {
		(eval { slurp_file("/proc/$_/cmdline") } // '') =~
		  /restore of database $dboid\b/
	} @pids;
}
my @workers;
for (1 .. 600)
{
	@workers = stripe_workers();
	last if @workers == 2;
	usleep(100_000);
}
is(scalar(@workers), 2, 'two restore workers share the tables');
my ($victim, $survivor) = @workers;
sleep(1);
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($victim)"),
	't', 'one restore worker is terminated mid-restore');

# Gone from pg_stat_activity: its exit callbacks ran, the one that leaves
# the measurement before the one that clears its entry (they run in the
# reverse order of registration).  Joins from then on must count one.
$node->poll_query_until('postgres',
	"SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $victim)")
  or die 'timed out waiting for the terminated worker to end';
my $offset = -s $node->logfile;

# The other one at full speed to its end.
$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
wait_for_status($node, "state <> 'restoring'", 'the restore to end');

my @joins = slurp_file($node->logfile, $offset) =~
  /\[$survivor\] DEBUG:  processes in the shared measurement of advice: (\d+)/g;
cmp_ok(scalar(@joins), '>=', 5,
	'the worker left joined the measurement again for its next tables');
is_deeply([ grep { $_ != 1 } @joins ],
	[], 'it was the only member each time');

done_testing();
