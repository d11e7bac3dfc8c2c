#!/bin/bash
# Failover under Patroni: the new leader's TPS from the moment it accepts
# writes, against the old leader's steady state, with
# pg_warmcache.follow_primary off, os and buffer, after a switchover and
# after a failover.
#
#   bench/failover-patroni.sh [--pg 15|18|15,18] [--reps 3]
#                     [--methods off,os,buffer] [--events switchover,failover]
#                     [--seconds 30] [--load-seconds 50] [--scale 50]
#                     [--shared-buffers 1GB] [--dump-interval 15] [--pin]
#
# Per major: builds and installs pg_warmcache (bench/lib.sh), starts etcd
# and two Patroni members on loopback (Patroni run by /usr/bin/python3):
# member a with its data on the local disk ($BENCH_BASE/patroni-pg<major>),
# member b with its data and its postgres on capped-disk.sh's volume
# ($CAPPED_DIR/pgwc-bench/patroni-pg<major>; its Patroni is started under
# capped-disk.sh run, and the script checks that b's postmaster is in the
# cgroup).  Patroni bootstraps a; the pgbench database "bench" (scale
# --scale) and the extensions (pg_warmcache in bench and postgres,
# pg_buffercache) are created before the library is preloaded, then
# shared_preload_libraries = pg_warmcache (the private copy, through
# dynamic_library_path), shared_buffers and pg_warmcache.dump_interval are
# set through Patroni's dynamic configuration and a restarted; b is cloned
# by Patroni.  ttl 10, loop_wait 1, retry_timeout 3, primary_start_timeout
# 0 (a leader whose postmaster dies is failed over, not restarted in
# place), use_pg_rewind.
#
# The device's rate: dd bs=1M of b's database files after drop_caches,
# under the cap, at the start and at the end of each major.
#
# Per repetition, each (event, method) once, the method order rotated from
# one repetition to the next:
#   1. a leads (a switchover back from b first if needed, not measured);
#      follow_primary set through Patroni's dynamic configuration;
#   2. b cold: its Patroni stopped (and with it its postgres), b's own
#      pg_warmcache files removed (it has nothing of its own to restore),
#      sync, drop_caches, b's Patroni started under the cap, b replicating;
#   3. a warm (pg_prewarm of every relation fork of bench), then
#      pgbench -n -S -M prepared -c 2 -j 2 -P 1 -T LOAD_SECONDS on a while b
#      follows; the old leader's steady state is the median per-second TPS
#      of the last 20 s; b's warmcache_status() sampled every 5 s;
#   4. the event: switchover (patronictl switchover --leader a --candidate
#      b --force) or failover (SIGKILL to a's postmaster);
#   5. b polled every 20 ms until pg_is_in_recovery() is false: the moment
#      it accepts writes; at once the same pgbench against b for SECONDS;
#   6. then how long a takes to run again as a replica of b (rejoin) and to
#      follow b's hot set (follow_state following, a followed dump of b's
#      written after the event): the target is one dump interval.
# --pin runs a's Patroni (and its postgres) on CPU 0, b's and pgbench on
# CPU 1: the demoted leader's restart on the same host off the new
# leader's CPU.
#
# Output in bench/out/<timestamp>-failover-patroni/ (OUT_DIR overrides):
# results.md (also printed), summary.csv, tps.csv, <pg>-<event>.png (median
# over repetitions of TPS / the old leader's steady TPS, per method), raw/.
# bench/failover-patroni-report.py OUT_DIR rebuilds them.
#
# Each major's whole run holds the bench lock (BENCH_LOCK, by default
# /var/lock/pg_warmcache-bench.lock; BENCH_LOCK= when the caller holds it).
# About 2.5 min per run at the defaults, so 45 min for --reps 3 per major,
# plus a few minutes of set-up.  Environment: bench/lib.sh's; ETCD_PORT
# (2390), and the members use PGWC_PORT and PGWC_PORT + 1, REST ports
# 8440 and 8441.  Needs root, patroni, etcd-server, python3-etcd
# (test/install-deps installs them).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

