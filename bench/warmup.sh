#!/bin/bash
# The warm-up curve after a restart: no warm-up vs contrib autoprewarm vs
# pg_warmcache, on the same saved block list.
#
#   bench/warmup.sh [--pg 15|18] [--disk local|capped]
#                   [--workload uniform|hot|hot-start|both|all]
#                   [--methods none,autoprewarm,warmcache,warmcache-buffers,none-again,
#                              reader,reader-slow,warmcache-alt,warmcache-alt2..4,
#                              warmcache-base,pgfincore]
#                   [--seconds 60] [--scale 100] [--reps 1] [--no-idle] [--idle-only]
#                   [--shared-buffers 4GB]
#
# --pg and --disk also take lists (--pg 15,18 --disk local,capped); defaults:
# --pg 15 --disk capped --workload both (uniform and hot; all: the three;
# --workload also takes a list), none,autoprewarm,warmcache, 60 s, scale
# 100, one repetition (with more, methods rotate order and medians are
# reported), shared_buffers 4GB.
#
# The methods: none (no warm-up), autoprewarm (contrib pg_prewarm's),
# warmcache (pg_warmcache with pg_warmcache.dump_os_cache = on: shared
# buffers and the OS page cache) and warmcache-buffers (dump_os_cache = off:
# shared buffers only, as pg_warmcache 1.0) and warmcache-alt (warmcache
# with the settings of ALT_CONF added, by default no direct use of the
# system: pg_warmcache.platform_shortcuts = ''; warmcache-alt2 to -alt4
# with those of ALT2_CONF to ALT4_CONF); warmcache-base is warmcache with
# the library built from BASE_REV, another revision of this repository
# (e.g. BASE_REV=a4728fe, release 1.5: bench/lib.sh, "The base build"), so
# that two builds are weighed in the same run; none-again is none once more,
# a control: its ratio to none is what the workload's own spread alone
# gives.  reader and reader-slow are no warm-up in the server while
# bench/read-files.py, outside it, reads every file of the database once
# from the moment the server is ready (under the cap on the capped disk):
# reader as fast as the device answers, reader-slow at READER_SLOW_MBPS
# (default a third of dd's rate in the same run, so that it takes three
# times as long).  Their ratio to none is what bringing the same bytes in
# from the device costs the workload, whoever does it and however politely:
# a floor under any restore of the whole set.  The reader stops when
# pgbench ends.  pgfincore is the manual peer its documentation describes:
# when the dumps are made, a snapshot of what the OS cache holds of every
# relation of the database (pgfincore(rel, true): a bit per page) goes into
# a table, pgfincore_snap; at the cold start, from the moment the server is
# ready and beside the workload, pgfadvise_loader() advises the kernel to
# read those pages (WILLNEED) and to drop the others.  It needs the
# extension pgfincore in the server (Debian: postgresql-NN-pgfincore).
#
# The reboot scenario, where the OS page cache holds what shared_buffers
# does not: --shared-buffers 256MB at scale 100 (1.5 GB).  The saved state's
# prewarm reads every file through the OS cache, so all of them are in it
# when the dumps are made (results.md says how much was: fincore); every
# cold start drops the OS cache, as a reboot does.
#
# Per (pg, disk): builds and installs pg_warmcache from this repository,
# builds (or reuses) a pgbench database (shared_buffers = 4GB, pg_warmcache
# and pg_prewarm preloaded; on the capped disk the data directory lives on
# capped-disk.sh's loop device and every server start runs under its read
# cap), and measures the device's cold sequential read rate of the database
# files (dd after drop_caches, under the cap on the capped disk).
#
# Per workload, the saved state: restart, pg_prewarm every relation fork of
# the database, run the workload for PREP_SECONDS (30) so the usage counts
# are the workload's, then STEADY_SECONDS (20) more whose median per-second
# TPS is the steady state (measured again the same way after the runs; the
# higher of the two counts, as other work only lowers TPS); then
# autoprewarm_dump_now() and
# warmcache_dump_now() twice, with dump_os_cache off and on, and the three
# files are kept outside the data directory.  Then (unless ESTIMATE=0) a
# cold start with the saved file and no warm-up, for warmcache_estimate():
# its predicted restore and natural warm-up times go into the report
# beside the measured t90.  Then for each method: stop, put both saved files back, set the
# method's settings (none: pg_prewarm.autoprewarm = off and
# pg_warmcache.autowarm = off; autoprewarm: on/off; warmcache: off/on), sync,
# drop the OS cache, start, and the moment the server accepts connections run
#   pgbench -n -S -M prepared -c 2 -j 2 -P 1 -T SECONDS          (uniform)
#   the same with -f hot.sql -s SCALE                            (hot)
#   the same with -f hot-start.sql -s SCALE                      (hot-start)
# where hot.sql picks aid = n - random_exponential(0, n - 1, 20), n = 100000 * scale:
# the newest rows, at the end of the table, are hot; hot-start.sql picks
# aid = random(1, n / 100): a hot set of 1% of the table at its start, which
# the queries themselves cache within a second, so that the rest of the
# run is CPU-bound and shows what a restore that goes on costs them.  After
# pgbench the script waits up to RESTORE_WAIT (60) s for the restore's log
# line.
#
# Idle restore, per (pg, disk): the same cold start with no clients, for
# autoprewarm and warmcache, until the restore's log line (IDLE_WAIT, 600 s),
# from the dumps of the first workload; IDLE_REPS times (1), alternating.
#
# Output in bench/out/<timestamp>/ (OUT_DIR overrides): results.md (also
# printed: t90, mean TPS of the first 30/60 s over steady, restore time and
# MB/s, idle restore against dd, and where the machine's CPU went during
# the runs: /proc/stat sampled once a second, the kernel's and the host's
# steal included, and where the clients waited: pg_stat_activity five
# times a second, the capped disk's reads once a second), tps.csv
# (per-second TPS of every run),
# summary.csv, <pg>-<disk>-<workload>.png (TPS over seconds since start, one
# line per method, steady state dashed), and raw/ (pgbench output, server
# logs).  bench/warmup-report.py OUT_DIR rebuilds them.
#
# Environment: CLIENTS (pgbench's -c and -j, 2), HOT_DIVISOR (hot-start's
# hot set is 1/HOT_DIVISOR of the table, 100), PREP_SECONDS, STEADY_SECONDS, RESTORE_WAIT, IDLE_WAIT, IDLE_REPS,
# AFTER_SECONDS (0; above 0, each run is followed, on the same server, by
# everything prewarmed and the workload for that long: the run's own warm
# level, against which the report gives t90 and the means again, so that
# a machine whose speed drifts between the steady states is told apart
# from a warm-up that leaves the server slower),
# BENCH_LOCK (a lock file: each step, the saved state, one repetition of
# the methods, the second steady state, the idle restores, runs holding it,
# so that other benchmarks on the machine interleave rather than overlap),
# WARMCACHE_CONF / AUTOPREWARM_CONF: extra settings for that method's runs
# (e.g. WARMCACHE_CONF='pg_warmcache.max_restore_rate = 60'); bench/lib.sh
# lists the rest.  A default run takes about 11 min per (pg, disk) at scale
# 100 on the capped disk (one workload with the idle restores: 5 min), plus
# under a minute the first time to build the database.
# Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pgs=15 disks=capped workload=both methods=none,autoprewarm,warmcache seconds=60 scale=100 reps=1
idle=1 runs=1 sbuf=4GB
args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pgs=$2; shift 2 ;;
	--disk) disks=$2; shift 2 ;;
	--workload) workload=$2; shift 2 ;;
	--methods) methods=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--no-idle) idle=0; shift ;;
	--idle-only) runs=0; shift ;;
	--shared-buffers) sbuf=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
