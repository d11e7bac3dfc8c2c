# Copyright (c) 2026, pg_warmcache developers
#
# A following standby's passes end complete and count what they did.  The
# primary's hot set is in its shared buffers and also in its page cache, so
# the followed file's OS tier names the blocks of its buffer tier again.
# Fresh standbys (os and buffer) from new base backups follow several of the
# primary's dumps each; every pass must end complete (no "follow
# incomplete" line), and on a settled set the status must say what the
# cache holds: followed_*_warm against util-linux fincore on the standby's
# own files and against pg_buffercache.  Then a relation whose lock replay
# holds during a pass (the primary holds ACCESS EXCLUSIVE in an open
# transaction) is deferred past the OS tier's pass and restored once
# released: still as the buffer tier's (into shared buffers, in mode
# buffer), and counted as such.  Those standbys record no OS tier of their
# own (pg_warmcache.dump_os_cache off), so the pacer never sends their
# buffer tier to the OS cache only, however busy the machine.  Last, a
# standby in mode buffer whose first pass runs beside queries that keep
# every CPU busy does send it there: its buffer tier's warm count must be
# what pg_buffercache shows, not what it read.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status cached);
use WarmCache::DumpFormat qw(slurp_bin runs);
use WarmCache::PageCache qw(os_cached_bytes_of);

my $primary = start_node('primary',
	"shared_buffers = 64MB\npg_warmcache.dump_os_cache = on\nwal_keep_size = 512MB\n",
	allows_streaming => 1);
create_extensions($primary);
$primary->safe_psql('postgres', 'CREATE DATABASE bench');
$primary->safe_psql('bench', 'CREATE EXTENSION pg_warmcache; CREATE EXTENSION pg_buffercache');

# hot: the primary's hot set, its heap and index; cold_lock: hot too, the
# relation whose lock replay will hold.  Read twice, so that their buffers
# rank above 1, as a busy hot set's do; written and read, they are in the
# page cache too.
$primary->safe_psql(
	'bench', q{
CREATE TABLE hot (id int PRIMARY KEY, pad text);
INSERT INTO hot SELECT g, repeat('x', 600) FROM generate_series(1, 25000) g;
CREATE TABLE cold_lock (id int, pad text);
INSERT INTO cold_lock SELECT g, repeat('y', 600) FROM generate_series(1, 12000) g;
VACUUM hot, cold_lock;
CHECKPOINT;});
for (1 .. 2)
{
	$primary->safe_psql('bench',
		"SELECT warm('hot'), warm('hot_pkey'), warm('cold_lock')");
}
my %blocks = map {
	$_ => $primary->safe_psql('bench',
		"SELECT pg_relation_size('$_') / current_setting('block_size')::int")
} ('hot', 'cold_lock');
cmp_ok($blocks{hot}, '>', 2000, 'hot has some blocks');

set_primary_dumps(1);

# Without an OS tier of its own to keep them in, a standby in mode buffer
# restores its buffer tier into shared buffers, whatever the pacer makes
# of the machine (pacer.c).
my $pinned = "pg_warmcache.dump_os_cache = off\n";

my $n = 0;
for my $mode ('os', 'os', 'buffer')
{
	$n++;
	my $standby = new_standby("follow_$n", $mode, 1, $pinned);
	my $name = "$mode standby $n";

	# Several passes, each over a new dump of an unchanged hot set.
	my $last = '';
	for my $pass (1 .. 3)
	{
		$last = wait_for_pass($standby, $last);
		check_pass($standby, "$name, pass $pass");
	}

	# A settled set (no new dump): what the status says against the cache.
	settle($standby);
	check_pass($standby, "$name, settled");
	check_cache($standby, $mode, $name);
	$standby->stop;
	set_primary_dumps(1);
}

# Replay holds a lock on cold_lock through the pass's buffer tier and its
# OS tier; its batches are retried after both and succeed once the lock
# is gone.
for my $mode ('buffer', 'os')
{
	$n++;
	set_primary_dumps(0);
	refresh_primary_os_cache();
	my $locker = $primary->background_psql('bench');
	$locker->query_safe('BEGIN; LOCK TABLE cold_lock IN ACCESS EXCLUSIVE MODE');
	$primary->safe_psql('postgres', 'SELECT warmcache_dump_now()');
	my $standby = new_standby("locked_$n", $mode, 0, $pinned);
	my $name = "$mode standby, lock replayed";

	# bench's worker has begun its OS tier's pass (more of the OS tier is
	# done than the other restored databases have), so cold_lock's buffer
	# tier was deferred past it.  Then the lock goes.
	$standby->poll_query_until('postgres',
		"SELECT restore_source = 'follow' AND state = 'restoring' FROM warmcache_status()")
	  or die 'timed out waiting for the first pass';
	my %os = os_tier_per_database($standby);
	my $bench = $standby->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = 'bench'");
	my $others = 0;
	$others += $os{$_} // 0 for (0,
		split /\n/, $standby->safe_psql('postgres',
			"SELECT oid FROM pg_database WHERE datallowconn AND NOT datistemplate AND datname <> 'bench'"));
	cmp_ok($os{$bench} // 0, '>', 1000, "$name: bench's OS tier is followed");
	$standby->poll_query_until('postgres',
		"SELECT state = 'restoring' AND restore_os_tier_done > $others FROM warmcache_status()"
	) or die 'timed out waiting for the OS tier of bench';
	$locker->query_safe('COMMIT');
	$locker->quit;
	wait_for_pass($standby, '');
	check_pass($standby, $name);
	check_cache($standby, $mode, $name);
	if ($mode eq 'buffer')
	{
		cmp_ok(cached($standby, 'cold_lock', 'main', 'bench'),
			'>=', 0.95 * $blocks{cold_lock},
			"$name: cold_lock, deferred past the OS tier, went into shared buffers");
	}
	$standby->stop;
}