pgs=15 reps=3 methods=off,os,buffer events=switchover,failover seconds=30 load_seconds=50
scale=50 shared_buffers=1GB dump_interval=15 pin=0
args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--pg) pgs=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--methods) methods=$2; shift 2 ;;
	--events) events=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--load-seconds) load_seconds=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--shared-buffers) shared_buffers=$2; shift 2 ;;
	--dump-interval) dump_interval=$2; shift 2 ;;
	--pin) pin=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
need_root
STEADY_LAST=20
whole_numbers reps seconds load_seconds scale dump_interval
((reps >= 1 && seconds >= 1 && load_seconds > STEADY_LAST)) ||
	die "--reps and --seconds must be >= 1, --load-seconds > $STEADY_LAST"
IFS=, read -r -a methodlist <<<"$methods"
for m in "${methodlist[@]}"; do
	case "$m" in off | os | buffer) ;; *) die "unknown method $m (off, os, buffer)" ;; esac
done
IFS=, read -r -a eventlist <<<"$events"
for e in "${eventlist[@]}"; do
	case "$e" in switchover | failover) ;; *) die "unknown event $e (switchover, failover)" ;; esac
done
IFS=, read -r -a pglist <<<"$pgs"
PY=/usr/bin/python3
for f in /usr/bin/patroni /usr/bin/patronictl /usr/bin/etcd; do
	[ -x "$f" ] || die "$f missing: test/install-deps installs patroni and etcd-server"
done
$PY -c 'import etcd, psycopg2' 2>/dev/null || die "python3-etcd or python3-psycopg2 missing"
BENCH_LOCK=${BENCH_LOCK-/var/lock/pg_warmcache-bench.lock}
ETCD_PORT=${ETCD_PORT:-2390}

out=${OUT_DIR:-$BENCH_DIR/out/$(date +%Y%m%d-%H%M%S)-failover-patroni}
mkdir -p "$out/raw"
{
	echo "command=bench/failover-patroni.sh ${args[*]}"
	echo "effective=--pg $pgs --reps $reps --methods $methods --events $events --seconds $seconds --load-seconds $load_seconds --scale $scale --shared-buffers $shared_buffers --dump-interval $dump_interval$([ $pin = 1 ] && echo ' --pin')"
	run_info
	echo "patroni=$($PY /usr/bin/patroni --version 2>&1 | tr -d '\n')"
	echo "steady_last=$STEADY_LAST"
} >"$out/info.txt"

# ---- the members: a (local disk) and b (capped volume)

declare -A M_DIR M_PORT M_REST M_PID M_CPU
setup_members() {
	M_DIR[a]=$BENCH_BASE/patroni-pg$PG_MAJOR/a
	M_DIR[b]=$CAPPED_DIR/pgwc-bench/patroni-pg$PG_MAJOR/b
	M_PORT[a]=$PGWC_PORT M_PORT[b]=$((PGWC_PORT + 1))
	M_REST[a]=8440 M_REST[b]=8441
	M_CPU[a]=0 M_CPU[b]=1
	W=$BENCH_BASE/patroni-pg$PG_MAJOR
}
other() { [ "$1" = a ] && echo b || echo a; }
mdata() { echo "${M_DIR[$1]}/data"; }
msock() { echo "${M_DIR[$1]}/run"; }

# msql MEMBER SQL [DB]: one query as the superuser, unaligned.
msql() {
	"$BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$(msock "$1")" -p "${M_PORT[$1]}" -U "$PG_USER" \
		-d "${3:-bench}" -c "$2"
}

ctl() { as_pg env HOME="$W" $PY /usr/bin/patronictl -c "$W/a.yml" "$@"; }

# leader: the member Patroni lists as a running leader, or nothing.
leader() {
	ctl list -f json 2>/dev/null | $PY -c '
import json, sys
for m in json.load(sys.stdin):
    if m["Role"] == "Leader" and m["State"] == "running":
        print(m["Member"])' 2>/dev/null || true
}

