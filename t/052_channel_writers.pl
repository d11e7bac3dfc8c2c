# Copyright (c) 2026, pg_warmcache developers
#
# Only superusers decide what standbys follow.  The channel's table is owned
# by a superuser, but a superuser may let other roles write it: membership
# in pg_write_all_data, a grant on the table, on some of its columns, or to
# a role that cannot log in but has a member who can SET ROLE to it.  In
# each case mallory, who can log in, replaces the published rows with a
# file of her own (the primary's dump with a later dump time, all checks
# passed); the standby must say which role can write the table, and its
# followed file must stay the primary's.  Once the privilege is revoked,
# what mallory wrote is still never followed, and the primary's next dump
# is.  The oracles are the followed file on the standby's disk, the
# primary's dump file and the server logs.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use WarmCache::Cluster qw(start_node create_extensions following_standby
  publish_dump wait_for_followed_pass);
use WarmCache::DumpFormat qw(slurp_bin header runs write_dump_file);

my $primary = start_node('primary', "shared_buffers = 16MB\n",
	allows_streaming => 1);
create_extensions($primary);
$primary->safe_psql(
	'postgres', q{
CREATE TABLE t (id int, pad text);
INSERT INTO t SELECT g, repeat('x', 500) FROM generate_series(1, 3000) g;
CREATE ROLE mallory LOGIN;
CREATE ROLE writers NOLOGIN;
});
my $standby = following_standby($primary, 'standby');
my $honest = publish_dump($primary);
wait_for_followed_pass($primary, $standby, $honest);

my $dump = slurp_bin($primary->data_dir . '/pg_warmcache.blocks');
my $followed = $standby->data_dir . '/pg_warmcache.followed';
my $h = header($dump);
my @runs = runs($dump);
is(header(slurp_bin($followed))->{dumped_at},
	$h->{dumped_at}, 'the standby follows the primary\'s dump');

# Mallory's file: the primary's runs, dumped in 2030 (in microseconds since
# 2000, as the server keeps it); it passes every check of the file.
my $forged_at = (1893456000 - 946684800) * 1_000_000;
my $scratch = PostgreSQL::Test::Utils::tempdir() . '/forged';
sub forged_row
{
	$forged_at += 1_000_000;
	write_dump_file($scratch, { %$h, dumped_at => $forged_at }, \@runs);
	return sprintf(
		"timestamptz '2000-01-01 00:00:00+00' + %d * interval '1 microsecond', '\\x%s'",
		$forged_at, unpack('H*', slurp_bin($scratch)));
}

# Wait at most 30 s for a line of the standby's log after $offset matching
# $re, or for the standby to follow mallory's file.
sub refused_or_followed
{
	my ($re, $offset) = @_;
	for (1 .. 300)
	{
		return 1 if substr(slurp_file($standby->logfile), $offset) =~ $re;
		return 0 if header(slurp_bin($followed))->{dumped_at} == $forged_at;
		Time::HiRes::usleep(100_000);
	}
	return 0;
}

my @cases = (
	[
		'member of pg_write_all_data',
		'GRANT pg_write_all_data TO mallory',
		'REVOKE pg_write_all_data FROM mallory',
		'SET ROLE mallory',
		qr/can be written by role "mallory", which is not a superuser/
	],
	[
		'INSERT and DELETE granted on the table',
		'GRANT INSERT, DELETE ON public.warmcache_published TO mallory',
		'REVOKE ALL ON public.warmcache_published FROM mallory',
		'SET ROLE mallory',
		qr/can be written by role "mallory", which is not a superuser/
	],
	[
		'UPDATE granted on two columns',
		'GRANT UPDATE (dumped_at, data), SELECT (chunk) ON public.warmcache_published TO mallory',
		'REVOKE ALL ON public.warmcache_published FROM mallory',
		'SET ROLE mallory',
		qr/can be written by role "mallory", which is not a superuser/
	],
	[
		'granted to a role that cannot log in, with a member who can SET ROLE',
		'GRANT INSERT, DELETE ON public.warmcache_published TO writers; '
		  . 'ALTER ROLE mallory NOINHERIT; GRANT writers TO mallory',
		'REVOKE writers FROM mallory',
		'SET ROLE mallory; SET ROLE writers',
		qr/can be written by role "mallory", which is not a superuser, as a member of role "writers"/
	]);

for my $case (@cases)
{
	my ($what, $grant, $revoke, $as, $re) = @$case;
	$primary->safe_psql('postgres', $grant);
	my $offset = -s $standby->logfile;
	my $row = forged_row();
	my $write =
	  $what =~ /UPDATE/
	  ? "UPDATE public.warmcache_published SET (dumped_at, data) = ($row) WHERE chunk = 0"
	  : "DELETE FROM public.warmcache_published; INSERT INTO public.warmcache_published VALUES (0, $row)";
	$primary->safe_psql('postgres', "$as; $write");
	is( $primary->safe_psql('postgres',
			"SELECT count(*) FROM public.warmcache_published WHERE dumped_at > now() + interval '1 year'"
		),
		1,
		"$what: mallory replaced the published row");
	$primary->wait_for_catchup($standby);
	ok(refused_or_followed($re, $offset),
		"$what: the standby says who can write the table");
	is(header(slurp_bin($followed))->{dumped_at},
		$h->{dumped_at}, "$what: the followed file is still the primary's");

	# Revoked: what mallory wrote is still not followed.
	$primary->safe_psql('postgres', $revoke);
	$primary->wait_for_catchup($standby);
	$standby->poll_query_until('postgres',
		"SELECT follow_state <> 'published table writable by others' FROM warmcache_status()"
	) or die "timed out waiting for the standby to look again";
	Time::HiRes::usleep(5_500_000);    # one more look
	is(header(slurp_bin($followed))->{dumped_at},
		$h->{dumped_at}, "$what: revoked, mallory's file is still not followed");
}

# With only superusers able to write it (writers still holds its grant,
# and pg_write_all_data exists, neither with a member), the primary
# publishes its next dump over mallory's rows, and the standby follows it.
$primary->safe_psql('postgres', "SELECT warm('t'), warmcache_dump_now()");
$primary->poll_query_until('postgres',
	"SELECT max(dumped_at) < now() + interval '1 year' FROM public.warmcache_published"
) or die 'timed out waiting for the publication';
$primary->wait_for_catchup($standby);
$standby->poll_query_until('postgres',
	"SELECT follow_state = 'following' AND followed_dump_at < now() + interval '1 year'"
	  . " FROM warmcache_status()")
  or die 'timed out waiting for the standby to follow';
is(slurp_bin($followed), slurp_bin($primary->data_dir . '/pg_warmcache.blocks'),
	'the next publication is followed: the followed file is the primary\'s dump');
unlike(slurp_file($primary->logfile), qr/the hot set is not published/,
	'a role without members, or one that cannot log in, does not stop publications');

$standby->stop;
$primary->stop;
done_testing();