# Beside queries that keep every CPU busy, a pass in mode buffer sends the
# buffer tier to the OS cache only, and does not count it as warm.  The
# standby follows only once they run: follow_primary is turned on by a
# reload.  Whether the pacer takes the machine for such a workload is its
# own judgement of the moment (the run queue, a query seen reading): one
# more loop than there are CPUs keeps the queue full, and the pass is
# watched from one session, so that no new backend reads the catalogs
# meanwhile.  Even so, on a loaded machine a pass can end before the
# pacer calls the machine busy (one CI run read all 4,381 blocks of the
# tier into shared buffers in under a second), so the case is tried up to
# three times.  Each attempt checks the count; one at least must have
# been frugal, or the case did not test what it is for.
{
	my $name = 'buffer standby, busy queries';
	chomp(my $ncpus = `nproc`);
	$ncpus = 1 unless $ncpus && $ncpus =~ /^\d+$/;
	my $frugal = 0;
	for my $attempt (1 .. 3)
	{
		$n++;
		set_primary_dumps(0);
		refresh_primary_os_cache();
		$primary->safe_psql('postgres', 'SELECT warmcache_dump_now()');
		my $standby = new_standby("busy_$n", 'off', 0);
		$primary->wait_for_catchup($standby);
		my $watch = $standby->background_psql('postgres');
		my @busy = map {
			my $h = $standby->background_psql('postgres', on_error_stop => 0);
			$h->query_until(qr/busy/,
				"\\echo busy\nSET statement_timeout = '180s';\n"
				  . "DO \$\$BEGIN LOOP END LOOP; END\$\$;\n");
			$h;
		} 0 .. $ncpus;
		my $loops = q{SELECT count(*) FROM pg_stat_activity
 WHERE state = 'active' AND query LIKE 'DO $$BEGIN LOOP%'};
		for (my $i = 0; $watch->query_safe($loops) < $ncpus + 1; $i++)
		{
			die 'the busy loops did not start' if $i > 100;
			Time::HiRes::usleep(100_000);
		}
		# Asked once before the pass, so that its catalog look-ups are done.
		my $ended = q{SELECT restore_source = 'follow' AND state = 'idle'
   AND restore_finished_at >= restore_started_at FROM warmcache_status()};
		$watch->query_safe($ended);
		$standby->append_conf('postgresql.conf',
			"pg_warmcache.follow_primary = buffer\n");
		$standby->reload;
		for (my $i = 0; $watch->query_safe($ended) ne 't'; $i++)
		{
			die "timed out waiting for a pass of busy_$n"
			  if $i > 10 * $PostgreSQL::Test::Utils::timeout_default;
			Time::HiRes::usleep(100_000);
		}
		$watch->query_safe(
			q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'DO $$BEGIN LOOP%'}
		);
		$watch->quit;
		$_->quit for @busy;
		check_pass($standby, "$name ($attempt)");
		my ($buffer_warm, $os_warm, $gone, $named, $held) =
		  tier_counts($standby, 'buffer');
		# Of a few hundred blocks, the test's own queries read some into
		# shared buffers after the pass: within 5% of the tier, not of
		# those.
		ok( abs($buffer_warm - $held->{buffer}) <= 0.05 * $named->{buffer},
			"$name ($attempt): followed_buffer_tier_warm is what pg_buffercache shows of the buffer tier"
		) or diag("got $buffer_warm, the cache holds $held->{buffer} of $named->{buffer}");
		note "$name ($attempt): $held->{buffer} of the buffer tier's "
		  . "$named->{buffer} blocks in shared buffers";
		$standby->stop;
		$frugal = $held->{buffer} < 0.75 * $named->{buffer};
		last if $frugal;
	}
	ok($frugal,
		"$name: most of the buffer tier did not go into shared buffers, in one of three attempts"
	);
}

