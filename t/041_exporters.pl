# Copyright (c) 2026, pg_warmcache developers
#
# The metrics files of monitoring/ in the real exporters: the Debian
# packages prometheus-postgres-exporter and prometheus-sql-exporter, each
# started on loopback against a primary that restores under a rate cap and
# a standby that follows it, connected as a role with pg_monitor only.
# /metrics is scraped with curl twice: every metric docs/monitoring.md
# documents in its Metrics section is there, plausible, and the restore's progress
# moves between the scrapes.  Skipped if an exporter or curl is missing
# (test/install-deps installs them).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions fill_table
  wait_for_restore_worker);

my $pg_exporter = '/usr/bin/prometheus-postgres-exporter';
my $sql_exporter = '/usr/bin/prometheus-sql-exporter';
for my $bin ($pg_exporter, $sql_exporter)
{
	plan skip_all => "$bin is not installed (test/install-deps installs it)"
	  unless -x $bin;
}
plan skip_all => 'curl is not installed (test/install-deps installs it)'
  if system('curl --version >/dev/null 2>&1') != 0;

my $root = "$FindBin::RealBin/..";
my @harnesses;

# A test killed by a signal still runs its END blocks.
$SIG{$_} = sub { die "killed by SIG$_[0]\n" } for qw(INT TERM HUP);

END
{
	# The test's exit status, which what is run here would replace.
	local $?;

	# Whatever happened: no exporter is left running.
	for my $h (@harnesses)
	{
		eval { $h->kill_kill(grace => 5) if $h->pumpable; };
	}
}

# The metrics docs/monitoring.md documents: the names in backquotes of its
# section Metrics.
my $page = slurp_file("$root/docs/monitoring.md");
my ($section) = $page =~ /^## Metrics\n(.*?)(?=^## |\z)/ms
  or die 'docs/monitoring.md has no section Metrics';
my %documented = map { $_ => 1 } $section =~ /`(pg_warmcache_[a-z_]+)`/g;
cmp_ok(scalar keys %documented, '>=', 15, 'docs/monitoring.md documents the metrics')
  or diag($section);

# ---- A primary restoring under a rate cap, a standby following it.

my $loopback = q{
listen_addresses = '127.0.0.1'
shared_buffers = 128MB
autovacuum = off
pg_warmcache.dump_os_cache = on
};
my $primary = start_node('exp_primary', $loopback, allows_streaming => 1);
$primary->append_conf('pg_hba.conf',
	"host all pgwc_exporter 127.0.0.1/32 trust\n");
$primary->reload;
create_extensions($primary);
$primary->safe_psql('postgres',
	'CREATE ROLE pgwc_exporter LOGIN IN ROLE pg_monitor');
my $blocks = fill_table($primary, 'hot', 24);
$primary->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('exp_standby');
$standby->init_from_backup($primary, 'bk', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"pg_warmcache.follow_primary = os\npg_warmcache.autowarm = off\n");
$standby->start;
$primary->wait_for_catchup($standby);
$primary->safe_psql('postgres', 'SELECT warmcache_dump_now()');
$standby->poll_query_until('postgres',
	"SELECT follow_state = 'following' AND followed_os_tier_warm IS NOT NULL FROM warmcache_status()"
) or die 'timed out waiting for the standby to follow';

$primary->append_conf('postgresql.conf', 'pg_warmcache.max_restore_rate = 1');
$primary->restart;
wait_for_restore_worker($primary);

# ---- The exporters, on free loopback ports.

my $pport = $primary->port;
my $sport = $standby->port;
my $dsn = sub {
	my ($port) = @_;
	return "postgres://pgwc_exporter\@127.0.0.1:$port/postgres?sslmode=disable";
};
my ($out, $err);

# prometheus-postgres-exporter, one per server as it is deployed (given
# several servers, 0.11's own collectors report twice and the scrape fails).
my %pg_port;
for my $port ($pport, $sport)
{
	$pg_port{$port} = PostgreSQL::Test::Cluster::get_free_port();
	local $ENV{DATA_SOURCE_NAME} = $dsn->($port);
	push @harnesses,
	  IPC::Run::start(
		[
			$pg_exporter, "--web.listen-address=127.0.0.1:$pg_port{$port}",
			"--extend.query-path=$root/monitoring/postgres_exporter-queries.yaml",
			'--disable-settings-metrics', '--log.level=warn'
		],
		'<', \undef, '>>', "$PostgreSQL::Test::Utils::tmp_check/pg_exporter_$port.log",
		'2>&1');
}

