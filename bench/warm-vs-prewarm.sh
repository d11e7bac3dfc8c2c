#!/bin/bash
# warm() against contrib pg_prewarm() where each can be limited: the CPU,
# the device's I/O operations, its bandwidth, or a local disk.
#
#   bench/warm-vs-prewarm.sh [--pg 15|18] [--scale 100] [--reps 7]
#                            [--conditions cpu,iops,capped,cold]
#                            [--modes buffer] [--workers 2] [--huge-pages on|off]
#                            [--alt] [--builds new|new,base]
#
# Conditions:
#   cpu     the files in the OS cache, shared_buffers cold (a restart): the
#           CPU is the limit (local disk)
#   iops    a volume capped at 3000 read IOPS and 1 GB/s, read_ahead_kb 128,
#           like a general-purpose cloud SSD: the number of reads is the limit
#   capped  the same volume at 3000 IOPS and 125 MB/s: bandwidth is the limit
#   cold    the local disk after drop_caches
# The capped volume is bench/capped-disk.sh's (CAP_* environment set here).
#
# Builds and installs pg_warmcache from this repository into the chosen
# PostgreSQL, builds (or reuses) a pgbench database of the given scale in a
# cluster with shared_buffers = 4GB and both pg_warmcache and pg_prewarm
# preloaded (autowarm and autoprewarm off), one on the local disk and one on
# the capped volume.  Per condition and repetition: the raw sequential read
# rate of the files (dd bs=1M, cold except for cpu, under the cap on the
# volume), then for each method, in an order that rotates from one
# repetition to the next, a start in the condition's state (server
# stopped; OS cache dropped, or for cpu the files read into it; server
# started) and the timed statement
#   select F('pgbench_accounts', MODE) + F('pgbench_accounts_pkey', MODE)
# after the catalogs it needs were read.  Methods: pg_prewarm; warm alone
# (pg_warmcache.max_warm_workers = 0); warm with up to --workers workers
# (buffer and read modes only; prefetch is never split; default 2, the
# setting's default).  Prefetch only issues advice: its time is the time to
# return, and a second row, prefetch-until-cached, times it until 99% of the
# files is in the OS cache (fincore polled every 20 ms).
#
# --alt adds a method, warm-alt: warm with up to --workers workers in a
# session with pg_warmcache.platform_shortcuts = ALT_SHORTCUTS (default
# '', no direct use of the system), so that a shortcut is weighed against
# the same build in the same run.
#
# --builds new,base (the default when BASE_REV is set) adds a method,
# warm-base: warm with up to --workers workers, as warm-parallel, in a
# server that loads the library built from BASE_REV, another revision of
# this repository (e.g. BASE_REV=a4728fe, release 1.5: bench/lib.sh, "The
# base build"), started from the same state as the others.  The table
# gives, per condition, the work tree's warm() time over the base's, each
# repetition's and their median, beside pg_prewarm()'s own spread over the
# repetitions: the machine's alone.
#
# --huge-pages on runs the servers with huge_pages = on, their pages
# reserved in the kernel's pool for the run and given back at its end; off
# (the default) with the ordinary pages of a default install.  In the cpu
# condition the timed call faults in the shared memory it fills (1.5 GB):
# with ordinary pages, about 383,000 faults of 4 kB, with huge ones 750.  raw.csv
# keeps, per call, the machine's steal and system time, page faults and how
# busy its CPUs were (the table shows the last as "CPUs busy").
#
# --profile samples every CPU (perf record -a -g, the cpu-clock event, which
# virtual machines without hardware counters have too) over each timed
# statement, and writes per call the functions that took the most samples,
# each with its process and object (profile/<condition>-<method>-r<rep>.txt):
# what bounds a call, whichever method makes it.  The profiler costs a few
# percent of the CPU: timings with it are not compared with timings without.
#
# Prints a markdown table per condition (medians over the repetitions, the
# spread as min-max, the ratio pg_prewarm time / warm time per repetition,
# MB/s against dd's) and the command line, and keeps it with the raw
# timings in bench/out/<timestamp>-warm-vs-prewarm/ (OUT_DIR overrides).
# Needs root.
# See bench/lib.sh for the environment variables (where the clusters live,
# which pg_config, the port, ...).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 scale=100 reps=7 modes=buffer conditions=cpu,iops,capped,cold workers=2 huge=off alt=0 profile=0
builds=new${BASE_REV:+,base}
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--conditions) conditions=$2; shift 2 ;;
	--workers) workers=$2; shift 2 ;;
	--huge-pages) huge=$2; shift 2 ;;
	--alt) alt=1; shift ;;
	--profile) profile=1; shift ;;
	--builds) builds=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