# wait_until SECONDS WHAT CMD...: CMD every 0.2 s until it succeeds.
wait_until() {
	local limit=$1 what=$2 i
	shift 2
	for ((i = 0; i < limit * 5; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	die "timed out after $limit s waiting for $what"
}

is_leader() { [ "$(leader)" = "$1" ]; }
is_replica() { [ "$(msql "$1" 'select pg_is_in_recovery()' postgres)" = t ]; }
writable() { [ "$(msql "$1" 'select pg_is_in_recovery()' postgres)" = f ]; }
postmaster_pid() { head -1 "$(mdata "$1")/postmaster.pid" 2>/dev/null; }

write_member_conf() {
	local n=$1
	mkdir -p "${M_DIR[$n]}/log" "$(msock "$n")"
	chown -R "$PG_USER:" "${M_DIR[$n]}"
	chmod 700 "${M_DIR[$n]}"
	cat >"$W/$n.yml" <<EOF
scope: pgwc-bench
name: $n
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${M_REST[$n]}
  connect_address: 127.0.0.1:${M_REST[$n]}
etcd:
  host: 127.0.0.1:$ETCD_PORT
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    primary_start_timeout: 0
    maximum_lag_on_failover: 1073741824
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 4GB
        hot_standby: 'on'
        autovacuum: 'off'
        max_connections: 20
        checkpoint_timeout: 1h
        max_wal_size: 4GB
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${M_PORT[$n]}
  connect_address: 127.0.0.1:${M_PORT[$n]}
  use_unix_socket: true
  data_dir: $(mdata "$n")
  bin_dir: $BINDIR
  pgpass: ${M_DIR[$n]}/pgpass
  authentication:
    superuser:
      username: $PG_USER
    replication:
      username: $PG_USER
    rewind:
      username: $PG_USER
  parameters:
    unix_socket_directories: '$(msock "$n")'
    dynamic_library_path: '$PRIVLIB:\$libdir'
    logging_collector: 'on'
    log_directory: '${M_DIR[$n]}/log'
    log_filename: 'postgresql.log'
    log_line_prefix: '%m [%p] '
    log_timezone: UTC
    timezone: UTC
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
EOF
	chown "$PG_USER:" "$W/$n.yml"
}

start_etcd() {
	rm -rf "$W/etcd"
	mkdir -p "$W/etcd"
	chown "$PG_USER:" "$W/etcd"
	as_pg /usr/bin/etcd --name pgwc --data-dir "$W/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
		--initial-cluster "pgwc=http://127.0.0.1:$((ETCD_PORT + 1))" --enable-v2=true \
		>"$W/etcd.log" 2>&1 &
	wait_until 60 "etcd" curl -sf "http://127.0.0.1:$ETCD_PORT/health"
}

# start_member NAME: its Patroni in the background (b's under the cap; with
# --pin on its own CPU); postgres is Patroni's child and inherits both.
start_member() {
	local n=$1 cmd
	cmd=(env HOME="${M_DIR[$n]}" $PY /usr/bin/patroni "$W/$n.yml")
	[ $pin = 1 ] && cmd=(taskset -c "${M_CPU[$n]}" "${cmd[@]}")
	if [ "$n" = b ]; then
		bash "$BENCH_DIR/capped-disk.sh" run bash -c '. "$1" && shift && as_pg "$@"' _ "$BENCH_DIR/common.sh" \
			"${cmd[@]}" >>"${M_DIR[$n]}/patroni.log" 2>&1 &
	else
		as_pg "${cmd[@]}" >>"${M_DIR[$n]}/patroni.log" 2>&1 &
	fi
	M_PID[$n]=$!
}

# The pid of member NAME's Patroni, found by its exact command line (the
# wrappers between it and the pid this script started may not be exec'd).
patroni_pid() { pgrep -u "$PG_USER" -f -x "$PY /usr/bin/patroni $W/$1.yml" || true; }

# stop_member NAME: its Patroni stops its postgres (fast) and exits.
stop_member() {
	local n=$1 pid i
	pid=$(patroni_pid "$n")
	[ -z "$pid" ] || kill -TERM $pid 2>/dev/null || true
	for ((i = 0; i < 600; i++)); do
		[ -n "$(patroni_pid "$n")" ] || break
		sleep 0.1
	done
	[ -z "${M_PID[$n]:-}" ] || wait "${M_PID[$n]}" 2>/dev/null || true
	M_PID[$n]=
	if [ -f "$(mdata "$n")/postmaster.pid" ] && kill -0 "$(postmaster_pid "$n")" 2>/dev/null; then
		as_pg "$BINDIR/pg_ctl" -D "$(mdata "$n")" -m fast -w -t 300 stop >/dev/null || true
	fi
}

stop_all() {
	[ -n "${W:-}" ] || return 0
	stop_member b 2>/dev/null || true
	stop_member a 2>/dev/null || true
	# etcd, found by its data directory: as_pg's subshell is between it and
	# the pid this script started.
	local pid
	pid=$(pgrep -u "$PG_USER" -f "^/usr/bin/etcd --name pgwc --data-dir $W/etcd " || true)
	[ -z "$pid" ] || kill $pid 2>/dev/null || true
}
trap 'stop_all' EXIT

# dyn_conf YAML: merge into Patroni's dynamic configuration.
dyn_conf() { printf '%s\n' "$1" | ctl edit-config pgwc-bench --apply - --force >/dev/null; }

# verify_member_lib NAME: its postmaster loaded PRIVLIB's copy, and b's runs
# under the cap.
verify_member_lib() {
	local pid maps
	pid=$(postmaster_pid "$1")
	maps=$(grep -o '/[^ ]*/pg_warmcache\.so$' "/proc/$pid/maps" | sort -u)
	[ "$maps" = "$PRIVLIB/pg_warmcache.so" ] || die "member $1 loaded \"$maps\", not $PRIVLIB/pg_warmcache.so"
	if [ "$1" = b ]; then
		bash "$BENCH_DIR/capped-disk.sh" check "$pid" || die "member b's postmaster $pid is not under the cap"
	fi
}

# shows MEMBER PARAMETER VALUE: the member's server has that setting.
shows() { [ "$(msql "$1" "show $2" postgres)" = "$3" ]; }

pgb() { # MEMBER SECONDS: pgbench -S against the member (pinned with --pin)
	local cmd=("$BINDIR/pgbench" -h "$(msock "$1")" -p "${M_PORT[$1]}" -U "$PG_USER" -n -S -M prepared
		-c 2 -j 2 -P 1 -T "$2" bench)
	[ $pin = 1 ] && cmd=(taskset -c "${M_CPU[$1]}" "${cmd[@]}")
	"${cmd[@]}"
}

STATUS_SQL="select now()::time(2), state, restore_source, follow_state, followed_dump_at::time(0),
	followed_buffer_tier, followed_os_tier, followed_buffer_tier_warm, followed_os_tier_warm,
	restore_blocks_done, restore_blocks_total, warmcache_wait_warm(1.0, 0)::numeric(4,3), pg_is_in_recovery(),
	(select count(*) from pg_buffercache where reldatabase is not null)
	from warmcache_status()"
status_line() { msql "$1" "$STATUS_SQL" 2>&1 | tr '\n' ' ' || true; echo; }

setup_major() {
	stop_all
	rm -rf "$W" "${M_DIR[b]%/b}"
	mkdir -p "$W" "${M_DIR[a]}" "${M_DIR[b]}"
	chown "$PG_USER:" "$W" "${M_DIR[b]%/b}"
	write_member_conf a
	write_member_conf b
	start_etcd
	say "Patroni bootstraps member a"
	start_member a
	wait_until 300 "member a to lead" is_leader a
	msql a "create database bench" postgres
	"$BINDIR/pgbench" -h "$(msock a)" -p "${M_PORT[a]}" -U "$PG_USER" -i -q -s "$scale" bench \
		>"$W/pgbench-init.log" 2>&1 || { tail "$W/pgbench-init.log" >&2; die "pgbench -i failed"; }
	# Created before the library is preloaded (see bench/lib.sh's ensure_db),
	# then pointed at the private copy through dynamic_library_path.
	install_ext msql a "create extension pg_prewarm; create extension pg_warmcache; create extension pg_buffercache"
	install_ext msql a "create extension pg_warmcache; create extension pg_buffercache" postgres
	for db in bench postgres; do
		msql a "update pg_proc set probin = 'pg_warmcache' where probin = '\$libdir/pg_warmcache'" $db
	done
	msql a checkpoint postgres
	dyn_conf "postgresql:
  parameters:
    shared_preload_libraries: 'pg_warmcache,pg_prewarm'
    shared_buffers: $shared_buffers
    pg_warmcache.dump_interval: $dump_interval
    pg_warmcache.follow_primary: 'off'
    pg_prewarm.autoprewarm: 'off'"
	ctl restart pgwc-bench a --force >/dev/null
	wait_until 300 "member a to restart with the library" shows a shared_preload_libraries pg_warmcache,pg_prewarm
	wait_until 60 "member a to lead" is_leader a
	verify_member_lib a
	say "Patroni clones member b onto the capped volume"
	start_member b
	wait_until 900 "member b to replicate" is_replica b
	verify_member_lib b
}

# dd_b TAG: the device's cold sequential rate over b's database files, b
# stopped, under the cap.
dd_b() {
	local oid files=() f t0 t1 bytes secs
	oid=$(msql a "select oid from pg_database where datname = 'bench'")
	stop_member b
	for f in "$(mdata b)/base/$oid"/*; do
		[[ ${f##*/} =~ ^[0-9]+(_(fsm|vm|init))?(\.[0-9]+)?$ ]] && files+=("$f")
	done
	bytes=$(stat -c %s "${files[@]}" | awk '{ s += $1 } END { print s }')
	drop_caches
	t0=$(now)
	bash "$BENCH_DIR/capped-disk.sh" run bash -c 'for f; do dd if="$f" of=/dev/null bs=1M status=none; done' _ "${files[@]}"
	t1=$(now)
	secs=$(elapsed "$t0" "$t1")
	write_meta "$out/raw/$key-dd-$1.meta" "dd_bytes=$bytes" "dd_seconds=$secs" \
		"dd_mb_per_s=$(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.1f", b / 1048576 / s }')"
	say "$key: dd ($1) $(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.1f", b / 1048576 / s }') MB/s"
	start_member b
	wait_until 300 "member b to replicate" is_replica b
}

