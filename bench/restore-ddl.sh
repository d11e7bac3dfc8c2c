#!/bin/bash
# Does a restore make DDL wait?  Lock and database-level commands issued
# during a restore, with pgbench -S running, timed against the same command
# with no warm-up and with contrib autoprewarm.
#
#   bench/restore-ddl.sh [--pg 15|18] [--disk capped|local] [--scale 100] [--xscale 20]
#                        [--tests lock,template,rename,drop] [--methods none,autoprewarm,warmcache]
#                        [--reps 5] [--delay 1] [--hold 1]
#
# The cluster is warmup.sh's (bench/lib.sh: shared_buffers = 4GB, pgbench
# database "bench" of --scale, on the capped disk by default).  Besides it:
# a database xsrc (pgbench -i -s XSCALE), never connected to during a run,
# the template of a database x that is made afresh when needed.  The saved
# state: restart, pg_prewarm every relation fork of bench and of x, dump with
# both tools (every block has the same usage count: restore order is the
# tools' own).
#
# A run (TEST, METHOD, repetition): put the saved files back, the method's
# settings, drop the OS cache, start (under the cap), and the moment the
# server accepts connections pgbench -n -S -M prepared -c 2 -j 2 on bench.
# DELAY seconds (1) after that, one psql, connected first, times with
# \timing one statement:
#   lock      BEGIN; LOCK TABLE pgbench_accounts IN ACCESS EXCLUSIVE MODE;
#             then holds it HOLD seconds (1) and commits
#   template  CREATE DATABASE c TEMPLATE x   (c is dropped after the run)
#   rename    ALTER DATABASE x RENAME TO y   (renamed back after the run)
#   drop      DROP DATABASE x                (x made again for the next run)
# Then it waits for the restore's log line (RESTORE_WAIT, 90 s), and counts
# the blocks of pgbench_accounts in shared buffers (pg_buffercache) against
# its size.  pgbench keeps running until then.  Methods rotate order per
# repetition.  The copy that CREATE DATABASE makes and the checkpoint that
# the database commands need take time of their own: method none (no
# restore, the same cold start and clients) is that baseline.
#
# Output in bench/out/<timestamp>-restore-ddl/ (OUT_DIR overrides):
# runs.csv (one line per run), results.md (medians, min-max, per test and
# method; also printed), raw/ (psql and pgbench output, server logs).
# Environment: RESTORE_WAIT, WARMCACHE_CONF, AUTOPREWARM_CONF; bench/lib.sh
# lists the rest.  About 20 s a run on the capped disk at scale 100.
# Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 disk=capped scale=100 xscale=20 tests=lock,template,rename,drop
methods=none,autoprewarm,warmcache reps=5 delay=1 hold=1
args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--disk) disk=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--xscale) xscale=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	--methods) methods=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--delay) delay=$2; shift 2 ;;
	--hold) hold=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
RESTORE_WAIT=${RESTORE_WAIT:-90}
whole_numbers scale xscale reps RESTORE_WAIT
for v in delay hold; do
	[[ ${!v} =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--$v must be a number of seconds"
done
IFS=, read -r -a testlist <<<"$tests"
for t in "${testlist[@]}"; do
	case "$t" in lock | template | rename | drop) ;; *) die "unknown test $t" ;; esac
done
IFS=, read -r -a methodlist <<<"$methods"
for m in "${methodlist[@]}"; do
	case "$m" in none | autoprewarm | warmcache) ;; *) die "unknown method $m" ;; esac
done

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-restore-ddl}
mkdir -p "$out/raw"
{
	echo "command=bench/restore-ddl.sh ${args[*]}"
	echo "effective=--pg $pg --disk $disk --scale $scale --xscale $xscale --tests $tests --methods $methods --reps $reps --delay $delay --hold $hold"
	echo "env=RESTORE_WAIT=$RESTORE_WAIT WARMCACHE_CONF=${WARMCACHE_CONF:-} AUTOPREWARM_CONF=${AUTOPREWARM_CONF:-} EXTRA_CONF=${EXTRA_CONF:-}"
	run_info
} >"$out/info.txt"

