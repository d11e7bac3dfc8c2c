# Copyright (c) 2026, pg_warmcache developers
#
# A session holding row locks on warmcache_published (SELECT ... FOR UPDATE
# in a transaction left open) makes a full publication fail: deleting the
# rows waits for it until lock_timeout.  The dump must stay pending, the
# failure be said, and the dump be published once the session lets go,
# without another dump.  The oracles are the table's rows against the dump
# file's header on disk, and the server log.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions fill_table
  following_standby publish_dump wait_for_followed_pass);
use WarmCache::DumpFormat qw(slurp_bin header);

my $primary = start_node('primary', "shared_buffers = 16MB\n",
	allows_streaming => 1);
create_extensions($primary);
fill_table($primary, 't', 2);
my $standby = following_standby($primary, 'standby');
my $first = publish_dump($primary);
wait_for_followed_pass($primary, $standby, $first);

# Without the primary's copy of what it published last, the next
# publication is a full one: it deletes every row.
unlink($primary->data_dir . '/pg_warmcache.published')
  or die "could not remove the published copy: $!";

my $holder = $primary->background_psql('postgres');
$holder->query_safe(
	'BEGIN; SELECT chunk FROM public.warmcache_published FOR UPDATE');
my $offset = -s $primary->logfile;
$primary->safe_psql('postgres', 'SELECT public.warmcache_dump_now()');
my $dump = $primary->data_dir . '/pg_warmcache.blocks';
my $dumped_at = header(slurp_bin($dump))->{dumped_at};

$primary->wait_for_log(qr/could not publish the hot set/, $offset);
pass('the failed publication is said');
is($primary->safe_psql('postgres',
		'SELECT max(dumped_at) FROM public.warmcache_published'),
	$first, 'while the rows are locked, the last publication stays');

# Two more looks fail the same way; the failure is said once.
$primary->wait_for_log(qr/(?s:canceling statement due to lock timeout.*){3}/,
	$offset);
my @said = (slurp_file($primary->logfile, $offset) =~ /could not publish the hot set/g);
is(scalar @said, 1, 'the failure is said once, however often it is tried');

# The session lets go: the same dump is published, no other dump needed.
$holder->query_safe('COMMIT');
$holder->quit;
$primary->poll_query_until('postgres',
	"SELECT max(dumped_at) > '$first' FROM public.warmcache_published")
  or die 'timed out waiting for the publication';
my $published = $primary->safe_psql('postgres',
	q{SELECT (extract(epoch FROM max(dumped_at) - '2000-01-01 00:00:00+00') * 1000000)::int8
	    FROM public.warmcache_published});
is($published, $dumped_at,
	'once the rows are free, the pending dump is published (its dump time is the file\'s)');
like(slurp_file($primary->logfile, $offset), qr/publishing the hot set again/,
	'the log says publications resumed');
my $at = $primary->safe_psql('postgres',
	'SELECT max(dumped_at) FROM public.warmcache_published');
wait_for_followed_pass($primary, $standby, $at);
is(slurp_bin($standby->data_dir . '/pg_warmcache.followed'),
	slurp_bin($dump), 'the standby follows that dump');

$standby->stop;
$primary->stop;
done_testing();