# one_run EVENT METHOD REP
one_run() {
	local ev=$1 m=$2 rep=$3 name t_event t_promoted t_bench t_end t_rejoin t_follow load i
	local loga logb offa offb since ctl_pid=
	name=$key-$ev-$m-r$rep
	if ! is_leader a; then
		say "$name: a leads again (switchover from b, not measured)"
		ctl switchover pgwc-bench --leader b --candidate a --force >/dev/null
		wait_until 300 "member a to lead" is_leader a
	fi
	dyn_conf "postgresql:
  parameters:
    pg_warmcache.follow_primary: '$m'"
	wait_until 60 "follow_primary = $m on a" shows a pg_warmcache.follow_primary "$m"
	say "$name: b cold (follow_primary = $m)"
	stop_member b
	rm -f "$(mdata b)"/pg_warmcache.blocks* "$(mdata b)"/pg_warmcache.followed*
	drop_caches
	start_member b
	wait_until 300 "member b to replicate" is_replica b
	verify_member_lib b
	[ "$(msql b 'show pg_warmcache.follow_primary' postgres)" = "$m" ] || die "b does not have follow_primary = $m"
	verify_member_lib a
	msql a "select sum(pg_prewarm(c.oid, 'buffer', f)) from pg_class c, unnest(array['main', 'fsm', 'vm']) f
	     where c.relkind in ('r', 'i', 't', 'm') and c.relpersistence = 'p' and pg_relation_size(c.oid, f) > 0" >/dev/null
	loga=${M_DIR[a]}/log/postgresql.log logb=${M_DIR[b]}/log/postgresql.log
	offa=$(stat -c %s "$loga" 2>/dev/null || echo 0) offb=$(stat -c %s "$logb" 2>/dev/null || echo 0)
	status_sampler_start "$load_seconds" "$out/raw/$name.follow" status_line b
	say "$name: pgbench on a for $load_seconds s while b follows"
	pgb a "$load_seconds" >"$out/raw/$name.primary.pgbench" 2>&1 || say "WARNING: pgbench on a failed"
	status_sampler_stop
	status_line b >"$out/raw/$name.before"
	msql a "select 'published ' || max(dumped_at)::time(0) from warmcache_published" postgres >>"$out/raw/$name.before" 2>&1 || true
	t_event=$(now)
	case "$ev" in
	switchover)
		ctl switchover pgwc-bench --leader a --candidate b --force >"$out/raw/$name.ctl" 2>&1 &
		ctl_pid=$!
		;;
	failover) kill -KILL "$(postmaster_pid a)" ;;
	esac
	t_promoted=
	for ((i = 0; i < 6000; i++)); do
		if writable b 2>/dev/null; then
			t_promoted=$(now)
			break
		fi
		sleep 0.02
	done
	[ -n "$t_promoted" ] || die "$name: b did not accept writes within 120 s"
	t_bench=$(now)
	pgb b "$seconds" >"$out/raw/$name.pgbench" 2>&1 || say "WARNING: pgbench on b failed"
	t_end=$(now)
	read -r load _ </proc/loadavg
	[ -z "$ctl_pid" ] || wait "$ctl_pid" 2>/dev/null || true
	# The old leader: back as a replica of b, then following b's hot set.
	t_rejoin= t_follow=
	since=$(date -u -d "@${t_event%.*}" '+%Y-%m-%d %H:%M:%S+00')
	# At most 4 dump intervals (1 min at least) after the rejoin; with
	# follow_primary off only the rejoin.
	for ((i = 0; i < 1500; i++)); do
		if [ -z "$t_rejoin" ] && is_replica a 2>/dev/null; then t_rejoin=$(now); fi
		if [ -n "$t_rejoin" ] && [ "$m" = off ]; then break; fi
		if [ -n "$t_rejoin" ] && [ "$(msql a "select follow_state = 'following' and followed_dump_at > '$since'
			from warmcache_status()" postgres 2>/dev/null)" = t ]; then
			t_follow=$(now)
			break
		fi
		if [ -n "$t_rejoin" ] && awk -v a="$t_rejoin" -v b="$(now)" -v l="$dump_interval" \
			'BEGIN { exit !(b - a > (4 * l > 60 ? 4 * l : 60)) }'; then
			break
		fi
		sleep 0.2
	done
	status_line b >"$out/raw/$name.after"
	status_line a >>"$out/raw/$name.after"
	tail -c +$((offb + 1)) "$logb" >"$out/raw/$name.log" 2>/dev/null || true
	tail -c +$((offa + 1)) "$loga" >"$out/raw/$name-old.log" 2>/dev/null || true
	write_meta "$out/raw/$name.meta" "event=$ev" "method=$m" "rep=$rep" "event_at=$t_event" \
		"writable=$t_promoted" "bench_start=$t_bench" "bench_end=$t_end" "rejoined=${t_rejoin:-}" \
		"following=${t_follow:-}" "load_end=$load" "pin=$pin"
	say "$name: writable after $(elapsed "$t_event" "$t_promoted") s; $(grep -Eo "(load of the primary's hot set at promotion|pg_warmcache: promotion) [a-z]*: .*" "$out/raw/$name.log" || echo 'no promotion load logged')"
}

