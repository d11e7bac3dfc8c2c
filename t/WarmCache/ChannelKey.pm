# Copyright (c) 2026, pg_warmcache developers
#
# WarmCache::ChannelKey - the key that signs the standby channel's rows,
# and the signature a row ends with, made by the tests.  A second
# implementation, independent of the server's (src/channel_key.c,
# src/pubrow.c; described in docs/design.md), so that a test can publish
# rows of its own making that the standby verifies, and so reach the
# checks a standby applies to a row's data after its signature.  The key
# is the cluster's own, derived from the mock authentication nonce that
# pg_controldata prints; a test that writes a key file signs with that key
# instead.  A test imports what it uses by name:
#
#   use WarmCache::ChannelKey qw(cluster_key signed_row);

package WarmCache::ChannelKey;

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256);
use Exporter qw(import);
use PostgreSQL::Test::Utils qw(run_command);
use WarmCache::Turnstile ();

our @EXPORT_OK = qw(
  nonce
  cluster_key
  signed_row
);

# What the key and a signature are made over first: WC_KEY_LABEL in
# src/channel_key.c and WC_SIGNATURE_LABEL in src/pubrow.c.
use constant KEY_LABEL => 'pg_warmcache standby channel key 1';
use constant SIGNATURE_LABEL => 'pg_warmcache row 1';

# The mock authentication nonce of $node's cluster, 64 hex digits, as
# pg_controldata prints it.
sub nonce
{
	my ($node) = @_;
	my ($out) = run_command([ 'pg_controldata', $node->data_dir ]);
	$out =~ /^Mock authentication nonce:\s+([0-9a-f]{64})$/m
	  or die "pg_controldata prints no nonce:\n$out";
	return $1;
}

# The key of $node's cluster when it has no key file: HMAC-SHA256 keyed by
# the nonce, over KEY_LABEL.  32 bytes.
sub cluster_key
{
	my ($node) = @_;
	return hmac_sha256(KEY_LABEL, pack('H*', nonce($node)));
}

# The row $data of chunk $chunk (negative for a delta) and dump time
# $dumped_at (a TimestampTz: microseconds since 2000-01-01 UTC), signed
# with $key: the data and then HMAC-SHA256 over SIGNATURE_LABEL, the chunk
# and the dump time, each big-endian, and the data.
sub signed_row
{
	my ($key, $chunk, $dumped_at, $data) = @_;
	my $what = SIGNATURE_LABEL . pack('l> q>', $chunk, $dumped_at) . $data;
	return $data . hmac_sha256($what, $key);
}

1;