my $config = slurp_file("$root/monitoring/sql_exporter-pg_warmcache.yml");
my $conns = join('', map { "      - '" . $dsn->($_) . "'\n" } ($pport, $sport));
$config =~ s{^      - 'postgres://[^\n]*\n}{$conns}m
  or die 'no connection line in the sql_exporter file';
my $config_file = "$PostgreSQL::Test::Utils::tmp_check/sql_exporter.yml";
open(my $fh, '>', $config_file) or die "could not write $config_file: $!";
print $fh $config;
close($fh);
my $sql_port = PostgreSQL::Test::Cluster::get_free_port();
{
	local $ENV{PGSYSCONFDIR};
	delete $ENV{PGSYSCONFDIR};
	push @harnesses,
	  IPC::Run::start(
		[
			$sql_exporter, '-config.file', $config_file,
			'-web.listen-address', "127.0.0.1:$sql_port"
		],
		'<', \undef, '>>', "$PostgreSQL::Test::Utils::tmp_check/sql_exporter.log",
		'2>&1');
}

# Scrape /metrics with curl; the pg_warmcache samples as
# [name, {labels}, value].
sub scrape
{
	my ($port, $node_port) = @_;
	my $text = '';
	for (1 .. 120)
	{
		$text = `curl -sf --max-time 20 http://127.0.0.1:$port/metrics`;
		last if $? == 0 && $text =~ /pg_warmcache_/;
		sleep 1;
	}
	my @samples;
	for my $line (split /\n/, $text)
	{
		next unless $line =~ /^(?:sql_)?(pg_warmcache_\w+)(?:\{(.*)\})? (\S+)$/;
		my ($name, $labels, $value) = ($1, $2 // '', $3);
		my %l = $labels =~ /(\w+)="([^"]*)"/g;
		$l{_node} = $node_port if defined $node_port;
		push @samples, [ $name, \%l, $value ];
	}
	return \@samples;
}