# wait_restore METHOD LOG SECONDS: until the restore's log line; prints the
# seconds waited, or "timeout".
wait_restore() {
	local re i
	re=$(restore_re "$1")
	[ -n "$re" ] || { echo 0; return 0; }
	for ((i = 0; i < $3 * 20; i++)); do
		grep -Eq "$re" "$2" && { echo "$i" | awk '{ printf "%.2f", $1 / 20 }'; return 0; }
		sleep 0.05
	done
	echo timeout
}

# The template database xsrc, made once per cluster and XSCALE.
ensure_xsrc() {
	local stamp=$CLDIR/xsrc.ok want="xscale=$xscale"
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
		return 0
	fi
	say "$key: creating database xsrc (pgbench -i -s $xscale)"
	pg_start "$CLDIR/logs/xsrc.log"
	DB=postgres sql "drop database if exists xsrc"
	DB=postgres sql "create database xsrc"
	"$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -i -q -s "$xscale" xsrc >"$CLDIR/logs/pgbench-init-xsrc.log" 2>&1 ||
		{ tail "$CLDIR/logs/pgbench-init-xsrc.log" >&2; die "pgbench -i xsrc failed"; }
	sql "create extension if not exists pg_buffercache"
	DB=postgres sql "checkpoint"
	pg_stop
	echo "$want" >"$stamp"
}

# prepare: x made afresh from xsrc, everything of bench and x in shared
# buffers, dumped by both tools; the files are kept in $CLDIR/ddl-dumps.
# In the running server if there is one (after a run: most of bench is
# cached already), else in a new one.
prepare() {
	say "$key: x from xsrc, prewarm bench and x, dump"
	if ! server_running; then
		run_conf ""
		pg_start "$CLDIR/logs/ddl-prep.log"
	fi
	DB=postgres sql "drop database if exists c"
	DB=postgres sql "drop database if exists y"
	DB=postgres sql "drop database if exists x"
	DB=postgres sql "create database x template xsrc"
	DB=x sql "create extension if not exists pg_prewarm"
	DB=postgres sql "checkpoint"
	prewarm_all
	DB=x prewarm_all
	N_APW=$(sql "select autoprewarm_dump_now()")
	N_WC=$(sql "select warmcache_dump_now()")
	mkdir -p "$CLDIR/ddl-dumps"
	cp "$PGDATA/autoprewarm.blocks" "$PGDATA/pg_warmcache.blocks" "$CLDIR/ddl-dumps/"
	say "$key: dumped $N_APW (autoprewarm) and $N_WC (pg_warmcache) blocks"
	NEED_PREPARE=0
}

cold_start() {
	pg_stop
	install -o "$PG_USER" -m 600 "$CLDIR/ddl-dumps/autoprewarm.blocks" "$PGDATA/autoprewarm.blocks"
	install -o "$PG_USER" -m 600 "$CLDIR/ddl-dumps/pg_warmcache.blocks" "$PGDATA/pg_warmcache.blocks"
	method_conf "$1"
	drop_caches
	pg_start "$2"
}

# timed_psql DB OUTFILE: runs the psql script on stdin; the one statement
# between "\timing on" and "\timing off" is timed.  Prints its milliseconds
# ("-" if none) and whether it failed ("ok" or "error").
timed_psql() {
	local db=$1 f=$2 ms st=ok
	"$BINDIR/psql" -X -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -d "$db" >"$f" 2>&1 || st=error
	ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$f" | head -1)
	grep -q 'ERROR:' "$f" && st=error
	echo "${ms:--} $st"
}

