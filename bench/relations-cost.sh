#!/bin/bash
# What warmcache_relations() costs: its CPU and wall time per call, per GB
# of relation and per thousand relations, against the peer that answers
# part of its question, pg_buffercache summed per relation, in the same
# run.
#
#   bench/relations-cost.sh [--pg 15|18] [--relations 20000] [--reps 5]
#
# The cluster is a scale-100 pgbench cluster of its own on the local disk
# (bench/lib.sh's, named relations; shared_buffers 1GB here), so that its
# many tables do not change what other scripts measure.  Its database
# "many" holds --relations tables of one block each (made once), and a
# dump (warmcache_dump_now()) of the OS tier too names every file of both
# databases.  Before the calls: pg_prewarm() of pgbench_accounts and its
# index (shared buffers full), every file of both databases read into the
# page cache.
#
# Per repetition, in the database bench (about 1.5 GB in a few relations:
# the cost per GB) and then in many (the cost per relation), three
# methods in a rotating order: relations (SELECT count(*) FROM
# warmcache_relations()), relations-again (the same: the control), and
# buffercache (SELECT count(*) FROM (SELECT relfilenode, count(*) FROM
# pg_buffercache GROUP BY 1) b JOIN pg_class ...: what is in shared
# buffers per relation, the part of the question the peer answers).  CPU
# time from /proc/self/schedstat of the backend, wall time from
# clock_timestamp().
#
# Output: a table per run and the medians (min-max) per database and
# method, the ratios to the peer and the control, the costs per GB and
# per thousand relation files, and the function's rows for the 8 forks
# of bench with the most saved blocks; also in
# bench/out/<timestamp>-relations-cost/results.md (OUT_DIR overrides).
# Environment: bench/lib.sh's.  Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pg=15 nrel=20000 reps=5
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pg=$2; shift 2 ;;
	--relations) nrel=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
[[ $reps =~ ^[1-9][0-9]*$ && $nrel =~ ^[0-9]+$ ]] ||
	die "--reps and --relations take whole numbers"

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-relations-cost}
mkdir -p "$out"
exec > >(tee "$out/results.md")

EXTRA_CONF="shared_buffers = 1GB
max_locks_per_transaction = 1024
${EXTRA_CONF:-}"
use_pg "$pg"
use_cluster local 100 relations
ensure_db relations sql "create extension pg_prewarm; create extension pg_warmcache; create extension pg_buffercache"
trap 'pg_stop 2>/dev/null || true' EXIT

# The many database, once, made as ensure_db makes bench: CREATE EXTENSION
# loads "$libdir/pg_warmcache", which must not meet the preloaded private
# copy, so in a server that does not preload it.
run_conf "shared_preload_libraries = 'pg_prewarm'"
pg_start "$CLDIR/logs/relations-setup.log"
if [ "$(DB=postgres sql "select count(*) from pg_database where datname = 'many'")" = 0 ] ||
	[ "$(DB=many sql "select count(*) from pg_class where relname like 'one\_%'")" != "$nrel" ]; then
	say "making $nrel one-block tables in the database many"
	DB=postgres sql "drop database if exists many" >/dev/null
	DB=postgres sql "create database many" >/dev/null
	DB=many sql "create extension pg_warmcache; create extension pg_buffercache" >/dev/null
	DB=many sql "update pg_proc set probin = 'pg_warmcache' where probin = '\$libdir/pg_warmcache'" >/dev/null
	for ((i = 0; i < nrel; i += 1000)); do
		hi=$((i + 999 < nrel - 1 ? i + 999 : nrel - 1))
		DB=many sql "do \$\$begin for i in $i .. $hi loop
			execute format('create table one_%s (id int, pad text); insert into one_%s values (1, repeat(''x'', 7000))', i, i);
		end loop; end\$\$" >/dev/null
	done
	sql "checkpoint" >/dev/null
fi
pg_stop
run_conf ""
pg_start "$CLDIR/logs/relations.log"
verify_lib

# Everything in the caches, as on a server that has run a while.
sql "select pg_prewarm('pgbench_accounts'), pg_prewarm('pgbench_accounts_pkey')" >/dev/null
datadir_files=$(find "$PGDATA/base" "$PGDATA/global" -type f -name '[0-9]*')
echo "$datadir_files" | xargs cat >/dev/null
run_conf "pg_warmcache.dump_os_cache = on"
sql "select pg_reload_conf()" >/dev/null
# The autowarm worker makes the dump, once it has read the setting.
for ((i = 0; i < 20; i++)); do
	sleep 0.5
	sql "select warmcache_dump_now()" >/dev/null
	read -r saved_buf saved_os < <(sql "select count(*) filter (where tier <> 'os'),
		count(*) filter (where tier = 'os') from warmcache_blocks()" | tr '|' ' ')
	[ "$saved_os" = 0 ] || break
done
[ "$saved_os" != 0 ] || die "the dump has no OS tier"

# one_call DB METHOD: prints "cpu_ms wall_ms rows"
one_call() {
	local q
	case "$2" in
	relations | relations-again) q="select count(*) from warmcache_relations()" ;;
	buffercache) q="select count(*) from (select b.relfilenode, count(*) from pg_buffercache b
		where b.reldatabase in (0, (select oid from pg_database where datname = current_database()))
		group by 1) b left join pg_class c on c.relfilenode = b.relfilenode" ;;
	esac
	psqlc -At -d "$1" -F ' ' <<EOF
