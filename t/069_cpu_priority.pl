# Copyright (c) 2026, pg_warmcache developers
#
# pg_warmcache.cpu_yield = priority: the restore workers and the autowarm
# worker run at the lowest CPU priority, and the restore still brings the
# whole saved set back into shared buffers.  The oracles: the kernel's
# record of each process's nice value (/proc/PID/stat, field 19), and
# pg_buffercache.  Under the default (rules), every process keeps the
# postmaster's priority: the control that shows the setting did it.  Linux
# only (/proc).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache;

plan skip_all => 'the nice value is read from /proc/PID/stat (Linux)'
  unless -r "/proc/$$/stat";

# The nice value of process $pid, as the kernel has it.
sub nice_of
{
	my ($pid) = @_;
	my $stat = slurp_file("/proc/$pid/stat");
	# The command name, in parentheses, may hold spaces: split after it.
	$stat =~ s/^.*\) //s;
	my @f = split / /, $stat;
	return $f[16];    # field 19 of the whole line
}

my $node = start_node(
	'priority', q{
shared_buffers = 64MB
autovacuum = off
pg_warmcache.restore_workers = 1
pg_warmcache.max_restore_rate = 8
});
create_extensions($node);
my $blocks = fill_table($node, 'hot', 16);
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my $postmaster_nice = nice_of($node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'"));

# Under rules, nobody's priority changes.
restart_cold($node);
$node->safe_psql('postgres', "SELECT warmcache_restore_now('buffer')");
my $pid = wait_for_restore_worker($node);
is(nice_of($pid), $postmaster_nice,
	'rules: the restore worker keeps the server\'s CPU priority');
is(nice_of(status($node, 'worker_pid')), $postmaster_nice,
	'rules: the autowarm worker keeps the server\'s CPU priority');
wait_for_restore($node);

# Under priority, both run at nice 19, and the restore comes back whole.
$node->append_conf('postgresql.conf', 'pg_warmcache.cpu_yield = priority');
restart_cold($node);
my $offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT warmcache_restore_now('buffer')");
$pid = wait_for_restore_worker($node);
is(nice_of($pid), 19, 'priority: the restore worker runs at nice 19');
is(nice_of(status($node, 'worker_pid')), 19,
	'priority: the autowarm worker runs at nice 19');
is( nice_of(
		$node->safe_psql(
			'postgres',
			"SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")),
	$postmaster_nice,
	'priority: the server\'s other processes keep their priority');
wait_for_restore($node);
cmp_ok(cached($node, 'hot'), '>=', 0.98 * $blocks,
	'priority: the table came back into shared buffers (pg_buffercache)');
unlike(slurp_file($node->logfile, $offset),
	qr/could not lower the CPU priority/, 'no failure to lower it is logged');

$node->stop;
done_testing();
