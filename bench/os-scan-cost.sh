#!/bin/bash
# What the OS tier costs a dump: warmcache_dump_now() with
# pg_warmcache.dump_os_cache on against off, on a cluster whose relation
# files are scattered in the OS page cache.
#
#   bench/os-scan-cost.sh [--pg 15|18] [--gb 10] [--reps 5] [--stride-kb 64]
#                         [--files 0] [--files-cached 100] [--alt]
#
# The cluster is a scale-1 pgbench cluster of its own on the local disk
# (bench/lib.sh's, named os-scan; shared_buffers 256MB here), so that what
# other scripts leave in theirs does not count.  Into the bench database's directory go GB
# files of 1 GB named like relation files (990000001, 990000002, ...), made
# sparse: the scan reads file names and page-cache residency only, never
# the data, and a hole read into the page cache is resident like any page.
# Each file is evicted (posix_fadvise DONTNEED), then every other STRIDE kB
# is read with readahead off (POSIX_FADV_RANDOM), so half of every file is
# resident in runs of STRIDE kB: the worst case for the scan, one run per
# STRIDE kB.  util-linux fincore checks the pattern.  With --files N, N
# one-block files named like relation files (980000001, ...) go there too,
# resident: the scan's cost per file, as a database of many small
# relations has them; --files-cached P leaves P% of them resident (every
# file whose number modulo 100 is below P) and evicts the rest, as a
# cluster has relations nobody read since its start.  util-linux fincore
# counts what is resident.  The relation files of the cluster are
# counted, and the cost per file is (on - off) over that count.
#
# Per repetition, alternating which goes first: reload with the setting on
# or off (in bench_run.conf, see bench/lib.sh), then in one session read
# the backend's CPU time (/proc/self/schedstat, nanoseconds on a CPU, and
# /proc/self/stat user and system ticks), run warmcache_dump_now(), read
# them again; wall time from clock_timestamp().  The dump file's size is
# kept per run.
#
# Output: a table per run and the medians (with min-max): CPU ms, CPU ms
# per GB of scattered files for (on - off), wall ms, file bytes and bytes
# per GB.  With --alt a third setting, alt, runs in the same rotation:
# dump_os_cache on plus the lines of ALT_CONF (default
# pg_warmcache.platform_shortcuts = '', so that the walk maps every file
# where it would count its cached pages), weighed against on the same way
# (alt - on).  The fake files are removed at the end (also on failure).
# Environment: bench/lib.sh's (BENCH_BASE, PGWC_PORT, SKIP_INSTALL, ...).
# Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 gb=10 reps=5 stride=64 nfiles=0 fcached=100 alt=0
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--gb) gb=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--stride-kb) stride=$2; shift 2 ;;
	--files) nfiles=$2; shift 2 ;;
	--files-cached) fcached=$2; shift 2 ;;
	--alt) alt=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
for v in reps stride; do
	[[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} >= 1)) || die "--$v must be a whole number >= 1"
done
[[ $gb =~ ^[0-9]+$ && $nfiles =~ ^[0-9]+$ ]] && ((gb + nfiles >= 1)) ||
	die "--gb and --files take whole numbers, at least one of them >= 1"
[[ $fcached =~ ^[0-9]+$ ]] && ((fcached <= 100)) ||
	die "--files-cached takes a percentage, 0 to 100"
((stride % 8 == 0)) || die "--stride-kb must be a multiple of 8 (the block size)"

EXTRA_CONF="shared_buffers = 256MB
${EXTRA_CONF:-}"
use_pg "$pg"
use_cluster local 1 os-scan
ensure_db
pg_start "$CLDIR/logs/os-scan.log"
verify_lib
dbdir=$PGDATA/$(sql "select 'base/' || oid from pg_database where datname = 'bench'")
fakes=()
for ((i = 1; i <= gb; i++)); do
	fakes+=("$dbdir/$((990000000 + i))")
