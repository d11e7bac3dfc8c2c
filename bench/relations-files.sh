#!/bin/bash
# warmcache_relations() in a database of a million relation files: the
# call's wall and CPU time and the backend's peak memory, idle and while
# this server's backends keep every CPU busy.
#
#   bash bench/relations-files.sh [--pg 15|18] [--files 1000000] [--reps 3]
#
# The cluster is one of its own, initdb'd in $PGWC_BENCH_DIR (default
# /var/tmp/pg_warmcache-relfiles) on port $PGWC_BENCH_PORT (5497), and
# removed at the end.  The files are sparse 8 kB files in the database's
# directory, named as relation files no relation has (from 3000000000 on):
# the walk opens, sizes and maps each, as it does a relation's, and none
# holds a cached block.  Busy: one backend per CPU runs a CPU-bound query
# for the whole call.  The peak memory is the backend's VmHWM after the
# call less before it (a new backend per call); CPU time from
# /proc/<pid>/stat.  Runs as root.
set -euo pipefail

pg=15
nfiles=1000000
reps=3
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--files) nfiles=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--help | -h) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/common.sh"
dir=${PGWC_BENCH_DIR:-/var/tmp/pg_warmcache-relfiles}
port=${PGWC_BENCH_PORT:-5497}
flavor=
[ "$pg" != 15 ] && flavor=bench
pc=$(PGWC_FLAVOR=$flavor "$root/test/install-deps" "$pg" | awk -v m="$pg" '$2 == m {print $3}')
bin=$("$pc" --bindir)
make -s -C "$root" PG_CONFIG="$pc" clean >/dev/null
make -s -C "$root" PG_CONFIG="$pc" install >/dev/null
make -s -C "$root" PG_CONFIG="$pc" clean >/dev/null

q() { as_pg "$bin/psql" -X -h /tmp -p "$port" -d postgres -Atc "$1"; }
busy_pids=()
cleanup() {
	for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -f "$dir/data/postmaster.pid" ] && as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

rm -rf "$dir"
mkdir -p "$dir"
chown "$PG_USER:" "$dir"
as_pg "$bin/initdb" -D "$dir/data" -A trust >/dev/null
cat >>"$dir/data/postgresql.conf" <<EOT
port = $port
unix_socket_directories = '/tmp'
shared_buffers = 128MB
shared_preload_libraries = 'pg_warmcache'
pg_warmcache.dump_interval = 0
autovacuum = off
EOT
as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
q "CREATE EXTENSION pg_warmcache" >/dev/null
dbdir="$dir/data/base/$(q "SELECT oid FROM pg_database WHERE datname = 'postgres'")"
echo "making $nfiles sparse 8 kB files in $dbdir" >&2
as_pg /usr/bin/python3 - "$dbdir" "$nfiles" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    fd = os.open(os.path.join(d, str(3000000000 + i)), os.O_CREAT | os.O_WRONLY, 0o600)
    os.ftruncate(fd, 8192)
    os.close(fd)
EOF
sync

# One call in a new backend: "wall cpu peak_kB rows".
hz=$(getconf CLK_TCK)
one_call() {
	local fifo out bpid st0 st1 hwm0 hwm1 t0 rows t1
	fifo=$(mktemp -u /tmp/pgwc-fifo.XXXXXX)
	mkfifo "$fifo"
	chmod 666 "$fifo"
	out=$(mktemp)
	chmod 666 "$out"
	as_pg "$bin/psql" -X -h /tmp -p "$port" -d postgres -At -f "$fifo" >"$out" 2>&1 &
	local psql_pid=$!
	exec 3>"$fifo"
	echo "SELECT pg_backend_pid();" >&3
	for _ in $(seq 1 100); do [ -s "$out" ] && break; sleep 0.05; done
	bpid=$(head -1 "$out")
	read -r -a st0 < <(cut -d' ' -f14,15 "/proc/$bpid/stat")
	hwm0=$(awk '/^VmHWM:/ {print $2}' "/proc/$bpid/status")
	echo "SELECT extract(epoch FROM clock_timestamp())::text || ' ' || (SELECT count(*) FROM warmcache_relations()) || ' ' || extract(epoch FROM clock_timestamp())::text;" >&3
	for _ in $(seq 1 12000); do [ "$(wc -l <"$out")" -ge 2 ] && break; sleep 0.05; done
	read -r -a st1 < <(cut -d' ' -f14,15 "/proc/$bpid/stat")
	hwm1=$(awk '/^VmHWM:/ {print $2}' "/proc/$bpid/status")
	exec 3>&-
	wait "$psql_pid" || true
	rm -f "$fifo"
	read -r t0 rows t1 < <(sed -n 2p "$out")
	rm -f "$out"
	awk -v a="${st1[0]}" -v b="${st1[1]}" -v c="${st0[0]}" -v d="${st0[1]}" -v hz="$hz" \
		-v t0="$t0" -v t1="$t1" -v h0="$hwm0" -v h1="$hwm1" -v rows="$rows" \
		'BEGIN {printf "%.2f %.2f %d %s\n", t1 - t0, (a + b - c - d) / hz, h1 - h0, rows}'
}

echo "| rep | load | wall s | CPU s | peak memory growth, kB | rows |"
echo "|---|---|---|---|---|---|"
ncpu=$(nproc)
for r in $(seq 1 "$reps"); do
	for load in idle busy; do
		if [ "$load" = busy ]; then
			for _ in $(seq 1 "$ncpu"); do
				q "SELECT count(*) FROM generate_series(1, 10000000000)" >/dev/null 2>&1 &
				busy_pids+=($!)
			done
			sleep 2
		fi
		read -r wall cpu peak rows < <(one_call)
		echo "| $r | $load | $wall | $cpu | $peak | $rows |"
		if [ "$load" = busy ]; then
			q "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT count(*) FROM generate_series%' AND pid <> pg_backend_pid()" >/dev/null
			for p in "${busy_pids[@]}"; do wait "$p" 2>/dev/null || true; done
			busy_pids=()
		fi
	done
done
echo
echo "$nfiles files; PostgreSQL $("$bin/postgres" --version | awk '{print $3}'); pg_warmcache $(git -C "$root" rev-parse --short HEAD); command: bash bench/relations-files.sh --pg $pg --files $nfiles --reps $reps"
