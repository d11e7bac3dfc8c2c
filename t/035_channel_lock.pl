# Copyright (c) 2026, pg_warmcache developers
#
# A lock on warmcache_published stalls nobody: a session on the primary
# holds ACCESS EXCLUSIVE on it in an open transaction, which the standby's
# startup process replays and holds too.  The standby's follow worker gives
# up each look at once and says so once, naming the holder (the startup
# process) in the log and in warmcache_status(), its dumps go on, and no
# pg_warmcache process waits for a lock; after the lock is released it
# follows again.  On the primary, publication skips and retries the same
# way, naming the session that holds the lock: from 17 on a role that is
# not a superuser, with MAINTAIN on the table and nothing else.  The
# oracles are pg_locks and pg_stat_activity, the server log, and the rows
# of the table and the followed file.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes;
use WarmCache::Cluster qw(start_node create_extensions status
  following_standby publish_dump wait_for_followed_pass);
use WarmCache::DumpFormat qw(slurp_bin header);

# A wait for a lock longer than this, seen in pg_locks, is a stall.
my $max_wait = '3 s';

my $primary = start_node('primary',
	"shared_buffers = 16MB\nlog_min_messages = debug1\n",
	allows_streaming => 1);
create_extensions($primary);
$primary->safe_psql('postgres',
	"CREATE TABLE t AS SELECT g AS id, repeat('x', 500) AS pad FROM generate_series(1, 3000) g"
);
my $standby = following_standby($primary, 'standby',
	"pg_warmcache.dump_interval = 1\npg_warmcache.dump_os_cache = off\nlog_min_messages = debug1\n");

my $first = publish_dump($primary);
wait_for_followed_pass($primary, $standby, $first);
is(status($standby, 'follow_state'), 'following', 'the standby follows');

# The standby: replay holds the lock.
my $offset = -s $standby->logfile;
my $holder = $primary->background_psql('postgres');
$holder->query_safe(
	'BEGIN; LOCK TABLE public.warmcache_published IN ACCESS EXCLUSIVE MODE');
# A commit flushes the WAL that logs the lock.
$primary->safe_psql('postgres', 'CREATE TABLE flush_wal ()');
$standby->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pg_locks
 WHERE relation = 'public.warmcache_published'::regclass
   AND mode = 'AccessExclusiveLock' AND granted})
  or die 'timed out waiting for the standby to replay the lock';
my $startup = $standby->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'startup'");
my $locked_re =
  qr/LOG:  cannot read the primary's published hot set now\n.*DETAIL:  A session, or the replay of a lock taken on the primary, holds a lock on relation warmcache_published, held by the process of pid $startup\./;
# (Without the line, the looks are counted from the lock's replay.)
my $said_at = eval { $standby->wait_for_log($locked_re, $offset) } // $offset;
my ($waited, $looks, $dumps, $stale) = watch($standby, $said_at, 'follow', 2);
is($waited, 0, "standby: no pg_warmcache process waited for a lock over $max_wait");
cmp_ok($looks, '>=', 2, 'standby: the follow worker looked at the table twice more');
cmp_ok($dumps, '>=', 2, 'standby: dumps went on meanwhile');
cmp_ok($stale, '<', 5, 'standby: and still go on at the end');
my @said = (slurp_file($standby->logfile, $offset) =~ /$locked_re/g);
is(scalar @said, 1, 'standby: the lock is said once');
is(status($standby, 'follow_state'), 'published table locked',
	'standby: the status says the table is locked');
is(status($standby, 'channel_lock_holder'), $startup,
	'standby: the status names the startup process as the holder');

# Released, the standby follows again at its next look, and follows the
# next publication.
$holder->query_safe('COMMIT');
ok( $standby->poll_query_until(
		'postgres', "SELECT follow_state = 'following' FROM warmcache_status()"),
	'standby: following again after the lock is released');
is(status($standby, 'channel_lock_holder IS NULL'), 't',
	'standby: the status names no holder any more');
my $second = publish_dump($primary);
wait_for_followed_pass($primary, $standby, $second);
is(header(slurp_bin($standby->data_dir . '/pg_warmcache.followed'))->{dumped_at},
	header(slurp_bin($primary->data_dir . '/pg_warmcache.blocks'))->{dumped_at},
	'standby: the followed file is the primary\'s new dump');

