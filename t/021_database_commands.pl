# Copyright (c) 2026, pg_warmcache developers
#
# Database-level commands on a database being restored succeed at once:
# DROP DATABASE, CREATE DATABASE ... TEMPLATE, ALTER DATABASE ... RENAME
# and ALTER DATABASE ... SET TABLESPACE each wait for the sessions
# connected to the database to leave, and a restore worker leaves when it
# sees one waiting.  Afterwards the restore goes on in the renamed database
# and in the template, counts the dropped database's blocks as gone, and
# completes.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes ();
use WarmCache::Cluster qw(start_node create_extensions status
  wait_for_status cached fill_table wait_for_restore_worker timed_psql);

# Each command succeeds within this many seconds; the restore looks every
# 100 ms whether its database is wanted.  A worker that stays makes them
# fail after 5 s.
my $max_secs = 2;

# A worker per database, all sharing 1 MB/s: each database takes tens of
# seconds to restore.
my $node = start_node(
	'dbcmds', q{
pg_warmcache.max_restore_rate = 1
pg_warmcache.restore_workers = 6
max_worker_processes = 12
shared_buffers = 128MB
autovacuum = off
allow_in_place_tablespaces = on
});
create_extensions($node);
$node->safe_psql('postgres', "CREATE TABLESPACE ts LOCATION ''");

my @dbs = qw(db_drop db_tmpl db_rename db_move);
my %blocks;
for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db,
		'CREATE EXTENSION pg_warmcache; CREATE EXTENSION pg_buffercache');
	$blocks{$db} = fill_table($node, 'big', 8, $db);
	is(cached($node, 'big', 'main', $db),
		$blocks{$db}, "$db: its table big is cached before the restart");
}
my %oid = map {
	$_ => $node->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = '$_'")
} @dbs;

$node->restart;
my $total =
  $node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()');
wait_for_restore_worker($node, $_) for @dbs;
is(status($node, 'state'), 'restoring', 'a worker restores each database');

# Runs $sql in database postgres during the restore of $db: it succeeds in
# time.
sub command_in_time
{
	my ($db, $sql) = @_;
	wait_for_restore_worker($node, $db);
	my ($ret, $secs, $stdout, $stderr) = timed_psql($node, 'postgres', $sql);
	note(sprintf('%s: %.3f s', $sql, $secs));
	is($ret, 0, "$sql during the restore of $db succeeds")
	  or diag($stderr);
	cmp_ok($secs, '<', $max_secs, "$sql takes less than $max_secs s");
	return;
}

my $offset = -s $node->logfile;
command_in_time('db_drop', 'DROP DATABASE db_drop');
command_in_time('db_tmpl', 'CREATE DATABASE clone TEMPLATE db_tmpl');
command_in_time('db_rename', 'ALTER DATABASE db_rename RENAME TO db_renamed');
command_in_time('db_move', 'ALTER DATABASE db_move SET TABLESPACE ts');
is(status($node, 'state'), 'restoring',
	'the restore goes on after the commands');
like(slurp_file($node->logfile, $offset),
	qr/restore worker leaves database $oid{db_drop}\n.*DETAIL:  A command wants the database\./,
	'the log says a worker left the database to the command');

# The restore goes on in the template and in the renamed database.
wait_for_restore_worker($node, 'db_tmpl');
wait_for_restore_worker($node, 'db_renamed');
ok(1, 'workers restore db_tmpl and db_renamed again');
is($node->safe_psql('clone', 'SELECT count(*) > 0 FROM big'),
	't', 'the clone has the template\'s table');

# While a database command wants a database that the restore wants, the
# restore's other workers pause: CREATE DATABASE copies its template, and
# their reads would take bandwidth from the copy.  ALTER DATABASE ...
# RENAME in a transaction left open holds its lock until the end of the
# transaction; pg_buffercache, from database postgres, shows whether
# db_renamed's restore moves meanwhile, and that it moves without such a
# command.
my $progress_secs = 3;
my $control_secs = 5;

# The blocks of db_renamed that come into shared buffers in $secs seconds,
# counted from database postgres; $when says when, for the test's log.
sub restored_in
{
	my ($secs, $when) = @_;
	my $db_buffers = q{
SELECT count(*) FROM pg_buffercache
 WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = 'db_renamed')};
	my $before = $node->safe_psql('postgres', $db_buffers);
	sleep $secs;
	my $moved = $node->safe_psql('postgres', $db_buffers) - $before;
	note("db_renamed: $moved blocks restored in $secs s $when");
	return $moved;
}

cmp_ok(cached($node, 'big', 'main', 'db_tmpl'),
	'<', $blocks{db_tmpl}, 'db_tmpl is not restored yet');
cmp_ok(restored_in($control_secs, 'without a command'), '>=', 24,
	'without a database command, the restore of db_renamed goes on');

my ($in, $out, $err) = ('', '', '');
my $timer = IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default);
my $holder = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
	'<', \$in, '>', \$out, '2>', \$err, $timer);
$in .= "BEGIN;\nALTER DATABASE db_tmpl RENAME TO db_tmpl_held;\nSELECT 'held';\n";
ok(pump_until($holder, $timer, \$out, qr/held/),
	'ALTER DATABASE db_tmpl RENAME in an open transaction succeeds')
  or diag($err);
my $held_at = Time::HiRes::time();
sleep 1;
cmp_ok(restored_in($progress_secs, 'while the command held db_tmpl'),
	'<', 12,
	'while a command holds db_tmpl, the restore of db_renamed pauses');
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.backend_type = 'pg_warmcache restore' AND l.locktype = 'relation'}),
	'0',
	'pg_locks shows no relation lock held by a paused restore worker');

# The pause lasts 10 s at most: a transaction left open must not stop the
# restore.  Then db_tmpl is given up, and the rest goes on.
my $pause_max_secs = 10;
my $left = $held_at + $pause_max_secs + 1 - Time::HiRes::time();
Time::HiRes::sleep($left) if $left > 0;
cmp_ok(
	restored_in(
		$control_secs, "after $pause_max_secs s of the open transaction"),
	'>=', 24,
	"after $pause_max_secs s the restore of db_renamed goes on beside the open transaction");
$in .= "ROLLBACK;\n\\q\n";
ok($holder->finish, 'the transaction rolls back');

# Lift the cap: the restore ends, incomplete for db_tmpl, and the saved file
# is restored again 30 s later, which completes.
$node->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$node->reload;
$node->wait_for_log(qr/the restore of the saved set gives up database $oid{db_tmpl}\b/, $offset);
$node->wait_for_log(qr/restoring the saved file again/, $offset);
wait_for_status($node, "state = 'idle' AND NOT restore_incomplete",
	'the restore again to complete');
like(slurp_file($node->logfile, $offset),
	qr/restore of the saved set finished: restored \d+ of $total blocks/,
	'the log says the restore finished');
is( status(
		$node,
		'restore_incomplete, restore_skipped_locked, restore_skipped_failed, '
		  . 'restore_blocks_done + restore_skipped_gone + restore_skipped_excluded, '
		  . 'restore_skipped_gone > 0'),
	"f|0|0|$total|t",
	'the restore is complete; the dropped database\'s blocks are gone');
is(cached($node, 'big', 'main', 'db_tmpl'),
	$blocks{db_tmpl}, 'pg_buffercache shows all of db_tmpl\'s table restored');
is(cached($node, 'big', 'main', 'db_renamed'),
	$blocks{db_rename},
	'pg_buffercache shows all of db_renamed\'s table restored');

$node->stop;
done_testing();