CLIENTS=${CLIENTS:-2}
HOT_DIVISOR=${HOT_DIVISOR:-100}
PREP_SECONDS=${PREP_SECONDS:-30}
STEADY_SECONDS=${STEADY_SECONDS:-20}
RESTORE_WAIT=${RESTORE_WAIT:-60}
IDLE_WAIT=${IDLE_WAIT:-600}
IDLE_REPS=${IDLE_REPS:-1}
AFTER_SECONDS=${AFTER_SECONDS:-0}
whole_numbers seconds scale reps PREP_SECONDS STEADY_SECONDS RESTORE_WAIT IDLE_WAIT IDLE_REPS AFTER_SECONDS
((reps >= 1 && seconds >= 1 && STEADY_SECONDS >= 1)) || die "--reps, --seconds and STEADY_SECONDS must be >= 1"
case "$workload" in
both) workloads=(uniform hot) ;;
all) workloads=(uniform hot hot-start) ;;
uniform | hot | hot-start) workloads=("$workload") ;;
*) IFS=, read -r -a workloads <<<"$workload" ;;
esac
for w in "${workloads[@]}"; do
	case "$w" in uniform | hot | hot-start) ;; *) die "unknown workload $w" ;; esac
done
IFS=, read -r -a methodlist <<<"$methods"
for m in "${methodlist[@]}"; do
	case "$m" in none | none-again | autoprewarm | warmcache | warmcache-buffers | warmcache-alt | warmcache-alt[234] | reader | reader-slow) ;;
	pgfincore) WANT_FINCORE=1 ;;
	warmcache-base) WANT_BASE=1 ;;
	*) die "unknown method $m" ;;
	esac