cmdline="bench/warm-vs-prewarm.sh --pg $pg --scale $scale --reps $reps --conditions $conditions --modes $modes --workers $workers --huge-pages $huge$( ((profile)) && echo " --profile" || true)$( ((alt)) && echo " --alt (ALT_SHORTCUTS='${ALT_SHORTCUTS:-}')" || true)"
case "$huge" in on | off) ;; *) die "--huge-pages: on or off" ;; esac
case "$builds" in
new) ;;
new,base | base,new)
	WANT_BASE=1
	BASE_SHORT=$(base_rev) || exit 1
	cmdline="$cmdline --builds new,base (BASE_REV=$BASE_REV, $BASE_SHORT)"
	;;
*) die "--builds: new or new,base" ;;
esac
base_conf=${EXTRA_CONF:-}
need_root
((!profile)) || command -v perf >/dev/null || die "--profile needs perf (Debian: linux-perf)"
[[ $scale =~ ^[0-9]+$ && $reps =~ ^[0-9]+$ && $reps -ge 1 && $workers =~ ^[0-9]+$ ]] ||
	die "--scale, --reps and --workers take positive integers"
IFS=, read -r -a modelist <<<"$modes"
for m in "${modelist[@]}"; do
	case "$m" in buffer | read | prefetch) ;; *) die "unknown mode $m" ;; esac
done
IFS=, read -r -a condlist <<<"$conditions"
for c in "${condlist[@]}"; do
	case "$c" in cpu | iops | capped | cold) ;; *) die "unknown condition $c" ;; esac
done

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-warm-vs-prewarm}
mkdir -p "$out"
raw=$out/raw.csv
echo "condition,rep,mode,method,seconds,blocks,mb_per_s,steal_ms,system_ms,pgfault,busy_pct" >"$raw"
ddcsv=$out/dd.csv
echo "condition,rep,bytes,seconds,mb_per_s" >"$ddcsv"
setup=$out/setup.txt
: >"$setup"

use_pg "$pg"
version=$("$BINDIR/postgres" --version)

# use_condition COND: the cluster and, on the volume, the cap of COND.
use_condition() {
	case "$1" in
	cpu | cold) use_cluster local "$scale" ;;
	iops)
		CAP_IOPS=3000 CAP_BPS=1000000000 CAP_READAHEAD_KB=128 use_cluster capped "$scale"
		;;
	capped)
		CAP_IOPS=3000 CAP_BPS=131072000 CAP_READAHEAD_KB=128 use_cluster capped "$scale"
		;;
	esac
	# The cluster is made (and its first start runs) with ordinary pages:
	# the pool is sized from the cluster's own settings, once it has them.
	EXTRA_CONF=$base_conf
	ensure_db
	if [ "$huge" = on ]; then
		reserve_huge_pages "$(as_pg "$BINDIR/postgres" -D "$PGDATA" -C shared_memory_size_in_huge_pages)"
		EXTRA_CONF="huge_pages = on
$base_conf"
		write_conf
	fi
	pg_start "$CLDIR/logs/wvp-files.log"
	verify_lib
	mapfile -t files < <(rel_files pgbench_accounts; rel_files pgbench_accounts_pkey)
	relblocks=$(sql "select (pg_relation_size('pgbench_accounts') + pg_relation_size('pgbench_accounts_pkey')) / current_setting('block_size')::int")
	blcksz=$(sql "show block_size")
	pg_stop
	relmb=$(awk -v b="$relblocks" -v s="$blcksz" 'BEGIN { printf "%.1f", b * s / 1048576 }')
	local ra=""
	[ "$DISK" != capped ] || ra=", read_ahead_kb $CAPPED_RA"
	echo "$1: disk $DISK$ra, $PGDATA, pgbench_accounts + pkey $relblocks blocks ($relmb MB) in ${#files[@]} files, huge_pages $huge" >>"$setup"
	say "$1: pgbench_accounts + pkey: $relblocks blocks, $relmb MB, ${#files[@]} files"
}

# The state a start of condition COND begins from: the OS cache dropped, or
# for cpu, the files read into it.  The server is stopped.
prepare() {
	if [ "$1" = cpu ]; then
		cat "${files[@]}" >/dev/null
	else
		drop_caches
	fi
}

