#!/bin/bash
# warm() against contrib pg_prewarm() on a truly cold cache.
#
#   bench/warm-vs-prewarm.sh [--pg 15|18] [--scale 100] [--reps 3]
#                            [--modes buffer,read,prefetch] [--disk local|capped]
#
# Builds and installs pg_warmcache from this repository into the chosen
# PostgreSQL, builds (or reuses) a pgbench database of the given scale in a
# cluster with shared_buffers = 4GB and both pg_warmcache and pg_prewarm
# preloaded (autowarm and autoprewarm off), then, for each mode and
# repetition, for each method in alternating order, on a cold cache (server
# stopped, sync, drop_caches, server started) times
#   select pg_prewarm('pgbench_accounts', MODE) + pg_prewarm('pgbench_accounts_pkey', MODE)
# against the same with warm().  The catalogs the call needs are read before
# the timed statement.  Prefetch is asynchronous: its time is the time to
# return, and a second row times it until 99% of the files is in the OS cache
# (fincore polled every 20 ms).  The physical limit is the device's cold sequential read rate of the
# same files (dd after drop_caches), measured once per repetition.
#
# Prints a markdown table (median over repetitions) and the command line, and
# keeps it with the raw timings in bench/out/<timestamp>-warm-vs-prewarm/
# (OUT_DIR overrides).  Needs root.  See bench/lib.sh for the environment
# variables (where the cluster lives, which pg_config, ...).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 scale=100 reps=3 modes=buffer,read,prefetch disk=local
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--disk) disk=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
cmdline="bench/warm-vs-prewarm.sh --pg $pg --scale $scale --reps $reps --modes $modes --disk $disk"
need_root
[[ $scale =~ ^[0-9]+$ && $reps =~ ^[0-9]+$ && $reps -ge 1 ]] || die "--scale and --reps take positive integers"
IFS=, read -r -a modelist <<<"$modes"
for m in "${modelist[@]}"; do
	case "$m" in buffer | read | prefetch) ;; *) die "unknown mode $m" ;; esac
done

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-warm-vs-prewarm}
mkdir -p "$out"

use_pg "$pg"
use_cluster "$disk" "$scale"
ensure_db
version=$("$BINDIR/postgres" --version)

pg_start "$CLDIR/logs/wvp-files.log"
verify_lib
mapfile -t files < <(rel_files pgbench_accounts; rel_files pgbench_accounts_pkey)
relblocks=$(sql "select (pg_relation_size('pgbench_accounts') + pg_relation_size('pgbench_accounts_pkey')) / current_setting('block_size')::int")
blcksz=$(sql "show block_size")
pg_stop
relmb=$(awk -v b="$relblocks" -v s="$blcksz" 'BEGIN { printf "%.1f", b * s / 1048576 }')
relbytes=$((relblocks * blcksz))
say "pgbench_accounts + pkey: $relblocks blocks, $relmb MB, ${#files[@]} files"

raw=$out/raw.csv
echo "rep,mode,method,seconds,blocks,mb_per_s" >"$raw"
ddcsv=$out/dd.csv
echo "rep,bytes,seconds,mb_per_s" >"$ddcsv"

# time_call METHOD MODE: sets CALL_SECS and CALL_BLOCKS; server started cold.
time_call() {
	local fn=$1 mode=$2 o ms blocks t_ret
	pg_stop
	drop_caches
	pg_start "$CLDIR/logs/wvp-$fn-$mode.log"
	o=$(psqlc -d bench -At <<EOF
select 'pgbench_accounts'::regclass, 'pgbench_accounts_pkey'::regclass,
       'pg_prewarm(regclass,text,text,int8,int8)'::regprocedure,
       'warm(regclass,text,text,int8,int8)'::regprocedure;
explain select * from pgbench_accounts where aid = 1;
\timing on
select $fn('pgbench_accounts', '$mode') + $fn('pgbench_accounts_pkey', '$mode');
EOF
	)
	t_ret=$(now)
	ms=$(awk '/^Time: / { print $2 }' <<<"$o" | tail -1)
	blocks=$(grep -E '^[0-9]+$' <<<"$o" | tail -1)
	[ -n "$ms" ] && [ -n "$blocks" ] || die "could not time $fn($mode): $o"
	CALL_SECS=$(awk -v ms="$ms" 'BEGIN { printf "%.4f", ms / 1000 }')
	CALL_BLOCKS=$blocks
	CACHED_SECS=""
	if [ "$mode" = prefetch ]; then wait_cached; fi
}