# The value of metric $name on the server of port $port, with the labels
# %want, in the samples $s; undef if absent.  The samples of a
# postgres_exporter are tagged with the port of its server, sql_exporter
# labels each server as host="127.0.0.1:PORT".
sub value
{
	my ($s, $port, $name, %want) = @_;
	for my $x (@$s)
	{
		my ($n, $l, $v) = @$x;
		next unless $n eq $name;
		my $server = $l->{host} // '';
		$server = ":$l->{_node}" if defined $l->{_node};
		next unless $server =~ /:$port$/;
		next if grep { ($l->{$_} // '') ne $want{$_} } keys %want;
		return $v;
	}
	return undef;
}

sub scrape_all
{
	return (
		postgres => [ map { @{ scrape($pg_port{$_}, $_) } } ($pport, $sport) ],
		sql => scrape($sql_port));
}

my %first = scrape_all();

# Until the restore has moved on: at most a minute, a few seconds at 1 MB/s.
my %second;
for (1 .. 60)
{
	sleep 1;
	%second = scrape_all();
	last
	  if (grep {
		my $a = value($first{$_}, $pport, 'pg_warmcache_restore_done_blocks') // 0;
		my $b = value($second{$_}, $pport, 'pg_warmcache_restore_done_blocks') // 0;
		$b > $a
	  } qw(postgres sql)) == 2;
}

for my $exp (qw(postgres sql))
{
	my ($s1, $s2) = ($first{$exp}, $second{$exp});
	my @lines;
	for my $x (@$s2)
	{
		my ($n, $l, $val) = @$x;
		push @lines, $n . "{"
		  . join(',', map { "$_=$l->{$_}" } grep { $_ ne 'col' } sort keys %$l)
		  . "} $val";
	}
	note("$exp exporter, second scrape:\n" . join("\n", @lines));
	my %present = map { $_->[0] => 1 } @$s2;
	for my $m (sort keys %documented)
	{
		ok($present{$m}, "$exp: $m is exported");
	}

	my $v = sub { value($s2, @_) };

	# The primary, restoring its saved set at 1 MB/s.
	my ($r1, $r2) = map { value($_, $pport, 'pg_warmcache_restore_progress_ratio', source => 'restore') } ($s1, $s2);
	ok(defined $r1 && defined $r2, "$exp: the primary's progress in both scrapes");
	cmp_ok($r1 // 1, '<', 1, "$exp: first scrape: the restore is not done");
	cmp_ok($r2 // 0, '>', $r1 // 1, "$exp: progress moved between the scrapes");
	cmp_ok(value($s2, $pport, 'pg_warmcache_restore_done_blocks'),
		'>', value($s1, $pport, 'pg_warmcache_restore_done_blocks'),
		"$exp: blocks done moved too");
	is(value($s1, $pport, 'pg_warmcache_restoring'), '1', "$exp: primary restoring");
	is(value($s1, $pport, 'pg_warmcache_restore_running', source => 'restore', mode => 'buffer'),
		'1', "$exp: the restore of the saved file runs, mode buffer");
	my $w1 = value($s1, $pport, 'pg_warmcache_warm_ratio');
	cmp_ok($w1, '<', 0.9, "$exp: the primary is not warm yet");
	cmp_ok($w1, '<=', $r2, "$exp: ... and its warm ratio is the restore's progress");
	is($v->($pport, 'pg_warmcache_dumping'), '0', "$exp: no dump runs");
	is($v->($pport, 'pg_warmcache_following'), '0', "$exp: the primary follows nothing");
	is($v->($pport, 'pg_warmcache_restore_incomplete', source => 'restore'), '0',
		"$exp: nothing incomplete");
	my $rate = $v->($pport, 'pg_warmcache_restore_rate_bytes_per_second');
	cmp_ok($rate, '>', 0, "$exp: the restore reads");
	cmp_ok($rate, '<=', 1.5 * 1024 * 1024, "$exp: ... at most about the cap of 1 MB/s");
	my $total = $v->($pport, 'pg_warmcache_restore_blocks');
	cmp_ok($total, '>=', $blocks, "$exp: the restore's file holds the hot table");
	for my $reason (qw(gone excluded locked failed))
	{
		my $n = $v->($pport, 'pg_warmcache_restore_skipped_blocks_total', reason => $reason);
		ok(defined $n && $n >= 0 && $n <= $total, "$exp: skipped blocks, $reason");
	}
	my $age = $v->($pport, 'pg_warmcache_last_dump_age_seconds');
	ok($age >= 0 && $age < 3600, "$exp: the last dump's age is plausible ($age s)");
	my $dumped = $v->($pport, 'pg_warmcache_last_dump_blocks');
	cmp_ok($dumped, '==', $total, "$exp: the last dump is the file restored");
	my $buf = $v->($pport, 'pg_warmcache_saved_blocks', tier => 'buffer');
	my $os = $v->($pport, 'pg_warmcache_saved_blocks', tier => 'os');
	cmp_ok($buf, '>=', $blocks, "$exp: the buffer tier holds the hot table");
	cmp_ok($buf + $os, '==', $dumped, "$exp: the tiers add up to the dump");
	cmp_ok($v->($pport, 'pg_warmcache_saved_bytes', tier => 'buffer'), '==', $buf * 8192,
		"$exp: bytes are blocks of 8 kB");

	# The standby, following.
	is($v->($sport, 'pg_warmcache_following'), '1', "$exp: the standby follows");
	cmp_ok($v->($sport, 'pg_warmcache_follow_blocks'), '>=', $blocks,
		"$exp: the followed set holds the hot table");
	cmp_ok($v->($sport, 'pg_warmcache_follow_warm_ratio'), '>=', 0.9,
		"$exp: the last pass warmed the followed set");
	cmp_ok($v->($sport, 'pg_warmcache_warm_ratio'), '>=', 0.9,
		"$exp: the standby is warm");
	is($v->($sport, 'pg_warmcache_follow_lag_seconds'), '0',
		"$exp: it follows the newest dump published");
	my $fage = $v->($sport, 'pg_warmcache_follow_age_seconds');
	ok($fage > 0 && $fage < 3600, "$exp: the followed dump's age is plausible ($fage s)");
}

for my $h (@harnesses)
{
	$h->kill_kill(grace => 5);
}
@harnesses = ();
$standby->stop;
$primary->stop;
done_testing();
