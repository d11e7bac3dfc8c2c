#!/bin/bash
# The first start after a major upgrade: TPS of pgbench -S from the moment
# the upgraded server accepts connections, with the old cluster's saved
# file imported (pg_warmcache.import) and without, in one run.
#
#   bench/upgrade.sh [--from 15] [--to 18] [--scale 100] [--reps 5]
#                    [--seconds 60] [--smoke]
#
# On the capped disk (3000 IOPS, 125 MB/s): a FROM cluster at SCALE with
# shared_buffers 4GB and pg_warmcache preloaded (OS tier on), its tables
# and indexes read into shared buffers, then stopped cleanly (its shutdown
# dump is the file to import); then pg_upgrade --link to TO, once.  Each
# repetition then starts the upgraded cluster from a cold cache (server
# stopped, sync, drop_caches) as its first start after the upgrade, with
# no saved file of its own, and runs pgbench -n -S -M prepared -c CLIENTS
# (2) -j CLIENTS -P 1 -T SECONDS at once.  Methods, rotated between
# repetitions: none (no file: what a user gets today), import (the old
# cluster's file copied in as pg_warmcache.import, as docs tell a DBA to),
# none-again (the control: none once more).  The steady state is the same
# workload with every relation read into shared buffers first.  dd reads
# the database's files cold in the same run.
#
# The FROM major's packages on this machine give every column an attribute
# option that the TO server refuses, which stops pg_upgrade: the script
# clears it in the old cluster before the upgrade (t/083 does the same).
#
# Output in bench/out/<timestamp>-upgrade/ (OUT_DIR overrides): raw/ (the
# runs' pgbench output, server logs, .meta files), and results.md from
# bench/upgrade-report.py: t90 and mean 60 s over steady per method, and
# import against none per repetition beside the control.  Needs root.
# --smoke: scale 5, 15-s runs, one repetition: that it runs, not what.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

from=15 to=18 scale=100 reps=5 seconds=60 smoke=0
while [ $# -gt 0 ]; do
	case "$1" in
	--from) from=$2; shift 2 ;;
	--to) to=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--smoke) smoke=1; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed -n '/^#/s/^# \{0,1\}//p'; exit 0 ;;
	*) die "unknown argument $1" ;;
	esac
done
[ $smoke = 0 ] || { scale=5; seconds=15; reps=1; }
whole_numbers from to scale reps seconds
((from >= 15 && to > from)) || die "--from must be 15 or later and --to later than it"
need_root
CLIENTS=${CLIENTS:-2}
methods=(none import none-again)

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-upgrade}
raw=$out/raw
mkdir -p "$raw"
chown "$PG_USER:" "$out" "$raw"

# Both majors' builds; the second use_pg's settings stay current.
use_pg "$from"
OLD_BINDIR=$BINDIR OLD_PRIVLIB=$PRIVLIB
use_pg "$to"
NEW_BINDIR=$BINDIR NEW_PRIVLIB=$PRIVLIB
use_cluster capped "$scale" "upgrade-$from-$to"
OLD=$CLDIR/old NEW=$CLDIR/new
IMPORT=$CLDIR/old.blocks
mkdir -p "$CLDIR/logs" "$SOCK"
chown "$PG_USER:" "$CLDIR/logs" "$SOCK"
{
	run_info
	echo "command=bench/upgrade.sh --from $from --to $to --scale $scale --reps $reps --seconds $seconds$([ $smoke = 0 ] || echo ' --smoke')"
	echo "cap=$(cap_text)"
	echo "clients=$CLIENTS"
} >"$out/info.txt"

# conf LIB: postgresql.conf for a server that preloads LIB's pg_warmcache.
conf() {
	local lib=$1
	PRIVLIB=$lib write_conf
	cat >>"$PGDATA/postgresql.conf" <<EOF
shared_preload_libraries = 'pg_warmcache,pg_prewarm'
pg_warmcache.autowarm = on
pg_warmcache.dump_os_cache = on
EOF
}

