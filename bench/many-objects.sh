#!/bin/bash
# What a relation costs the restore beyond its blocks: a saved set of N
# one-block relations against one relation of N blocks, restored on the
# same disk, in the same run.
#
#   bench/many-objects.sh [--pg 15|18] [--relations 20000] [--databases 1000]
#                         [--reps 5] [--disk local|capped]
#
# And what a database costs: N databases with one one-block table each
# (--databases 0 leaves this out), against the same number of blocks of
# one relation.  Each database's saved blocks include the catalog blocks
# its connection read, so the compared relation shape takes as many
# blocks as the databases' file holds: what is left is the cost per
# database beyond its blocks (workers started, connections, relcache).
#
# The cluster: bench/lib.sh's (scale 1, shared_buffers 4GB, and
# max_locks_per_transaction 2048: one warm() call per table in one
# statement locks them all).  In its bench
# database: schema objs with N tables of one block each (one row of 7000
# bytes, storage plain), and table one_rel with N such rows: N blocks.
# The saved states, made once: restart with autowarm off (shared buffers
# empty but for the catalogs) and the dump's OS tier off (the tables, just
# written, are in the page cache), warm() the tables of a shape, dump,
# keep a copy of the file.
# A run (SHAPE, repetition): the shape's saved file in place, the OS cache
# dropped, start (under the cap on the capped disk) with autowarm on, and
# wait for the restore's log line; its elapsed time ("in X s") is the
# figure.  Both shapes name the catalogs the warm() calls read as well;
# the many relations' catalogs are larger, and that is part of what they
# cost.  The shapes alternate, the first one changing from one repetition
# to the next.  dd of one_rel's file after drop_caches, at the start and at
# the end: the device's rate for the same bytes.
#
# Then the floor: with the server stopped and the OS cache dropped, the
# same blocks read by bench/read-blocks.py (see floor_runs): one_rel's in
# order, one of each one-block table one read at a time, and the same
# with 64 reads in flight.  With --databases, one client connecting to
# each database in turn and reading its table, cold and then warm (see
# floor_dbs).
#
# Output: a Markdown table of the runs and the medians with min-max, also
# in bench/out/<timestamp>-many-objects/results.md (OUT_DIR overrides).
# Environment: bench/lib.sh's.  Making 20,000 tables takes a minute or
# two, once.  Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 nrel=20000 ndb=1000 reps=5 disk=local
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--relations) nrel=$2; shift 2 ;;
	--databases) ndb=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--disk) disk=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
for v in nrel reps; do
	[[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} >= 1)) || die "$v must be a whole number >= 1"
done
[[ $ndb =~ ^[0-9]+$ ]] || die "--databases must be a whole number"

EXTRA_CONF="max_locks_per_transaction = 2048
${EXTRA_CONF:-}"
use_pg "$pg"
use_cluster "$disk" 1
ensure_db
out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-many-objects}
mkdir -p "$out"
logf=$CLDIR/logs/many-objects.log
saved=$CLDIR/many-objects
mkdir -p "$saved"

