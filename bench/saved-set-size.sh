#!/bin/bash
# What the saved set costs on disk and in WAL: the dump file's bytes per
# block, and the WAL one publication to standbys writes per block, for
# cache shapes from the worst (every other block cached: a run per block)
# to the best (one long run).
#
#   bench/saved-set-size.sh [--pg 15|18] [--shared-buffers 2GB]
#                           [--shapes alternate,random,long] [--reps 2]
#                           [--change PERCENT]
#
# The cluster: bench/lib.sh's local one (scale 1), with shared_buffers as
# given, wal_level replica, and pg_receivewal attached as a WAL receiver,
# because a primary publishes its dump only while a standby streams.  The
# table "sizes" has one 8 kB row per block (storage plain, so neither
# compressed nor toasted) and 1.8 times as many blocks as shared_buffers
# holds.  Per shape, after a restart (empty shared buffers; the autowarm
# worker restores nothing):
#   alternate: every other block of the table, 0.9 x shared_buffers
#              blocks, each by warm(..., b, b): a run per block, the
#              worst case for the file, and a regular one;
#   random:    each block of the table with probability 1/2: runs of
#              random lengths and gaps, which compress least;
#   long:      the first 0.9 x shared_buffers blocks, by one warm().
# The dumps' OS tier is off (pg_warmcache.dump_os_cache): the table, just
# written, is in the OS page cache whole, and would add a long run to every
# shape.
# Then per repetition: pg_current_wal_insert_lsn(), warmcache_dump_now(),
# wait until warmcache_published holds that dump (chunk 0's dumped_at),
# pg_current_wal_insert_lsn() again.  The WAL between the two is the
# publication's: the dump itself writes none.  The first repetition
# replaces a publication of another shape, the next ones one of the same
# set.  Also read: the file's size, its header's runs and blocks, and what
# the same runs took in version 2 of the file (56 + 28 bytes a run), and
# whether the publication was whole or a delta against the one before.
# With --change P (a percentage, default 0), each repetition after the
# first changes P% of the cached blocks before its dump: half of them
# blocks read anew (the next uncached blocks of a window that moves on),
# half cached blocks read again (their usage count, the rank in the file,
# goes up): what a standby needs then is the change.
#
# Output: a Markdown table (also in bench/out/<timestamp>-saved-set-size/
# results.md).  Sizes do not drift with the disk: no medians are needed,
# and the repetitions show that.  Environment: bench/lib.sh's.  Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 sb=2GB shapes=alternate,random,long reps=2 change=0
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--shared-buffers) sb=$2; shift 2 ;;
	--shapes) shapes=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--change) change=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
[[ $reps =~ ^[0-9]+$ ]] && ((reps >= 1)) || die "--reps must be a whole number >= 1"
[[ $change =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--change must be a percentage"
IFS=, read -r -a shapelist <<<"$shapes"
for s in "${shapelist[@]}"; do
	case "$s" in alternate | random | long) ;; *) die "unknown shape $s (alternate, random, long)" ;; esac
done

EXTRA_CONF="shared_buffers = $sb
wal_level = replica
max_wal_senders = 4
max_wal_size = 16GB
pg_warmcache.dump_os_cache = off
${EXTRA_CONF:-}"
use_pg "$pg"
use_cluster local 1
setup_ext() {
	for d in bench postgres; do
		DB=$d sql "create extension if not exists pg_prewarm; create extension if not exists pg_warmcache;
		           update pg_proc set probin = 'pg_warmcache' where probin = '\$libdir/pg_warmcache'"
	done
}
ensure_db channel setup_ext
out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-saved-set-size}
mkdir -p "$out"
walrcv=$CLDIR/walrcv
rcv_pid=
stop_receiver() {
	pkill -f "pg_receivewal .*-D $walrcv" 2>/dev/null || true
	rcv_pid=
}
cleanup() {
	stop_receiver
	pg_stop 2>/dev/null || true
	rm -rf "$walrcv"
}
trap cleanup EXIT

pg_start "$CLDIR/logs/saved-set-size.log"
verify_lib
nbuffers=$(sql "select setting from pg_settings where name = 'shared_buffers'")
cached=$((nbuffers * 9 / 10))
want=$((cached * 2))
have=$(sql "select coalesce(pg_relation_size(to_regclass('sizes')) / 8192, 0)")
if ((have < want)); then
	# With wal_level minimal, a table made in one transaction writes no
	# WAL: at shared_buffers 16GB it is 29 GB.
	say "making table sizes: $want blocks of one row each"
	pg_stop
	run_conf $'wal_level = minimal\nmax_wal_senders = 0'
	pg_start "$CLDIR/logs/saved-set-size.log"
	sql "begin;
	     drop table if exists sizes;
	     create table sizes (id int, pad text);
	     alter table sizes alter pad set storage plain;
	     insert into sizes select g, repeat('x', 7000) from generate_series(1, $want) g;
	     commit;
	     checkpoint" >/dev/null
	pg_stop
	run_conf ""
	pg_start "$CLDIR/logs/saved-set-size.log"
fi

