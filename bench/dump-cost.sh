#!/bin/bash
# What one dump costs with shared_buffers full: wall time and CPU time of
# warmcache_dump_now(), with a given shared_buffers filled by distinct blocks,
# and the size of the file it writes.
#
#   bash bench/dump-cost.sh [--pg 15|17|18] [--buffers-gb 8] [--reps 3]
#
# Runs as root; the server runs as postgres in $PGWC_BENCH_DIR (default
# /var/tmp/pg_warmcache-dumpcost). CPU time is read from /proc for the
# backend doing the dump, so it does not depend on other load.
set -euo pipefail

pg=15
gb=8
reps=3
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--buffers-gb) gb=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--help|-h) sed -n '2,11p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/common.sh"
dir=${PGWC_BENCH_DIR:-/var/tmp/pg_warmcache-dumpcost}
port=${PGWC_BENCH_PORT:-5496}
flavor=
[ "$pg" != 15 ] && flavor=bench
pc=$(PGWC_FLAVOR=$flavor "$root/test/install-deps" "$pg" | awk -v m="$pg" '$2 == m {print $3}')
bin=$("$pc" --bindir)
make -s -C "$root" PG_CONFIG="$pc" clean >/dev/null
make -s -C "$root" PG_CONFIG="$pc" install >/dev/null
make -s -C "$root" PG_CONFIG="$pc" clean >/dev/null

q() { as_pg "$bin/psql" -X -h /tmp -p "$port" -d postgres -Atc "$1"; }

# One 8 kB page per row: 7000 bytes stored plain (no compression, no TOAST).
pages=$(( gb * 1024 * 1024 / 8 * 95 / 100 ))
if [ ! -f "$dir/ready-$pg-$gb" ]; then
	[ -f "$dir/data/postmaster.pid" ] && as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate stop || true
	rm -rf "$dir"; mkdir -p "$dir"; chown "$PG_USER:" "$dir"
	as_pg "$bin/initdb" -D "$dir/data" -A trust >/dev/null
	cat >>"$dir/data/postgresql.conf" <<EOT
port = $port
unix_socket_directories = '/tmp'
shared_buffers = ${gb}GB
shared_preload_libraries = 'pg_warmcache'
pg_warmcache.autowarm = off
wal_level = minimal
max_wal_senders = 0
max_wal_size = 20GB
EOT
	as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
	q "CREATE EXTENSION pg_warmcache"
	q "BEGIN; CREATE TABLE filler (id int, pad text); ALTER TABLE filler ALTER pad SET STORAGE plain; INSERT INTO filler SELECT g, repeat('x', 7000) FROM generate_series(1, $pages) g; COMMIT;" >/dev/null
	as_pg "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
	touch "$dir/ready-$pg-$gb"
fi
as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
q "CREATE EXTENSION IF NOT EXISTS pg_warmcache" >/dev/null
q "SELECT warm('filler')" >/dev/null
nbuf=$(q "SELECT setting FROM pg_settings WHERE name = 'shared_buffers'")

echo "| rep | blocks dumped | wall s | CPU s (user+sys) | file bytes |"
echo "|---|---|---|---|---|"
hz=$(getconf CLK_TCK)
for r in $(seq 1 "$reps"); do
	# A session that prints its pid, waits for the CPU snapshot, then dumps.
	fifo=$(mktemp -u /tmp/pgwc-fifo.XXXXXX); mkfifo "$fifo"; chmod 666 "$fifo"
	as_pg "$bin/psql" -X -h /tmp -p "$port" -d postgres -At -f "$fifo" >"$dir/rep.out" 2>&1 &
	psql_pid=$!
	exec 3>"$fifo"
	echo "SELECT pg_backend_pid();" >&3
	for _ in $(seq 1 100); do [ -s "$dir/rep.out" ] && break; sleep 0.05; done
	bpid=$(head -1 "$dir/rep.out")
	read -r -a st0 < <(cut -d' ' -f14,15 "/proc/$bpid/stat")
	echo "SELECT extract(epoch FROM clock_timestamp())::text || ' ' || warmcache_dump_now() || ' ' || extract(epoch FROM clock_timestamp())::text;" >&3
	for _ in $(seq 1 1200); do [ "$(wc -l <"$dir/rep.out")" -ge 2 ] && break; sleep 0.05; done
	read -r -a st1 < <(cut -d' ' -f14,15 "/proc/$bpid/stat")
	exec 3>&-
	wait "$psql_pid" || true
	rm -f "$fifo"
	read -r t0 blocks t1 < <(sed -n 2p "$dir/rep.out")
	cpu=$(awk -v a="${st1[0]}" -v b="${st1[1]}" -v c="${st0[0]}" -v d="${st0[1]}" -v hz="$hz" 'BEGIN {printf "%.2f", (a + b - c - d) / hz}')
	wall=$(awk -v a="$t1" -v b="$t0" 'BEGIN {printf "%.3f", a - b}')
	size=$(stat -c %s "$dir/data/pg_warmcache.blocks")
	echo "| $r | $blocks | $wall | $cpu | $size |"
done
echo
echo "shared_buffers = $nbuf x 8 kB; PostgreSQL $("$bin/postgres" --version | awk '{print $3}'); command: bash bench/dump-cost.sh --pg $pg --buffers-gb $gb --reps $reps"
as_pg "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
