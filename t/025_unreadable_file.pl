# Copyright (c) 2026, pg_warmcache developers
#
# A dump file that exists but cannot be opened (here: no read permission)
# is reported once, with a WARNING, and set aside; the autowarm worker
# does not restart in a loop (its pid stays), the status is idle, not stuck
# in "restoring", and the periodic dumps write a new file.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node status wait_for_status);
use WarmCache::DumpFormat qw(MAGIC slurp_bin header whole_file);

# The owner of a file with mode 000 cannot read it, unless it is root.
plan skip_all => 'root reads any file' if $> == 0;

# How long the worker must stay: it was restarted every 10 s.
my $watch_secs = 15;

my $node = start_node('unreadable');
my $file = $node->data_dir . '/pg_warmcache.blocks';
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION pg_warmcache;
	CREATE TABLE t (id int, pad text);
	INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 5000) g;
});
cmp_ok($node->safe_psql('postgres', 'SELECT warmcache_dump_now()'),
	'>', 0, 'a dump file is written');
$node->stop;
my $bytes = slurp_bin($file);
chmod(0000, $file) or die "chmod: $!";
ok(!open(my $fh, '<', $file), 'the dump file cannot be opened');

$node->append_conf('postgresql.conf', 'pg_warmcache.dump_interval = 2');
my $offset = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/(?:WARNING|ERROR):  .*"pg_warmcache\.blocks"/, $offset);
like(
	slurp_file($node->logfile, $offset),
	qr/WARNING:  dump file "pg_warmcache\.blocks" is not usable: could not open it: Permission denied/,
	'a WARNING says the file cannot be opened');
wait_for_status($node, "state = 'idle' AND worker_pid IS NOT NULL",
	'the worker to go idle');
my $pid = status($node, 'worker_pid');

# Watch the worker: the same process all along, idle or in one of its
# periodic dumps (every 2 s), never restoring.
my @seen;
for my $i (1 .. $watch_secs)
{
	sleep(1);
	push @seen, status($node, "coalesce(worker_pid, 0) || ' ' || state");
}
is_deeply([ grep { !/^$pid (idle|dumping)$/ } @seen ],
	[], "the autowarm worker keeps its pid and never restores for $watch_secs s")
  or diag(join(', ', @seen));

my $log = slurp_file($node->logfile, $offset);
my @warnings = ($log =~ /^.*WARNING:.*$/mg);
is(scalar(@warnings), 1, 'exactly one WARNING in the log')
  or diag(join("\n", @warnings));
unlike($log, qr/ERROR|FATAL/, 'no ERROR or FATAL in the log');
is($node->safe_psql('postgres', 'SELECT warmcache_restore_abort()'),
	'f', 'no restore is running');

my $bad = "$file.corrupt";
ok(-e $bad, 'the file is set aside as pg_warmcache.blocks.corrupt');
chmod(0600, $bad);
ok(slurp_bin($bad) eq $bytes, 'the set-aside file holds the dump\'s bytes');

# The periodic dumps go on: a new, readable file.
$node->poll_query_until('postgres',
	'SELECT last_dump_at > pg_postmaster_start_time() FROM warmcache_status()')
  or die 'timed out waiting for a periodic dump';
my $new = slurp_bin($file);
my $h = header($new);
ok( $h->{magic} == MAGIC
	  && whole_file($new)
	  && $h->{nblocks} > 0,
	'a periodic dump wrote a new file');

$node->stop;
done_testing();
