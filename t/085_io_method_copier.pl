# Copyright (c) 2026, pg_warmcache developers
#
# Who copies a block into shared buffers under each io_method (18 on), the
# assumption of WC_STREAM_COPIES_HERE() in include/compat.h: the process
# that reads (sync, io_uring), or an I/O worker (worker).  The engine
# prefaults the memory of the buffers it fills only where it copies them
# itself.  The oracle is the kernel's count of each process's minor page
# faults (/proc/PID/stat): after a restart no process has touched the
# buffers' memory yet, and the one that copies 8 kB into a buffer faults
# in its two pages.  Per method, warm() of a table of N pages:
#   - with prefaulting off, the copier must have faulted in at least 90% of
#     the N pages and the other side at most 10%: a PostgreSQL whose
#     worker method copied in the backend, or whose io_uring handed the
#     copy to the I/O workers, fails here;
#   - with it on (the default), under worker the backend still faults in at
#     most 10%: an engine that prefaulted where the workers copy fails
#     here.  (That it prefaults where it copies, t/012 checks.)

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions);

my $node = start_node(
	'io_method_copier', q{
shared_buffers = 128MB
huge_pages = off
pg_warmcache.autowarm = off
pg_warmcache.max_warm_workers = 0
autovacuum = off
});
if ($node->safe_psql('postgres', 'SHOW server_version_num') < 180000)
{
	$node->stop;
	plan skip_all => 'io_method exists from 18 on';
}
create_extensions($node);
$node->safe_psql(
	'postgres', q{
	CREATE TABLE t (id int, pad text);
	INSERT INTO t SELECT g, repeat('x', 600) FROM generate_series(1, 30000) g;
});
# Every method the server was built with: io_uring only with liburing.
my @methods = split /,/,
  $node->safe_psql('postgres',
	"SELECT array_to_string(enumvals, ',') FROM pg_settings WHERE name = 'io_method'"
  );
my $pages = $node->safe_psql('postgres',
	"SELECT pg_relation_size('t') / 4096");
cmp_ok($pages, '>', 4000, "table t has $pages pages of 4 kB");

# Minor faults of the processes $pids so far, added up.
sub minor_faults
{
	my $sum = 0;
	for my $pid (@_)
	{
		my $stat = slurp_file("/proc/$pid/stat");
		# The fields after the command's parenthesis, which may hold spaces;
		# minflt is the tenth field of the line.
		$stat =~ s/^.*\) //s;
		$sum += (split / /, $stat)[7];
	}
	return $sum;
}

# warm('t', 'buffer') after a restart under $method, in a session with
# $setting; returns the minor faults of the session's backend and of the
# I/O workers during the call.
sub faults_of_warm
{
	my ($method, $setting) = @_;
	$node->append_conf('postgresql.conf', "io_method = $method");
	$node->restart;
	my $session = $node->background_psql('postgres');
	$session->query_safe($setting);
	my $backend = $session->query_safe('SELECT pg_backend_pid()');
	my @workers = split /\n/,
	  $session->query_safe(
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'io worker'");
	is( $session->query_safe('SHOW io_method'),
		$method, "the server reads with io_method = $method");
	my ($b0, $w0) = (minor_faults($backend), minor_faults(@workers));
	my $warmed = $session->query_safe("SELECT warm('t', 'buffer')");
	my ($b1, $w1) = (minor_faults($backend), minor_faults(@workers));
	$session->quit;
	cmp_ok($warmed * 2, '>=', $pages, "$method: warm() read every block of t");
	return ($b1 - $b0, $w1 - $w0);
}

for my $method (@methods)
{
	my $copies_here = $method ne 'worker';
	my ($backend, $workers) =
	  faults_of_warm($method, "SET pg_warmcache.platform_shortcuts = ''");
	my ($copier, $other) =
	  $copies_here ? ($backend, $workers) : ($workers, $backend);
	my $who = $copies_here ? 'the backend' : 'the I/O workers';
	cmp_ok($copier, '>=', 0.9 * $pages,
		"$method, no prefaulting: $who faulted in $copier of $pages pages");
	cmp_ok($other, '<=', 0.1 * $pages,
		"$method, no prefaulting: the other side faulted in $other");
	next if $copies_here;

	($backend, $workers) = faults_of_warm($method, 'SELECT 1');
	cmp_ok($backend, '<=', 0.1 * $pages,
		"$method, prefaulting on: the backend faulted in $backend of $pages pages, not prefaulting where the I/O workers copy"
	);
}
ok((grep { $_ eq 'worker' } @methods) && (grep { $_ eq 'sync' } @methods),
	'methods sync and worker were checked (' . join(', ', @methods) . ')');

$node->stop;
done_testing();
