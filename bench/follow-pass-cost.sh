#!/bin/bash
# What a following standby's pass costs when the primary's hot set barely
# changed: each of the primary's dumps starts a pass over the whole
# followed set, and the pass should cost what changed, not the set.
#
#   bench/follow-pass-cost.sh [--pg 15|18] [--set-gb 6] [--change 1]
#                             [--reps 5]
#
# A primary whose shared buffers (--set-gb + 1 GB) hold a table of
# --set-gb GB whole (one 8 kB row per block), its dumps' OS tier off, so
# that the followed set is that table and the catalogs; a standby from a
# base backup, following in mode os (its shared_buffers 256MB; the set goes
# into its OS page cache), its files dropped from the page cache first.
# Pass 0 is the first, over a cold page cache.  Before each repetition, the
# primary reads --change percent of the set's size anew (blocks of a second
# table, into its shared buffers: the set grows by that much), dumps and
# publishes; the standby's pass over that dump is timed.  Per pass, from the
# standby's log (log_min_messages debug1): the blocks of the set, the
# seconds the pass took, the CPU its workers used, and the blocks it found
# in the OS cache and did not read (versions that do not count them leave
# the column empty).  The machine's memory bounds the set: the primary's
# shared buffers and the standby's page cache each hold it.
#
# Ports 5621 and 5622, directory $FOLLOW_DIR (/var/tmp/pgwc-followcost).
# Output: a Markdown table on stdout.  Needs root.  Environment:
# bench/lib.sh's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 set_gb=6 change=1 reps=5
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--set-gb) set_gb=$2; shift 2 ;;
	--change) change=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
[[ $set_gb =~ ^[0-9]+$ ]] && ((set_gb >= 1)) || die "--set-gb must be a whole number >= 1"
[[ $reps =~ ^[0-9]+$ ]] && ((reps >= 1)) || die "--reps must be a whole number >= 1"
[[ $change =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--change must be a percentage"

W=${FOLLOW_DIR:-/var/tmp/pgwc-followcost}
P1=5621 P2=5622
PGDATA=$W/primary # for the exit trap of lib.sh, which stops it
use_pg "$pg"
mkdir -p "$W"
chown "$PG_USER:" "$W"
cd "$W"
pg() { as_pg "$BINDIR/$@"; }
q() { pair_sql "$@"; }
trap pair_stop EXIT

set_blocks=$((set_gb * 131072))
step=$(awk -v n=$set_blocks -v p="$change" 'BEGIN { printf "%d", n * p / 100 }')
spare_blocks=$((step * reps + 1))

say "primary: initdb, a table of $set_blocks blocks and one of $spare_blocks"
pair_primary $P1 "shared_buffers = $((set_gb + 1))GB
pg_warmcache.dump_os_cache = off
pg_warmcache.dump_interval = 0
max_wal_size = 4GB"
q $P1 'CREATE EXTENSION pg_warmcache; CREATE EXTENSION pg_prewarm' >/dev/null
for t in hot:$set_blocks spare:$spare_blocks; do
	q $P1 "CREATE TABLE ${t%%:*} (id int, pad text);
	       ALTER TABLE ${t%%:*} ALTER pad SET STORAGE plain;
	       INSERT INTO ${t%%:*} SELECT g, repeat('x', 7000) FROM generate_series(1, ${t#*:}) g" >/dev/null
	q $P1 "VACUUM ${t%%:*}" >/dev/null
done
# Shared buffers with the table only: a restart without the saved set
# empties them of what writing the tables left there.
pg pg_ctl -D "$W/primary" -m fast -w stop >/dev/null
rm -f "$W/primary/pg_warmcache.blocks"
pg pg_ctl -D "$W/primary" -l "$W/primary.log" -w start >/dev/null
q $P1 "SELECT pg_prewarm('hot')" >/dev/null
say "standby: base backup, files dropped from the page cache"
drop_caches
pair_standby $P1 $P2 "shared_buffers = 256MB
pg_warmcache.follow_primary = os
log_min_messages = debug1" "$W/standby.log"
# The primary's files, read by the backup, leave the page cache to the set.
find "$W/primary" -type f -exec dd if={} iflag=nocache count=0 status=none \;

# Dump and publish on the primary; wait for the standby's pass over that
# dump to end, and print the pass's figures, tab-separated: blocks, s, CPU
# s, found cached.
pass() {
	local at line detail
	q $P1 'SELECT warmcache_dump_now()' >/dev/null
	at=$(q $P1 'SELECT last_dump_at FROM warmcache_status()')
	for _ in $(seq 1 1200); do
		[ "$(q $P2 "SELECT followed_dump_at = '$at' AND restore_source = 'follow' AND state = 'idle'
		             AND restore_finished_at >= restore_started_at
		             AND restore_started_at > followed_dump_at FROM warmcache_status()")" = t ] && break
		sleep 0.5
	done
	line=$(grep -nE '(pass over the followed set|pg_warmcache: follow) finished' "$W/standby.log" | tail -1)
	detail=$(sed -n "$((${line%%:*} + 1))p" "$W/standby.log")
	awk -v l="$line" -v d="$detail" 'BEGIN {
		match(l, /of [0-9]+ blocks/); blocks = substr(l, RSTART + 3, RLENGTH - 10)
		match(l, /in [0-9.]+ s,/); secs = substr(l, RSTART + 3, RLENGTH - 6)
		match(d, /used [0-9.]+ s of CPU/); cpu = substr(d, RSTART + 5, RLENGTH - 14)
		found = ""
		if (match(d, /not read again: [0-9]+/)) found = substr(d, RSTART + 16, RLENGTH - 16)
		printf "%s\t%s\t%s\t%s\n", blocks, secs, cpu, found
	}'
}

say "pass 0: the whole set, cold"
rows=$(printf '0\tcold\t%s\n' "$(pass)")
for ((r = 1; r <= reps; r++)); do
	first=$(((r - 1) * step))
	q $P1 "SELECT pg_prewarm('spare', 'buffer', 'main', $first, $((first + step - 1)))" >/dev/null
	rows+=$'\n'$(printf '%d\t%d new\t%s\n' "$r" "$step" "$(pass)")
	say "pass $r done"
done

rev=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "PostgreSQL $pg, pg_warmcache $rev, set ${set_gb} GB, ${change}% changed per dump, follow_primary os"
echo
echo "| pass | change | blocks | pass s | workers' CPU s | found cached, not read |"
echo "|---:|---|---:|---:|---:|---:|"
while IFS=$'\t' read -r n ch b s c f; do
	echo "| $n | $ch | $b | $s | $c | ${f:-n/a} |"
done <<<"$rows"