# raw_rate COND: dd of the files in COND's state; sets CR_* (lib.sh).
raw_rate() {
	if [ "$1" = cpu ]; then
		local t0 t1
		pg_stop
		prepare cpu
		t0=$(now)
		for f in "${files[@]}"; do dd if="$f" of=/dev/null bs=1M status=none; done
		t1=$(now)
		CR_BYTES=$(stat -c %s "${files[@]}" | awk '{ s += $1 } END { print s }')
		CR_SECS=$(elapsed "$t0" "$t1")
		CR_RATE=$(awk -v b="$CR_BYTES" -v s="$CR_SECS" 'BEGIN { printf "%.1f", b / 1048576 / s }')
	else
		cold_read "${files[@]}"
	fi
}

# After a prefetch: poll the files' page cache residency (fincore) until
# 99% of them is cached, or nothing changed for 3 s.  Sets CACHED_SECS
# (call time + time until cached) and CACHED_BLOCKS.  Also keeps the
# kernel's reads from going on into the next start.
wait_cached() {
	local res last=-1 t_last t relbytes=$((relblocks * blcksz))
	t_last=$(now)
	while :; do
		res=$(fincore -b -n -o RES "${files[@]}" | awk '{ s += $1 } END { print s + 0 }')
		t=$(now)
		((res < relbytes * 99 / 100)) || break
		if ((res != last)); then
			last=$res
			t_last=$t
		elif awk -v a="$t_last" -v b="$t" 'BEGIN { exit !(b - a > 3) }'; then
			t=$t_last
			break
		fi
		sleep 0.02
	done
	CACHED_SECS=$(awk -v c="$CALL_SECS" -v a="$T_RET" -v b="$t" 'BEGIN { printf "%.4f", c + b - a }')
	CACHED_BLOCKS=$((res / blcksz))
}

# machine_counters: MC = (steal ticks, system ticks, page faults, busy
# ticks, all ticks) of the whole machine, from /proc/stat and /proc/vmstat.
# Busy is every CPU's time but idle and iowait: where it is all of it, the
# CPUs are the limit, whatever the device could give.
CLK_TCK=$(getconf CLK_TCK)
machine_counters() {
	local c
	read -r -a c < <(head -1 /proc/stat)
	MC=("${c[8]}" "${c[3]}" "$(awk '$1 == "pgfault" { print $2 }' /proc/vmstat)"
		$((c[1] + c[2] + c[3] + c[6] + c[7] + c[8]))
		$((c[1] + c[2] + c[3] + c[4] + c[5] + c[6] + c[7] + c[8])))
}

# time_call COND METHOD MODE: sets CALL_SECS and CALL_BLOCKS, CALL_STEAL_MS,
# CALL_SYS_MS, CALL_PGFAULT and CALL_BUSY_PCT (the machine's, over the
# statement and the catalog reads before it; busy: percent of all CPUs'
# time), and after a prefetch CACHED_SECS and CACHED_BLOCKS.

time_call() {
	local cond=$1 method=$2 mode=$3 fn=warm set="" o ms blocks
	case "$method" in
	pg_prewarm) fn=pg_prewarm ;;
	warm) set="set pg_warmcache.max_warm_workers = 0;" ;;
	warm-parallel) set="set pg_warmcache.max_warm_workers = $workers;" ;;
	warm-alt) set="set pg_warmcache.max_warm_workers = $workers; set pg_warmcache.platform_shortcuts = '${ALT_SHORTCUTS:-}';" ;;
	warm-base) set="set pg_warmcache.max_warm_workers = $workers;" ;;
	esac
	pg_stop
	# The base build is loaded through bench_run.conf; every other method
	# has it empty, as ensure_db left it.
	if [ "$method" = warm-base ]; then run_conf "$(base_conf)"; elif [ -n "$BASELIB" ]; then run_conf ""; fi
	prepare "$cond"
	pg_start "$CLDIR/logs/wvp-$cond-$method-$mode.log"
	[ "$method" != warm-base ] || lib_loaded "$BASELIB"
	machine_counters
	local before=("${MC[@]}") perf_pid="" pdata=$out/profile/$cond-$method-$mode-r${REP:-0}
	if ((profile)); then
		mkdir -p "$out/profile"
		perf record -q -a -g -e cpu-clock -o "$pdata.data" 2>/dev/null &
		perf_pid=$!
	fi
	o=$(psqlc -d bench -At <<EOF
select 'pgbench_accounts'::regclass, 'pgbench_accounts_pkey'::regclass,
       'pg_prewarm(regclass,text,text,int8,int8)'::regprocedure,
       'warm(regclass,text,text,int8,int8)'::regprocedure;
explain select * from pgbench_accounts where aid = 1;
$set
\timing on
select $fn('pgbench_accounts', '$mode') + $fn('pgbench_accounts_pkey', '$mode');
EOF
	)
	T_RET=$(now)
	if [ -n "$perf_pid" ]; then
		kill -INT "$perf_pid" 2>/dev/null || true
		wait "$perf_pid" 2>/dev/null || true
		perf report -q -i "$pdata.data" --no-children --sort comm,dso,sym --percent-limit 0.5 \
			-g none 2>/dev/null | sed 's/[[:space:]]*$//' | grep -v '^$' | head -40 >"$pdata.txt" || true
		rm -f "$pdata.data"
	fi
	machine_counters
	CALL_STEAL_MS=$(((MC[0] - before[0]) * 1000 / CLK_TCK))
	CALL_SYS_MS=$(((MC[1] - before[1]) * 1000 / CLK_TCK))
	CALL_PGFAULT=$((MC[2] - before[2]))
	CALL_BUSY_PCT=$(((MC[3] - before[3]) * 100 / (MC[4] - before[4] > 0 ? MC[4] - before[4] : 1)))
	ms=$(awk '/^Time: / { print $2 }' <<<"$o" | tail -1)
	blocks=$(grep -E '^[0-9]+$' <<<"$o" | tail -1)
	[ -n "$ms" ] && [ -n "$blocks" ] || die "could not time $method($mode): $o"
	CALL_SECS=$(awk -v ms="$ms" 'BEGIN { printf "%.4f", ms / 1000 }')
	CALL_BLOCKS=$blocks
	CACHED_SECS=""
	if [ "$mode" = prefetch ]; then wait_cached; fi
}