pg_start "$logf"
verify_lib
have=$(sql "select count(*) from pg_tables where schemaname = 'objs'")
if [ "$have" != "$nrel" ] || [ "$(sql "select coalesce(pg_relation_size(to_regclass('one_rel')) / 8192, 0)")" != "$nrel" ]; then
	say "making $nrel one-block tables and one table of $nrel blocks"
	sql "drop schema if exists objs cascade; drop table if exists one_rel" >/dev/null
	sql "create schema objs" >/dev/null
	sql "create table one_rel (id int, pad text); alter table one_rel alter pad set storage plain;
	     insert into one_rel select g, repeat('x', 7000) from generate_series(1, $nrel) g" >/dev/null
	for ((i = 1; i <= nrel; i += 1000)); do
		sql "do \$\$ begin for i in $i .. $((i + 999 < nrel ? i + 999 : nrel)) loop
		       execute format('create table objs.t%s (id int, pad text); alter table objs.t%s alter pad set storage plain;
		                       insert into objs.t%s values (1, repeat(''x'', 7000))', i, i, i);
		     end loop; end \$\$" >/dev/null
	done
	sql "checkpoint" >/dev/null
fi
if ((ndb > 0)); then
	have=$(sql "select count(*) from pg_database where datname like 'objdb\\_%'")
	if [ "$have" != "$ndb" ]; then
		say "making $ndb databases with a one-block table each"
		for d in $(sql "select datname from pg_database where datname like 'objdb\\_%' or datname = 'objtpl'"); do
			sql "drop database $d" >/dev/null
		done
		sql "create database objtpl template template0" >/dev/null
		DB=objtpl sql "create table t (id int, pad text); alter table t alter pad set storage plain;
		               insert into t values (1, repeat('x', 7000))" >/dev/null
		for ((i = 1; i <= ndb; i++)); do
			sql "create database objdb_$i template objtpl strategy file_copy" >/dev/null
		done
		sql "drop database objtpl" >/dev/null
	fi
fi

# save_state SHAPE: the saved file holding the shape's relations.
save_state() {
	local shape=$1
	pg_stop
	run_conf $'pg_warmcache.autowarm = off\npg_warmcache.dump_os_cache = off'
	pg_start "$logf"
	case "$shape" in
	one) sql "select warm('one_rel')" >/dev/null ;;
	dbs)
		for ((i = 1; i <= ndb; i++)); do
			DB=objdb_$i sql "select count(*) from t" >/dev/null
		done
		;;
	dbone) sql "select warm('big_rel', 'buffer', 'main', 0, $(($(cat "$saved/dbs.blocks-count") - 1)))" >/dev/null ;;
	many) sql "select count(warm(c.oid)) from pg_class c join pg_namespace n on n.oid = c.relnamespace
	           where n.nspname = 'objs' and c.relkind = 'r'" >/dev/null ;;
	esac
	sql "select warmcache_dump_now()" >"$saved/$shape.blocks-count"
	cp "$PGDATA/pg_warmcache.blocks" "$saved/$shape.blocks"
	pg_stop
}

# one_run SHAPE: prints the restore's seconds and blocks.
one_run() {
	local shape=$1 line i
	pg_stop
	cp "$saved/$shape.blocks" "$PGDATA/pg_warmcache.blocks"
	chown "$PG_USER:" "$PGDATA/pg_warmcache.blocks"
	run_conf $'pg_warmcache.autowarm = on\npg_warmcache.dump_os_cache = off'
	drop_caches
	pg_start "$logf" # a new log
	for ((i = 0; i < 6000; i++)); do
		line=$(grep -E "$WC_END_ERE" "$logf" | head -1) || true
		[ -n "$line" ] && break
		sleep 0.1
	done
	[ -n "$line" ] || die "no restore line within 600 s (log $logf)"
	echo "$line" | sed -E 's/.*restored ([0-9]+) of ([0-9]+) blocks?.* in ([0-9.]+) s.*/\3 \1 \2/'
}

# The databases' file, and as many blocks of one relation.
if ((ndb > 0)); then
	save_state dbs
	pg_start "$logf"
	nb=$(cat "$saved/dbs.blocks-count")
	if [ "$(sql "select coalesce(pg_relation_size(to_regclass('big_rel')) / 8192, 0)")" -lt "$nb" ]; then
		say "making a table of $nb blocks"
		sql "drop table if exists big_rel; create table big_rel (id int, pad text); alter table big_rel alter pad set storage plain;
		     insert into big_rel select g, repeat('x', 7000) from generate_series(1, $nb) g; checkpoint" >/dev/null
	fi
fi
mapfile -t one_files < <(rel_files one_rel)
rate_of_one() {
	cold_read "${one_files[@]}"
	echo "$CR_RATE"
}