# one_run TEST METHOD REP
one_run() {
	local t=$1 m=$2 rep=$3 name log pb t_go t_sent ms st waited cached oscached status="" issued
	name=$key-$t-$m-r$rep
	log=$CLDIR/logs/$name.log
	[ "$NEED_PREPARE" = 0 ] || { prepare; pg_stop; }
	say "$name: cold start, pgbench -S, $t ${delay} s after ready"
	cold_start "$m" "$log"
	"$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -n -S -M prepared -c 2 -j 2 -P 1 -T 600 bench \
		>"$out/raw/$name.pgbench" 2>&1 &
	pb=$!
	t_go=$(awk -v r="$T_READY" -v d="$delay" 'BEGIN { printf "%.3f", r + d }')
	sleep "$(awk -v g="$t_go" -v n="$(now)" 'BEGIN { s = g - n; printf "%.3f", (s > 0 ? s : 0) }')"
	t_sent=$(now)
	case "$t" in
	lock)
		read -r ms st < <(timed_psql bench "$out/raw/$name.psql" <<EOF
BEGIN;
\\timing on
LOCK TABLE pgbench_accounts IN ACCESS EXCLUSIVE MODE;
\\timing off
SELECT pg_sleep($hold);
COMMIT;
EOF
		)
		;;
	template)
		read -r ms st < <(printf '\\timing on\nCREATE DATABASE c TEMPLATE x;\n\\timing off\n' |
			timed_psql postgres "$out/raw/$name.psql")
		;;
	rename)
		read -r ms st < <(printf '\\timing on\nALTER DATABASE x RENAME TO y;\n\\timing off\n' |
			timed_psql postgres "$out/raw/$name.psql")
		;;
	drop)
		read -r ms st < <(printf '\\timing on\nDROP DATABASE x;\n\\timing off\n' |
			timed_psql postgres "$out/raw/$name.psql")
		;;
	esac
	# When the statement was sent, after the psql connection was made.
	issued=$(awk -v s="$t_sent" -v r="$T_READY" -v e="$(now)" -v ms="$ms" -v h="$hold" -v t="$t" \
		'BEGIN { x = e - r - (ms == "-" ? 0 : ms / 1000) - (t == "lock" ? h : 0); printf "%.2f", x }')
	waited=$(wait_restore "$m" "$log" "$RESTORE_WAIT")
	cached=$(sql "select round(100.0 * count(*) / greatest(1, pg_relation_size('pgbench_accounts') / current_setting('block_size')::int), 2)
	              from pg_buffercache b
	              where b.relfilenode = pg_relation_filenode('pgbench_accounts') and b.relforknumber = 0
	                and b.reldatabase = (select oid from pg_database where datname = current_database())")
	# In the OS page cache (util-linux fincore): where the restore puts the
	# buffer tier while the clients keep every CPU busy.
	oscached=$(rel_files pgbench_accounts | xargs fincore -b -n -o RES,SIZE |
		awk '{ r += $1; s += $2 } END { printf "%.2f", s ? 100 * r / s : 0 }')
	if [ "$m" = warmcache ]; then
		status=$(sql "select to_jsonb(s) from warmcache_status() s" 2>/dev/null || echo "?")
	fi
	kill "$pb" 2>/dev/null || true
	wait "$pb" 2>/dev/null || true
	case "$t" in
	template) DB=postgres sql "drop database if exists c" ;;
	rename) DB=postgres sql "alter database y rename to x" 2>/dev/null || true ;;
	drop) [ "$st" = error ] || NEED_PREPARE=1 ;;
	esac
	cp "$log" "$out/raw/$name.log"
	[ "$NEED_PREPARE" = 0 ] || prepare
	pg_stop
	printf '%s\n' "$status" >"$out/raw/$name.status"
	local line
	line=$(grep -Eo "$WC_END_ERE.*|autoprewarm successfully prewarmed.*" "$log" | head -1 | tr ',' ';' || true)
	echo "$pg,$disk,$t,$m,$rep,$ms,$st,$issued,$waited,$cached,$oscached,${line}" >>"$out/runs.csv"
	say "$name: $t ${ms} ms ($st), issued ${issued} s after ready; restore done ${waited} s after; pgbench_accounts ${cached}% in shared buffers, ${oscached}% in the OS cache"
}

