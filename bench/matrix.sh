#!/bin/bash
# The warm-up matrix: every scenario a pacer or engine change is judged on,
# in one run on one build, printed as one table with each target and a
# pass or fail mark.
#
#   bench/matrix.sh [--pg 15,18] [--reps 3] [--hot-reps 5] [--warm-reps 7]
#                   [--rows reboot,hot-start,uniform,ddl,warm]
#                   (never-evict too, named: not in the default rows) [--smoke]
#
# Per PostgreSQL major (in the order given), on the capped disk (3000 IOPS,
# 125 MB/s) at scale 100, each row one run of another script of bench/,
# which measures the device's read rate with dd in the same run:
#
#   reboot     warmup.sh --workload uniform --shared-buffers 256MB, methods
#              none, autoprewarm, warmcache (both tiers), pgfincore (its
#              snapshot and loader, the manual peer), --no-idle, each
#              run followed by its own warm level (AFTER_SECONDS, 15): t90
#              and mean60 against it are shown beside the judged ones
#   hot-start  warmup.sh --workload hot-start --seconds 30, methods none,
#              warmcache, none-again (no warm-up once more: the control)
#              and reader (the database's files read once by a plain
#              reader outside the server: the floor), --hot-reps (5)
#              repetitions and as many idle restores: its per-second TPS,
#              CPU-bound on a virtual machine, varies by 10-15% between
#              two runs a minute apart, the control's ratio to none shows
#              what that spread alone gives, and the reader's what reading
#              the same bytes costs the queries, whoever reads them
#   uniform    warmup.sh --workload uniform,hot (uniform and recent rows
#              hot), shared_buffers 4GB, methods none, autoprewarm,
#              warmcache, --no-idle
#   never-evict  never-evict.sh: the saved set twice shared_buffers, the
#              restore asked for once the queries (warmup.sh's hot-start
#              script) have cached their hot set, methods none, warmcache,
#              none-again: the hot pages the restore evicted (pg_buffercache)
#              and TPS against no warm-up
#   ddl        restore-ddl.sh --tests lock,template --methods none,warmcache
#   warm       warm-vs-prewarm.sh --conditions cpu,iops,capped --modes buffer
#              (--warm-reps, 7)
#
# The warmup.sh rows rotate the methods' order between repetitions; --reps
# (3) is each row's number of repetitions.  The clients are pgbench -S with
# CLIENTS (2) connections.  Then bench/matrix-report.py prints the table
# (medians, min-max) and writes it to OUT/matrix.md.
#
# BASE_REV=REV (a revision of this repository, e.g. a4728fe, release 1.5)
# weighs the work tree against REV's build in the same run: the reboot,
# hot-start and uniform rows add the method warmcache-base (warmcache with
# REV's library, bench/lib.sh "The base build") to their rotation, the warm
# row times warm() under REV's library too (warm-vs-prewarm.sh --builds
# new,base), and the table adds per row "new against base": each
# repetition's figure of this build over REV's, beside the row's control.
#
# --smoke checks that every row runs, end to end, in a few minutes: scale 5,
# 12-s runs, 5-s saved and steady states; its figures measure nothing.
#
# Output in bench/out/<timestamp>-matrix/ (OUT_DIR overrides): one
# directory per major and row, each the row script's own output, and
# matrix.md.  About 70 minutes per major at the defaults.  Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

pgs=15,18
reps=3
wreps=7
hreps=5
rows=reboot,hot-start,uniform,ddl,warm
smoke=0
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pgs=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--warm-reps) wreps=$2; shift 2 ;;
	--hot-reps) hreps=$2; shift 2 ;;
	--rows) rows=$2; shift 2 ;;
	--smoke) smoke=1; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed -n '/^#/s/^# \{0,1\}//p'; exit 0 ;;
	*) echo "matrix.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ $reps =~ ^[1-9][0-9]*$ && $wreps =~ ^[1-9][0-9]*$ && $hreps =~ ^[1-9][0-9]*$ ]] ||
	{ echo "matrix.sh: --reps, --hot-reps and --warm-reps take positive integers" >&2; exit 2; }

# The rows' own arguments, last so that they win: a smoke run's small ones.
small=() scale=()
if [ $smoke = 1 ]; then
	export PREP_SECONDS=5 STEADY_SECONDS=5 AFTER_SECONDS=5 RESTORE_WAIT=20
	scale=(--scale 5)
	small=(--scale 5 --seconds 12)
fi

# With BASE_REV, the warmup.sh rows rotate warmcache-base among their
# methods and warm-vs-prewarm.sh takes it from the environment.
base="" builds=()
if [ -n "${BASE_REV:-}" ]; then
	rev=$(. "$here/lib.sh" && base_rev) || exit 2
	base=,warmcache-base
	builds=(--builds new,base)
fi

out=${OUT_DIR:-$here/out/$(date +%Y%m%d-%H%M%S)-matrix}
mkdir -p "$out"
echo "command=bench/matrix.sh --pg $pgs --reps $reps --hot-reps $hreps --warm-reps $wreps --rows $rows$([ $smoke = 0 ] || echo ' --smoke')" >>"$out/info.txt"
echo "repo=$(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown) $(date -u '+%F %H:%M UTC')" >>"$out/info.txt"
[ -z "$base" ] || echo "base=$rev (BASE_REV=$BASE_REV)" >>"$out/info.txt"

IFS=, read -r -a pglist <<<"$pgs"
IFS=, read -r -a rowlist <<<"$rows"
for pg in "${pglist[@]}"; do
	for row in "${rowlist[@]}"; do
		d=$out/pg$pg/$row
		echo "[$(date +%T)] matrix: PostgreSQL $pg, $row"
		case "$row" in
		reboot)
			AFTER_SECONDS=${AFTER_SECONDS:-15} OUT_DIR=$d "$here/warmup.sh" --pg "$pg" \
				--disk capped --workload uniform \
				--methods "none,autoprewarm,warmcache,pgfincore$base" --shared-buffers 256MB \
				--reps "$reps" --no-idle "${small[@]}" ;;
		hot-start)
			IDLE_REPS=$hreps OUT_DIR=$d "$here/warmup.sh" --pg "$pg" --disk capped \
				--workload hot-start --methods "none,warmcache$base,none-again,reader" --seconds 30 \
				--reps "$hreps" "${small[@]}" ;;
		uniform)
			OUT_DIR=$d "$here/warmup.sh" --pg "$pg" --disk capped --workload uniform,hot \
				--methods "none,autoprewarm,warmcache$base" --reps "$reps" --no-idle "${small[@]}" ;;
		never-evict)
			OUT_DIR=$d "$here/never-evict.sh" --pg "$pg" --disk capped --reps "$reps" "${small[@]}" ;;
		ddl)
			OUT_DIR=$d "$here/restore-ddl.sh" --pg "$pg" --disk capped \
				--tests lock,template --methods none,warmcache --reps "$reps" "${scale[@]}" ;;
		warm)
			OUT_DIR=$d "$here/warm-vs-prewarm.sh" --pg "$pg" --reps "$wreps" \
				--conditions cpu,iops,capped --modes buffer "${builds[@]}" "${scale[@]}" ;;
		*) echo "matrix.sh: unknown row $row" >&2; exit 2 ;;
		esac >"$out/pg$pg-$row.log" 2>&1 ||
			echo "[$(date +%T)] matrix: PostgreSQL $pg, $row failed: see $out/pg$pg-$row.log"
	done
done
/usr/bin/python3 "$here/matrix-report.py" "$out" | tee "$out/matrix.md"
