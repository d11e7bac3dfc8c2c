#!/bin/bash
# Failover: TPS on a promoted standby, from the promotion on, with
# pg_warmcache.follow_primary off (today), os and buffer.
#
#   bench/failover.sh [--pg 15|18|15,18] [--reps 3] [--methods none,os,buffer]
#                     [--seconds 60] [--follow-seconds 60] [--dump-interval 15]
#                     [--scale 100] [--no-cost] [--cost-only] [--first-rep 1]
#
# Per major: builds and installs pg_warmcache (bench/lib.sh), a primary on
# the local disk ($BENCH_BASE/failover-pg<major>-s<scale>/primary) and a
# streaming standby whose data directory is on capped-disk.sh's volume
# ($CAPPED_DIR/pgwc-bench/failover-pg<major>-s<scale>/standby), both with
# shared_buffers 4GB, pg_warmcache preloaded (autowarm on), wal_level
# replica, wal_keep_size 4GB, autovacuum off, a scale-100 pgbench database
# "bench", and CREATE EXTENSION pg_warmcache in the primary's databases bench
# and postgres (the channel's table lives in postgres).  A pristine standby is
# taken once per invocation with pg_basebackup -R (the files of pg_warmcache
# and autoprewarm that the copy carries are removed: the standby starts with
# nothing of its own to restore), kept on the local disk.
#
# The device's rate: dd bs=1M of the standby's database files after
# drop_caches, under the cap, at the start and at the end of each major.
#
# Per repetition, each method once, the order rotated from one repetition to
# the next (none = follow_primary off, os, buffer; --first-rep N numbers
# them from N, to add repetitions to an earlier run's raw/ later):
#   1. start the primary (pg_warmcache.dump_interval = --dump-interval, 15 s),
#      pg_prewarm every relation fork of bench: it is warm;
#   2. the standby cold: stopped, its data directory replaced by the
#      pristine copy, follow_primary set, sync, drop_caches, started under
#      the cap (the script checks that the postmaster is in the cgroup);
#   3. pgbench -n -S -M prepared -c 2 -j 2 -P 1 -T FOLLOW_SECONDS on the
#      primary while the standby replays and follows; the primary's steady
#      state is the median per-second TPS of the last 30 s; the standby's
#      warmcache_status() is sampled every 5 s meanwhile;
#   4. pg_ctl stop -m immediate on the primary, pg_ctl promote -w on the
#      standby, and at once pgbench -n -S -M prepared -c 2 -j 2 -P 1
#      -T SECONDS against it;
#   5. the promoted standby's status and log kept, both servers stopped.
#
# The primary's cost (unless --no-cost), at pg_warmcache.dump_interval = 300
# with the primary warm under pgbench -S -c 2: COST_REPS (5) times, in one
# session connected to postgres, warmcache_dump_now() and a wait until the
# published rows change: the WAL written meanwhile (pg_current_wal_lsn), the
# dump's CPU (the backend's /proc/self/schedstat), the publish worker's CPU
# (the postmaster's cutime + cstime: the only process that exits meanwhile),
# the wall time; and as a control the WAL of the same time without a dump.
# Then the same right after a CHECKPOINT: the first change of the table's
# pages after one writes them whole to WAL, which at dump_interval 300 and
# the default checkpoint_timeout (5 min) is most publications.
# Then the dump file's size and the published rows' size.
#
# Output in bench/out/<timestamp>-failover/ (OUT_DIR overrides): results.md
# (also printed), summary.csv, tps.csv, cost.csv, <pg>-failover.png (median
# over repetitions of TPS / the primary's steady TPS, per method), raw/.
# bench/failover-report.py OUT_DIR rebuilds them.
#
# Each major's whole run holds the bench lock (BENCH_LOCK, by default
# /var/lock/pg_warmcache-bench.lock; BENCH_LOCK= when the caller holds it):
# failovers and cost measurements are not interrupted by other benchmarks.  About 2.5 min per run (rep x
# method), 25 min for --reps 3 per major, plus a few minutes of set-up and
# the cost.  Environment: COST_REPS, and bench/lib.sh's.  Needs root.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pgs=15 reps=3 methods=none,os,buffer seconds=60 follow_seconds=60 dump_interval=15 scale=100
cost=1 runs=1 first_rep=1
args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pgs=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--methods) methods=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--follow-seconds) follow_seconds=$2; shift 2 ;;
	--dump-interval) dump_interval=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--no-cost) cost=0; shift ;;
	--cost-only) runs=0; shift ;;
	--first-rep) first_rep=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