# one_rep COND REP: dd, then each method in this repetition's order.
one_rep() {
	local cond=$1 rep=$2 mode methods n k method rate
	raw_rate "$cond"
	echo "$cond,$rep,$CR_BYTES,$CR_SECS,$CR_RATE" >>"$ddcsv"
	say "$cond rep $rep: dd: $CR_RATE MB/s"
	for mode in "${modelist[@]}"; do
		methods=(pg_prewarm warm)
		[ "$mode" = prefetch ] || [ "$workers" -eq 0 ] || methods+=(warm-parallel)
		((!alt)) || methods+=(warm-alt)
		[ -z "$BASELIB" ] || methods+=(warm-base)
		n=${#methods[@]}
		for ((k = 0; k < n; k++)); do
			method=${methods[$(((k + rep - 1) % n))]}
			REP=$rep time_call "$cond" "$method" "$mode"
			rate=$(awk -v b="$CALL_BLOCKS" -v s="$blcksz" -v t="$CALL_SECS" 'BEGIN { printf "%.1f", b * s / 1048576 / t }')
			echo "$cond,$rep,$mode,$method,$CALL_SECS,$CALL_BLOCKS,$rate,$CALL_STEAL_MS,$CALL_SYS_MS,$CALL_PGFAULT,$CALL_BUSY_PCT" >>"$raw"
			say "$cond rep $rep: $method($mode): $CALL_BLOCKS blocks in $CALL_SECS s = $rate MB/s (steal $CALL_STEAL_MS ms, system $CALL_SYS_MS ms, $CALL_PGFAULT page faults, CPUs $CALL_BUSY_PCT% busy on the machine)"
			if [ -n "$CACHED_SECS" ]; then
				rate=$(awk -v b="$CACHED_BLOCKS" -v s="$blcksz" -v t="$CACHED_SECS" 'BEGIN { printf "%.1f", b * s / 1048576 / t }')
				echo "$cond,$rep,prefetch-until-cached,$method,$CACHED_SECS,$CACHED_BLOCKS,$rate,,,," >>"$raw"
				say "$cond rep $rep: $method($mode): $CACHED_BLOCKS blocks in the OS cache after $CACHED_SECS s = $rate MB/s"
			fi
		done
	done
	pg_stop
}

# Each step holds the benchmark lock (bench/lib.sh: locked), so that no
# other benchmark or test run measures at the same time.
for cond in "${condlist[@]}"; do
	locked use_condition "$cond"
	for ((rep = 1; rep <= reps; rep++)); do
		locked one_rep "$cond" "$rep"
	done
	check_so
done

/usr/bin/python3 - "$raw" "$ddcsv" "$setup" "$workers" $BASE_SHORT >"$out/results.md" <<'EOF'
import csv, statistics, sys
raw, ddcsv, setup, workers = sys.argv[1:5]
base_rev = sys.argv[5] if len(sys.argv) > 5 else "?"
rows = list(csv.DictReader(open(raw)))
dds = list(csv.DictReader(open(ddcsv)))
names = {"cpu": "CPU-bound: files in the OS cache, shared_buffers cold",
         "iops": "IOPS-bound: 3000 IOPS, 1 GB/s, read_ahead_kb 128",
         "capped": "Bandwidth-capped: 3000 IOPS, 125 MB/s, read_ahead_kb 128",
         "cold": "Local disk, cold (drop_caches)"}
labels = {"pg_prewarm": "pg_prewarm", "warm": "warm() alone",
          "warm-parallel": f"warm(), up to {workers} worker(s)",
          "warm-alt": f"warm(), up to {workers} worker(s), ALT_SHORTCUTS",
          "warm-base": f"warm(), up to {workers} worker(s), base {base_rev}"}
def order(seq):
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out
def spread(xs):
    return f"{min(xs):.2f}-{max(xs):.2f}"
for line in open(setup):
    print(f"- {line.strip()}")
print()
for cond in order(r["condition"] for r in rows):
    dd = [float(r["mb_per_s"]) for r in dds if r["condition"] == cond]
    ddm = statistics.median(dd)
    print(f"### {names[cond]}\n")
    print(f"dd bs=1M of the same files, each repetition: median {ddm:.0f} MB/s "
          f"(min-max {min(dd):.0f}-{max(dd):.0f}).\n")
    print("| mode | method | median s | min-max s | MB/s | % of dd | pg_prewarm s / method s: median | min-max | CPUs busy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode in order(r["mode"] for r in rows if r["condition"] == cond):
        sel = [r for r in rows if r["condition"] == cond and r["mode"] == mode]
        base = {r["rep"]: float(r["seconds"]) for r in sel if r["method"] == "pg_prewarm"}
        for method in order(r["method"] for r in sel):
            rs = [r for r in sel if r["method"] == method]
            secs = [float(r["seconds"]) for r in rs]
            mbs = statistics.median(float(r["mb_per_s"]) for r in rs)
            ratios = [base[r["rep"]] / float(r["seconds"]) for r in rs if r["rep"] in base]
            rat = (f"{statistics.median(ratios):.2f} | {min(ratios):.2f}-{max(ratios):.2f}"
                   if method != "pg_prewarm" else "| ")
            busy = [float(r["busy_pct"]) for r in rs if r.get("busy_pct")]
            busy = f"{statistics.median(busy):.0f}%" if busy else "-"
            print(f"| {mode} | {labels[method]} | {statistics.median(secs):.2f} | {spread(secs)} | "
                  f"{mbs:.0f} | {100 * mbs / ddm:.0f}% | {rat} | {busy} |")
        counts = {r["blocks"] for r in sel}
        if len(counts) > 1 and mode != "prefetch-until-cached":
            print(f"\nWARNING: the methods returned different block counts in mode {mode}: {sorted(counts)}")
        # The work tree's warm() against the base build's, repetition by
        # repetition, beside pg_prewarm()'s own spread: each repetition's
        # time over their median, what the machine alone varies.
        new = "warm-parallel" if any(r["method"] == "warm-parallel" for r in sel) else "warm"
        nb = {r["rep"]: float(r["seconds"]) for r in sel if r["method"] == new}
        bb = {r["rep"]: float(r["seconds"]) for r in sel if r["method"] == "warm-base"}
        reps = sorted(set(nb) & set(bb), key=int)
        if reps:
            xs = [nb[k] / bb[k] for k in reps]
            pw = [base[k] for k in sorted(base, key=int)]
            pm = statistics.median(pw) if pw else None
            print(f"\nNew against base, mode {mode}: {labels[new]} s / the same with base {base_rev}'s library s, "
                  "per repetition " + " ".join(f"r{k} {x:.3f}" for k, x in zip(reps, xs))
                  + f"; median {statistics.median(xs):.3f} (min-max {min(xs):.3f}-{max(xs):.3f})"
                  + (f". Control: pg_prewarm s / its median, min-max {min(pw) / pm:.3f}-{max(pw) / pm:.3f}"
                     if pm else "") + ".")
    print()
EOF
{
	echo "Command: \`$cmdline\` ($version, $(uname -r), $(nproc) cores, pg_warmcache $(repo_version)${BASELIB:+, base $BASE_SHORT (library md5 $BASE_MD5)}, $(date -u '+%Y-%m-%d %H:%M UTC'))."
	[ -z "$SO_CHANGED" ] || echo "WARNING: the installed pg_warmcache.so changed during the run:$SO_CHANGED"
} >>"$out/results.md"
cat "$out/results.md"
say "results in $out"
