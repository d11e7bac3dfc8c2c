# Copyright (c) 2026, pg_warmcache developers
#
# A standby follows its primary's hot set (pg_warmcache.follow_primary):
# the primary publishes each dump in table warmcache_published of its
# database postgres, replication carries it, and the standby keeps those
# blocks in its OS page cache (os) or also in its shared buffers (buffer),
# cascading standbys too.  When the primary's hot set changes, the standby
# follows; at promotion the set is loaded into shared buffers.  The oracles
# are util-linux fincore on the standby's own files and pg_buffercache.
# The buffer standby's pass fills shared buffers only while this server's
# processes leave a CPU free (pacer.c); with every major's tests beside it,
# once, as many of them were seen on a CPU as there are CPUs, and the pass
# went to the OS cache only: the test runs alone, and waits for a pass in
# the standby's log (at DEBUG1) rather than by polling the standby, whose
# sessions, on a machine of two CPUs, can look like busy CPUs.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Turnstile qw(:machine_alone);
use WarmCache::Cluster qw(start_node create_extensions restart_cold status
  relation_blocks cached);
use WarmCache::DumpFormat qw(slurp_bin runs);
use WarmCache::PageCache qw(resident_blocks evict_files);

my $primary = start_node('primary',
	"shared_buffers = 32MB\npg_warmcache.dump_os_cache = on\n",
	allows_streaming => 1);
create_extensions($primary);

# t: the primary's hot set in shared buffers; u: in its OS cache only;
# v: cold at first, the hot set later.
for my $rel ('t', 'u', 'v')
{
	fill_rel($primary, $rel, 6000);
}
$primary->safe_psql('postgres', 'CHECKPOINT');
my %blocks = map { $_ => relation_blocks($primary, $_) } ('t', 'u', 'v');
cmp_ok($blocks{$_}, '>', 200, "table $_ has some blocks") for sort keys %blocks;

$primary->backup('backup');
my $os = new_standby($primary, 'backup', 'os_standby', 'os');
my $buf = new_standby($primary, 'backup', 'buf_standby', 'buffer');
my $off = new_standby($primary, 'backup', 'off_standby', 'off');
$buf->backup('backup_buf');
my $cascade = new_standby($buf, 'backup_buf', 'cascade', 'os');
$primary->wait_for_catchup($_) for ($os, $buf, $off);
$buf->wait_for_catchup($cascade, 'replay', $primary->lsn('insert'));

# Each standby starts cold: a restore of nothing (no dump of its own), and
# the files the base backup wrote out of the OS cache.
for my $node ($os, $buf, $off, $cascade)
{
	evict_rels($node, 't', 'u', 'v');
	is(resident($node, 't'), 0, $node->name . ': t is not in the OS cache');
}

# Nothing published yet: said once, and nothing else happens.
wait_for_log($os, qr/the primary has not published its hot set yet/);
is(cached($os, 't'), 0, 'nothing published: t stays cold in shared buffers');

# The primary's hot set: t in shared buffers, u in its OS cache only (v
# leaves the OS cache, where writing it put it).
my %offsets = map { $_->name => -s $_->logfile } ($os, $buf, $cascade);
restart_cold($primary);
evict_rels($primary, 'v');
$primary->safe_psql('postgres', "SELECT warm('u', 'read'), warm('t')");
my $dumped = $primary->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok($dumped, '>=', $blocks{t}, 'the primary dumped its hot set');
$primary->poll_query_until('postgres',
	'SELECT count(*) > 0 FROM warmcache_published')
  or die 'timed out waiting for the primary to publish';
my $published_at = $primary->safe_psql('postgres',
	'SELECT max(dumped_at) FROM warmcache_published');
is( $primary->safe_psql(
		'postgres',
		"SELECT max(dumped_at) = last_dump_at FROM warmcache_published, warmcache_status() GROUP BY last_dump_at"
	),
	't',
	'the published rows are the last dump');

for my $node ($os, $buf, $cascade, $off)
{
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM warmcache_published WHERE dumped_at = '$published_at'")
	  or die 'timed out waiting for replication';
}
wait_for_followed($_, $published_at, $offsets{ $_->name })
  for ($os, $buf, $cascade);

# os: the OS cache holds the set, shared buffers do not.
cmp_ok(resident($os, 't'), '>=', 0.95 * $blocks{t},
	'os: the standby\'s OS cache holds t (the buffer tier)');