done
cleanup() {
	rm -f "${fakes[@]}"
	[ "$nfiles" = 0 ] || find "$dbdir" -maxdepth 1 -name '98[0-9][0-9][0-9][0-9][0-9][0-9][0-9]' -delete
	pg_stop 2>/dev/null || true
}
trap cleanup EXIT

if [ "$nfiles" -gt 0 ]; then
	say "making $nfiles one-block files in $dbdir, $fcached% of them resident"
	python3 - "$dbdir" "$nfiles" "$(id -u "$PG_USER")" "$(id -g "$PG_USER")" "$fcached" <<'EOF'
import os, sys
d, n, uid, gid, pct = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
block = bytes(8192)
for i in range(1, n + 1):
    path = os.path.join(d, str(980000000 + i))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, block)
    os.fchown(fd, uid, gid)
    os.close(fd)
# Written back first: the kernel drops only clean pages.
os.sync()
for i in range(1, n + 1):
    if i % 100 >= pct:
        fd = os.open(os.path.join(d, str(980000000 + i)), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
EOF
	say "one-block files resident: $(find "$dbdir" -maxdepth 1 -name '98[0-9][0-9][0-9][0-9][0-9][0-9][0-9]' -print0 |
		xargs -0 fincore -b -n -o RES | awk '$1 > 0 { n++ } END { print n + 0 }') of $nfiles"
fi
say "making $gb sparse 1 GB files in $dbdir, every other ${stride} kB resident"
for f in "${fakes[@]}"; do
	truncate -s 1G "$f"
	chown "$PG_USER:" "$f"
done
python3 - "$stride" "${fakes[@]}" <<'EOF'
import os, sys
stride = int(sys.argv[1]) * 1024
for path in sys.argv[2:]:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    for off in range(0, size, 2 * stride):
        os.pread(fd, stride, off)
    os.close(fd)
EOF
# Counted once every file is there, the 1 GB ones included (their
# segments are files to the walk too).
relfiles=$(find "$PGDATA/base" "$PGDATA/global" "$PGDATA/pg_tblspc/" -type f -name '[0-9]*' 2>/dev/null | wc -l)
say "relation files in the cluster: $relfiles"

resident() {
	[ ${#fakes[@]} -gt 0 ] || { echo 0; return; }
	fincore -b -n -o RES "${fakes[@]}" | awk '{ s += $1 } END { printf "%.3f", s / 2^30 }'
}
res0=$(resident)
say "resident: $res0 GB of $gb GB"

# one_dump on|off|alt: prints "cpu_ns user_ticks sys_ticks wall_ms file_bytes blocks"
one_dump() {
	if [ "$1" = alt ]; then
		run_conf "pg_warmcache.dump_os_cache = on"$'\n'"${ALT_CONF:-pg_warmcache.platform_shortcuts = ''}"
	else
		run_conf "pg_warmcache.dump_os_cache = $1"
	fi
	sql "select pg_reload_conf()" >/dev/null
	sleep 0.5
	psqlc -At -d bench -F ' ' <<'EOF'
select current_setting('pg_warmcache.dump_os_cache') as setting \gset s_
select split_part(pg_read_file('/proc/self/schedstat'), ' ', 1) as cpu0,
       split_part(pg_read_file('/proc/self/stat'), ' ', 14) as ut0,
       split_part(pg_read_file('/proc/self/stat'), ' ', 15) as st0,
       extract(epoch from clock_timestamp()) as t0 \gset
select warmcache_dump_now() as blocks \gset
select split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint - :cpu0,
       split_part(pg_read_file('/proc/self/stat'), ' ', 14)::bigint - :ut0,
       split_part(pg_read_file('/proc/self/stat'), ' ', 15)::bigint - :st0,
       round((extract(epoch from clock_timestamp()) - :t0) * 1000, 1),
       (pg_stat_file('pg_warmcache.blocks')).size, :blocks, :'s_setting';
EOF
}

hz=$(getconf CLK_TCK)
rows=()
echo "| rep | dump_os_cache | CPU ms (schedstat) | user+sys ms (stat) | wall ms | file bytes | blocks |"
echo "|---|---|---:|---:|---:|---:|---:|"
one_dump off >/dev/null # warm the catalogs and the code
for ((r = 1; r <= reps; r++)); do
	if ((alt)); then
		order=(on off alt)
		case $((r % 3)) in 2) order=(off alt on) ;; 0) order=(alt on off) ;; esac
	else
		order=(on off)
		((r % 2)) || order=(off on)
	fi
	for m in "${order[@]}"; do
		read -r cpu ut st wall bytes blocks seen < <(one_dump "$m")
		want=$m
		[ "$m" != alt ] || want=on
		[ "$seen" = "$want" ] || die "the backend saw dump_os_cache = $seen, not $want"
		cpums=$(awk -v n="$cpu" 'BEGIN { printf "%.1f", n / 1e6 }')
		tickms=$(awk -v a="$ut" -v b="$st" -v hz="$hz" 'BEGIN { printf "%.0f", (a + b) * 1000 / hz }')
		echo "| $r | $m | $cpums | $tickms | $wall | $bytes | $blocks |"
		rows+=("$m $cpums $wall $bytes $blocks")
	done