COST_REPS=${COST_REPS:-5}
STEADY_LAST=30
whole_numbers reps seconds follow_seconds dump_interval scale COST_REPS first_rep
((reps >= 1 && seconds >= 1 && follow_seconds > STEADY_LAST)) ||
	die "--reps and --seconds must be >= 1, --follow-seconds > $STEADY_LAST"
IFS=, read -r -a methodlist <<<"$methods"
for m in "${methodlist[@]}"; do
	case "$m" in none | os | buffer) ;; *) die "unknown method $m (none, os, buffer)" ;; esac
done
IFS=, read -r -a pglist <<<"$pgs"
BENCH_LOCK=${BENCH_LOCK-/var/lock/pg_warmcache-bench.lock}
EXTRA_CONF="wal_level = replica
max_wal_senders = 4
wal_keep_size = 4GB
hot_standby = on
pg_warmcache.autowarm = on
${EXTRA_CONF:-}"

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-failover}
mkdir -p "$out/raw"
{
	echo "command=bench/failover.sh ${args[*]}"
	echo "effective=--pg $pgs --reps $reps --methods $methods --seconds $seconds --follow-seconds $follow_seconds --dump-interval $dump_interval --scale $scale$([ $cost = 1 ] || echo ' --no-cost')$([ $runs = 1 ] || echo ' --cost-only')"
	echo "env=COST_REPS=$COST_REPS EXTRA_CONF=$(tr '\n' ';' <<<"$EXTRA_CONF")"
	run_info
	echo "steady_last=$STEADY_LAST"
} >"$out/info.txt"

# The two servers share lib.sh's globals (CLDIR, PGDATA, SOCK, CAPPED):
# these switch between them.
primary() { CLDIR=$P_CL; PGDATA=$P_CL/data; SOCK=$P_CL/run; CAPPED=""; }
standby() { CLDIR=$S_CL; PGDATA=$S_CL/data; SOCK=$S_CL/run; CAPPED=$BENCH_DIR/capped-disk.sh; }

stop_both() {
	[ -n "${P_CL:-}" ] || return 0
	standby
	pg_stop 2>/dev/null || true
	primary
	pg_stop 2>/dev/null || true
}
trap 'stop_both' EXIT

stop_immediate() {
	if server_running; then
		as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -m immediate -w stop >/dev/null
	fi
}