# After a prefetch: poll the files' page cache residency (fincore) until
# 99% of them is cached, or nothing changed for 3 s.  Sets CACHED_SECS
# (call time + time until cached) and CACHED_BLOCKS.  Also keeps the
# kernel's reads from going on into the next cold start.
wait_cached() {
	local res last=-1 t_last t
	t_last=$(now)
	while :; do
		res=$(fincore -b -n -o RES "${files[@]}" | awk '{ s += $1 } END { print s + 0 }')
		t=$(now)
		if ((res >= relbytes * 99 / 100)); then
			break
		fi
		if ((res != last)); then
			last=$res
			t_last=$t
		elif awk -v a="$t_last" -v b="$t" 'BEGIN { exit !(b - a > 3) }'; then
			t=$t_last
			break
		fi
		sleep 0.02
	done
	CACHED_SECS=$(awk -v c="$CALL_SECS" -v a="$t_ret" -v b="$t" 'BEGIN { printf "%.4f", c + b - a }')
	CACHED_BLOCKS=$((res / blcksz))
}

for ((rep = 1; rep <= reps; rep++)); do
	cold_read "${files[@]}"
	echo "$rep,$CR_BYTES,$CR_SECS,$CR_RATE" >>"$ddcsv"
	say "rep $rep: dd cold sequential read: $CR_RATE MB/s"
	for mode in "${modelist[@]}"; do
		if ((rep % 2)); then order=(pg_prewarm warm); else order=(warm pg_prewarm); fi
		for fn in "${order[@]}"; do
			time_call "$fn" "$mode"
			secs=$CALL_SECS blocks=$CALL_BLOCKS
			rate=$(awk -v b="$blocks" -v s="$blcksz" -v t="$secs" 'BEGIN { printf "%.1f", b * s / 1048576 / t }')
			echo "$rep,$mode,$fn,$secs,$blocks,$rate" >>"$raw"
			say "rep $rep: $fn($mode): $blocks blocks in $secs s = $rate MB/s"
			if [ -n "$CACHED_SECS" ]; then
				rate=$(awk -v b="$CACHED_BLOCKS" -v s="$blcksz" -v t="$CACHED_SECS" 'BEGIN { printf "%.1f", b * s / 1048576 / t }')
				echo "$rep,prefetch-until-cached,$fn,$CACHED_SECS,$CACHED_BLOCKS,$rate" >>"$raw"
				say "rep $rep: $fn($mode): $CACHED_BLOCKS blocks in the OS cache after $CACHED_SECS s = $rate MB/s"
			fi
		done
	done
done
pg_stop
check_so

/usr/bin/python3 - "$raw" "$ddcsv" "$relmb" "$relblocks" >"$out/results.md" <<'EOF'
import csv, statistics, sys
raw, ddcsv, relmb, relblocks = sys.argv[1:5]
rows = list(csv.DictReader(open(raw)))
dd = [float(r["mb_per_s"]) for r in csv.DictReader(open(ddcsv))]
ddm = statistics.median(dd)
modes = []
for r in rows:
    if r["mode"] not in modes:
        modes.append(r["mode"])
def col(mode, fn, key):
    return [float(r[key]) for r in rows if r["mode"] == mode and r["method"] == fn]
print(f"Relations: pgbench_accounts + pgbench_accounts_pkey, {relblocks} blocks, {relmb} MB; cold cache each time.\n")
print("| mode | pg_prewarm MB/s | warm() MB/s | warm / pg_prewarm | pg_prewarm % of dd | warm() % of dd | pg_prewarm s (each rep) | warm() s (each rep) |")
print("|---|---:|---:|---:|---:|---:|---|---|")
for m in modes:
    p = statistics.median(col(m, "pg_prewarm", "mb_per_s"))
    w = statistics.median(col(m, "warm", "mb_per_s"))
    ps = " ".join(f"{x:.2f}" for x in col(m, "pg_prewarm", "seconds"))
    ws = " ".join(f"{x:.2f}" for x in col(m, "warm", "seconds"))
    note = {"prefetch": " (time to return)",
            "prefetch-until-cached": " (until 99% in the OS cache, by fincore)"}.get(m, "")
    print(f"| {m}{note} | {p:.0f} | {w:.0f} | {w / p:.2f} | {100 * p / ddm:.0f}% | {100 * w / ddm:.0f}% | {ps} | {ws} |")
print(f"\nDevice cold sequential read of the same files (dd bs=1M after drop_caches): "
      f"median {ddm:.0f} MB/s (each rep: {' '.join(f'{x:.0f}' for x in dd)}).")
blk = {(r["mode"], r["method"]): r["blocks"] for r in rows}
bad = [m for m in modes if m != "prefetch-until-cached" and blk.get((m, "warm")) != blk.get((m, "pg_prewarm"))]
if bad:
    print(f"\nWARNING: warm() and pg_prewarm() returned different block counts for: {', '.join(bad)}")
EOF
{
	echo
	echo "Command: \`$cmdline\` ($version, $(uname -r), $(nproc) cores, pg_warmcache $(repo_version), disk $disk, $(date -u '+%Y-%m-%d %H:%M UTC'))."
	[ -z "$SO_CHANGED" ] || echo "WARNING: the installed pg_warmcache.so changed during the run:$SO_CHANGED"
} >>"$out/results.md"
cat "$out/results.md"
say "results in $out"