{
	echo "# Per-object cost of the restore, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Command: \`bench/many-objects.sh --pg $pg --relations $nrel --databases $ndb --reps $reps --disk $disk\`; pg_warmcache $(repo_version)."
	echo
} >"$out/results.md"
# floor_runs: the same blocks read outside the server, after the OS cache
# was dropped (bench/read-blocks.py), repetitions alternating: one_rel's
# blocks in order; one block of each one-block table in relfilenode order
# (the saved file's), one read at a time; the same, 64 reads in flight.
# The restore of a shape cannot beat its reading here; the last says what
# reading across relations could gain.
floor_runs() {
	local r kind secs order
	sql "select '$PGDATA/' || pg_relation_filepath(c.oid) || ' 0'
	     from pg_class c join pg_namespace n on n.oid = c.relnamespace
	     where n.nspname = 'objs' and c.relkind = 'r' order by c.relfilenode" >"$out/many.list"
	local base
	base=$PGDATA/$(sql "select pg_relation_filepath('one_rel')")
	awk -v b="$base" -v n="$nrel" 'BEGIN { for (i = 0; i < n; i++) { s = int(i / 131072);
		printf "%s%s %d\n", b, s ? "." s : "", i % 131072 } }' >"$out/one.list"
	((ndb == 0)) || sql "select datname from pg_database where datname like 'objdb\\_%' order by oid" >"$out/dbs.list"
	pg_stop
	for ((r = 1; r <= reps; r++)); do
		order=(floor_one floor_many floor_ahead)
		((r % 2)) || order=(floor_ahead floor_many floor_one)
		for kind in "${order[@]}"; do
			local list=$out/many.list ahead=0
			[ "$kind" = floor_one ] && list=$out/one.list
			[ "$kind" = floor_ahead ] && ahead=64
			drop_caches
			if [ -n "$CAPPED" ]; then
				secs=$(bash "$CAPPED" run python3 "$BENCH_DIR/read-blocks.py" --ahead "$ahead" <"$list" | cut -d' ' -f1)
			else
				secs=$(python3 "$BENCH_DIR/read-blocks.py" --ahead "$ahead" <"$list" | cut -d' ' -f1)
			fi
			echo "$kind $secs" >>"$out/runs.txt"
			say "$kind r$r: $secs s"
		done
		((ndb == 0)) || floor_dbs "$r"
	done
}