done
# The base build's revision, checked before anything runs.
[ "${WANT_BASE:-0}" = 0 ] || BASE_SHORT=$(base_rev) || exit 1
[[ $sbuf =~ ^[0-9]+[kMG]B$ ]] || die "--shared-buffers: a size like 256MB or 4GB"
EXTRA_CONF="shared_buffers = $sbuf
${EXTRA_CONF:-}"
IFS=, read -r -a pglist <<<"$pgs"
IFS=, read -r -a disklist <<<"$disks"

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/raw"
cat >"$out/hot.sql" <<'EOF'
\set n 100000 * :scale
\set aid :n - random_exponential(0, :n - 1, 20)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
EOF
hot_start_sql "$out/hot-start.sql"
{
	echo "command=bench/warmup.sh ${args[*]}"
	echo "effective=--pg $pgs --disk $disks --workload $workload --methods $methods --seconds $seconds --scale $scale --reps $reps --shared-buffers $sbuf$([ $idle = 1 ] || echo ' --no-idle')$([ $runs = 1 ] || echo ' --idle-only')"
	echo "env=CLIENTS=$CLIENTS HOT_DIVISOR=$HOT_DIVISOR PREP_SECONDS=$PREP_SECONDS STEADY_SECONDS=$STEADY_SECONDS RESTORE_WAIT=$RESTORE_WAIT IDLE_REPS=$IDLE_REPS AFTER_SECONDS=$AFTER_SECONDS WARMCACHE_CONF=${WARMCACHE_CONF:-} AUTOPREWARM_CONF=${AUTOPREWARM_CONF:-} EXTRA_CONF=${EXTRA_CONF:-}$(for v in ALT_CONF ALT2_CONF ALT3_CONF ALT4_CONF; do [ -z "${!v:-}" ] || printf ' %s=%s' "$v" "${!v}"; done)${BASE_SHORT:+ BASE_REV=$BASE_REV}" | tr '\n' ' '
	echo
	run_info
} >"$out/info.txt"

# pgbench_run WORKLOAD SECONDS OUTFILE: the clients, as the README says.
pgbench_run() {
	local w=$1 secs=$2 f=$3 extra=(-S)
	case "$w" in
	hot | hot-start) extra=(-f "$out/$w.sql" -s "$SCALE") ;;
	esac
	"$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -n -M prepared \
		-c "$CLIENTS" -j "$CLIENTS" -P 1 \
		-T "$secs" "${extra[@]}" bench >"$f" 2>&1 || say "WARNING: pgbench failed, see $f"
}

# wait_restore METHOD LOG SECONDS: until the restore's log line, at most SECONDS.
wait_restore() {
	local re i
	re=$(restore_re "$1")
	[ -n "$re" ] || return 0
	for ((i = 0; i < $3 * 10; i++)); do
		grep -Eq "$re" "$2" && return 0
		sleep 0.1
	done
	say "restore of $1 not finished after $3 s"
}

# cold_start METHOD WORKLOAD_OF_THE_DUMPS LOG: stop, saved files back, the
# method's settings, drop the OS cache, start.
cold_start() {
	pg_stop
	local d=$CLDIR/dumps/$2
	install -o "$PG_USER" -m 600 "$d/autoprewarm.blocks" "$PGDATA/autoprewarm.blocks"
	if [ "$1" = warmcache-buffers ]; then
		install -o "$PG_USER" -m 600 "$d/pg_warmcache-buffers.blocks" "$PGDATA/pg_warmcache.blocks"
	else
		install -o "$PG_USER" -m 600 "$d/pg_warmcache.blocks" "$PGDATA/pg_warmcache.blocks"
	fi
	method_conf "$1"
	drop_caches
	pg_start "$3"
	[ "$1" != warmcache-base ] || lib_loaded "$BASELIB"
}