# The old cluster: made, filled, read into shared buffers, stopped.
setup_old() {
	BINDIR=$OLD_BINDIR PGDATA=$OLD
	pg_stop
	rm -rf "$OLD" "$NEW" "$IMPORT"
	say "the PostgreSQL $from cluster at scale $scale in $OLD"
	as_pg "$BINDIR/initdb" -D "$OLD" -U "$PG_USER" --auth=trust -E UTF8 --locale=C >"$CLDIR/logs/initdb-old.log" 2>&1 ||
		{ tail "$CLDIR/logs/initdb-old.log" >&2; die "initdb failed"; }
	conf "$OLD_PRIVLIB"
	pg_start "$CLDIR/logs/old.log"
	DB=postgres sql "create database bench"
	"$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -i -q -s "$scale" bench >"$CLDIR/logs/pgbench-init.log" 2>&1 ||
		{ tail "$CLDIR/logs/pgbench-init.log" >&2; die "pgbench -i failed"; }
	sql "create extension pg_prewarm"
	prewarm_all
	DB=postgres sql "update pg_attribute set attoptions = null where attrelid >= 16384 and attoptions is not null" >/dev/null
	sql "update pg_attribute set attoptions = null where attrelid >= 16384 and attoptions is not null" >/dev/null
	sql "drop extension pg_prewarm"
	pg_stop
	[ -s "$OLD/pg_warmcache.blocks" ] || die "the old cluster left no saved file"
	cp "$OLD/pg_warmcache.blocks" "$IMPORT"
}

# pg_upgrade --link from the old cluster to a new one.
upgrade() {
	BINDIR=$NEW_BINDIR PGDATA=$NEW
	say "pg_upgrade --link from $from to $to"
	as_pg "$BINDIR/initdb" -D "$NEW" -U "$PG_USER" --auth=trust -E UTF8 --locale=C --no-data-checksums >"$CLDIR/logs/initdb-new.log" 2>&1 ||
		{ tail "$CLDIR/logs/initdb-new.log" >&2; die "initdb failed"; }
	conf "$NEW_PRIVLIB"
	(cd "$CLDIR/logs" && as_pg "$BINDIR/pg_upgrade" --link --old-bindir "$OLD_BINDIR" --new-bindir "$BINDIR" \
		--old-datadir "$OLD" --new-datadir "$NEW" --old-port "$PGWC_PORT" --new-port "$PGWC_PORT" \
		--socketdir "$SOCK" >"$CLDIR/logs/pg_upgrade.log" 2>&1) ||
		{ tail -20 "$CLDIR/logs/pg_upgrade.log" >&2; die "pg_upgrade failed"; }
}

# run METHOD TAG: one first start of the upgraded cluster, cold.
run() {
	local m=$1 tag=$2 key=pg$to-$1-$2
	rm -f "$NEW/pg_warmcache.blocks" "$NEW/pg_warmcache.import"
	if [ "$m" = import ]; then
		install -o "$PG_USER" -g "$(id -gn "$PG_USER")" -m 0600 "$IMPORT" "$NEW/pg_warmcache.import"
	fi
	drop_caches
	pg_start "$raw/$key.log"
	"$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -n -S -M prepared -c "$CLIENTS" -j "$CLIENTS" \
		-P 1 -T "$seconds" bench >"$raw/$key.pgbench" 2>&1 || true
	pg_stop
	write_meta "$raw/$key.meta" "method=$m" "rep=$tag" "t_launch=$T_LAUNCH" "t_ready=$T_READY"
	say "$key: $(grep -E '^tps' "$raw/$key.pgbench" | head -1)"
}

# The steady state: everything in shared buffers, the same workload.
steady() {
	rm -f "$NEW/pg_warmcache.blocks" "$NEW/pg_warmcache.import"
	pg_start "$raw/pg$to-steady.log"
	sql "create extension if not exists pg_prewarm"
	prewarm_all
	"$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -n -S -M prepared -c "$CLIENTS" -j "$CLIENTS" \
		-P 1 -T 20 bench >"$raw/pg$to-steady.pgbench" 2>&1 || true
	sql "drop extension pg_prewarm"
	pg_stop
}

locked setup_old
locked upgrade
BINDIR=$NEW_BINDIR PGDATA=$NEW
locked steady
mapfile -t files < <(find "$NEW/base" -type f -size +1M)
locked cold_read "${files[@]}"
write_meta "$raw/pg$to-dd-run.meta" "dd_mb_per_s=$CR_RATE" "dd_bytes=$CR_BYTES" "dd_seconds=$CR_SECS"
say "dd $CR_RATE MB/s"
for ((r = 1; r <= reps; r++)); do
	n=${#methods[@]}
	for ((i = 0; i < n; i++)); do
		locked run "${methods[$(((i + r - 1) % n))]}" "r$r"
	done
done
/usr/bin/python3 "$BENCH_DIR/upgrade-report.py" "$out" | tee "$out/results.md"