# floor_dbs REP: the server started with nothing to restore after the OS
# cache was dropped, one client process (bench/connect-dbs.py) connects
# to each database in turn and counts its table: what a database costs a
# backend that starts in it cold; then the same again, everything cached:
# what a connection costs by itself.
floor_dbs() {
	local secs kind
	pg_stop
	run_conf $'pg_warmcache.autowarm = off\npg_warmcache.dump_os_cache = off'
	drop_caches
	pg_start "$logf"
	for kind in floor_dbs floor_dbs_warm; do
		secs=$(python3 "$BENCH_DIR/connect-dbs.py" "$SOCK" "$PGWC_PORT" "$PG_USER" \
			"select count(*) from t" <"$out/dbs.list" | cut -d' ' -f1)
		echo "$kind $secs" >>"$out/runs.txt"
		say "$kind r$1: $secs s"
	done
	pg_stop
}
run_all() {
	local r shape secs done total
	save_state one
	save_state many
	((ndb == 0)) || save_state dbone
	dd0=$(rate_of_one)
	echo "| rep | shape | restore s | restored | of blocks |" >>"$out/results.md"
	echo "|---:|---|---:|---:|---:|" >>"$out/results.md"
	for ((r = 1; r <= reps; r++)); do
		local order=(one many)
		((ndb == 0)) || order+=(dbone dbs)
		((r % 2)) || order=($(printf '%s\n' "${order[@]}" | tac))
		for shape in "${order[@]}"; do
			read -r secs done total < <(one_run "$shape")
			echo "| $r | $shape | $secs | $done | $total |" >>"$out/results.md"
			echo "$shape $secs" >>"$out/runs.txt"
			say "$shape r$r: $secs s ($done of $total blocks)"
		done
	done
	floor_runs
	pg_stop
	dd1=$(rate_of_one)
	awk -v dd0="$dd0" -v dd1="$dd1" -v n="$nrel" -v nd="$ndb" -v nb="${nb:-0}" '
function med(a, k,   i, j, t) {
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ c[$1]++; v[$1, c[$1]] = $2 }
END {
	for (s in c) { for (i = 1; i <= c[s]; i++) x[i] = v[s, i]; m[s] = med(x, c[s]); lo[s] = x[1]; hi[s] = x[c[s]] }
	printf "\n| shape | restore s, median (min-max) |\n|---|---:|\n"
	printf "| one relation of %d blocks | %.2f (%.2f-%.2f) |\n", n, m["one"], lo["one"], hi["one"]
	printf "| %d relations of one block | %.2f (%.2f-%.2f) |\n", n, m["many"], lo["many"], hi["many"]
	printf "\nRatio many / one: %.2f; per relation beyond its block: %.3f ms.\n", m["many"] / m["one"], (m["many"] - m["one"]) * 1000 / n
	if (nd > 0) {
		printf "\n| shape | restore s, median (min-max) |\n|---|---:|\n"
		printf "| %d blocks of one relation | %.2f (%.2f-%.2f) |\n", nb, m["dbone"], lo["dbone"], hi["dbone"]
		printf "| %d databases (%d blocks) | %.2f (%.2f-%.2f) |\n", nd, nb, m["dbs"], lo["dbs"], hi["dbs"]
		printf "\nPer database beyond its blocks: %.2f ms.\n", (m["dbs"] - m["dbone"]) * 1000 / nd
	}
	if (c["floor_one"]) {
		printf "\nThe same blocks read outside the server (bench/read-blocks.py), OS cache dropped:\n\n"
		printf "| reading | s, median (min-max) | / one relation |\n|---|---:|---:|\n"
		printf "| one_rel, %d blocks in order | %.2f (%.2f-%.2f) | 1 |\n", n, m["floor_one"], lo["floor_one"], hi["floor_one"]
		printf "| %d one-block tables, one read at a time | %.2f (%.2f-%.2f) | %.2f |\n", n, m["floor_many"], lo["floor_many"], hi["floor_many"], m["floor_many"] / m["floor_one"]
		printf "| the same, 64 reads in flight | %.2f (%.2f-%.2f) | %.2f |\n", m["floor_ahead"], lo["floor_ahead"], hi["floor_ahead"], m["floor_ahead"] / m["floor_one"]
		printf "\nThe restore of the many relations against their reading one at a time: %.2f.\n", m["many"] / m["floor_many"]
	}
	if (c["floor_dbs"]) {
		printf "\nOne client connecting to each of the %d databases in turn and counting its table (bench/connect-dbs.py):\n\n", nd
		printf "| connections | s, median (min-max) | ms a database |\n|---|---:|---:|\n"
		printf "| cold: server just started, OS cache dropped | %.2f (%.2f-%.2f) | %.2f |\n", m["floor_dbs"], lo["floor_dbs"], hi["floor_dbs"], m["floor_dbs"] * 1000 / nd
		printf "| warm: the same again at once | %.2f (%.2f-%.2f) | %.2f |\n", m["floor_dbs_warm"], lo["floor_dbs_warm"], hi["floor_dbs_warm"], m["floor_dbs_warm"] * 1000 / nd
		printf "\nThe restore per database, all included: %.2f ms.\n", m["dbs"] * 1000 / nd
	}
	printf "dd of one_rel after drop_caches: %s MB/s at the start, %s MB/s at the end.\n", dd0, dd1
}' "$out/runs.txt" >>"$out/results.md"
}
locked run_all
cat "$out/results.md"
