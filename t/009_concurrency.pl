# Copyright (c) 2026, pg_warmcache developers
#
# Dumps and restores against each other: concurrent dumps wait for each
# other and leave a valid file; a dump or a second restore asked for during
# a restore is refused and leaves the file alone; an aborted restore, or one
# interrupted by shutdown, is marked incomplete and the shutdown dump then
# keeps the saved file rather than replace it with a smaller one.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_status wait_for_restore psql_fails relation_blocks cached);
use WarmCache::DumpFormat qw(MAGIC slurp_bin write_bin header whole_file);

# The restore is capped at 1 MB/s per worker, and one worker does it, so
# restoring the table below takes long enough (about 30 s) to act on it
# midway.
my $node = start_node(
	'concurrency', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 1
shared_buffers = 128MB
});
my $pgdata = $node->data_dir;
my $file = "$pgdata/pg_warmcache.blocks";

create_extensions($node);
$node->safe_psql(
	'postgres', q{
	CREATE TABLE big (id int, pad text);
	INSERT INTO big SELECT g, repeat('x', 600) FROM generate_series(1, 40000) g;
	VACUUM big;
});
my $big_blocks = relation_blocks($node, 'big');
cmp_ok($big_blocks, '>', 3000, 'table big has more than 3000 blocks');

# A file is valid if it has the size its header announces and the server
# reads it back block by block.
sub check_file
{
	my ($name) = @_;
	my $bytes = slurp_bin($file);
	my $h = header($bytes);
	ok( $h->{magic} == MAGIC
		  && whole_file($bytes),
		"$name: the file is complete");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()'),
		$h->{nblocks}, "$name: warmcache_blocks() reads it");
	ok(!-e "$file.tmp" && !-e "$file.sort",
		"$name: no temporary file is left");
	return $bytes;
}

#---- Two concurrent dumps ----

# Two sessions dump 300 times each at the same time; without the
# exclusion, their temporary files and renames would collide.
my @sessions;
for my $i (1 .. 2)
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr('postgres'),
			'-c',
			'SELECT count(*) FILTER (WHERE warmcache_dump_now() > 0) FROM generate_series(1, 300)'
		],
		'>', \$out, '2>', \$err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	push @sessions, [ $h, \$out, \$err ];
}
for my $i (0 .. 1)
{
	my ($h, $out, $err) = @{ $sessions[$i] };
	ok($h->finish, "concurrent dumps, session $i: psql succeeds")
	  or diag($$err);
	is($$out, "300\n", "concurrent dumps, session $i: all 300 dumps succeed");
}
is(status($node, 'state'),
	'idle', 'after concurrent dumps the state is idle');
check_file('after concurrent dumps');

#---- A restore to act on ----

# Restart: the shutdown dump saves big, which then is not in shared buffers
# until the start-up restore, slowed down, brings it back.
$node->restart;
my $saved = check_file('after restart');
my $total = header($saved)->{nblocks};
cmp_ok($total, '>', $big_blocks, 'the saved file holds big and more');
wait_for_status($node, "state = 'restoring' AND restore_blocks_done > 0",
	'the start-up restore to run');
is(status($node, 'restore_blocks_total'), $total,
	'the start-up restore restores the saved file');

is($node->safe_psql('postgres', 'SELECT warmcache_restore_abort()'),
	't', 'warmcache_restore_abort() during the start-up restore returns true');
wait_for_restore($node, 'the aborted restore to end');
is(status($node, 'restore_incomplete'),
	't', 'the aborted restore is incomplete');
is($node->safe_psql('postgres', 'SELECT warmcache_restore_abort()'),
	'f', 'warmcache_restore_abort() with no restore running returns false');

# A restore asked for from SQL.
is($node->safe_psql('postgres', 'SELECT warmcache_restore_now()'),
	$total, 'warmcache_restore_now() returns the blocks of the file');
wait_for_status($node,
	"state = 'restoring' AND restore_finished_at IS NULL "
	  . 'AND restore_blocks_done > 0',
	'the restore to run');

#---- During the restore ----

my $err = psql_fails($node, 'SELECT warmcache_dump_now()',
	'a dump during a restore: fails');