select split_part(pg_read_file('/proc/self/schedstat'), ' ', 1) as cpu0,
       extract(epoch from clock_timestamp()) as t0 \gset
$q \gset r_
select round((split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint - :cpu0) / 1e6, 2),
       round((extract(epoch from clock_timestamp()) - :t0) * 1000, 2), :r_count;
EOF
}

db_facts() {
	DB=$1 sql "select round(pg_database_size(current_database()) / 1073741824.0, 3),
		(select count(*) from pg_class where relkind in ('r', 'i', 't', 'm', 'S') and relpersistence <> 't')"
}
read -r bench_gb bench_rels < <(db_facts bench | tr '|' ' ')
read -r many_gb many_rels < <(db_facts many | tr '|' ' ')
count_files() { find "$PGDATA/base/$(DB=postgres sql "select oid from pg_database where datname = '$1'")" -type f -name '[0-9]*' | wc -l; }
bench_files=$(count_files bench)
many_files=$(count_files many)
global_files=$(find "$PGDATA/global" -type f -name '[0-9]*' | wc -l)

echo "# warmcache_relations() against pg_buffercache per relation: $(date -u '+%F %H:%M UTC')"
echo
echo "Command: \`bench/relations-cost.sh --pg $pg --relations $nrel --reps $reps\`.  "
echo "PostgreSQL $("$BINDIR/postgres" --version | awk '{print $3}'), shared_buffers 1GB, pg_warmcache $(repo_version)."
echo "bench: $bench_gb GB, $bench_rels relations, $bench_files relation files; many: $many_gb GB, $many_rels relations, $many_files files; the shared catalogs: $global_files files."
echo "The saved set (both databases): $saved_buf blocks in the buffer tier, $saved_os in the OS tier."
echo
echo "| rep | database | method | CPU ms | wall ms | rows |"
echo "|---|---|---|---:|---:|---:|"
rows=()
one_call bench relations >/dev/null
one_call many relations >/dev/null
methods=(relations buffercache relations-again)
for ((r = 1; r <= reps; r++)); do
	for db in bench many; do
		for ((k = 0; k < 3; k++)); do
			m=${methods[$(((k + r) % 3))]}
			read -r cpu wall n < <(one_call "$db" "$m")
			echo "| $r | $db | $m | $cpu | $wall | $n |"
			rows+=("$db $m $cpu $wall")
		done
	done
done
printf '%s\n' "${rows[@]}" | awk -v bgb="$bench_gb" -v bf="$bench_files" -v mf="$many_files" -v gf="$global_files" '
function med(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1 " " $2; n[k]++; cpu[k, n[k]] = $3; wall[k, n[k]] = $4; keys[k] = 1 }
END {
	printf "\n| database | method | CPU ms median (min-max) | wall ms median (min-max) |\n|---|---|---:|---:|\n"
	for (k in keys) {
		for (i = 1; i <= n[k]; i++) { c[i] = cpu[k, i]; w[i] = wall[k, i] }
		mc[k] = med(c, n[k]); mw[k] = med(w, n[k])
		lo = c[1]; hi = c[n[k]]; wlo = w[1]; whi = w[n[k]]
		split(k, p, " ")
		printf "| %s | %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) |\n", p[1], p[2], mc[k], lo, hi, mw[k], wlo, whi
	}
	for (d = 1; d <= 2; d++) {
		db = d == 1 ? "bench" : "many"
		printf "\n%s: wall, relations / buffercache %.2f, relations-again / relations (control) %.2f\n", db,
			mw[db " relations"] / mw[db " buffercache"], mw[db " relations-again"] / mw[db " relations"]
	}
	printf "\nper GB of relation (bench, its whole time over its size): CPU %.1f ms, wall %.1f ms\n", mc["bench relations"] / bgb, mw["bench relations"] / bgb
	printf "per thousand relation files ((many - bench) over the files more): CPU %.1f ms, wall %.1f ms\n",
		(mc["many relations"] - mc["bench relations"]) * 1000 / (mf - bf),
		(mw["many relations"] - mw["bench relations"]) * 1000 / (mf - bf)
}'

# What it answers, at scale 100: the relation forks the saved set holds
# most of.
echo
echo "warmcache_relations() in bench, the 8 forks with the most saved blocks:"
echo
psqlc -d bench -P footer=off -P format=aligned -c "select relation, fork, size_blocks, saved_buffer_tier,
	saved_by_usage, saved_os_tier, in_shared_buffers, in_os_cache
	from warmcache_relations() order by saved_buffer_tier + saved_os_tier desc, relation limit 8" | sed 's/^/    /'