# one_rep REP: every (event, method) once, the method order rotated.
one_rep() {
	local nm=${#methodlist[@]} i ev
	for ev in "${eventlist[@]}"; do
		for ((i = 0; i < nm; i++)); do
			one_run "$ev" "${methodlist[$(((i + $1 - 1) % nm))]}" "$1"
		done
	done
}

for pg in "${pglist[@]}"; do
	use_pg "$pg"
	key=pg$pg
	setup_members
	capped_up
	mkdir -p "$W"
	exec 9>"$W.lock"
	flock -n 9 || die "another benchmark uses $W"

	run_major() {
		setup_major
		version=$("$BINDIR/postgres" --version)
		dbmb=$(msql a "select pg_database_size('bench') / 1048576")
		dd_b start
		write_meta "$out/raw/$key.meta" "version=$version" "scale=$scale" "db_mb=$dbmb" \
			"so_md5=$SO_MD5" "capped=$(cap_text)" \
			"shared_buffers=$shared_buffers" "dump_interval=$dump_interval" "load_seconds=$load_seconds" \
			"seconds=$seconds" "pin=$pin"
		for ((rep = 1; rep <= reps; rep++)); do
			one_rep "$rep"
		done
		dd_b end
		stop_all
		note_so "$out/raw/$key.meta"
	}
	locked run_major
	# b's copy is not needed between runs; the volume is small.
	rm -rf "${M_DIR[b]}"
	exec 9>&-
done

/usr/bin/python3 "$BENCH_DIR/failover-patroni-report.py" "$out"
say "results in $out"