start_receiver() {
	rm -rf "$walrcv"
	mkdir -p "$walrcv"
	chown "$PG_USER:" "$walrcv"
	# Not holding the cluster's lock (descriptor 9) or the bench lock (8).
	as_pg "$BINDIR/pg_receivewal" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -D "$walrcv" --no-sync \
		>"$CLDIR/logs/pg_receivewal.log" 2>&1 8>&- 9>&- &
	rcv_pid=$!
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(DB=postgres sql "select count(*) from pg_stat_replication")" -gt 0 ] && return 0
		sleep 0.1
	done
	die "pg_receivewal did not connect (log $CLDIR/logs/pg_receivewal.log)"
}

# one_publication: prints "blocks runs file_bytes wal_bytes"
one_publication() {
	local lsn0 lsn1 blocks at i
	lsn0=$(sql "select pg_current_wal_insert_lsn()")
	blocks=$(sql "select warmcache_dump_now()")
	at=$(sql "select last_dump_at from warmcache_status()")
	for ((i = 0; i < 600; i++)); do
		[ "$(DB=postgres sql "select count(*) from public.warmcache_published where chunk <= 0 and dumped_at = '$at'")" = 1 ] && break
		sleep 0.1
	done
	((i < 600)) || die "the dump of $at was not published within 60 s"
	lsn1=$(sql "select pg_current_wal_insert_lsn()")
	sql "select $blocks,
	            (select sum(get_byte(h, i)::numeric * 256 ^ i) from generate_series(0, 7) i,
	                    pg_read_binary_file('pg_warmcache.blocks', 40, 8) h),
	            (pg_stat_file('pg_warmcache.blocks')).size,
	            pg_wal_lsn_diff('$lsn1', '$lsn0')" | tr '|' ' ' | tr -d '\n'
	echo " $(DB=postgres sql "select case when chunk < 0 then 'delta' else 'whole' end
	             from public.warmcache_published where chunk <= 0 and dumped_at = '$at'")"
}

# change_set REP: P% of the cached blocks changed (see above).
change_set() {
	local n half lo
	n=$(awk -v c="$cached" -v p="$change" 'BEGIN { printf "%d", c * p / 100 }')
	half=$((n / 2))
	((half > 0)) || return 0
	lo=$(( ($1 - 2) * 4 * half % (2 * cached - 4 * half) ))
	case "$shape" in
	long)
		sql "select warm('sizes', 'buffer', 'main', $((cached + ($1 - 2) * half)), $((cached + ($1 - 1) * half - 1)))" >/dev/null
		sql "select warm('sizes', 'buffer', 'main', $(( ($1 - 2) * half )), $(( ($1 - 1) * half - 1)))" >/dev/null
		;;
	*)
		# the odd blocks of a window (not cached by alternate; about half
		# of them by random), then as many even ones again
		sql "select count(warm('sizes', 'buffer', 'main', b, b)) from generate_series($((lo + 1)), $((lo + 2 * half)), 2) b" >/dev/null
		sql "select count(warm('sizes', 'buffer', 'main', b, b)) from generate_series($((lo + 2 * half)), $((lo + 4 * half - 1)), 2) b" >/dev/null
		;;
	esac
}

{
	echo "command=bench/saved-set-size.sh --pg $pg --shared-buffers $sb --shapes $shapes --reps $reps --change $change"
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "repo=$(repo_version)"
	echo "shared_buffers=$nbuffers blocks; table sizes: $(sql "select pg_relation_size('sizes') / 8192") blocks; cached per shape: $cached blocks"
	echo
	echo "| shape | rep | blocks | runs | file bytes | bytes/block | v2 bytes/block | publication | WAL bytes | WAL bytes/block |"
	echo "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"
} | tee "$out/results.md"
# measure_shape SHAPE: the rows of one shape.
measure_shape() {
	local shape=$1 r blocks runs bytes wal kind
	stop_receiver
	pg_stop
	pg_start "$CLDIR/logs/saved-set-size.log"
	start_receiver
	say "$shape: caching $cached blocks"
	case "$shape" in
	alternate) sql "select count(warm('sizes', 'buffer', 'main', b, b)) from generate_series(0, $((2 * cached - 1)), 2) b" >/dev/null ;;
	random) sql "select setseed(0.5); select count(warm('sizes', 'buffer', 'main', b, b)) from generate_series(0, $((2 * cached - 1))) b where random() < 0.5" >/dev/null ;;
	long) sql "select warm('sizes', 'buffer', 'main', 0, $((cached - 1)))" >/dev/null ;;
	esac
	for ((r = 1; r <= reps; r++)); do
		((r == 1)) || change_set "$r"
		read -r blocks runs bytes wal kind < <(one_publication)
		awk -v s="$shape" -v r="$r" -v b="$blocks" -v n="$runs" -v f="$bytes" -v w="$wal" -v k="$kind" 'BEGIN {
			printf "| %s | %d | %d | %d | %d | %.2f | %.2f | %s | %d | %.2f |\n",
				s, r, b, n, f, f / b, (56 + 28 * n) / b, k, w, w / b }' | tee -a "$out/results.md"
	done
}
for shape in "${shapelist[@]}"; do
	locked measure_shape "$shape"
done
