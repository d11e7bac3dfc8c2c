#!/bin/bash
# The restore beside a hot set the queries have already cached, with a
# saved set twice shared_buffers: what the restore costs the queries (TPS
# against no warm-up) and whether it evicts their pages (pg_buffercache).
#
#   bench/never-evict.sh [--pg 15] [--disk capped] [--scale 100] [--reps 3]
#                        [--methods none,warmcache,none-again,warmcache-alt,warmcache-base]
#                        [--seconds 30]
#                        [--trigger 5]
#
# --pg and --disk take lists.  Per (pg, disk): builds and installs
# pg_warmcache and reuses warmup.sh's pgbench database (bench/lib.sh), dd of
# the database files (cold, under the cap on the capped disk).
#
# The saved set: a start with shared_buffers 4GB, every relation fork of
# the database prewarmed, warmcache_dump_now() with dump_os_cache = off: N
# blocks, the database and the catalogs.  The runs have shared_buffers =
# N / 2 blocks, so the saved set is twice shared_buffers.
#
# Per repetition, each method once, the order rotated: the saved file put
# back, sync, drop the OS cache, start with pg_warmcache.autowarm = off
# (under the cap on the capped disk), and from the moment the server
# accepts connections warmup.sh's hot-start clients for --seconds:
#   pgbench -n -M prepared -c 2 -j 2 -P 1 with aid = random(1, n / 100)
# a hot set of 1% of pgbench_accounts (HOT_DIVISOR), which the queries
# cache in their first second or two.  At --trigger seconds, the hot set's
# pages in shared buffers are listed (pg_buffercache, created in the bench
# database if it is missing: buffer, relation,
# fork and block of pgbench_accounts and its primary key), then warmcache
# asks for the restore (warmcache_restore_now(), the default mode), none
# and none-again (a control: its ratio to none is the workload's own
# spread) do nothing; warmcache-alt is warmcache with the settings of
# ALT_CONF (bench/lib.sh) from the server's start, warmcache-base is
# warmcache with the library built from BASE_REV (bench/lib.sh, "The base
# build").  When pgbench and the restore have ended, the list
# again.  A page is kept if it is in the same buffer: one evicted and read
# again by the queries would come back in another.  Pages cached anywhere
# are counted too.
#
# contrib's autoprewarm is not a method here: it restores only when the
# server starts (pg_prewarm.autoprewarm is read at start), before any hot
# set is cached.
#
# Output in bench/out/<timestamp>-never-evict/ (OUT_DIR overrides):
# results.md (also printed), summary.csv (one line per run), raw/ (pgbench
# output, server logs, the lists, per-run .meta).  bench/never-evict-report.py
# OUT_DIR rebuilds them.  Environment: CLIENTS (2), HOT_DIVISOR (100),
# RESTORE_WAIT (60 s), BENCH_LOCK (each repetition holds it), and
# bench/lib.sh's.  About 2 min per repetition at the defaults.  Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pgs=15 disks=capped scale=100 reps=3 methods=none,warmcache,none-again seconds=30 trigger=5
args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pgs=$2; shift 2 ;;
	--disk) disks=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--methods) methods=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--trigger) trigger=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
CLIENTS=${CLIENTS:-2}
HOT_DIVISOR=${HOT_DIVISOR:-100}
RESTORE_WAIT=${RESTORE_WAIT:-60}
whole_numbers scale reps seconds trigger CLIENTS HOT_DIVISOR RESTORE_WAIT
((reps >= 1 && trigger >= 1 && seconds > trigger)) || die "--reps and --trigger must be >= 1, --seconds above --trigger"
IFS=, read -r -a methodlist <<<"$methods"
for m in "${methodlist[@]}"; do
	case "$m" in
	none | none-again | warmcache | warmcache-alt) ;;
	warmcache-base) WANT_BASE=1 ;;
	*) die "unknown method $m (none, none-again, warmcache, warmcache-alt, warmcache-base)" ;;
	esac
done
[ "${WANT_BASE:-0}" = 0 ] || BASE_SHORT=$(base_rev) || exit 1
IFS=, read -r -a pglist <<<"$pgs"
IFS=, read -r -a disklist <<<"$disks"

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-never-evict}
mkdir -p "$out/raw"
hot_start_sql "$out/hot-start.sql"
{
	echo "command=bench/never-evict.sh ${args[*]}"
	echo "effective=--pg $pgs --disk $disks --scale $scale --reps $reps --methods $methods --seconds $seconds --trigger $trigger"
	echo "env=CLIENTS=$CLIENTS HOT_DIVISOR=$HOT_DIVISOR RESTORE_WAIT=$RESTORE_WAIT EXTRA_CONF=${EXTRA_CONF:-}${BASE_SHORT:+ BASE_REV=$BASE_REV}"
	run_info
} >"$out/info.txt"

# The hot set's pages in shared buffers: "buffer relfilenode fork block".
HOT_PAGES="select bufferid || ' ' || relfilenode || ' ' || relforknumber || ' ' || relblocknumber
  from pg_buffercache
 where reldatabase = (select oid from pg_database where datname = current_database())
   and relfilenode in (pg_relation_filenode('pgbench_accounts'), pg_relation_filenode('pgbench_accounts_pkey'))
 order by 1"
