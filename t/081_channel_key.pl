# Copyright (c) 2026, pg_warmcache developers
#
# The standby channel's key (src/channel_key.c).  What it relies on of
# PostgreSQL, with pg_controldata as the oracle, which shares no code with
# the extension:
#
# - the mock authentication nonce in pg_control is the same on a standby
#   made from the primary's base backup, and differs in a cluster of
#   another initdb;
# - no pg_control_*() function shows it.
#
# And its life: a standby follows under the derived key with nothing set
# up; a key file on the standby alone makes the primary's rows fail to
# verify (follow_state "published file not signed by the primary", the
# followed set kept); the same file on the primary makes its next
# publication whole under the new key, which the standby follows; a key
# file that others may read is no key ("no usable key"), and once its mode
# is mended the standby follows the publication it could not read.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status
  following_standby publish_dump wait_for_followed_pass);
use WarmCache::ChannelKey qw(nonce);

# Write $hex into $node's key file, with mode $mode.
sub write_key
{
	my ($node, $hex, $mode) = @_;
	my $file = $node->data_dir . '/pg_warmcache.key';
	open(my $fh, '>', $file) or die "could not write \"$file\": $!";
	print $fh "$hex\n";
	close($fh);
	chmod($mode // 0600, $file) or die "could not chmod \"$file\": $!";
	return $file;
}

my $primary = start_node('primary', "shared_buffers = 16MB\n",
	allows_streaming => 1);
create_extensions($primary);
$primary->safe_psql('postgres',
	"CREATE TABLE t AS SELECT g AS id, repeat('x', 500) AS pad FROM generate_series(1, 2000) g"
);
my $standby = following_standby($primary, 'standby');
my $other = PostgreSQL::Test::Cluster->new('other');
$other->init(force_initdb => 1);    # its own initdb: not the tests' template

#---- What the key relies on ----

my $nonce = nonce($primary);
is(nonce($standby), $nonce,
	"a standby made from the primary's base backup holds its nonce");
isnt(nonce($other), $nonce, 'a cluster of another initdb has another nonce');
my $shown = $primary->safe_psql(
	'postgres', q{
SELECT concat_ws(' ',
	(SELECT c::text FROM pg_control_system() c),
	(SELECT c::text FROM pg_control_init() c),
	(SELECT c::text FROM pg_control_checkpoint() c),
	(SELECT c::text FROM pg_control_recovery() c))});
unlike(lc($shown), qr/$nonce/, 'no pg_control function shows the nonce');

#---- The derived key: nothing to set up ----

my $first = publish_dump($primary);
wait_for_followed_pass($primary, $standby, $first);
is(status($standby, 'follow_state'), 'following',
	'derived key: the standby follows its primary');

#---- A key file on the standby alone ----

my $key = 'c0ffee' x 10 . 'c0ff';
write_key($standby, $key);
my $offset = -s $standby->logfile;
my $second = publish_dump($primary);
$primary->wait_for_catchup($standby);
$standby->wait_for_log(
	qr/LOG:  the primary's published hot set is not followed: (?:chunk|delta) \d+ is not signed with this cluster's key/,
	$offset);
pass('key file on the standby alone: the log says the rows are not signed with its key');
$standby->poll_query_until('postgres',
	"SELECT follow_state = 'published file not signed by the primary' FROM warmcache_status()"
) or die 'timed out waiting for the follow state';
is(status($standby, 'follow_state'), 'published file not signed by the primary',
	'key file on the standby alone: the status says so');
is(status($standby, 'followed_dump_at'), $first,
	'key file on the standby alone: it keeps the set it followed');

#---- The same key file on the primary ----

write_key($primary, $key);
my $third = publish_dump($primary);
is( $primary->safe_psql(
		'postgres',
		"SELECT dumped_at = '$third' FROM public.warmcache_published WHERE chunk = 0"),
	't',
	'new key on the primary: its next publication is whole');
wait_for_followed_pass($primary, $standby, $third);
is(status($standby, 'follow_state'), 'following',
	'new key on both: the standby follows again');

#---- A key file others may read ----

my $file = write_key($standby, $key, 0644);
$offset = -s $standby->logfile;
my $fourth = publish_dump($primary);
$primary->wait_for_catchup($standby);
$standby->poll_query_until('postgres',
	"SELECT follow_state = 'no usable key' FROM warmcache_status()")
  or die 'timed out waiting for the follow state';
pass('key file readable by others: follow_state is "no usable key"');
like(
	slurp_file($standby->logfile, $offset),
	qr/LOG:  cannot follow the primary's hot set: .*pg_warmcache\.key.*\n.*DETAIL:  The key file, when it exists, is the only key the standby uses\./,
	'key file readable by others: the log says why');
is(status($standby, 'followed_dump_at'), $third,
	'key file readable by others: the standby keeps the set it followed');
chmod(0600, $file) or die "could not chmod \"$file\": $!";
wait_for_followed_pass($primary, $standby, $fourth);
pass('mode mended: the standby follows the publication it could not read');

$standby->stop;
$primary->stop;
done_testing();
