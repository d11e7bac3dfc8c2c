# Copyright (c) 2026, pg_warmcache developers
#
# The followed set survives until its load at promotion completes.  A
# standby that follows its primary's hot set (table t) is promoted while a
# rate cap keeps the load slow, and cut short twice: by a fast stop 2 s into
# the load, and on a second standby by pg_terminate_backend() of the
# autowarm worker.  Each time pg_warmcache.followed must stay on disk as it
# was, the shutdown dump must not replace the saved file with the few blocks
# loaded, and the next start of the server or of the worker must load the
# set to the end, then remove the file.  The oracles are the files on disk,
# the server log and pg_buffercache.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status cached
  fill_table following_standby publish_dump wait_for_followed_pass);
use WarmCache::DumpFormat qw(slurp_bin);
use WarmCache::PageCache qw(evict_files);

my $primary = start_node('primary', "shared_buffers = 64MB\n",
	allows_streaming => 1);
create_extensions($primary);
my $blocks = fill_table($primary, 't', 16);

# 1 MB/s: the load of t's 16 MB, read from disk, takes about 16 s.
my $slow = "pg_warmcache.max_restore_rate = 1\nshared_buffers = 64MB\n";

sub followed_standby
{
	my ($name) = @_;
	my $standby = following_standby($primary, $name, $slow);
	my $at = publish_dump($primary);
	wait_for_followed_pass($primary, $standby, $at);
	my $path = $standby->data_dir . '/pg_warmcache.followed';
	ok(-f $path, "$name: the followed file is there before the promotion");

	# Out of the OS cache, so that the load reads t from disk, at the cap.
	my $file = $standby->data_dir . '/'
	  . $standby->safe_psql('postgres', "SELECT pg_relation_filepath('t')");
	evict_files(glob("$file $file.*"));
	return ($standby, $path, slurp_bin($path));
}

sub promote_and_wait_for_load
{
	my ($standby) = @_;
	$standby->promote;
	$standby->poll_query_until('postgres',
		"SELECT restore_source = 'promotion' AND state = 'restoring' AND restore_blocks_done > 0"
		  . ' FROM warmcache_status()')
	  or die 'timed out waiting for the load at promotion';
	return;
}

sub wait_for_complete_load
{
	my ($standby, $name, $after) = @_;
	$standby->poll_query_until('postgres',
		"SELECT restore_source = 'promotion' AND state = 'idle' AND NOT restore_incomplete"
		  . " AND restore_started_at > '$after' FROM warmcache_status()")
	  or die "timed out waiting for the load of $name to complete";
	cmp_ok(cached($standby, 't'), '>=', 0.95 * $blocks,
		"$name: the load completed: t is in shared buffers (pg_buffercache)");
	ok(!-e $standby->data_dir . '/pg_warmcache.followed',
		"$name: the followed file is removed once loaded");
	return;
}

# A fast stop 2 s into the load.
my ($standby, $path, $bytes) = followed_standby('stopped');
my $offset = -s $standby->logfile;
promote_and_wait_for_load($standby);
sleep 2;
$standby->stop('fast');
my $log = slurp_file($standby->logfile, $offset);
like($log, qr/load of the primary's hot set at promotion stopped: restored \d+ of \d+ blocks/,
	'stopped: the load was cut short');
ok(-f $path && slurp_bin($path) eq $bytes,
	'stopped: the followed file is still there, unchanged');
unlike($log, qr/dumped \d+ blocks at shutdown/,
	'stopped: the shutdown dump did not write the few blocks loaded');
ok(!-e $standby->data_dir . '/pg_warmcache.blocks',
	'stopped: no saved file of the partial load');

# Started again without the cap, the server loads the set.
$standby->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$offset = -s $standby->logfile;
$standby->start;
wait_for_complete_load($standby, 'stopped', '-infinity');
like(slurp_file($standby->logfile, $offset),
	qr/LOG:  loading the primary's hot set into shared buffers\n.*DETAIL:  The server has been promoted\./,
	'stopped: the next start loads the followed set');
$standby->stop;

# pg_terminate_backend() of the autowarm worker during the load.
($standby, $path, $bytes) = followed_standby('terminated');
promote_and_wait_for_load($standby);
my $pid = status($standby, 'worker_pid');
my $killed_at = $standby->safe_psql('postgres', 'SELECT now()');
$standby->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$standby->poll_query_until('postgres',
	"SELECT worker_pid IS DISTINCT FROM $pid FROM warmcache_status()")
  or die 'timed out waiting for the worker to go';
ok(-f $path && slurp_bin($path) eq $bytes,
	'terminated: the followed file is still there, unchanged');
$standby->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 0');
$standby->reload;
wait_for_complete_load($standby, 'terminated', $killed_at);

$standby->stop;
$primary->stop;
done_testing();
