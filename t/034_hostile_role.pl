# Copyright (c) 2026, pg_warmcache developers
#
# A role that may create objects in schema public (granted explicitly, as
# on clusters created before 15) and in the database cannot make the
# standby channel, which runs as the bootstrap superuser, run anything of
# its: it plants a function or operator for every name the channel's SQL
# once resolved through the search path (quote_ident(name), ||, =, max), in
# public and in a schema named after the bootstrap superuser ("$user" comes
# first in the default search_path), and, while the extension is still at
# 1.1, a table warmcache_published of its own with triggers, in the
# extension's schema.  Then dumps, publications with a standby streaming,
# the standby's follow passes, ALTER EXTENSION UPDATE, more of them, a table
# handed to the role by a careless owner change, and a promotion.  Each
# trap, run as anyone, says so in the server log ("TRAP!") and in a table,
# and tries to make the role superuser.  The oracles are pg_roles, that
# table, the server logs and the followed file on disk.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node status psql_fails following_standby
  publish_dump wait_for_followed_pass);
use WarmCache::DumpFormat qw(slurp_bin header);

my $primary = start_node('primary',
	"shared_buffers = 16MB\nlog_min_messages = debug1\n",
	allows_streaming => 1);
$primary->safe_psql('postgres',
	"CREATE EXTENSION pg_warmcache VERSION '1.1'; CREATE EXTENSION pg_buffercache;"
);
my $boot = $primary->safe_psql('postgres',
	'SELECT rolname FROM pg_roles WHERE oid = 10');

# Where a trap that runs writes, if it can (not on a standby).
$primary->safe_psql(
	'postgres', q{
CREATE TABLE public.trap_fired (what text, by_role name DEFAULT current_user);
GRANT INSERT ON public.trap_fired TO PUBLIC;
CREATE ROLE mallory LOGIN;
GRANT CREATE ON SCHEMA public TO mallory;
GRANT CREATE ON DATABASE postgres TO mallory;
CREATE TABLE t (id int, pad text);
INSERT INTO t SELECT g, repeat('x', 500) FROM generate_series(1, 3000) g;
});

# The traps, planted by mallory.
my $traps = q{
CREATE FUNCTION public.trap(what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	RAISE LOG 'TRAP%: % as %', '!', what, current_user;
	BEGIN
		INSERT INTO public.trap_fired (what) VALUES (what);
		EXECUTE 'ALTER ROLE mallory SUPERUSER';
	EXCEPTION WHEN OTHERS THEN
		RAISE LOG 'TRAP%: could not finish: %', '!', SQLERRM;
	END;
END $$;
GRANT EXECUTE ON FUNCTION public.trap(text) TO PUBLIC;
};
for my $schema ('public', qq{"$boot"})
{
	$traps .= qq{
CREATE FUNCTION $schema.quote_ident(name) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.trap('quote_ident(name)'); RETURN pg_catalog.quote_ident(\$1::text); END \$\$;
CREATE FUNCTION $schema.quote_ident(text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.trap('quote_ident(text)'); RETURN pg_catalog.quote_ident(\$1); END \$\$;
CREATE FUNCTION $schema.cat_trap(text, text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.trap('||(text, text)'); RETURN pg_catalog.textcat(\$1, \$2); END \$\$;
CREATE OPERATOR $schema.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = $schema.cat_trap);
CREATE FUNCTION $schema.name_eq_trap(name, name) RETURNS bool LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.trap('=(name, name)'); RETURN pg_catalog.nameeq(\$1, \$2); END \$\$;
CREATE OPERATOR $schema.= (LEFTARG = name, RIGHTARG = name, FUNCTION = $schema.name_eq_trap);
CREATE FUNCTION $schema.name_text_eq_trap(name, text) RETURNS bool LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.trap('=(name, text)'); RETURN pg_catalog.nameeqtext(\$1, \$2); END \$\$;
CREATE OPERATOR $schema.= (LEFTARG = name, RIGHTARG = text, FUNCTION = $schema.name_text_eq_trap);
CREATE FUNCTION $schema.oid_eq_trap(oid, oid) RETURNS bool LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.trap('=(oid, oid)'); RETURN pg_catalog.oideq(\$1, \$2); END \$\$;
CREATE OPERATOR $schema.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = $schema.oid_eq_trap);
CREATE FUNCTION $schema.max_trap(timestamptz, timestamptz) RETURNS timestamptz LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.trap('max(timestamptz)'); RETURN pg_catalog.timestamptz_larger(\$1, \$2); END \$\$;
CREATE AGGREGATE $schema.max(timestamptz) (SFUNC = $schema.max_trap, STYPE = timestamptz);
CREATE FUNCTION $schema.table_trap() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN PERFORM public.trap(TG_OP || ' on ' || TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);
RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END; END \$\$;
CREATE TABLE $schema.warmcache_published (chunk int4 PRIMARY KEY, dumped_at timestamptz, data bytea);
INSERT INTO $schema.warmcache_published VALUES (0, now(), '\\x00');
CREATE TRIGGER trap_row BEFORE INSERT OR UPDATE OR DELETE ON $schema.warmcache_published
	FOR EACH ROW EXECUTE FUNCTION $schema.table_trap();
CREATE TRIGGER trap_statement BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON $schema.warmcache_published
	FOR EACH STATEMENT EXECUTE FUNCTION $schema.table_trap();
};
}
$primary->safe_psql('postgres',
	"CREATE SCHEMA \"$boot\";\n$traps",
	extra_params => [ '-U', 'mallory' ]);
is( $primary->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_proc WHERE proowner = 'mallory'::regrole AND proname = 'quote_ident' AND pg_get_function_identity_arguments(oid) = 'name'"
	),
	'2',
	'mallory planted quote_ident(name) in public and in the "$user" schema');