# The primary: a session holds the lock while dumps are published.  From
# 17 on, MAINTAIN on the table lets a role that is not a superuser take it.
my $maintain =
  $primary->safe_psql('postgres', 'SHOW server_version_num') >= 170000;
$holder->quit;
if ($maintain)
{
	$primary->safe_psql('postgres', q{
		CREATE ROLE maint LOGIN;
		GRANT MAINTAIN ON public.warmcache_published TO maint;
	});
	$holder = $primary->background_psql('postgres',
		extra_params => [ '-U', 'maint' ]);
}
else
{
	$holder = $primary->background_psql('postgres');
}
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$primary->append_conf('postgresql.conf', 'pg_warmcache.dump_interval = 1');
$primary->reload;
$offset = -s $primary->logfile;
$holder->query_safe(
	'BEGIN; LOCK TABLE public.warmcache_published IN ACCESS EXCLUSIVE MODE');
my $who = $maintain ? 'a role with MAINTAIN' : 'a session';
($waited, $looks, $dumps, $stale) = watch($primary, $offset, 'publish', 3);
is($waited, 0, "primary, $who: no pg_warmcache process waited for a lock over $max_wait");
cmp_ok($looks, '>=', 3, 'primary: publication was tried three times');
cmp_ok($dumps, '>=', 3, 'primary: dumps went on meanwhile');
cmp_ok($stale, '<', 5, 'primary: and still go on at the end');
@said = (slurp_file($primary->logfile, $offset) =~
	  /LOG:  cannot publish the hot set now\n.*DETAIL:  A session holds a lock on relation warmcache_published, held by the process of pid $holder_pid\./g
);
is(scalar @said, 1, "primary, $who: the lock is said once, with the holder's pid");
is(status($primary, 'channel_lock_holder'), $holder_pid,
	"primary, $who: the status names the holder");
like(slurp_file($primary->logfile, $offset),
	qr/publication skipped again/, 'primary: the retries are at DEBUG1');

my $released = $holder->query_safe('COMMIT; SELECT now()');
$holder->quit;
$primary->poll_query_until('postgres',
	"SELECT max(dumped_at) > '$released' FROM public.warmcache_published")
  or die 'timed out waiting for the primary to publish again';
pass('primary: publication resumes after the lock is released');
is(status($primary, 'channel_lock_holder IS NULL'), 't',
	'primary: the status names no holder any more');
like(slurp_file($primary->logfile, $offset),
	qr/LOG:  publishing the hot set again/,
	'primary: it says so');

$standby->stop;
$primary->stop;
done_testing();

# While the lock is held on $node, for up to 60 s and until its $job
# channel worker ran $n times and $n dumps ended after log offset $offset:
# sample pg_locks for a pg_warmcache process waiting for a lock for more
# than $max_wait.  Returns how many samples saw one, how many channel
# workers ran, how many dumps ended, and the age of the last one at the
# end, in seconds.
sub watch
{
	my ($node, $offset, $job, $n) = @_;
	my $start = $node->safe_psql('postgres',
		'SELECT coalesce(last_dump_at, now()) FROM warmcache_status()');
	my ($waited, $looks, $dumps) = (0, 0, 0);
	my $t0 = Time::HiRes::time();
	while (Time::HiRes::time() - $t0 < 60)
	{
		$waited += $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE NOT l.granted AND a.backend_type LIKE 'pg_warmcache%'
   AND l.waitstart < now() - interval '$max_wait'});
		my @runs = (slurp_file($node->logfile, $offset) =~
			  /unregistering background worker "pg_warmcache $job"/g);
		$looks = scalar @runs;
		$dumps += $node->safe_psql('postgres',
			"SELECT last_dump_at > '$start' FROM warmcache_status()") eq 't'
		  ? 1
		  : 0;
		$start = $node->safe_psql('postgres',
			'SELECT coalesce(last_dump_at, now()) FROM warmcache_status()');
		last if $looks >= $n && $dumps >= $n;
		Time::HiRes::usleep(500_000);
	}
	my $stale = $node->safe_psql('postgres',
		'SELECT extract(epoch FROM now() - last_dump_at) FROM warmcache_status()');
	return ($waited, $looks, $dumps, $stale);
}