cmp_ok(resident($os, 'u'), '>=', 0.95 * $blocks{u},
	'os: the standby\'s OS cache holds u (the OS tier)');
cmp_ok(cached($os, 't'), '<', 0.05 * $blocks{t},
	'os: the standby\'s shared buffers are left alone');
is(resident($os, 'v'), 0, 'os: v, not in the hot set, is not read');
is( status($os,
		"follow_state, followed_buffer_tier >= $blocks{t}, followed_os_tier >= $blocks{u}, "
		  . "followed_buffer_tier_warm >= $blocks{t}, followed_os_tier_warm >= $blocks{u}"),
	'following|t|t|t|t',
	'os: the status shows what the standby follows');

# buffer: shared buffers too.
cmp_ok(cached($buf, 't'), '>=', 0.95 * $blocks{t},
	'buffer: the standby\'s shared buffers hold t');
cmp_ok(resident($buf, 'u'), '>=', 0.95 * $blocks{u},
	'buffer: the standby\'s OS cache holds u (the OS tier)');
cmp_ok(cached($buf, 'u'), '<', 0.05 * $blocks{u},
	'buffer: the OS tier stays out of shared buffers');

# A cascading standby follows the same set.
cmp_ok(resident($cascade, 't'), '>=', 0.95 * $blocks{t},
	'cascading standby: its OS cache holds t');

# follow_primary = off does nothing.
is(resident($off, 't'), 0, 'off: t is not read into the OS cache');
is(cached($off, 't'), 0, 'off: nor into shared buffers');
ok(!-e $off->data_dir . '/pg_warmcache.followed', 'off: no followed file');
unlike(slurp_file($off->logfile), qr/hot set/, 'off: nothing in the log');
is(status($off, 'follow_state IS NULL AND followed_dump_at IS NULL'),
	't', 'off: the status shows nothing followed');

# The hot set changes: now v, and t and u leave it.
%offsets = map { $_->name => -s $_->logfile } ($os, $buf);
restart_cold($primary);
evict_rels($primary, 't', 'u');
$primary->safe_psql('postgres', "SELECT warm('v')");
$primary->safe_psql('postgres', 'SELECT warmcache_dump_now()');
$primary->poll_query_until('postgres',
	"SELECT max(dumped_at) > '$published_at' FROM warmcache_published")
  or die 'timed out waiting for the primary to publish again';
my $published_again = $primary->safe_psql('postgres',
	'SELECT max(dumped_at) FROM warmcache_published');
$primary->wait_for_catchup($_) for ($os, $buf);
wait_for_followed($_, $published_again, $offsets{ $_->name }) for ($os, $buf);
cmp_ok(resident($os, 'v'), '>=', 0.95 * $blocks{v},
	'os: the standby follows the new hot set');
cmp_ok(cached($buf, 'v'), '>=', 0.95 * $blocks{v},
	'buffer: the standby follows the new hot set');
my %gone = map { relnumber($primary, $_) => 1 } ('t', 'u');
my @still = grep { $gone{ $_->[3] } && $_->[4] == 0 }
  runs(slurp_bin($os->data_dir . '/pg_warmcache.followed'));
is(scalar @still, 0, 'os: t and u left the followed set')
  or diag(join("\n", map { join(' ', @$_) } @still));

# Promotion loads the followed set into shared buffers.
cmp_ok(cached($os, 'v'), '<', 0.05 * $blocks{v},
	'os: before promotion v is not in shared buffers');
my $offset = -s $os->logfile;
$os->promote;
$os->poll_query_until('postgres',
	"SELECT restore_source = 'promotion' AND restore_finished_at IS NOT NULL FROM warmcache_status()"
) or die 'timed out waiting for the load at promotion';
like(
	slurp_file($os->logfile, $offset),
	qr/LOG:  loading the primary's hot set into shared buffers\n.*DETAIL:  The server has been promoted\./,
	'the promotion is logged');
cmp_ok(cached($os, 'v'), '>=', 0.95 * $blocks{v},
	'promoted: shared buffers hold the followed set');
is(status($os, 'follow_state'), 'promoted', 'the status says promoted');
ok(!-e $os->data_dir . '/pg_warmcache.followed',
	'the followed file is gone after the load');

