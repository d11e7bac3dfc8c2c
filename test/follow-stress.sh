#!/bin/bash
# test/follow-stress.sh: repeat the set-up of a following standby, again and
# again, and check that every pass over the followed set ends complete.
#
#   bash test/follow-stress.sh [--pg 15] [--rounds 4] [--scale 100]
#                              [--follow os,buffer] [--standby-buffers 2GB,256MB]
#                              [--seconds 90] [--saved-file remove,keep]
#
# A primary with pgbench's tables (scale 100: 1.5 GB) read twice into its
# shared buffers (2GB), so that they are in its page cache too: its dumps,
# every 10 s with the OS tier on, name the same blocks in both tiers.  Each
# round takes a fresh base backup, drops the standby's files from the page
# cache, starts the standby with the round's follow_primary and
# shared_buffers, removing or keeping the primary's dump file that the base
# backup copied (the lists are cycled; a kept file is restored at the
# standby's start, before it follows), and runs pgbench -S on the primary
# for --seconds while the standby follows.  A round fails on any
# incomplete restore or pass, on no "pass over the followed set finished"
# line, or when the status after the last pass says the restore is
# incomplete or the OS tier is not warm.
#
# Not part of test/run: it takes minutes per round and 4 GB of shared
# memory.  Ports 5611 and 5612, directory $STRESS_DIR (/var/tmp/pgwc-stress).
# Needs root (drops files from the page cache; the servers run as postgres).
# Exit status 0 when every round passed.

set -euo pipefail
. "$(cd "$(dirname "$0")/../bench" && pwd)/lib.sh"

MAJOR=15 ROUNDS=4 SCALE=100 FOLLOWS=os,buffer SBS=2GB,256MB SECONDS_EACH=90
SAVED=remove
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) MAJOR=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--scale) SCALE=$2; shift 2 ;;
	--follow) FOLLOWS=$2; shift 2 ;;
	--standby-buffers) SBS=$2; shift 2 ;;
	--seconds) SECONDS_EACH=$2; shift 2 ;;
	--saved-file) SAVED=$2; shift 2 ;;
	*) die "unknown argument $1" ;;
	esac
done
need_root
W=${STRESS_DIR:-/var/tmp/pgwc-stress}
P1=5611 P2=5612
PGDATA=$W/primary	# for the exit trap of lib.sh, which stops it
IFS=, read -r -a follow_list <<<"$FOLLOWS"
IFS=, read -r -a sb_list <<<"$SBS"
IFS=, read -r -a saved_list <<<"$SAVED"

use_pg "$MAJOR"
mkdir -p "$W"
chown "$PG_USER:" "$W"
cd "$W"
q() { pair_sql "$@"; }

say "primary: initdb, pgbench -i -s $SCALE"
pair_primary $P1 "shared_buffers = 2GB
pg_warmcache.dump_os_cache = on
pg_warmcache.dump_interval = 10
max_wal_size = 4GB"
q $P1 'CREATE EXTENSION pg_warmcache; CREATE EXTENSION pg_prewarm' >/dev/null
as_pg "$BINDIR/pgbench" -h "$W" -p $P1 -i -q -s "$SCALE" postgres >/dev/null 2>&1
for _ in 1 2; do
	q $P1 "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c WHERE relname LIKE 'pgbench%' AND relkind IN ('r', 'i')" >/dev/null
done

failed=0
for ((r = 1; r <= ROUNDS; r++)); do
	follow=${follow_list[$(((r - 1) % ${#follow_list[@]}))]}
	sb=${sb_list[$(((r - 1) % ${#sb_list[@]}))]}
	saved=${saved_list[$(((r - 1) % ${#saved_list[@]}))]}
	log=$W/standby-$r.log
	pair_standby $P1 $P2 "shared_buffers = $sb
pg_warmcache.follow_primary = $follow
log_min_messages = debug1" "$log" "$saved"
	as_pg "$BINDIR/pgbench" -h "$W" -p $P1 -n -S -T "$SECONDS_EACH" postgres >/dev/null 2>&1
	incomplete=$(grep -Ec "(pass over the followed set|restore of the saved set|load of the primary's hot set at promotion) incomplete" "$log" || true)
	finished=$(grep -c 'pass over the followed set finished' "$log" || true)
	status=$(q $P2 "SELECT restore_incomplete, followed_buffer_tier, followed_buffer_tier_warm, followed_os_tier, followed_os_tier_warm FROM warmcache_status()")
	IFS='|' read -r inc bt btw ot otw <<<"$status"
	verdict=pass
	if [ "$incomplete" != 0 ] || [ "$finished" = 0 ] || [ "$inc" != f ] ||
		{ [ "${ot:-0}" -gt 0 ] && [ "${otw:-0}" -lt $((ot * 9 / 10)) ]; }; then
		verdict=FAIL
		failed=$((failed + 1))
	fi
	say "round $r (follow_primary $follow, standby shared_buffers $sb, saved file ${saved}d): $verdict; passes finished $finished, incomplete $incomplete; restore_incomplete $inc, buffer tier $btw of $bt warm, OS tier $otw of $ot warm"
	if [ "$verdict" = FAIL ]; then
		grep -E 'pass over the followed set incomplete|restore of the saved set incomplete|handled .* of the .* blocks|unhandled|leaves database|ended early|restore pass over' "$log" | head -30 >&2
		cp "$log" "$W/failed-round-$r.log"
	fi
done
pair_stop
say "$((ROUNDS - failed)) of $ROUNDS rounds passed"
[ "$failed" = 0 ]
