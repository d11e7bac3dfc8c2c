# Copyright (c) 2026, pg_warmcache developers
#
# Another session's temporary table lives in that session's local buffers:
# warm() and warm_table() refuse it with SQLSTATE 0A000 in every mode, and
# the session that owns it can warm it.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node psql_fails);

my $node = start_node('other_temp');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_warmcache');

# The owner keeps its session open while another one tries.
my $owner = $node->background_psql('postgres');
$owner->query_safe(
	'CREATE TEMP TABLE mine AS SELECT g AS id FROM generate_series(1, 10000) g');
my $schema = $owner->query_safe(
	"SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()");
chomp $schema;
like($schema, qr/^pg_temp_\d+$/, "the owner's temporary schema is $schema");

foreach my $call ("warm('$schema.mine', 'buffer')",
	"warm('$schema.mine', 'read')",
	"warm('$schema.mine', 'prefetch')",
	"warm_table('$schema.mine')")
{
	my $stderr =
	  psql_fails($node, "SELECT $call", "$call fails in another session");
	like($stderr, qr/0A000/, "$call: SQLSTATE 0A000");
	like($stderr,
		qr/cannot warm temporary tables of other sessions/,
		"$call: the message says why");
}

my $n = $owner->query_safe("SELECT warm('mine')");
chomp $n;
cmp_ok($n, '>', 0, 'the owner warms its own temporary table');

$owner->quit;
$node->stop;
done_testing();
