# Copyright (c) 2026, pg_warmcache developers
#
# WarmCache::Turnstile - taking turns with the tests of other majors.
# test/run runs the suites of several majors side by side (PGWC_JOBS), and
# PGWC_TURNSTILE names a directory, shared by all of them and by their
# chroots, that holds two lock files.  Every test holds "room" shared for
# as long as it runs: the other modules of t/WarmCache/ load this one, so
# that a test takes its turn just by loading the helpers it uses.  A test
# whose outcome depends on CPU left free (t/033: the restore must tell busy
# queries from a machine kept busy by other tests) loads it with
#
#   use WarmCache::Turnstile qw(:machine_alone);
#
# and holds "room" exclusively, so that no test of another major runs
# beside it.  "gate" keeps that test's place in the queue: while it waits
# for the room, no new test enters.  The lock is the test process's and
# ends with it; Perl opens files close-on-exec, so no server or program a
# test starts keeps it.  Without PGWC_TURNSTILE nothing is taken.  A test
# that needs none of the helpers takes its turn with
#
#   use WarmCache::Turnstile ();
#
# It exports nothing.

package WarmCache::Turnstile;

use strict;
use warnings;

use Carp ();
use Fcntl qw(:flock);

my $room;

# Take the room in mode $mode (LOCK_SH or LOCK_EX), waiting at the gate.
sub take_turn
{
	my ($mode) = @_;
	my $dir = $ENV{PGWC_TURNSTILE};
	return if !defined $dir || $dir eq '';
	if ($room)
	{
		flock($room, LOCK_UN) or die "could not unlock \"$dir/room\": $!";
	}
	else
	{
		open($room, '<', "$dir/room")
		  or die "could not open \"$dir/room\": $!";
	}
	open(my $gate, '<', "$dir/gate")
	  or die "could not open \"$dir/gate\": $!";
	flock($gate, LOCK_EX) or die "could not lock \"$dir/gate\": $!";
	flock($room, $mode) or die "could not lock \"$dir/room\": $!";
	close($gate);
	return;
}

take_turn(LOCK_SH);

sub import
{
	my ($class, @args) = @_;
	for my $arg (@args)
	{
		Carp::croak("WarmCache::Turnstile takes only :machine_alone, not \"$arg\"")
		  if $arg ne ':machine_alone';
	}
	take_turn(LOCK_EX) if @args;
	return;
}

1;