done
res1=$(resident)
run_conf ""
printf '%s\n' "${rows[@]}" | awk -v gb="$gb" -v res0="$res0" -v res1="$res1" -v files="$relfiles" '
function med(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function mn(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
function mx(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
{ k = $1; n[k]++; cpu[k, n[k]] = $2; wall[k, n[k]] = $3; bytes[k] = $4; blocks[k] = $5 }
END {
	for (k in n) {
		for (i = 1; i <= n[k]; i++) { c[i] = cpu[k, i]; w[i] = wall[k, i] }
		mc[k] = med(c, n[k]); lc[k] = mn(c, n[k]); hc[k] = mx(c, n[k])
		mw[k] = med(w, n[k]); lw[k] = mn(w, n[k]); hw[k] = mx(w, n[k])
	}
	printf "\nresident before / after the dumps: %s / %s GB of %d GB of scattered files\n\n", res0, res1, gb
	printf "| dump_os_cache | CPU ms median (min-max) | wall ms median (min-max) | file bytes | blocks |\n|---|---:|---:|---:|---:|\n"
	printf "| off | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %d | %d |\n", mc["off"], lc["off"], hc["off"], mw["off"], lw["off"], hw["off"], bytes["off"], blocks["off"]
	printf "| on | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %d | %d |\n", mc["on"], lc["on"], hc["on"], mw["on"], lw["on"], hw["on"], bytes["on"], blocks["on"]
	if ("alt" in n)
		printf "| alt | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %d | %d |\n", mc["alt"], lc["alt"], hc["alt"], mw["alt"], lw["alt"], hw["alt"], bytes["alt"], blocks["alt"]
	if (gb > 0)
		printf "\nOS tier, per GB of scattered files: CPU %.1f ms (on - off, medians), wall %.1f ms, file %.0f bytes\n",
			(mc["on"] - mc["off"]) / gb, (mw["on"] - mw["off"]) / gb, (bytes["on"] - bytes["off"]) / gb
	printf "\nOS tier, per relation file (%d in the cluster): CPU %.1f us (on - off, medians), wall %.1f us\n",
		files, (mc["on"] - mc["off"]) * 1000 / files, (mw["on"] - mw["off"]) * 1000 / files
	if ("alt" in n) {
		if (gb > 0)
			printf "alt against on, per GB of scattered files: CPU %.1f ms (alt - on, medians), wall %.1f ms\n",
				(mc["alt"] - mc["on"]) / gb, (mw["alt"] - mw["on"]) / gb
		printf "alt against on, per relation file: CPU %.1f us (alt - on, medians), wall %.1f us\n",
			(mc["alt"] - mc["on"]) * 1000 / files, (mw["alt"] - mw["on"]) * 1000 / files
	}
}'