# fincore_snapshot WORKLOAD: pgfincore's snapshot of what the OS cache holds
# of each relation of the database, as the dumps are made, into
# pgfincore_snap (its rows of WORKLOAD replaced).
fincore_snapshot() {
	[ "$(sql "select count(*) from pg_available_extensions where name = 'pgfincore'")" = 1 ] ||
		die "method pgfincore: the extension pgfincore is not installed for PostgreSQL $PG_MAJOR"
	sql "create extension if not exists pgfincore" >/dev/null
	sql "create table if not exists pgfincore_snap (workload text, rel regclass, segment int, databit varbit)" >/dev/null
	sql "delete from pgfincore_snap where workload = '$1'" >/dev/null
	sql "insert into pgfincore_snap
	     select '$1', c.oid::regclass, f.segment, f.databit
	       from pg_class c, pgfincore(c.oid::regclass, true) f
	      where c.relkind in ('r', 'i', 't', 'm') and c.oid <> 'pgfincore_snap'::regclass" >/dev/null
}

# prepare WORKLOAD: the saved state and the steady state of one workload.
prepare() {
	local w=$1 key=$2 n_apw n_wc n_wcb ranks res
	say "$key $w: prewarm everything, run the workload ${PREP_SECONDS}+${STEADY_SECONDS} s, dump"
	pg_stop
	run_conf ""
	pg_start "$CLDIR/logs/prep-$w.log"
	prewarm_all
	cpu_sampler_start "$out/raw/$key-$w-steady.stat"
	pgbench_run "$w" $((PREP_SECONDS + STEADY_SECONDS)) "$out/raw/$key-$w-steady.pgbench"
	cpu_sampler_stop
	# How much of the database files the OS cache holds (util-linux fincore).
	res=$(db_files | xargs fincore -b -n -o RES,SIZE 2>/dev/null |
		awk '{ r += $1; s += $2 } END { if (s) printf "%.0f of %.0f MB", r / 1048576, s / 1048576 }' || true)
	n_apw=$(sql "select autoprewarm_dump_now()")
	mkdir -p "$CLDIR/dumps/$w"
	# dump_os_cache is reloadable: set it in bench_run.conf, reload, dump.
	run_conf "pg_warmcache.dump_os_cache = off"
	sql "select pg_reload_conf()" >/dev/null
	n_wcb=$(sql "select warmcache_dump_now()")
	cp "$PGDATA/pg_warmcache.blocks" "$CLDIR/dumps/$w/pg_warmcache-buffers.blocks"
	run_conf "pg_warmcache.dump_os_cache = on"
	sql "select pg_reload_conf()" >/dev/null
	n_wc=$(sql "select warmcache_dump_now()")
	ranks=$(sql "select string_agg(coalesce(rank::text, tier) || ':' || n, ' ' order by rank) from
	             (select rank, tier, count(*) n from warmcache_blocks() group by rank, tier) r" || echo "?")
	cp "$PGDATA/autoprewarm.blocks" "$PGDATA/pg_warmcache.blocks" "$CLDIR/dumps/$w/"
	[ "${WANT_FINCORE:-0}" = 0 ] || fincore_snapshot "$w"
	# As a DBA asks it before a planned restart: the OS cache holds the set.
	[ "${ESTIMATE:-1}" = 0 ] || estimate_now "$out/raw/$key-$w-estimate-warm.meta" >/dev/null
	write_meta "$out/raw/$key-$w-steady.meta" "prep_seconds=$PREP_SECONDS" "steady_seconds=$STEADY_SECONDS" \
		"autoprewarm_blocks=$n_apw" "warmcache_blocks=$n_wc" "warmcache_buffers_blocks=$n_wcb" \
		"warmcache_ranks=$ranks" "os_resident=$res" "shared_buffers=$(sql 'show shared_buffers')"
	say "$key $w: dumped $n_apw (autoprewarm), $n_wcb (pg_warmcache, buffers only) and $n_wc (pg_warmcache with the OS tier) blocks; ranks $ranks; OS cache held $res"
	pg_stop
}

# estimate_now META: warmcache_estimate()'s row into the file META; prints
# "restore_seconds natural_seconds".
estimate_now() {
	local row e_rs e_ns e_rate e_rand e_bt e_ot e_db e_rb e_nb
	row=$(psqlc -At -d bench -F '|' -c "select restore_seconds, natural_seconds, read_mb_per_s,
		random_read_ms, buffer_tier_bytes, os_tier_bytes, distinct_bytes, restore_basis, natural_basis
		from warmcache_estimate()")
	IFS='|' read -r e_rs e_ns e_rate e_rand e_bt e_ot e_db e_rb e_nb <<<"$row"
	write_meta "$1" "restore_seconds=$e_rs" "natural_seconds=$e_ns" \
		"read_mb_per_s=$e_rate" "random_read_ms=$e_rand" "buffer_tier_bytes=$e_bt" "os_tier_bytes=$e_ot" \
		"distinct_bytes=$e_db" \
		"restore_basis=$e_rb" "natural_basis=$e_nb"
	echo "$e_rs $e_ns"
}

# estimate_cold WORKLOAD KEY: warmcache_estimate() as a DBA would ask it
# after a restart that emptied the caches: on a cold start with the saved
# file (with the OS tier) in place and no warm-up, so that its probe times
# the device on the saved set's blocks.  prepare asks it on the warm server
# too, before its restart.  The predictions go into the report beside the
# measured t90.
estimate_cold() {
	local w=$1 key=$2 e_rs e_ns
	say "$key $w: warmcache_estimate() on a cold start"
	cold_start none "$w" "$CLDIR/logs/estimate-$w.log"
	read -r e_rs e_ns < <(estimate_now "$out/raw/$key-$w-estimate.meta")
	say "$key $w: predicted restore $e_rs s, natural warm-up $e_ns s"
	pg_stop
}

# steady_after WORKLOAD: a second steady-state measurement after the runs
# (other work on the machine only ever lowers TPS: the report takes the
# higher of the two).
steady_after() {
	local w=$1 key=$2
	say "$key $w: steady state again: prewarm everything, run the workload ${STEADY_SECONDS} s"
	pg_stop
	run_conf ""
	pg_start "$CLDIR/logs/steady2-$w.log"
	prewarm_all
	cpu_sampler_start "$out/raw/$key-$w-steady2.stat"
	pgbench_run "$w" "$STEADY_SECONDS" "$out/raw/$key-$w-steady2.pgbench"
	cpu_sampler_stop
	pg_stop
}

# reader_start METHOD NAME: for the reader methods, read-files.py in the
# background (under the cap on the capped disk); sets READER_PID and
# READER_RATE.
reader_start() {
	local rate=
	READER_PID= READER_RATE=
	case "$1" in
	reader) ;;
	reader-slow) rate=${READER_SLOW_MBPS:-$(awk -v r="$CR_RATE" 'BEGIN { printf "%.1f", r / 3 }')} ;;
	*) return 0 ;;
	esac
	READER_RATE=$rate
	${CAPPED:+bash "$CAPPED" run} /usr/bin/python3 "$BENCH_DIR/read-files.py" \
		${rate:+--rate "$rate"} "${files[@]}" >"$out/raw/$2.reader" &
	READER_PID=$!
}