# The steps that measure, or load the machine, hold the benchmark lock
# (bench/lib.sh: locked), as warmup.sh's do.
setup() {
	ensure_db
	ensure_xsrc
	run_conf ""
	pg_start "$CLDIR/logs/ddl-files.log"
	verify_lib
	sql "create extension if not exists pg_buffercache"
	mapfile -t files < <(db_files)
	version=$("$BINDIR/postgres" --version)
	pg_stop
	cold_read "${files[@]}"
}

use_pg "$pg"
use_cluster "$disk" "$scale"
key=pg$pg-$disk
locked setup
say "$key: dd of bench's files $CR_RATE MB/s"
write_meta "$out/raw/$key.meta" "version=$version" "scale=$scale" "xscale=$xscale" \
	"dd_bytes=$CR_BYTES" "dd_seconds=$CR_SECS" "dd_mb_per_s=$CR_RATE" "so_md5=$SO_MD5" \
	"capped=$([ -n "$CAPPED" ] && cap_text)"
echo "pg,disk,test,method,rep,ms,status,issued_after_ready_s,restore_done_after_s,accounts_cached_pct,accounts_os_cached_pct,restore_log" >"$out/runs.csv"
NEED_PREPARE=1
for ((rep = 1; rep <= reps; rep++)); do
	for t in "${testlist[@]}"; do
		nm=${#methodlist[@]}
		for ((i = 0; i < nm; i++)); do
			locked one_run "$t" "${methodlist[$(((i + rep - 1) % nm))]}" "$rep"
		done
	done
done
note_so "$out/raw/$key.meta"

/usr/bin/python3 - "$out" <<'EOF' | tee "$out/results.md"
import csv, os, statistics, sys
out = sys.argv[1]
info = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "info.txt")) if "=" in l)
rows = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
metas = [f for f in os.listdir(os.path.join(out, "raw")) if f.endswith(".meta")]
km = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "raw", metas[0])) if "=" in l)
print(f"# DDL during a restore: {info['date']}\n")
print(f"Command: `{info['command']}` (effective: `{info['effective']}`; {info['env']}).  ")
print(f"Machine: {info['host']}; pg_warmcache {info['repo']}; {km['version']}"
      + (f"; capped disk: {km['capped']}" if km.get("capped") else "") + ".  ")
print(f"dd of bench's files, cold: {float(km['dd_mb_per_s']):.0f} MB/s "
      f"({int(km['dd_bytes']) / 1048576:.0f} MB in {km['dd_seconds']} s).\n")
print("Time of the statement (psql \\timing), median (min-max) over repetitions; failed: runs whose "
      "statement failed; issued: seconds after ready; cached: % of pgbench_accounts in shared buffers "
      "once the restore finished; OS cache: % of its files in the OS page cache then (fincore).\n")
print("| test | method | statement (s) | failed | issued (s) | restore done after the statement (s) | cached % | OS cache % | each (s) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|")
def num(x):
    try:
        return float(x)
    except ValueError:
        return None
def cell(xs, f="{:.2f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return (f + " ({}-{})").format(statistics.median(xs), f.format(min(xs)), f.format(max(xs)))
for t in ["lock", "template", "rename", "drop"]:
    for m in ["none", "autoprewarm", "warmcache"]:
        rr = [r for r in rows if r["test"] == t and r["method"] == m]
        if not rr:
            continue
        secs = [num(r["ms"]) / 1000 if num(r["ms"]) is not None else None for r in rr]
        print(f"| {t} | {m} | {cell(secs)} | {sum(r['status'] != 'ok' for r in rr)} of {len(rr)} | "
              f"{cell([num(r['issued_after_ready_s']) for r in rr])} | "
              f"{cell([num(r['restore_done_after_s']) for r in rr], '{:.1f}')} | "
              f"{cell([num(r['accounts_cached_pct']) for r in rr], '{:.1f}')} | "
              f"{cell([num(r.get('accounts_os_cached_pct', '')) for r in rr], '{:.1f}')} | "
              + " ".join("-" if s is None else f"{s:.2f}" for s in secs) + " |")
print("\nThe restores' own log lines are in runs.csv.")
EOF
say "results in $out"