UNUSED="select count(*) filter (where relfilenode is null) || ' ' || count(*) from pg_buffercache"

# saved_set KEY: the dump, kept in $CLDIR/dumps/never-evict; sets SAVED and SBUF_KB.
saved_set() {
	local key=$1 d=$CLDIR/dumps/never-evict
	say "$key: the saved set: every fork prewarmed, dumped with dump_os_cache = off"
	pg_stop
	run_conf "pg_warmcache.dump_os_cache = off"
	pg_start "$CLDIR/logs/never-evict-prep.log"
	sql "set client_min_messages = warning; create extension if not exists pg_buffercache" >/dev/null
	prewarm_all
	SAVED=$(sql "select warmcache_dump_now()")
	mkdir -p "$d"
	cp "$PGDATA/pg_warmcache.blocks" "$d/"
	pg_stop
	SBUF_KB=$((SAVED * blcksz / 2 / 1024))
	say "$key: $SAVED blocks saved; the runs have shared_buffers = ${SBUF_KB}kB, half of them"
}

# one_run METHOD REP KEY
one_run() {
	local m=$1 rep=$2 key=$3 name pgb t_bench t_trig t_end re i n_unused_before n_unused_after restored=
	name=$key-$m-r$rep
	say "$name: cold start, pgbench ${seconds} s, the restore at ${trigger} s"
	pg_stop
	install -o "$PG_USER" -m 600 "$CLDIR/dumps/never-evict/pg_warmcache.blocks" "$PGDATA/pg_warmcache.blocks"
	run_conf "shared_buffers = ${SBUF_KB}kB
pg_prewarm.autoprewarm = off
pg_warmcache.autowarm = off
$([ "$m" != warmcache-alt ] || echo "${ALT_CONF:-pg_warmcache.platform_shortcuts = ''}")
$([ "$m" != warmcache-base ] || base_conf)"
	drop_caches
	pg_start "$CLDIR/logs/$name.log"
	[ "$m" != warmcache-base ] || lib_loaded "$BASELIB"
	t_bench=$(now)
	"$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -n -M prepared -c "$CLIENTS" -j "$CLIENTS" \
		-P 1 -T "$seconds" -f "$out/hot-start.sql" -s "$SCALE" bench >"$out/raw/$name.pgbench" 2>&1 &
	pgb=$!
	sleep "$(awk -v t="$trigger" -v a="$t_bench" -v b="$(now)" 'BEGIN { s = t - (b - a); print (s > 0 ? s : 0) }')"
	sql "$HOT_PAGES" >"$out/raw/$name.before"
	n_unused_before=$(sql "$UNUSED")
	t_trig=$(now)
	[[ $m != warmcache* ]] || sql "select warmcache_restore_now()" >/dev/null
	wait "$pgb" || say "WARNING: pgbench failed, see $out/raw/$name.pgbench"
	t_end=$(now)
	if [[ $m == warmcache* ]]; then
		re=$(restore_re warmcache)
		for ((i = 0; i < RESTORE_WAIT * 10; i++)); do
			grep -Eq "$re" "$CLDIR/logs/$name.log" && break
			sleep 0.1
		done
		restored=$(grep -Eo "$re.*" "$CLDIR/logs/$name.log" | head -1 || true)
		[ -n "$restored" ] || say "$name: the restore had not ended after $RESTORE_WAIT s more"
	fi
	sql "$HOT_PAGES" >"$out/raw/$name.after"
	n_unused_after=$(sql "$UNUSED")
	pg_stop
	cp "$CLDIR/logs/$name.log" "$out/raw/$name.log"
	printf '%s\n' "launch=$T_LAUNCH" "ready=$T_READY" "bench_start=$t_bench" "trigger=$t_trig" "bench_end=$t_end" \
		"unused_buffers_before=${n_unused_before% *}" "unused_buffers_after=${n_unused_after% *}" \
		"buffers=${n_unused_before#* }" "restore=$restored" >"$out/raw/$name.meta"
	say "$name: $(wc -l <"$out/raw/$name.before") hot pages before, $(awk 'NR == FNR { a[$0]; next } $0 in a' \
		"$out/raw/$name.before" "$out/raw/$name.after" | wc -l) of them in the same buffer after${restored:+; $restored}"
}

one_rep() {
	local nm=${#methodlist[@]} i
	for ((i = 0; i < nm; i++)); do
		one_run "${methodlist[$(((i + $1 - 1) % nm))]}" "$1" "$2"
	done
}

# one_cluster KEY: the saved set, then the repetitions.
one_cluster() {
	local rep
	locked saved_set "$1"
	cluster_meta "$out/raw/$1.meta" "saved_blocks=$SAVED" "shared_buffers_kb=$SBUF_KB" \
		"seconds=$seconds" "trigger=$trigger"
	for ((rep = 1; rep <= reps; rep++)); do
		locked one_rep "$rep" "$1"
	done
}

for_each_cluster one_cluster

/usr/bin/python3 "$BENCH_DIR/never-evict-report.py" "$out"
say "results in $out"