# loader_start METHOD NAME WORKLOAD: for pgfincore, its loader in the
# background, in a session of the server (so under the cap on the capped
# disk); it writes "<seconds> <pages advised>" into raw/NAME.loader.  Sets
# LOADER_PID.
loader_start() {
	LOADER_PID=
	[ "$1" = pgfincore ] || return 0
	(
		t0=$(now)
		n=$(sql "select sum(l.pages_loaded)
		           from pgfincore_snap s,
		                lateral pgfadvise_loader(s.rel, s.segment, true, true, s.databit) l
		          where s.workload = '$3' and s.databit is not null")
		echo "$(elapsed "$t0" "$(now)") $n" >"$out/raw/$2.loader"
	) &
	LOADER_PID=$!
}

# one_run WORKLOAD METHOD REP
one_run() {
	local w=$1 m=$2 rep=$3 key=$4 name t_bench t_end load
	name=$key-$w-$m-r$rep
	say "$name: cold start, pgbench ${seconds} s"
	cold_start "$m" "$w" "$CLDIR/logs/$name.log"
	cpu_sampler_start "$out/raw/$name.stat"
	activity_sampler_start "$out/raw/$name.activity"
	reader_start "$m" "$name"
	loader_start "$m" "$name" "$w"
	t_bench=$(now)
	pgbench_run "$w" "$seconds" "$out/raw/$name.pgbench"
	t_end=$(now)
	if [ -n "$READER_PID" ]; then
		kill -TERM "$READER_PID" 2>/dev/null || true
		wait "$READER_PID" || true
	fi
	[ -z "$LOADER_PID" ] || wait "$LOADER_PID" || true
	activity_sampler_stop
	cpu_sampler_stop
	read -r load _ </proc/loadavg
	wait_restore "$m" "$CLDIR/logs/$name.log" "$RESTORE_WAIT"
	if ((AFTER_SECONDS > 0)); then
		# This run's own warm level: the same server, everything prewarmed
		# as for the steady state, the machine as it is now.
		prewarm_all
		pgbench_run "$w" "$AFTER_SECONDS" "$out/raw/$name-after.pgbench"
	fi
	pg_stop
	cp "$CLDIR/logs/$name.log" "$out/raw/$name.log"
	write_meta "$out/raw/$name.meta" "launch=$T_LAUNCH" "ready=$T_READY" "bench_start=$t_bench" "bench_end=$t_end" \
		"load_end=$load" "reader_rate=$READER_RATE" "conf=$(tr '\n' ';' <"$PGDATA/bench_run.conf")"
}

# idle_run METHOD KEY REP
idle_run() {
	local m=$1 key=$2 rep=$3 name t_done
	name=$key-idle-$m-r$rep
	say "$name: cold start, no clients, until the restore ends"
	cold_start "$m" "${workloads[0]}" "$CLDIR/logs/$name.log"
	wait_restore "$m" "$CLDIR/logs/$name.log" "$IDLE_WAIT"
	t_done=$(now)
	pg_stop
	cp "$CLDIR/logs/$name.log" "$out/raw/$name.log"
	write_meta "$out/raw/$name.meta" "launch=$T_LAUNCH" "ready=$T_READY" "seen_done=$t_done" "dumps=${workloads[0]}" \
		"conf=$(tr '\n' ';' <"$PGDATA/bench_run.conf")"
}

# one_rep WORKLOAD REP KEY: every method once, the order rotated per repetition.
one_rep() {
	local nm=${#methodlist[@]} i
	for ((i = 0; i < nm; i++)); do
		one_run "$1" "${methodlist[$(((i + $2 - 1) % nm))]}" "$2" "$3"
	done
}

# idle_runs KEY: IDLE_REPS idle restores of every method, the order rotated.
idle_runs() {
	local rep i m nm=${#methodlist[@]}
	for ((rep = 1; rep <= IDLE_REPS; rep++)); do
		for ((i = 0; i < nm; i++)); do
			m=${methodlist[$(((i + rep - 1) % nm))]}
			[[ $m == none* || $m == reader* ]] || idle_run "$m" "$1" "$rep"
		done
	done
}

# one_cluster KEY: per workload the saved state and the runs, then the
# idle restores.
one_cluster() {
	local key=$1 w rep
	cluster_meta "$out/raw/$key.meta" "pgdata=$PGDATA"
	for w in "${workloads[@]}"; do
		if [ $runs = 0 ] && [ "$w" != "${workloads[0]}" ]; then continue; fi
		if [ $runs = 0 ] && [ -f "$CLDIR/dumps/$w/pg_warmcache.blocks" ]; then continue; fi
		locked prepare "$w" "$key"
		[ "${ESTIMATE:-1}" = 0 ] || locked estimate_cold "$w" "$key"
		[ $runs = 1 ] || continue
		for ((rep = 1; rep <= reps; rep++)); do
			locked one_rep "$w" "$rep" "$key"
		done
		locked steady_after "$w" "$key"
	done
	[ $idle = 0 ] || locked idle_runs "$key"
	pg_stop
}

for_each_cluster one_cluster

/usr/bin/python3 "$BENCH_DIR/warmup-report.py" "$out"
say "results in $out"
