# Copyright (c) 2026, pg_warmcache developers
#
# Only the primary decides what standbys follow: a standby follows only
# rows signed with the key it shares with its primary, whoever could write
# the table and when.  In each case of the adversarial review of 1.5
# (2026-12-05) mallory, who is no superuser, replaces the published rows
# with a file of her own (the primary's dump with a later dump time, all
# checks of the file passed): through pg_write_all_data, a grant on the
# table or on two of its columns, a role that cannot log in, a transaction
# kept open across the revoke, a prepared transaction committed after it,
# and a SECURITY DEFINER function of a role that cannot log in, called by a
# role with no privilege on the table.  The standby must say the rows are
# not signed and keep following the primary's file, across its own
# restart too; the primary's next dump is published whole over them and
# followed.  The primary's own older rows, put back, are refused by age,
# after a restart of the standby too.
# The oracles are the followed file on the standby's disk, the primary's
# dump file and the server logs.

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

my $primary = start_node('primary',
	"shared_buffers = 16MB\nmax_prepared_transactions = 2\n",
	allows_streaming => 1);
create_extensions($primary);
$primary->safe_psql(
	'postgres', q{
CREATE TABLE t (id int, pad text);
INSERT INTO t SELECT g, repeat('x', 500) FROM generate_series(1, 3000) g;
CREATE ROLE mallory LOGIN;
CREATE ROLE writers NOLOGIN;
CREATE ROLE loader NOLOGIN;
GRANT INSERT, DELETE ON public.warmcache_published TO loader;
CREATE FUNCTION public.load_rows(sql text) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN EXECUTE sql; END $$;
ALTER FUNCTION public.load_rows(text) OWNER TO loader;
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

my $not_signed = qr/not followed: (?:chunk|delta) \d+ is not signed with this cluster's key/;
my $replace = sub {
	my $row = forged_row();
	return "DELETE FROM public.warmcache_published; "
	  . "INSERT INTO public.warmcache_published VALUES (0, $row)";
};

# Each case: what it is, the grant, the revoke, and the statements that
# write mallory's rows (given the statement that replaces the rows).
my @cases = (
	[
		'member of pg_write_all_data',
		'GRANT pg_write_all_data TO mallory',
		'REVOKE pg_write_all_data FROM mallory',
		sub { "SET ROLE mallory; $_[0]" }
	],
	[
		'INSERT and DELETE granted on the table',
		'GRANT INSERT, DELETE ON public.warmcache_published TO mallory',
		'REVOKE ALL ON public.warmcache_published FROM mallory',
		sub { "SET ROLE mallory; $_[0]" }
	],
	[
		'UPDATE granted on two columns',
		'GRANT UPDATE (dumped_at, data), SELECT (chunk) ON public.warmcache_published TO mallory',
		'REVOKE ALL ON public.warmcache_published FROM mallory',
		sub {
			my $row = forged_row();
			"SET ROLE mallory; UPDATE public.warmcache_published SET (dumped_at, data) = ($row) WHERE chunk = 0";
		}
	],
	[
		'granted to a role that cannot log in, with a member who can SET ROLE',
		'GRANT INSERT, DELETE ON public.warmcache_published TO writers; '
		  . 'ALTER ROLE mallory NOINHERIT; GRANT writers TO mallory',
		'REVOKE writers FROM mallory',
		sub { "SET ROLE mallory; SET ROLE writers; $_[0]" }
	],
	[
		'a SECURITY DEFINER function of a role that cannot log in',
		'GRANT EXECUTE ON FUNCTION public.load_rows(text) TO mallory',
		'REVOKE EXECUTE ON FUNCTION public.load_rows(text) FROM mallory',
		sub {
			"SET ROLE mallory; SELECT public.load_rows(" . quote_sql($_[0]) . ")";
		}
	]);

sub quote_sql
{
	my ($text) = @_;
	$text =~ s/'/''/g;
	return "'$text'";
}

# The primary's next dump, published whole over mallory's rows, and
# followed: its own file again.
sub primary_publishes_again
{
	my ($what) = @_;

	# Not publish_dump(): the forged rows are dated in 2030, later than
	# any dump the primary makes now.
	my $since = $primary->safe_psql('postgres', 'SELECT now()');
	$primary->safe_psql('postgres', 'SELECT public.warmcache_dump_now()');
	$primary->poll_query_until('postgres',
		"SELECT max(dumped_at) >= '$since' AND max(dumped_at) < now() + interval '1 year' FROM public.warmcache_published"
	) or die "$what: timed out waiting for the primary to publish";
	my $dumped_at = $primary->safe_psql('postgres',
		'SELECT max(dumped_at) FROM public.warmcache_published');
	wait_for_followed_pass($primary, $standby, $dumped_at);
	is(slurp_bin($followed), slurp_bin($primary->data_dir . '/pg_warmcache.blocks'),
		"$what: the primary's next publication is followed");
	$h = header(slurp_bin($followed));
	@runs = runs(slurp_bin($followed));
	return;
}

for my $case (@cases)
{
	my ($what, $grant, $revoke, $as) = @$case;
	$primary->safe_psql('postgres', $grant);
	my $offset = -s $standby->logfile;
	$primary->safe_psql('postgres', $as->($replace->()));
	is( $primary->safe_psql('postgres',
			"SELECT count(*) FROM public.warmcache_published WHERE dumped_at > now() + interval '1 year'"
		),
		1,
		"$what: mallory replaced the published row");
	$primary->safe_psql('postgres', $revoke);
	$primary->wait_for_catchup($standby);
	ok(refused_or_followed($not_signed, $offset),
		"$what: the standby says the rows are not signed");
	is(header(slurp_bin($followed))->{dumped_at},
		$h->{dumped_at}, "$what: the followed file is still the primary's");
	primary_publishes_again($what);
}

# Rows written in a transaction left open across the revoke, and in a
# prepared transaction committed after it: the review's way around a
# check made at each look.
for my $prepared (0, 1)
{
	my $what = $prepared ? 'a prepared transaction' : 'a transaction open across the revoke';
	$primary->safe_psql('postgres',
		'GRANT INSERT, DELETE ON public.warmcache_published TO mallory');
	my $offset = -s $standby->logfile;
	my $session = $primary->background_psql('postgres',
		extra_params => [ '-U', 'mallory' ]);
	$session->query_safe('BEGIN');
	$session->query_safe($replace->());
	$session->query_safe("PREPARE TRANSACTION 'mallory'") if $prepared;
	$primary->safe_psql('postgres',
		'REVOKE ALL ON public.warmcache_published FROM mallory');
	if ($prepared)
	{
		$session->quit;
		$primary->safe_psql('postgres', "COMMIT PREPARED 'mallory'");
	}
	else
	{
		$session->query_safe('COMMIT');
		$session->quit;
	}
	$primary->wait_for_catchup($standby);
	ok(refused_or_followed($not_signed, $offset),
		"$what: the standby says the rows are not signed");
	is(header(slurp_bin($followed))->{dumped_at},
		$h->{dumped_at}, "$what: the followed file is still the primary's");

	# Once restarted, the standby still does not follow them.
	if ($prepared)
	{
		$offset = -s $standby->logfile;
		$standby->restart;
		ok(refused_or_followed($not_signed, $offset),
			"$what: after the standby's restart, still not followed");
		is(header(slurp_bin($followed))->{dumped_at},
			$h->{dumped_at}, "$what: after the restart, the followed file is still the primary's");
	}
	primary_publishes_again($what);
}

# The primary's own rows of an earlier publication, put back: they are
# signed, but older than what the standby follows.
my $old_rows = $primary->safe_psql('postgres',
	"SELECT string_agg(format('(%s, %L, %L)', chunk, dumped_at, data), ', ') FROM public.warmcache_published");
primary_publishes_again('a later dump');
my $offset = -s $standby->logfile;
$primary->safe_psql('postgres',
	"DELETE FROM public.warmcache_published; INSERT INTO public.warmcache_published VALUES $old_rows");
$primary->wait_for_catchup($standby);
ok(refused_or_followed(qr/not usable: it is older than the publication followed/, $offset),
	'older rows of the primary: refused by their age');
is(header(slurp_bin($followed))->{dumped_at},
	$h->{dumped_at}, 'older rows of the primary: the followed file is the latest');

# Restarted, the standby has forgotten in memory what it follows: the
# followed file's header tells it again, and the old rows stay refused.
$offset = -s $standby->logfile;
$standby->restart;
ok(refused_or_followed(qr/not usable: it is older than the publication followed/, $offset),
	'older rows of the primary, the standby restarted: still refused by their age');
is(header(slurp_bin($followed))->{dumped_at},
	$h->{dumped_at}, 'older rows of the primary, the standby restarted: the followed file is the latest');

unlike(slurp_file($primary->logfile), qr/the hot set is not published/,
	'roles that may write the table never stop publications');

$standby->stop;
$primary->stop;
done_testing();
