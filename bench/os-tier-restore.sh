#!/bin/bash
# A table that only sequential scans read lives in the OS page cache alone
# (a scan larger than a quarter of shared_buffers goes through a small ring
# of buffers).  After a cold restart, does the restore bring it back, and how
# fast does it read it?  pg_warmcache.dump_os_cache = on against off.
#
#   bench/os-tier-restore.sh [--pg 15|18] [--disk capped|local] [--reps 3]
#                            [--report-mb 1024]
#
# The cluster: bench/lib.sh's scale-1 pgbench cluster of that disk,
# shared_buffers 256MB, and a table "report" of about REPORT_MB (1000-byte
# rows), made once.  The report: select sum(length(pad)) from report.
#
# Saved state: start, read the report table's files into the OS cache (cat),
# run the report three times (the median is its warm time in that boot),
# dump with dump_os_cache off and with it on, keep both files.  The device's
# cold sequential read rate of the report's files: dd bs=1M after
# drop_caches (under the cap on the capped disk), once per repetition.
#
# Per repetition, alternating which goes first: put the method's file back,
# set dump_os_cache, drop the OS cache, start (under the cap on the capped
# disk), wait for the restore's log line (no client meanwhile: the restore
# gives way to queries on the CPU), then run the report twice: its first run
# against its second (by then warm in the OS cache, whatever the method) is
# the figure, target <= 1.2.
#
# The OS tier's read rate: its blocks (restore_os_tier_done) over the whole
# restore's time (restore_started_at to restore_finished_at; the buffer tier
# of this saved state is a few hundred blocks), against dd of the same files
# in the same repetition (target >= 90%).
#
# Output in bench/out/<timestamp>-os-tier-restore/ (OUT_DIR overrides):
# results.md (also printed), runs.csv, and raw/ (server logs, status).
# Environment: BENCH_LOCK (a lock file held around the saved state and each
# repetition), and bench/lib.sh's.  Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 disk=capped reps=3 report_mb=1024
args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--disk) disk=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--report-mb) report_mb=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
for v in reps report_mb; do
	[[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} >= 1)) || die "--${v/_/-} must be a whole number >= 1"
done
REPORT="select sum(length(pad)) from report"

EXTRA_CONF="shared_buffers = 256MB
${EXTRA_CONF:-}"
use_pg "$pg"
use_cluster "$disk" 1
out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-os-tier-restore}
mkdir -p "$out/raw"

# ms of one run of the report, timed by psql.
report_ms() {
	psqlc -d bench -At -c '\timing on' -c "$REPORT" | awk '/^Time:/ { print $2 }'
}