like(
	$err,
	qr/ERROR:  55006: cannot dump while a restore is in progress/,
	'a dump during a restore fails with object_in_use');
ok(slurp_bin($file) eq $saved, 'the refused dump leaves the file intact');

$err = psql_fails($node, 'SELECT warmcache_restore_now()',
	'a second restore: fails');
like(
	$err,
	qr/ERROR:  55006: cannot restore while a restore is in progress/,
	'a restore during a restore fails with object_in_use');
is(status($node, 'state'), 'restoring', 'the first restore goes on');

is($node->safe_psql('postgres', 'SELECT warmcache_restore_abort()'),
	't', 'warmcache_restore_abort() during the restore returns true');
wait_for_restore($node, 'the aborted restore to end');
is( status(
		$node,
		'restore_incomplete, abort_requested, restore_blocks_total, restore_blocks_done + restore_blocks_skipped < restore_blocks_total'
	),
	"t|f|$total|t",
	'the status shows the restore ended incomplete');
ok(slurp_bin($file) eq $saved, 'the aborted restore leaves the file intact');

# Blocks of big in shared buffers, of all its forks.
my $cached = cached($node, 'big', 'all');
cmp_ok($cached, '<', $big_blocks,
	'pg_buffercache shows big only partly restored');
cmp_ok(
	$node->safe_psql(
		'postgres',
		'SELECT count(*) FROM pg_buffercache WHERE relfilenode IS NOT NULL'),
	'<', $total,
	'shared buffers hold fewer blocks than the saved file');

#---- A clean restart keeps the larger saved file ----

my $offset = -s $node->logfile;
$node->restart;
like(
	slurp_file($node->logfile, $offset),
	qr/LOG:  kept the saved block list of $total blocks/,
	'the shutdown dump after an aborted restore keeps the saved file');
ok(slurp_bin($file) eq $saved,
	'the saved file is byte for byte the one before the aborted restore');

# The start-up restore runs again on the same file; interrupted by a
# shutdown it is incomplete too, and the saved file is kept again.
wait_for_status($node, "state = 'restoring' AND restore_blocks_done > 0",
	'the start-up restore to run');
is(status($node, 'restore_blocks_total'), $total,
	'the start-up restore restores the kept file');
$offset = -s $node->logfile;
$node->stop;
my $log = slurp_file($node->logfile, $offset);
like($log, qr/restore of the saved set stopped/,
	'the shutdown stops the restore');
like(
	$log,
	qr/LOG:  kept the saved block list of $total blocks/,
	'the shutdown dump after an interrupted restore keeps the saved file');
ok(slurp_bin($file) eq $saved, 'the saved file is still the same');

# warmcache_dump_now() always writes, even after an incomplete restore.
$node->start;
wait_for_status($node, "state = 'restoring' AND restore_blocks_done > 0",
	'the start-up restore to run');
$node->safe_psql('postgres', 'SELECT warmcache_restore_abort()');
wait_for_restore($node, 'the aborted restore to end');
my $n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok($n, '<', $total, 'an explicit dump holds fewer blocks');
my $new = check_file('after an explicit dump');
is(header($new)->{nblocks}, $n, 'an explicit dump replaces the saved file');
is(status($node, 'restore_incomplete'), 'f',
	'an explicit dump clears restore_incomplete');

#---- Periodic dumps after an aborted restore ----

# Back to the large file, with a dump every second.
$node->stop;
write_bin($file, $saved);
$node->append_conf('postgresql.conf', 'pg_warmcache.dump_interval = 1');
$node->start;
wait_for_status($node, "state = 'restoring' AND restore_blocks_done > 0",
	'the start-up restore to run');
$offset = -s $node->logfile;
is($node->safe_psql('postgres', 'SELECT warmcache_restore_abort()'),
	't', 'warmcache_restore_abort() returns true');
$node->wait_for_log(
	qr/LOG:  kept the saved block list of $total blocks/,
	$offset);
ok(1, 'the periodic dump after an aborted restore keeps the saved file');
ok(slurp_bin($file) eq $saved, 'the saved file is unchanged');

$node->stop;
done_testing();