# The promoted server publishes its own dumps, once a standby streams from
# it: without one, nobody would read them.
$os->safe_psql('postgres', 'SELECT warmcache_dump_now()');
sleep 6;
is( $os->safe_psql(
		'postgres', 'SELECT max(dumped_at) FROM warmcache_published'),
	$published_again,
	'without a standby, the promoted server does not publish');
$os->backup('backup_os');
my $next = new_standby($os, 'backup_os', 'next_standby', 'off');
$os->poll_query_until('postgres',
	"SELECT max(dumped_at) > '$published_again' FROM warmcache_published")
  or die 'timed out waiting for the promoted server to publish';
pass('once a standby streams from it, the promoted server publishes its last dump');

$_->stop for ($next, $cascade, $buf, $off, $os, $primary);

# A primary without pg_warmcache: one clear line on the standby, nothing
# else; once the extension is there without the library, another.
my $bare = PostgreSQL::Test::Cluster->new('bare_primary');
$bare->init(allows_streaming => 1);
$bare->start;
$bare->backup('bare_backup');
my $lone = new_standby($bare, 'bare_backup', 'lone_standby', 'buffer');
wait_for_log($lone, qr/the primary publishes no hot set to follow/);
sleep 11;    # two more looks at the table
my @lines = (slurp_file($lone->logfile) =~ /publishes no hot set/g);
is(scalar @lines, 1, 'a primary without the extension: one log line');
$bare->safe_psql('postgres', 'CREATE EXTENSION pg_warmcache');
wait_for_log($lone, qr/the primary has not published its hot set yet/);
unlike(slurp_file($lone->logfile), qr/(WARNING|ERROR)/,
	'no warning or error on the standby');
is(status($lone, 'follow_state'), 'nothing published yet',
	'the status says why nothing is followed');
$lone->stop;
$bare->stop;

done_testing();

# A standby of $upstream from its backup $backup, with follow_primary set
# to $mode, started.
sub new_standby
{
	my ($upstream, $backup, $name, $mode) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($upstream, $backup, has_streaming => 1);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'pg_warmcache'\n"
		  . "pg_warmcache.follow_primary = $mode\n"
		  . "log_min_messages = debug1\n");
	$node->start;
	return $node;
}

# A table $rel of $rows rows of 200 bytes each.
sub fill_rel
{
	my ($node, $rel, $rows) = @_;
	$node->safe_psql('postgres',
		"CREATE TABLE $rel (id int, pad text);"
		  . " INSERT INTO $rel SELECT g, repeat('x', 1000) FROM generate_series(1, $rows) g;"
		  . " VACUUM (FREEZE) $rel;");
	return;
}

sub relnumber
{
	my ($node, $rel) = @_;
	return $node->safe_psql('postgres', "SELECT pg_relation_filenode('$rel')");
}

# The file of relation $rel's main fork on $node.
sub rel_file
{
	my ($node, $rel) = @_;
	return $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$rel')");
}

sub resident
{
	my ($node, $rel) = @_;
	return resident_blocks(rel_file($node, $rel));
}

sub evict_rels
{
	my ($node, @rels) = @_;
	evict_files(map { rel_file($node, $_) } @rels);
	return;
}

sub wait_for_log
{
	my ($node, $re) = @_;
	for (1 .. 180 * 4)
	{
		return if slurp_file($node->logfile) =~ $re;
		select(undef, undef, undef, 0.25);
	}
	die "timed out waiting for $re in the log of " . $node->name;
}

# Wait until $node followed the dump of $dumped_at and a pass over it
# ended: for the end of a pass in its log after $offset, then ask the
# status once whether it was that dump's pass.
sub wait_for_followed
{
	my ($node, $dumped_at, $offset) = @_;
	for (1 .. 180 * 4)
	{
		my $log = slurp_file($node->logfile, $offset);
		if ($log =~ /pass over the followed set (?:finished|incomplete|stopped): /)
		{
			$offset += $+[0];
			return
			  if $node->safe_psql('postgres',
				"SELECT followed_dump_at = '$dumped_at' AND restore_source = 'follow'"
				  . " AND restore_finished_at >= restore_started_at AND state = 'idle'"
				  . ' FROM warmcache_status()') eq 't';
			next;
		}
		select(undef, undef, undef, 0.25);
	}
	die 'timed out waiting for ' . $node->name . ' to follow';
}