$primary->stop;
done_testing();

# Read the hot set into the primary's page cache again, where it is also
# in its shared buffers: the OS page cache of a shared machine can lose it.
sub refresh_primary_os_cache
{
	$primary->safe_psql('bench',
		"SELECT warm('hot', 'read'), warm('hot_pkey', 'read'), warm('cold_lock', 'read')"
	);
	return;
}

# Turn the primary's dumps on (every second) or off, by a reload.
sub set_primary_dumps
{
	my ($on) = @_;
	$primary->append_conf('postgresql.conf',
		'pg_warmcache.dump_interval = ' . ($on ? 1 : 0));
	$primary->reload;
	return;
}

# A standby from a new base backup, following in $mode, with $conf added.
# With $keep_saved_file, it keeps the primary's saved file that the backup
# copied, and restores it at its start before it follows.
sub new_standby
{
	my ($name, $mode, $keep_saved_file, $conf) = @_;
	my $backup = "b_$name";
	$primary->backup($backup);
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, $backup, has_streaming => 1);
	unlink($node->data_dir . '/pg_warmcache.blocks') unless $keep_saved_file;
	$node->append_conf('postgresql.conf',
		"shared_buffers = 64MB\n"
		  . "pg_warmcache.follow_primary = $mode\n"
		  . "pg_warmcache.dump_interval = 0\n"
		  . ($conf // ''));
	$node->start;
	return $node;
}

# Wait until a pass over the followed set ended after the one that ended
# at $after ('' for any); return when it ended.
sub wait_for_pass
{
	my ($node, $after) = @_;
	my $cond =
	    "restore_source = 'follow' AND state = 'idle'"
	  . ' AND restore_finished_at >= restore_started_at'
	  . ($after eq '' ? '' : " AND restore_finished_at > '$after'");
	$node->poll_query_until('postgres',
		"SELECT $cond FROM warmcache_status()")
	  or die 'timed out waiting for a pass of ' . $node->name;
	return $node->safe_psql('postgres',
		'SELECT restore_finished_at FROM warmcache_status()');
}

# Stop the primary's dumps, dump once more, and wait until $node's pass
# over that dump ended.
sub settle
{
	my ($node) = @_;
	set_primary_dumps(0);
	refresh_primary_os_cache();
	$primary->safe_psql('postgres', 'SELECT warmcache_dump_now()');
	my $at = $primary->safe_psql('postgres',
		'SELECT last_dump_at FROM warmcache_status()');
	$node->poll_query_until('postgres',
		"SELECT followed_dump_at = '$at' AND restore_source = 'follow' AND state = 'idle'"
		  . ' AND restore_finished_at >= restore_started_at'
		  . " AND restore_started_at > followed_dump_at FROM warmcache_status()")
	  or die 'timed out waiting for ' . $node->name . ' to follow the last dump';
	return;
}

# The pass that ended last is complete: no line says otherwise, every
# block was restored or is gone or excluded, and the OS tier was restored.
sub check_pass
{
	my ($node, $name) = @_;
	unlike(slurp_file($node->logfile), qr/pass over the followed set (?:incomplete|stopped)/,
		"$name: no pass ended incomplete");
	my ($incomplete, $total, $done, $gone, $excluded, $os_warm, $os_tier) =
	  split /\|/, status($node,
		'restore_incomplete, restore_blocks_total, restore_blocks_done, '
		  . 'restore_skipped_gone, restore_skipped_excluded, '
		  . 'followed_os_tier_warm, followed_os_tier');
	is($incomplete, 'f', "$name: restore_incomplete is false");
	is($done + $gone + $excluded, $total,
		"$name: every block restored, gone or excluded");

	# What was skipped may all be the OS tier's: a lower bound.
	cmp_ok($os_warm, '>=', 0.95 * ($os_tier - $gone - $excluded),
		"$name: the OS tier was restored");
	cmp_ok($os_warm, '<=', $os_tier, "$name: no more OS tier than it holds");
	return;
}

# What the followed file names, per tier, of databases a worker restores
# (not templates): { buffer => { path => blocks }, os => { ... } }, each
# path a relation fork's first segment file.
sub tier_blocks
{
	my ($node) = @_;
	my %restored = map { $_ => 1 } (0,
		split /\n/, $node->safe_psql('postgres',
			'SELECT oid FROM pg_database WHERE datallowconn AND NOT datistemplate'));
	my %t = (buffer => {}, os => {});
	for my $run (runs(slurp_bin($node->data_dir . '/pg_warmcache.followed')))
	{
		my ($rank, $db, $spc, $rel, $fork, $start, $count) = @$run;
		next unless $restored{$db};
		my $path = ($db == 0 ? 'global' : "base/$db") . "/$rel"
		  . ('', '_fsm', '_vm', '_init')[$fork];
		$t{ $rank == 256 ? 'os' : 'buffer' }{$path} += $count;
	}
	return %t;
}

# The followed file's OS tier, blocks per database.
sub os_tier_per_database
{
	my ($node) = @_;
	my %os;
	for my $run (runs(slurp_bin($node->data_dir . '/pg_warmcache.followed')))
	{
		$os{ $run->[1] } += $run->[6] if $run->[0] == 256;
	}
	return %os;
}

# Blocks of each relation fork of @paths (first segments' paths, relative
# to the data directory) in the OS cache, all segments, by one fincore.
sub resident_forks
{
	my ($node, @paths) = @_;
	my %files;
	for my $path (@paths)
	{
		my $full = $node->data_dir . "/$path";
		for (my $seg = 0;; $seg++)
		{
			my $f = $seg ? "$full.$seg" : $full;
			last unless -e $f;
			$files{$f} = $path;
		}
	}
	my $bytes = os_cached_bytes_of(keys %files);
	my %blocks;
	$blocks{ $files{$_} } += int($bytes->{$_} / 8192) for keys %$bytes;
	return \%blocks;
}

# Blocks of each relation fork (its first segment's path) in shared
# buffers, by pg_buffercache.
sub buffered_forks
{
	my ($node) = @_;
	my %b;
	for my $row (split /\n/, $node->safe_psql('postgres', q{
SELECT CASE WHEN reldatabase = 0 THEN 'global' ELSE 'base/' || reldatabase END
       || '/' || relfilenode
       || (ARRAY['', '_fsm', '_vm', '_init'])[relforknumber + 1], count(*)
  FROM pg_buffercache WHERE relfilenode IS NOT NULL GROUP BY 1}))
	{
		my ($path, $count) = split /\|/, $row;
		$b{$path} = $count;
	}
	return \%b;
}

# The last pass over a settled set (its file no longer changes) against
# the file and the cache.  Each tier's warm count is what the file names of
# it in databases that are restored, less what was gone; and it is what
# the cache holds of it, relation by relation (at most as many as the tier
# names of it): fincore for the OS cache, pg_buffercache for shared
# buffers (the buffer tier in mode buffer); all within 5%.
sub check_cache
{
	my ($node, $mode, $name) = @_;
	my ($buffer_warm, $os_warm, $gone, $named, $held) =
	  tier_counts($node, $mode);
	my %named = %$named;
	my %held = %$held;
	cmp_ok($buffer_warm, '>=', 0.95 * ($named{buffer} - $gone),
		"$name: followed_buffer_tier_warm counts the buffer tier");
	cmp_ok($buffer_warm, '<=', $named{buffer},
		"$name: followed_buffer_tier_warm counts no more than the buffer tier");
	cmp_ok($os_warm, '>=', 0.95 * ($named{os} - $gone),
		"$name: followed_os_tier_warm counts the OS tier");
	cmp_ok($os_warm, '<=', $named{os},
		"$name: followed_os_tier_warm counts no more than the OS tier");
	my $where = $mode eq 'buffer' ? 'pg_buffercache' : 'fincore';
	within($buffer_warm, $held{buffer},
		"$name: followed_buffer_tier_warm is what $where shows of the buffer tier"
	);
	within($os_warm, $held{os},
		"$name: followed_os_tier_warm is what fincore shows of the OS tier");
	return;
}

# The status's warm counts of the last pass and what the cache holds of
# each tier: (buffer tier warm, OS tier warm, gone, { tier => blocks the
# file names }, { tier => blocks of those the cache holds }), the cache
# being pg_buffercache for the buffer tier in mode buffer, fincore
# otherwise.
sub tier_counts
{
	my ($node, $mode) = @_;
	my ($buffer_warm, $os_warm, $gone) = split /\|/, status($node,
		'followed_buffer_tier_warm, followed_os_tier_warm, restore_skipped_gone');
	my $buffers = buffered_forks($node);
	my %t = tier_blocks($node);
	my $resident = resident_forks($node, keys %{ $t{buffer} }, keys %{ $t{os} });
	my (%named, %held);
	for my $tier ('buffer', 'os')
	{
		for my $path (keys %{ $t{$tier} })
		{
			my $in = ($tier eq 'buffer' && $mode eq 'buffer')
			  ? ($buffers->{$path} // 0)
			  : ($resident->{$path} // 0);
			$named{$tier} += $t{$tier}{$path};
			$held{$tier} += $in < $t{$tier}{$path} ? $in : $t{$tier}{$path};
		}
	}
	return ($buffer_warm, $os_warm, $gone, \%named, \%held);
}

sub within
{
	my ($got, $expected, $name) = @_;
	ok( $got >= 0.95 * $expected && $got <= $expected / 0.95,
		$name) or diag("got $got, the cache holds $expected");
	return;
}