setup() {
	ensure_db
	run_conf ""
	pg_start "$CLDIR/logs/report-setup.log"
	verify_lib
	local have
	have=$(sql "select coalesce(pg_relation_size('report') / 1048576, 0) from (select 1) x
	            left join pg_class c on c.relname = 'report' and c.relkind = 'r'" 2>/dev/null || echo 0)
	if ((have < report_mb * 9 / 10)); then
		say "making the report table (~$report_mb MB)"
		# 1000-byte rows, 7 to a page, stored plain; created and filled in
		# one transaction, so wal_level = minimal writes no WAL for it.
		sql "begin; drop table if exists report; create table report (id int, pad text);
		     alter table report alter pad set storage plain;
		     insert into report select g, repeat('x', 1000)
		       from generate_series(1, ($report_mb::bigint * 1048576 / 8192 * 7)::int) g;
		     commit; checkpoint" >/dev/null
	fi
	mapfile -t RFILES < <(rel_files report)
	REPORT_MB=$(sql "select pg_relation_size('report') / 1048576")
	pg_stop
}

prepare() {
	say "saved state: the report table in the OS cache, dumps with dump_os_cache off and on"
	run_conf ""
	pg_start "$CLDIR/logs/report-prep.log"
	cat "${RFILES[@]}" >/dev/null
	local i
	WARM_MS=()
	for i in 1 2 3; do WARM_MS+=("$(report_ms)"); done
	mkdir -p "$CLDIR/dumps/report"
	run_conf "pg_warmcache.dump_os_cache = off"
	sql "select pg_reload_conf()" >/dev/null
	N_OFF=$(sql "select warmcache_dump_now()")
	cp "$PGDATA/pg_warmcache.blocks" "$CLDIR/dumps/report/off.blocks"
	run_conf "pg_warmcache.dump_os_cache = on"
	sql "select pg_reload_conf()" >/dev/null
	N_ON=$(sql "select warmcache_dump_now()")
	N_ON_OS=$(sql "select count(*) from warmcache_blocks() where tier = 'os'") ||
		die "warmcache_blocks() without a tier: a cluster made with an older extension script?"
	cp "$PGDATA/pg_warmcache.blocks" "$CLDIR/dumps/report/on.blocks"
	pg_stop
	say "warm report ms: ${WARM_MS[*]}; dumped $N_OFF blocks (off), $N_ON (on; $N_ON_OS of the OS tier)"
}

# wait_restore FILE LOG: until the restore's log line (at most 300 s),
# looking at the log only: a client polling the server would be a query on
# the CPU, and the restore's pacer gives way to those (a CPU budget of 10%
# of a core).  Then once warmcache_status(): epoch of start and end, OS
# tier total and done.
wait_restore() {
	local f=$1 log=$2 t_end
	t_end=$(($(date +%s) + 300))
	until grep -Eq "$WC_END_ERE" "$log"; do
		(($(date +%s) < t_end)) || { say "the restore did not end within 300 s"; break; }
		sleep 0.01
	done
	psqlc -d bench -At -F ' ' -c "select restore_os_tier_total, restore_os_tier_done,
	        extract(epoch from restore_started_at), extract(epoch from restore_finished_at)
	        from warmcache_status()" >"$f" ||
		die "warmcache_status() without the OS tier's columns: a cluster made with an older extension script?"
}

one_run() {
	local m=$1 rep=$2 name=os-tier-$1-r$2 first second t_os0 t_os1 total done logl
	pg_stop
	install -o "$PG_USER" -m 600 "$CLDIR/dumps/report/$m.blocks" "$PGDATA/pg_warmcache.blocks"
	run_conf "pg_warmcache.autowarm = on
pg_warmcache.dump_os_cache = $m"
	drop_caches
	pg_start "$CLDIR/logs/$name.log"
	wait_restore "$out/raw/$name.status" "$CLDIR/logs/$name.log"
	first=$(report_ms)
	second=$(report_ms)
	pg_stop
	cp "$CLDIR/logs/$name.log" "$out/raw/$name.log"
	read -r total done t_os0 t_os1 <"$out/raw/$name.status"
	logl=$(grep -Eo "$WC_END_ERE: .*" "$out/raw/$name.log" | head -1)
	echo "$m,$rep,$first,$second,$done,$t_os0,$t_os1,$CR_RATE,$CR_SECS,\"$logl\"" >>"$out/runs.csv"
	say "$name: report first $first ms, second $second ms; $logl"
}

one_rep() {
	local rep=$1 order=(on off)
	((rep % 2)) || order=(off on)
	cold_read "${RFILES[@]}"
	say "rep $rep: dd of the report's files $CR_RATE MB/s"
	one_run "${order[0]}" "$rep"
	one_run "${order[1]}" "$rep"
}

locked setup
locked prepare
echo "method,rep,first_ms,second_ms,os_tier_blocks,restore_start,restore_end,dd_mb_per_s,dd_seconds,log" >"$out/runs.csv"
for ((rep = 1; rep <= reps; rep++)); do
	locked one_rep "$rep"
done

{
	echo "# The OS tier: a table read only by sequential scans, after a cold restart"
	echo
	echo "Command: \`bench/os-tier-restore.sh ${args[*]}\` on $(date -u '+%Y-%m-%d %H:%M UTC'),"
	echo "$("$BINDIR/postgres" --version), $disk disk$([ -n "$CAPPED" ] && echo " ($(cap_text))"),"
	echo "pg_warmcache $(repo_version), shared_buffers 256MB, report table $REPORT_MB MB."
	echo "Warm report (files in the OS cache, before the dumps): ${WARM_MS[*]} ms."
	echo "Dumps: $N_OFF blocks with dump_os_cache = off, $N_ON with on ($N_ON_OS of them the OS tier)."
	echo
} >"$out/results.md"
python3 - "$out/runs.csv" "$reps" >>"$out/results.md" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(xs):
    return statistics.median(xs) if xs else float("nan")
def spread(xs):
    return f"{min(xs):.2f}-{max(xs):.2f}" if xs else "-"
print("| dump_os_cache | report first run / second run: median (min-max) | first run ms | second run ms | OS tier MB/s | OS tier % of dd: median (min-max) | dd MB/s |")
print("|---|---:|---:|---:|---:|---:|---:|")
for m in ["off", "on"]:
    rr = [r for r in rows if r["method"] == m]
    if not rr:
        continue
    ratio = [float(r["first_ms"]) / float(r["second_ms"]) for r in rr]
    rates, pct = [], []
    for r in rr:
        n = int(r["os_tier_blocks"] or 0)
        if n > 0 and r["restore_start"] and r["restore_end"]:
            secs = float(r["restore_end"]) - float(r["restore_start"])
            rate = n * 8192 / 1048576 / secs
            rates.append(rate)
            pct.append(100 * rate / float(r["dd_mb_per_s"]))
    print(f"| {m} | {med(ratio):.2f} ({spread(ratio)}) | {med([float(r['first_ms']) for r in rr]):.0f} | "
          f"{med([float(r['second_ms']) for r in rr]):.0f} | {med(rates):.0f} | "
          + (f"{med(pct):.0f}% ({min(pct):.0f}-{max(pct):.0f}%)" if pct else "-")
          + f" | {med([float(r['dd_mb_per_s']) for r in rr]):.0f} |")
print()
print("Per run (the restore's own log line):")
print()
for r in rows:
    print(f"- {r['method']} r{r['rep']}: first {r['first_ms']} ms, second {r['second_ms']} ms, "
          f"dd {r['dd_mb_per_s']} MB/s; {r['log']}")
EOF
cat "$out/results.md"
say "results in $out"
