# Copyright (c) 2026, pg_warmcache developers
#
# A dump that fails or is cancelled leaves no scratch file behind: neither
# the sorted chunks (pg_warmcache.blocks.sort) nor the new file
# (pg_warmcache.blocks.tmp).  The dumps are made to fail at each step: the
# new file cannot be created, it cannot be renamed over the old one, and
# statement_timeout cancels them at various points.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use File::Path qw(make_path remove_tree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions psql_fails fill_table);
use WarmCache::DumpFormat qw(MAGIC slurp_bin header);

# Small chunks, so that a dump spills sorted chunks to the scratch file.
my $node = start_node(
	'cancelled', q{
shared_buffers = 128MB
autovacuum = off
});
my $file = $node->data_dir . '/pg_warmcache.blocks';
create_extensions($node);
fill_table($node, 'big', 40);
my $chunk = 'SET pg_warmcache.sort_chunk = 1024;';

sub no_scratch
{
	my ($name) = @_;
	ok(!-e "$file.sort", "$name: no pg_warmcache.blocks.sort is left");
	ok(!-f "$file.tmp", "$name: no pg_warmcache.blocks.tmp is left");
	return;
}

my $n = $node->safe_psql('postgres', "$chunk SELECT warmcache_dump_now()");
cmp_ok($n, '>', 4 * 1024, 'a dump in chunks holds the table');
no_scratch('a dump that succeeds');
my $saved = slurp_bin($file);

# The new file cannot be created: a directory has its name.  The chunks
# were spilled by then.
make_path("$file.tmp");
psql_fails($node, "$chunk SELECT warmcache_dump_now()",
	'a dump that cannot create its file fails');
ok(!-e "$file.sort", 'no pg_warmcache.blocks.sort is left');
remove_tree("$file.tmp");

# The new file cannot be renamed over the old one: a non-empty directory
# is there.
rename($file, "$file.saved") or die "rename: $!";
make_path("$file/x");
psql_fails($node, "$chunk SELECT warmcache_dump_now()",
	'a dump that cannot rename its file fails');
no_scratch('a dump that cannot rename its file');
remove_tree($file);
rename("$file.saved", $file) or die "rename: $!";

# Cancelled by statement_timeout, at points spread over the dump.  A dump
# of this size takes a few milliseconds, so how many are cancelled, and
# where, depends on the machine: the two failures above are the ones sure
# to strike after the scratch files exist.
my $cancelled = 0;
for my $ms (1, 2, 3, 5, 8, 12, 20, 30, 50, 80)
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"$chunk SET statement_timeout = '${ms}ms'; SELECT warmcache_dump_now()");
	$cancelled++ if $stderr =~ /canceling statement due to statement timeout/;
	no_scratch("a dump under statement_timeout = ${ms}ms");
}
note("$cancelled of the dumps were cancelled");
ok(slurp_bin($file) eq $saved || header(slurp_bin($file))->{magic} == MAGIC,
	'the dump file is whole');

$node->stop;
done_testing();