pgb() { "$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -n -S -M prepared -c 2 -j 2 -P 1 "$@" bench; }

# setup_primary: the pgbench database (bench/lib.sh's ensure_db), with the
# extension in postgres too, for the standby channel.
setup_primary() {
	primary
	SCALE=$scale ensure_db failover create_ext
}

# The extensions, in bench and postgres; postgres's functions load the
# preloaded private copy too (ensure_db does so for bench's).
create_ext() {
	sql "create extension pg_prewarm; create extension pg_warmcache; create extension pg_buffercache"
	DB=postgres sql "create extension pg_warmcache"
	DB=postgres sql "update pg_proc set probin = 'pg_warmcache' where probin = '\$libdir/pg_warmcache'"
}

# take_pristine: pg_basebackup -R of the running primary, on the local disk.
take_pristine() {
	primary
	rm -rf "$PRISTINE"
	say "pg_basebackup -R of the primary into $PRISTINE"
	as_pg "$BINDIR/pg_basebackup" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -D "$PRISTINE" -R -X stream -c fast \
		>"$P_CL/logs/basebackup.log" 2>&1 || { tail "$P_CL/logs/basebackup.log" >&2; die "pg_basebackup failed"; }
	# Nothing of its own to restore, nothing followed yet.
	rm -f "$PRISTINE"/pg_warmcache.blocks* "$PRISTINE"/pg_warmcache.followed* "$PRISTINE"/autoprewarm.blocks \
		"$PRISTINE"/bench_run.conf
}

# fresh_standby METHOD: the standby's data directory replaced by the
# pristine copy, the method's setting; not started.
fresh_standby() {
	standby
	pg_stop
	rm -rf "$PGDATA"
	mkdir -p "$CLDIR/logs" "$SOCK"
	chown "$PG_USER:" "$CLDIR" "$CLDIR/logs" "$SOCK"
	cp -a "$PRISTINE" "$PGDATA"
	write_conf
	run_conf "pg_warmcache.follow_primary = ${1/none/off}"
}

# start_primary LOG: started and warm (every fork prewarmed).
start_primary() {
	primary
	pg_stop
	run_conf "pg_warmcache.dump_interval = $dump_interval"
	pg_start "$1"
	verify_lib
	prewarm_all
}

# The standby's pg_warmcache state, one line.
STATUS_SQL="select now()::time(2), state, restore_source, follow_state, followed_dump_at::time(0),
	followed_buffer_tier, followed_os_tier, followed_buffer_tier_warm, followed_os_tier_warm,
	restore_blocks_done, restore_blocks_total, pg_is_in_recovery(),
	(select count(*) from pg_buffercache where reldatabase is not null)
	from warmcache_status()"

status_line() { sql "$STATUS_SQL" 2>&1 | tr '\n' ' ' || true; echo; }

# foreign_drops UPTIME0 UPTIME1: how often someone else dropped the OS cache
# between those two moments (the kernel logs each drop_caches): such a run
# did not have the caches this script gave it.
foreign_drops() {
	dmesg 2>/dev/null | awk -v a="$1" -v b="$2" -F'[][]' \
		'/drop_caches/ { t = $2 + 0; if (t >= a && t <= b) n++ } END { print n + 0 }'
}

# one_run METHOD REP
one_run() {
	local m=$1 rep=$2 name t_stop t_promote t_promoted t_bench t_end load
	name=$key-$m-r$rep
	say "$name: primary warm, the standby cold (follow_primary = ${m/none/off})"
	start_primary "$P_CL/logs/$name-primary.log"
	fresh_standby "$m"
	drop_caches
	pg_start "$S_CL/logs/$name.log"
	local t_sready=$T_READY up0 up1
	read -r up0 _ </proc/uptime
	say "$name: standby ready after $(elapsed "$T_LAUNCH" "$T_READY") s; pgbench on the primary ${follow_seconds} s"
	status_sampler_start "$follow_seconds" "$out/raw/$name.follow" status_line
	primary
	pgb -T "$follow_seconds" >"$out/raw/$name.primary.pgbench" 2>&1 || say "WARNING: pgbench on the primary failed"
	status_sampler_stop
	standby
	status_line >"$out/raw/$name.before"
	primary
	DB=postgres sql "select 'published ' || max(dumped_at)::time(0) from warmcache_published" >>"$out/raw/$name.before" 2>&1 || true
	t_stop=$(now)
	stop_immediate
	cp "$P_CL/logs/$name-primary.log" "$out/raw/$name-primary.log"
	standby
	t_promote=$(now)
	as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -w -t 60 promote >/dev/null
	t_promoted=$(now)
	t_bench=$(now)
	pgb -T "$seconds" >"$out/raw/$name.pgbench" 2>&1 || say "WARNING: pgbench on the promoted standby failed"
	t_end=$(now)
	read -r load _ </proc/loadavg
	read -r up1 _ </proc/uptime
	status_line >"$out/raw/$name.after"
	pg_stop
	cp "$S_CL/logs/$name.log" "$out/raw/$name.log"
	write_meta "$out/raw/$name.meta" "method=$m" "rep=$rep" "standby_launch=$T_LAUNCH" "standby_ready=$t_sready" \
		"primary_stop=$t_stop" "promote=$t_promote" "promoted=$t_promoted" "bench_start=$t_bench" \
		"bench_end=$t_end" "load_end=$load" "conf=$(tr '\n' ';' <"$PGDATA/bench_run.conf")" \
		"foreign_drop_caches=$(foreign_drops "$up0" "$up1")"
	say "$name: $(grep -Eo "(load of the primary's hot set at promotion|pg_warmcache: promotion) [a-z]*: .*" "$out/raw/$name.log" || echo 'no promotion load logged')"
}

# one_rep REP: every method once, the order rotated.
one_rep() {
	local nm=${#methodlist[@]} i
	for ((i = 0; i < nm; i++)); do
		one_run "${methodlist[$(((i + $1 - 1) % nm))]}" "$1"
	done
}

# dd_standby TAG: the device's cold sequential rate over the standby's
# database files, under the cap.
dd_standby() {
	standby
	cold_read "${sfiles[@]}"
	say "$key: dd ($1) $CR_RATE MB/s"
	write_meta "$out/raw/$key-dd-$1.meta" "dd_bytes=$CR_BYTES" "dd_seconds=$CR_SECS" "dd_mb_per_s=$CR_RATE"
}

# publish_sql: psql lines that dump, wait until the dump is published, and
# keep in psql variables what the measurement subtracts (WAL position,
# postmaster children's CPU, our CPU, the wall clock); one publication.
publish_sql() {
	cat <<'EOF'
select pg_current_wal_lsn() as l0, pg_temp.cut() as c0, pg_temp.mycpu() as b0, pg_temp.published() as d0,
       extract(epoch from clock_timestamp()) as t0 \gset
select warmcache_dump_now() as blocks, pg_temp.mycpu() as b1 \gset
select set_config('bench.d0', :'d0', false) \g /dev/null
do $$ begin
  for i in 1..600 loop
    exit when pg_temp.published() <> current_setting('bench.d0');
    perform pg_sleep(0.05);
  end loop;
end $$;
select pg_sleep(0.5) \g /dev/null
EOF
}

# cost: the primary warm under the workload, dump_interval 300; each
# warmcache_dump_now() and its publication measured from one session.
cost() {
	local pm bg rw f=$out/raw/$key-cost.csv
	say "$key: the primary's cost of publishing, dump_interval = 300, $COST_REPS dumps under pgbench -S -c 2"
	primary
	pg_stop
	run_conf "pg_warmcache.dump_interval = 300"
	pg_start "$P_CL/logs/$key-cost.log"
	prewarm_all
	# the restore at start must be over: a dump is refused during one
	for ((i = 0; i < 600; i++)); do
		[ "$(sql "select state from warmcache_status()")" = idle ] && break
		sleep 0.5
	done
	pm=$SERVER_PID
	# The primary publishes only while a standby streams from it: a WAL
	# receiver stands in for one.
	rm -rf "$P_CL/receivewal" && mkdir -p "$P_CL/receivewal" && chown "$PG_USER:" "$P_CL/receivewal"
	as_pg "$BINDIR/pg_receivewal" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -D "$P_CL/receivewal" \
		>"$out/raw/$key-cost.receivewal" 2>&1 &
	rw=$!
	pgb -T $((COST_REPS * 30 + 40)) >"$out/raw/$key-cost.pgbench" 2>&1 &
	bg=$!
	sleep 10
	{
		echo "\\set pm $pm"
		cat <<'EOF'
\pset footer off
\pset format unaligned
\pset fieldsep ','
select set_config('bench.pm', :'pm', false) \g /dev/null
create temp table m (rep int, kind text, wal_bytes numeric, cpu_dump_ns bigint, publish_ticks bigint, wall_ms numeric, blocks bigint);
create function pg_temp.cut() returns bigint language sql as $$
  select split_part(s, ' ', 16)::bigint + split_part(s, ' ', 17)::bigint
  from pg_read_file('/proc/' || current_setting('bench.pm') || '/stat') s $$;
create function pg_temp.mycpu() returns bigint language sql as $$
  select split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint $$;
create function pg_temp.published() returns text language sql as $$
  select coalesce(max(dumped_at)::text, 'none') from warmcache_published $$;
EOF
		for ((i = 1; i <= COST_REPS; i++)); do
			publish_sql
			cat <<EOF
insert into m select $i, 'publish', pg_wal_lsn_diff(pg_current_wal_lsn(), :'l0'), :b1 - :b0,
  pg_temp.cut() - :c0, 1000 * (extract(epoch from clock_timestamp()) - :t0), :blocks;
select pg_current_wal_lsn() as l0, pg_temp.cut() as c0, extract(epoch from clock_timestamp()) as t0 \\gset
select pg_sleep(coalesce((select wall_ms from m where rep = $i and kind = 'publish') / 1000, 1)) \\g /dev/null
insert into m select $i, 'control', pg_wal_lsn_diff(pg_current_wal_lsn(), :'l0'), 0,
  pg_temp.cut() - :c0, 1000 * (extract(epoch from clock_timestamp()) - :t0), 0;
select pg_sleep(5) \\g /dev/null
checkpoint;
EOF
			publish_sql
			cat <<EOF
insert into m select $i, 'after checkpoint', pg_wal_lsn_diff(pg_current_wal_lsn(), :'l0'), :b1 - :b0,
  pg_temp.cut() - :c0, 1000 * (extract(epoch from clock_timestamp()) - :t0), :blocks;
select pg_sleep(5) \\g /dev/null
EOF
		done
		cat <<'EOF'
\pset tuples_only off
\o OUTFILE
select * from m order by rep, kind desc;
\o
EOF
	} | sed "s#OUTFILE#$f#" >"$out/raw/$key-cost.sql"
	DB=postgres psqlc -d postgres -f "$out/raw/$key-cost.sql" >"$out/raw/$key-cost.out" 2>&1 ||
		{ tail "$out/raw/$key-cost.out" >&2; say "WARNING: the cost measurement failed"; }
	DB=postgres sql "select 'published_rows=' || count(*), 'published_data_bytes=' || coalesce(sum(octet_length(data)), 0),
		'published_stored_bytes=' || coalesce(sum(pg_column_size(data)), 0),
		'published_relation_bytes=' || pg_total_relation_size((select c.oid from pg_class c where relname = 'warmcache_published')),
		'dump_file_bytes=' || (pg_stat_file('pg_warmcache.blocks')).size,
		'dump_blocks=' || (select last_dump_blocks from warmcache_status()),
		'dump_seconds=' || (select last_dump_seconds from warmcache_status())
		from warmcache_published" | tr '|' '\n' >"$out/raw/$key-cost.meta" || true
	echo "shared_buffers_used=$(sql "select count(*) from pg_buffercache where reldatabase is not null")" \
		>>"$out/raw/$key-cost.meta" || true
	wait "$bg" || true
	# $rw is the subshell of as_pg; the receiver is its child.
	pkill -f "pg_receivewal .*-D $P_CL/receivewal" 2>/dev/null || true
	wait "$rw" 2>/dev/null || true
	rm -rf "$P_CL/receivewal"
	pg_stop
}

for pg in "${pglist[@]}"; do
	use_pg "$pg"
	key=pg$pg
	P_CL=$BENCH_BASE/failover-pg$pg-s$scale
	S_CL=$CAPPED_DIR/pgwc-bench/failover-pg$pg-s$scale
	PRISTINE=$P_CL/standby-pristine
	capped_up
	mkdir -p "$P_CL" "$S_CL"
	exec 9>"$P_CL.lock"
	flock -n 9 || die "another benchmark uses $P_CL"

	run_major() {
		setup_primary
		start_primary "$P_CL/logs/setup2.log"
		version=$("$BINDIR/postgres" --version)
		dbmb=$(sql "select pg_database_size('bench') / 1048576")
		take_pristine
		pg_stop
		fresh_standby none
		pg_start "$S_CL/logs/files.log"
		mapfile -t sfiles < <(db_files)
		pg_stop
		dd_standby start
		write_meta "$out/raw/$key.meta" "version=$version" "scale=$scale" "db_mb=$dbmb" \
			"so_md5=$SO_MD5" "capped=$(cap_text)" \
			"dump_interval=$dump_interval" "follow_seconds=$follow_seconds" "seconds=$seconds"
		if [ $runs = 1 ]; then
			for ((rep = first_rep; rep < first_rep + reps; rep++)); do
				one_rep "$rep"
			done
			dd_standby end
		fi
		[ $cost = 0 ] || cost
		stop_both
		note_so "$out/raw/$key.meta"
	}
	locked run_major
	# The standby's copy is not needed between runs; the volume is small.
	rm -rf "$S_CL/data"
	exec 9>&-
done

/usr/bin/python3 "$BENCH_DIR/failover-report.py" "$out"
say "results in $out"