my $standby = following_standby($primary, 'standby',
	"pg_warmcache.dump_interval = 0\nlog_min_messages = debug1\n");

# At 1.1 the real table does not exist, mallory's does: dumps and
# publication attempts with the standby streaming, and two looks of the
# standby (one every 5 s).
publish_attempt($primary) for (1 .. 2);
no_trap_fired('extension at 1.1, publishing', $primary);
my $looks = 0;
for (1 .. 2)
{
	$standby->wait_for_log(
		qr/unregistering background worker "pg_warmcache follow"/, $looks);
	$looks = -s $standby->logfile;
}
no_trap_fired('extension at 1.1, following', $standby);
like(slurp_file($standby->logfile), qr/the primary publishes no hot set to follow/,
	'extension at 1.1: the standby says nothing is published');

# The update creates the table in the extension's schema; mallory's table
# of that name there stops it, as any object in the way would.
psql_fails($primary, 'ALTER EXTENSION pg_warmcache UPDATE',
	'ALTER EXTENSION UPDATE fails while another table has the name');
$primary->safe_psql('postgres',
	"DROP TABLE public.warmcache_published; ALTER EXTENSION pg_warmcache UPDATE TO '1.2'");
is($primary->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache'"),
	'1.2', 'the extension is at 1.2');

# Publication and following work, and go on.
my $first = publish_dump($primary);
wait_for_followed_pass($primary, $standby, $first);
my $second = publish_dump($primary);
wait_for_followed_pass($primary, $standby, $second);
ok($second gt $first, 'the standby\'s followed dump time advances');
ok(-s $standby->data_dir . '/pg_warmcache.followed', 'the followed file exists');
is(status($standby, 'follow_state'), 'following', 'the standby is following');
is(header(slurp_bin($standby->data_dir . '/pg_warmcache.followed'))->{dumped_at},
	header(slurp_bin($primary->data_dir . '/pg_warmcache.blocks'))->{dumped_at},
	'the followed file is the primary\'s last dump');
no_trap_fired('extension at 1.2');

# A careless owner change hands the real table to mallory, who gives it a
# trigger: neither side touches it any more, and each says why once.
my $offset = -s $primary->logfile;
my $standby_offset = -s $standby->logfile;
$primary->safe_psql('postgres',
	'ALTER TABLE public.warmcache_published OWNER TO mallory');
$primary->safe_psql(
	'postgres', q{
CREATE TRIGGER trap_row BEFORE INSERT OR UPDATE OR DELETE ON public.warmcache_published
	FOR EACH ROW EXECUTE FUNCTION public.table_trap();
CREATE TRIGGER trap_statement BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.warmcache_published
	FOR EACH STATEMENT EXECUTE FUNCTION public.table_trap();},
	extra_params => [ '-U', 'mallory' ]);
publish_attempt($primary);
publish_attempt($primary);
my @refused = (slurp_file($primary->logfile, $offset) =~
	  /LOG:  the standby channel's table is not the one the extension made: table public.warmcache_published is owned by role "mallory", which is not a superuser/g
);
is(scalar @refused, 1, 'the primary refuses to publish into a table mallory owns, said once');
$standby->wait_for_log(
	qr/the standby channel's table is not the one the extension made: table public.warmcache_published is owned by role "mallory"/,
	$standby_offset);
is(status($standby, 'follow_state'), 'published table refused',
	'the standby refuses to read it');
no_trap_fired('a table owned by mallory');

# Promotion: the standby loads the followed set and dumps as a primary.
$standby->promote;
$standby->poll_query_until('postgres',
	"SELECT restore_source = 'promotion' AND restore_finished_at IS NOT NULL FROM warmcache_status()"
) or die 'timed out waiting for the load at promotion';
cmp_ok($standby->safe_psql('postgres', 'SELECT warmcache_dump_now()'),
	'>', 0, 'the promoted standby dumps');
no_trap_fired('after promotion');

$standby->stop;
$primary->stop;
done_testing();

# A dump on $node, and the publication attempt after it (a channel worker
# that ran and ended), with a standby streaming.
sub publish_attempt
{
	my ($node) = @_;
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
	$node->wait_for_log(
		qr/unregistering background worker "pg_warmcache publish"/, $offset);
	return;
}



# No trap ran on @nodes (by default both), and mallory is no superuser.
sub no_trap_fired
{
	my ($when, @nodes) = @_;
	@nodes = ($primary, $standby) if !@nodes;
	for my $node (@nodes)
	{
		my $name = $node->name;
		is( $node->safe_psql(
				'postgres',
				"SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"),
			'f',
			"$when: mallory is not superuser on $name");
		is($node->safe_psql('postgres', 'SELECT count(*) FROM public.trap_fired'),
			'0', "$when: no trap wrote on $name");
		unlike(slurp_file($node->logfile), qr/TRAP!/,
			"$when: no trap ran on $name");
	}
	return;
}
