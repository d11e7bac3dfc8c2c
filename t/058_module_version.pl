# Copyright (c) 2026, pg_warmcache developers
#
# The loaded library says the version the control file says (from 18,
# PG_MODULE_MAGIC_EXT and pg_get_loaded_modules()), so that a DBA who asks
# the server which pg_warmcache it runs gets the release's number.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node);

my $node = start_node('module_version');
if ($node->safe_psql('postgres', 'SHOW server_version_num') < 180000)
{
	$node->stop;
	plan skip_all => 'pg_get_loaded_modules() exists from PostgreSQL 18 on';
}
my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'pg_warmcache'"
);
like($default, qr/^\d+\.\d+$/, "the control file's version is $default");
is( $node->safe_psql(
		'postgres',
		"SELECT version FROM pg_get_loaded_modules() WHERE module_name = 'pg_warmcache'"
	),
	$default,
	'pg_get_loaded_modules() shows the control file\'s version');
$node->stop;
done_testing();
