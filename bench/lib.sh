# bench/lib.sh: shared by warm-vs-prewarm.sh and warmup.sh (sourced, not run).
#
# Clusters live outside the repository, one per (PostgreSQL major, disk):
#   local:  $BENCH_BASE/pg<major>-local-s<scale>        (default /var/tmp/pgwc-bench)
#   capped: $CAPPED_DIR/pgwc-bench/pg<major>-s<scale>   (default /var/tmp/capped, a
#           loop device made by bench/capped-disk.sh, reads capped in a cgroup)
# Each holds data/ (PGDATA), run/ (unix socket; no TCP), logs/ and the pgbench
# database "bench".  Servers run as $PG_USER (postgres); clients run as root
# and connect as that user through the socket.
#
# Environment (all optional):
#   BENCH_BASE     where local clusters and build copies go (/var/tmp/pgwc-bench)
#   CAPPED_DIR     mount point of the capped disk (/var/tmp/capped)
#   CAPPED_SIZE    its size when it has to be created (8G)
#   CAP_IOPS, CAP_BPS, CAP_READAHEAD_KB  the cap of the capped disk: see
#                  bench/capped-disk.sh
#   PG_CONFIG_15, PG_CONFIG_18, ...  pg_config of a major; default: Debian's for
#                  15, else the newest $PGWC_CACHE/pg-<major>-*-bench build
#                  (PGWC_CACHE defaults to /var/cache/pg_warmcache), else the
#                  newest chroot $PGWC_CACHE/chroot-<major>-* that
#                  test/install-deps made (see "A major in a chroot" below)
#   PG_CHROOT_19, ...  that chroot's directory, chosen by hand
#   PG_USER        server user (postgres)
#   PGWC_PORT      port number of the socket (5440)
#   EXTRA_CONF     extra postgresql.conf lines for every server, e.g.
#                  $'maintenance_io_concurrency = 32\nio_method = worker'
#   SKIP_INSTALL=1 do not build and install pg_warmcache
#   BASE_REV       a revision of this repository (e.g. a4728fe, release 1.5)
#                  whose library the method warmcache-base (warmup.sh,
#                  never-evict.sh) and warm-vs-prewarm.sh's warm-base load
#                  instead of the work tree's: two builds in one run (see
#                  "The base build" below)
#   BENCH_LOCK     a lock file the scripts hold around each step (see locked;
#                  /var/lock/pg_warmcache-bench.lock by default, so that two
#                  benchmarks never measure at once; empty when the caller
#                  holds it already)

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$BENCH_DIR/common.sh"
REPO=$(cd "$BENCH_DIR/.." && pwd)
BENCH_BASE=${BENCH_BASE:-/var/tmp/pgwc-bench}
CAPPED_DIR=${CAPPED_DIR:-/var/tmp/capped}
BENCH_LOCK=${BENCH_LOCK-/var/lock/pg_warmcache-bench.lock}
CAPPED_SIZE=${CAPPED_SIZE:-8G}
PGWC_PORT=${PGWC_PORT:-5440}
PGWC_CACHE=${PGWC_CACHE:-/var/cache/pg_warmcache}

die() { echo "$(basename "$0"): $*" >&2; exit 1; }
say() { echo "[$(date +%T)] $*" >&2; }
now() { date +%s.%N; }
# elapsed seconds between two `now` values
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

need_root() {
	[ "$(id -u)" = 0 ] || die "run as root (it drops the OS cache and runs the servers as $PG_USER)"
}

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# find_pg MAJOR: prints "host PG_CONFIG", or "chroot DIR" for a major whose
# binaries are only in a chroot of test/install-deps.
find_pg() {
	local major=$1 var="PG_CONFIG_$1" cvar="PG_CHROOT_$1" pc="" d
	if [ -n "${!var:-}" ]; then
		pc=${!var}
	elif [ -n "${!cvar:-}" ]; then
		[ -x "${!cvar}/usr/lib/postgresql/$major/bin/pg_config" ] ||
			die "$cvar=${!cvar}: no PostgreSQL $major in it"
		echo "chroot ${!cvar}"
		return 0
	elif [ "$major" = 15 ] && [ -x /usr/lib/postgresql/15/bin/pg_config ]; then
		pc=/usr/lib/postgresql/15/bin/pg_config
	else
		for d in $(ls -d "$PGWC_CACHE"/pg-"$major"-*-bench 2>/dev/null | sort -V -r); do
			if [ -x "$d/bin/pg_config" ] && [ -f "$d/.complete" ]; then
				pc=$d/bin/pg_config
				break
			fi
		done
		if [ -z "$pc" ]; then
			for d in $(ls -d "$PGWC_CACHE"/chroot-"$major"-* 2>/dev/null | sort -V -r); do
				if [ -f "$d/.complete" ] && [ -x "$d/usr/lib/postgresql/$major/bin/pg_config" ]; then
					echo "chroot $d"
					return 0
				fi
			done
		fi
	fi
	[ -n "$pc" ] && [ -x "$pc" ] ||
		die "no pg_config for PostgreSQL $major, no complete -bench build or chroot in $PGWC_CACHE: make one with \"PGWC_FLAVOR=bench test/install-deps $major\", or set PG_CONFIG_$major"
	echo "host $pc"
}

# use_pg MAJOR: sets PG_CONFIG, BINDIR, PKGLIBDIR and PRIVLIB; builds
# pg_warmcache from a copy of the repository's work tree (builds for
# different majors never share object files) and installs it.
#
# Other sessions on this machine `make install` their own builds into the
# same $libdir at any time.  So the servers load a private copy of our
# library: PRIVLIB comes first in dynamic_library_path, and the extension's
# functions name the library without "$libdir/" (see ensure_db).
use_pg() {
	pg_env "$1"
	[ -x "$BINDIR/pgbench" ] || die "$BINDIR/pgbench missing"
	[ -f "$PKGLIBDIR/pg_prewarm.so" ] || die "contrib pg_prewarm missing in $PKGLIBDIR"
	mkdir -p "$PRIVLIB"
	if [ "${SKIP_INSTALL:-0}" != 1 ]; then
		local b=$BENCH_BASE/build-$BUILD_KEY
		say "building pg_warmcache from $REPO for PostgreSQL $PG_MAJOR in $b${PG_ROOT:+ (in a chroot)}"
		rm -rf "$b" && mkdir -p "$b"
		tar -C "$REPO" --exclude-vcs --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
			--exclude=./tmp_check --exclude=./results --exclude=./log \
			--exclude=./bench/out -cf - . | tar -C "$b" -xf -
		pg_make -s -C "$b" >"$b/build.log" 2>&1 ||
			{ tail -30 "$b/build.log" >&2; die "building pg_warmcache failed"; }
		install_ext || die "installing pg_warmcache failed (see $b/build.log)"
		cp "$b/pg_warmcache.so" "$PRIVLIB/pg_warmcache.so.tmp"
		mv "$PRIVLIB/pg_warmcache.so.tmp" "$PRIVLIB/pg_warmcache.so"
	elif [ ! -f "$PRIVLIB/pg_warmcache.so" ]; then
		cp "$PKGLIBDIR/pg_warmcache.so" "$PRIVLIB/pg_warmcache.so"
	fi
	SO_MD5=$(md5sum <"$PRIVLIB/pg_warmcache.so" | cut -c1-12)
	SO_CHANGED=""
	# A script whose methods load the base build (WANT_BASE=1) or
	# pgfincore (WANT_FINCORE=1) has it built for this major too.
	[ "${WANT_BASE:-0}" = 0 ] || use_base
	[ "${WANT_FINCORE:-0}" = 0 ] || use_pgfincore
}

# pg_env MAJOR: what use_pg sets but builds nothing: PG_MAJOR, BUILD_KEY,
# PRIVLIB, PG_CONFIG, BINDIR, SERVER_BINDIR, PKGLIBDIR, and for a chroot
# major PG_ROOT (its overlay, mounted).
pg_env() {
	local where dir
	PG_MAJOR=$1
	read -r where dir < <(find_pg "$1")
	[ -n "$where" ] || exit 1
	# One private library and build per work tree: benchmarks of two work
	# trees on one machine must not load each other's code.
	BUILD_KEY=$PG_MAJOR-$(printf '%s' "$REPO" | md5sum | cut -c1-8)
	PRIVLIB=$BENCH_BASE/lib-$BUILD_KEY
	if [ "$where" = chroot ]; then
		chroot_up "$dir"
		PKGLIBDIR=$PG_ROOT$("$BINDIR/pg_config" --pkglibdir)
	else
		PG_ROOT=""
		PG_CONFIG=$dir
		BINDIR=$("$PG_CONFIG" --bindir)
		SERVER_BINDIR=$BINDIR
		PKGLIBDIR=$("$PG_CONFIG" --pkglibdir)
	fi
}

# The base build.  To weigh the work tree against a release in the same
# run, BASE_REV names a revision of this repository; its pg_warmcache is
# built once per (major, revision) from `git archive`, with the major's
# pg_config as use_pg builds the work tree, in
# $BENCH_BASE/build-base-<major>-<rev>, and its library copied to
# $BENCH_BASE/lib-base-<major>-<rev> (BASELIB).  A server whose
# bench_run.conf says dynamic_library_path = 'BASELIB:$libdir' (base_conf)
# loads it instead of PRIVLIB's: bench_run.conf is read after
# postgresql.conf.  Both builds serve the extension objects the cluster
# has, which are the work tree's: BASE_REV's SQL scripts must be the work
# tree's, which may add scripts of later versions (their objects are the
# base build's plus more, which the benchmarks do not call under it), and
# its control file may differ only in default_version.
BASE_SHORT="" BASELIB="" BASE_MD5=""

# base_rev: BASE_REV as a short commit id; dies unless it names a commit
# whose SQL scripts and control file are the work tree's, as above.
base_rev() {
	local r
	[ -n "${BASE_REV:-}" ] || die "the base build needs BASE_REV, a revision of this repository (e.g. a4728fe)"
	r=$(git -C "$REPO" rev-parse --verify --short "$BASE_REV^{commit}" 2>/dev/null) ||
		die "BASE_REV=$BASE_REV: no such revision in this repository"
	git -C "$REPO" diff --quiet --diff-filter=DMRT "$r" -- 'pg_warmcache--*.sql' &&
		! git -C "$REPO" diff -U0 "$r" -- pg_warmcache.control | grep -E '^[-+][^-+]' | grep -qv '^[-+]default_version' ||
		die "BASE_REV=$BASE_REV: its SQL scripts or control file differ from the work tree's beyond later versions; both builds must serve the same extension objects"
	echo "$r"
}

# base_build: BASE_REV's library for PG_MAJOR (after pg_env or use_pg),
# built unless it is there from the same pg_config; sets BASE_SHORT,
# BASELIB and BASE_MD5 and prints the library's path.
base_build() {
	local b stamp want
	BASE_SHORT=$(base_rev) || exit 1
	b=$BENCH_BASE/build-base-$PG_MAJOR-$BASE_SHORT
	BASELIB=$BENCH_BASE/lib-base-$PG_MAJOR-$BASE_SHORT
	stamp=$BASELIB/built-with
	want="$PG_CONFIG $("$BINDIR/pg_config" --version)"
	if [ ! -f "$BASELIB/pg_warmcache.so" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
		say "building pg_warmcache $BASE_SHORT (BASE_REV) for PostgreSQL $PG_MAJOR in $b${PG_ROOT:+ (in a chroot)}"
		rm -rf "$b" "$BASELIB" && mkdir -p "$b" "$BASELIB"
		git -C "$REPO" archive "$BASE_SHORT" | tar -C "$b" -xf - ||
			die "git archive of $BASE_SHORT failed"
		pg_make -s -C "$b" >"$b/build.log" 2>&1 ||
			{ tail -30 "$b/build.log" >&2; die "building pg_warmcache $BASE_SHORT failed"; }
		cp "$b/pg_warmcache.so" "$BASELIB/pg_warmcache.so.tmp"
		mv "$BASELIB/pg_warmcache.so.tmp" "$BASELIB/pg_warmcache.so"
		echo "$want" >"$stamp"
	fi
	BASE_MD5=$(md5sum <"$BASELIB/pg_warmcache.so" | cut -c1-12)
	echo "$BASELIB/pg_warmcache.so"
}

# use_base: base_build, quietly.
use_base() {
	base_build >/dev/null
	say "base build: pg_warmcache $BASE_SHORT for PostgreSQL $PG_MAJOR, $BASELIB/pg_warmcache.so (md5 $BASE_MD5)"
}

# use_pgfincore: the extension pgfincore (the method pgfincore of
# warmup.sh, a manual peer) installed for PG_MAJOR: Debian's package where
# the host's server is Debian's (15); otherwise built from the original
# tarball of Debian's source package PGFINCORE_VERSION, the newest whose
# tarball this archive serves, with pgfincore-newer-majors.patch for 18 and 19.
PGFINCORE_VERSION=1.3.1-2
use_pgfincore() {
	local src=$BENCH_BASE/src-pgfincore b=$BENCH_BASE/pgfincore-$BUILD_KEY orig
	if [ -z "$PG_ROOT" ] && [ "$PG_CONFIG" = "/usr/lib/postgresql/$PG_MAJOR/bin/pg_config" ]; then
		dpkg -s "postgresql-$PG_MAJOR-pgfincore" >/dev/null 2>&1 ||
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q "postgresql-$PG_MAJOR-pgfincore" >/dev/null ||
			die "cannot install postgresql-$PG_MAJOR-pgfincore"
		return 0
	fi
	orig=$src/pgfincore_${PGFINCORE_VERSION%-*}.orig.tar.gz
	if [ ! -f "$orig" ]; then
		[ -f "$PGWC_CACHE/apt/apt.conf" ] ||
			die "method pgfincore: no apt configuration in $PGWC_CACHE/apt: run test/install-deps $PG_MAJOR"
		mkdir -p "$src"
		# apt checks each file it fetches against the signed index; the
		# snapshot here may lack the package's Debian part, not needed.
		(cd "$src" && APT_CONFIG=$PGWC_CACHE/apt/apt.conf \
			apt-get source -qq --download-only "pgfincore=$PGFINCORE_VERSION") >/dev/null 2>&1 || true
		[ -f "$orig" ] || die "method pgfincore: cannot fetch the source of pgfincore $PGFINCORE_VERSION"
	fi
	say "building pgfincore $PGFINCORE_VERSION for PostgreSQL $PG_MAJOR in $b"
	rm -rf "$b" && mkdir -p "$b"
	tar -C "$b" --strip-components=1 -xzf "$orig"
	patch -s -d "$b" -p1 <"$BENCH_DIR/pgfincore-newer-majors.patch" || die "pgfincore-newer-majors.patch does not apply"
	{ pg_make -s -C "$b" && pg_make -s -C "$b" install; } >"$b/build.log" 2>&1 ||
		{ tail -20 "$b/build.log" >&2; die "building pgfincore failed"; }
}

# base_conf: the line of bench_run.conf that loads the base build.
base_conf() {
	[ -n "$BASELIB" ] || die "the base build is not built: set BASE_REV"
	echo "dynamic_library_path = '$BASELIB:\$libdir'"
}

# base_meta: the result files' lines on the base build (none without it).
base_meta() {
	if [ -n "$BASELIB" ]; then printf '%s\n' "base_rev=$BASE_SHORT" "base_so_md5=$BASE_MD5"; fi
}

# pg_make ARG...: make with the major's pg_config, inside its chroot if it
# has one.
pg_make() {
	if [ -n "$PG_ROOT" ]; then
		chroot "$PG_ROOT" make PG_CONFIG="$PG_CONFIG" "$@"
	else
		make PG_CONFIG="$PG_CONFIG" "$@"
	fi
}

# A major in a chroot.  A major whose source the archive does not serve
# (19) has its binary packages in a chroot of the Debian suite that ships
# them, made by test/install-deps; its programs need that suite's C library.
# The servers and the clients run inside it, driven by the scripts here on
# the host, through:
#   - PG_ROOT ($BENCH_BASE/root-<major>-<key>): an overlay of the chroot
#     whose changes go to $BENCH_BASE/overlay-<major>-<key>, so that the
#     shared chroot, which test runs use meanwhile, is never written (the
#     extension's install, the user's ids); with /proc, /sys (read-only),
#     a /dev/shm of its own, and BENCH_BASE, the repository, OUT_DIR and (use_cluster)
#     CAPPED_DIR mounted at the same paths inside, so that a path means the
#     same on both sides;
#   - the chroot's PG_USER made PG_USER's uid and gid on the host, who owns
#     the files the scripts make for the servers;
#   - BINDIR: a wrapper per program, which runs it inside PG_ROOT in the
#     same working directory, as its caller or, when PGWC_AS is set, as
#     that uid:gid (as_pg below: a process that is no longer root cannot
#     enter a chroot).  A process keeps its cgroup across chroot, so the
#     cap of the capped disk still applies.
# The mounts are undone when the script ends (the EXIT trap below) and, if
# it is killed or replaced that trap, by a watcher that waits for its end.
PG_ROOT=""
SERVER_BINDIR=""
PG_IDS=$(id -u "$PG_USER" 2>/dev/null):$(id -g "$PG_USER" 2>/dev/null)
CHROOT_ROOTS=()

# chroot_up DIR: the overlay of chroot DIR for PG_MAJOR, mounted; sets
# PG_ROOT, BINDIR, SERVER_BINDIR and PG_CONFIG (its path inside).
chroot_up() {
	local lower=$1 ovl=$BENCH_BASE/overlay-$BUILD_KEY bin=/usr/lib/postgresql/$PG_MAJOR/bin p d lockfd
	PG_ROOT=$BENCH_BASE/root-$BUILD_KEY
	SERVER_BINDIR=$bin
	PG_CONFIG=$bin/pg_config
	BINDIR=$BENCH_BASE/bin-$BUILD_KEY
	if [[ " ${CHROOT_ROOTS[*]} " == *" $PG_ROOT "* ]]; then return 0; fi
	mkdir -p "$BENCH_BASE"
	# Held until the end, by the watcher too: the previous script's watcher
	# may still be at work for a few seconds.
	exec {lockfd}>>"$PG_ROOT.lock"
	flock -w 60 "$lockfd" || die "another benchmark uses $PG_ROOT"
	chroot_down "$PG_ROOT"    # what a killed run may have left
	# A new chroot (another package version) starts a new overlay.
	if [ "$(cat "$ovl/lower" 2>/dev/null)" != "$lower" ]; then
		rm -rf "$ovl"
		mkdir -p "$ovl/upper" "$ovl/work"
		echo "$lower" >"$ovl/lower"
	fi
	mkdir -p "$PG_ROOT"
	CHROOT_ROOTS+=("$PG_ROOT")
	chroot_watch "$PG_ROOT"
	mount -t overlay overlay -o "lowerdir=$lower,upperdir=$ovl/upper,workdir=$ovl/work" "$PG_ROOT" ||
		die "cannot mount an overlay of $lower"
	mount -t proc proc "$PG_ROOT/proc"
	# The devices' queue limits, read-only: pg_warmcache sizes its reads by
	# the device's max_sectors_kb there, and without /sys it falls back to
	# 256 kB pieces, which a server on its own machine would not.
	mkdir -p "$PG_ROOT/sys"
	mount -t sysfs -o ro sysfs "$PG_ROOT/sys"
	mkdir -p "$PG_ROOT/dev/shm"
	mount -t tmpfs -o mode=1777,size=1g shm "$PG_ROOT/dev/shm"
	for d in "$BENCH_BASE" "$REPO" "${OUT_DIR:+$(realpath -m "$OUT_DIR")}"; do
		[ -n "$d" ] && chroot_bind "$d"
	done
	# PG_USER gets the host's ids; whoever had them in the chroot goes.
	local uid=${PG_IDS%:*} gid=${PG_IDS#*:}
	awk -F: -v OFS=: -v u="$PG_USER" -v uid="$uid" -v gid="$gid" \
		'$1 == u { $3 = uid; $4 = gid } $1 != u && $3 == uid { next } { print }' \
		"$PG_ROOT/etc/passwd" >"$ovl/passwd" && cat "$ovl/passwd" >"$PG_ROOT/etc/passwd"
	awk -F: -v OFS=: -v u="$PG_USER" -v gid="$gid" \
		'$1 == u { $3 = gid } $1 != u && $3 == gid { next } { print }' \
		"$PG_ROOT/etc/group" >"$ovl/group" && cat "$ovl/group" >"$PG_ROOT/etc/group"
	rm -rf "$BINDIR"
	mkdir -p "$BINDIR"
	for p in "$PG_ROOT$bin"/*; do
		p=${p##*/}
		cat >"$BINDIR/$p" <<WRAP
#!/bin/sh
# bench/lib.sh: $bin/$p in $PG_ROOT, as the caller or as PGWC_AS (uid:gid).
exec chroot \${PGWC_AS:+--userspec=\$PGWC_AS} '$PG_ROOT' /bin/sh -c 'cd "\$0" 2>/dev/null || cd /; exec "\$@"' "\$PWD" '$bin/$p' "\$@"
WRAP
		chmod 755 "$BINDIR/$p"
	done
	say "PostgreSQL $PG_MAJOR runs in an overlay of $lower at $PG_ROOT"
}

# chroot_bind DIR: DIR at the same path inside PG_ROOT (not what is mounted
# below it), unless it is there already.
chroot_bind() {
	local d=$1
	mountpoint -q "$PG_ROOT$d" && return 0
	mkdir -p "$d" "$PG_ROOT$d"
	mount --bind "$d" "$PG_ROOT$d" || die "cannot mount $d in $PG_ROOT"
}

# chroot_procs ROOT: the processes whose root is ROOT (ours: it is private).
chroot_procs() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
	done
	return 0
}

# chroot_down ROOT: ends the processes inside ROOT, a server first with
# SIGTERM (a smart shutdown: it leaves no postmaster.pid behind), and
# unmounts everything below ROOT, deepest first.
chroot_down() {
	local r=$1 p m tries
	p=$(chroot_procs "$r")
	if [ -n "$p" ]; then
		kill -TERM $p 2>/dev/null || true
		for tries in $(seq 50); do
			[ -n "$(chroot_procs "$r")" ] || break
			sleep 0.2
		done
	fi
	for tries in 1 2 3 4 5; do
		p=$(chroot_procs "$r")
		[ -z "$p" ] || kill -KILL $p 2>/dev/null || true
		for m in $(awk -v d="$r" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
			umount "$m" 2>/dev/null || true
		done
		awk -v d="$r" '$2 == d || index($2, d "/") == 1 { f = 1 } END { exit !f }' /proc/self/mounts || return 0
		sleep 1
	done
	for m in $(awk -v d="$r" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
		echo "bench: $m is still mounted; unmounting it lazily" >&2
		umount -l "$m" || true
	done
}

chroot_down_all() {
	local r
	for r in "${CHROOT_ROOTS[@]}"; do
		chroot_down "$r"
	done
	CHROOT_ROOTS=()
}

# chroot_watch ROOT: a process that unmounts ROOT once this script is gone,
# however it ended.
chroot_watch() {
	local me=$$
	(
		trap '' INT TERM HUP
		exec 8>&- 9>&-
		while kill -0 "$me" 2>/dev/null; do sleep 1; done
		chroot_down "$1"
	) </dev/null >/dev/null 2>&1 &
}

# as_pg CMD...: common.sh's, except that a program of a chroot major's
# BINDIR is entered as root and becomes PG_USER inside.
eval "host_$(declare -f as_pg)"
as_pg() {
	if [ -n "$PG_ROOT" ] && [ "${1%/*}" = "$BINDIR" ]; then
		PGWC_AS=$PG_IDS "$@"
	else
		host_as_pg "$@"
	fi
}

# install_ext [CMD...]: make install of the build copy into the server tree,
# then CMD, both holding the lock test/run takes for that major: other
# sessions install their own builds there, and CREATE EXTENSION must read
# the SQL scripts of the build under measurement.  A chroot major installs
# into its overlay, which is ours alone: its own lock.
install_ext() {
	local b=$BENCH_BASE/build-$BUILD_KEY
	[ -f "$b/pg_warmcache.so" ] || die "no build in $b: run without SKIP_INSTALL=1 once"
	(
		flock 7
		pg_make -s -C "$b" install >>"$b/build.log" 2>&1
		"$@"
	) 7>>"$([ -n "$PG_ROOT" ] && echo "$PG_ROOT.install.lock" || echo "/var/lock/pg_warmcache-test-$PG_MAJOR.lock")"
}

# locked CMD...: CMD (a function too) holding the lock file BENCH_LOCK, when
# set: a script that takes it around each step lets other benchmarks on the
# machine run between its steps rather than during them.
locked() {
	local rc=0
	[ -n "${BENCH_LOCK:-}" ] || { "$@"; return; }
	say "waiting for $BENCH_LOCK"
	exec 8>>"$BENCH_LOCK"
	flock 8
	"$@" || rc=$?
	# Servers started meanwhile inherited the descriptor: unlock it
	# explicitly, closing ours would not release the lock.
	flock -u 8
	exec 8>&-
	return $rc
}

# The library the servers load must not change while we measure.
check_so() {
	local m
	m=$(md5sum <"$PRIVLIB/pg_warmcache.so" | cut -c1-12)
	if [ "$m" != "$SO_MD5" ]; then
		say "WARNING: $PRIVLIB/pg_warmcache.so changed under us ($SO_MD5 -> $m)"
		SO_CHANGED="$SO_CHANGED $m"
		SO_MD5=$m
	fi
}

repo_version() {
	local v
	v=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
	if [ -n "$(git -C "$REPO" status --porcelain --untracked-files=no -- src include 2>/dev/null)" ]; then
		v="$v+dirty"
	fi
	echo "$v"
}

# run_info: the lines of a run's info.txt that say when it ran, on what
# machine and with which pg_warmcache.
run_info() {
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "host=$(uname -r), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo)"
	echo "repo=$(repo_version)"
	if [ -n "$BASE_SHORT" ]; then echo "base=$BASE_SHORT"; fi
}

# whole_numbers VAR...: dies unless each variable named holds a whole number.
whole_numbers() {
	local v
	for v; do
		[[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number"
	done
}

# write_meta FILE KEY=VALUE...: a result file of key=value lines.
write_meta() {
	local f=$1
	shift
	printf '%s\n' "$@" >"$f"
}

# note_so FILE: check_so, and the library's changes, if any, added to FILE
# as so_changed.
note_so() {
	check_so
	[ -z "$SO_CHANGED" ] || echo "so_changed=$SO_CHANGED" >>"$1"
}

# capped_up: the capped disk (capped-disk.sh up: made if need be, mounted
# at CAPPED_DIR, its cap set); sets CAPPED_RA, its read_ahead_kb.
capped_up() {
	bash "$BENCH_DIR/capped-disk.sh" up "$CAPPED_DIR" "$CAPPED_SIZE" >&2
	CAPPED_DEV=$(basename "$(findmnt -n -o SOURCE "$CAPPED_DIR")")
	CAPPED_RA=$(cat "/sys/block/$CAPPED_DEV/queue/read_ahead_kb")
}

# cap_text: the capped disk's cap, as the result files give it.
cap_text() { echo "${CAP_IOPS:-3000} IOPS, ${CAP_BPS:-131072000} B/s, read_ahead_kb $CAPPED_RA"; }

# use_cluster DISK SCALE [NAME]: sets DISK, SCALE, CLDIR (NAME: a cluster
# of the script's own), PGDATA, SOCK, CAPPED (the capped-disk.sh
# to start servers under, or empty) and CAPPED_RA (the capped disk's
# read_ahead_kb), takes the cluster's lock.
use_cluster() {
	DISK=$1
	SCALE=$2
	CAPPED=""
	case "$DISK" in
	local)
		# A script whose objects would change what others measure names
		# a cluster of its own (third argument).
		CLDIR=$BENCH_BASE/pg$PG_MAJOR-local-s$SCALE${3:+-$3}
		;;
	capped)
		CAPPED=$BENCH_DIR/capped-disk.sh
		capped_up
		[ -z "$PG_ROOT" ] || chroot_bind "$CAPPED_DIR"
		CLDIR=$CAPPED_DIR/pgwc-bench/pg$PG_MAJOR-s$SCALE${3:+-$3}
		;;
	*) die "unknown disk \"$DISK\" (local or capped)" ;;
	esac
	PGDATA=$CLDIR/data
	SOCK=$CLDIR/run
	mkdir -p "$CLDIR"
	chown "$PG_USER:" "$CLDIR"
	exec 9>"$CLDIR.lock"
	flock -n 9 || die "another benchmark uses $CLDIR"
}

# The SQL clients, as root through the socket.
psqlc() { "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" "$@"; }
sql() { psqlc -At -d "${DB:-bench}" -c "$1"; }

server_pid() { [ -f "$PGDATA/postmaster.pid" ] && head -1 "$PGDATA/postmaster.pid"; }

server_running() {
	local pid
	pid=$(server_pid) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# pg_start LOGFILE: starts the server (under the cap on the capped disk) and
# returns the moment it accepts connections.  Sets T_LAUNCH and T_READY
# (epoch seconds) and SERVER_PID.
pg_start() {
	local logf=$1 i l pid
	check_so
	# A server that died without a shutdown left its postmaster.pid, whose
	# "ready" line must not be taken for the new server's.
	if [ -f "$PGDATA/postmaster.pid" ] && ! server_running; then rm -f "$PGDATA/postmaster.pid"; fi
	: >"$logf"
	chown "$PG_USER:" "$logf"
	T_LAUNCH=$(now)
	if [ -n "$CAPPED" ] && [ -n "$PG_ROOT" ]; then
		PGWC_AS=$PG_IDS bash "$CAPPED" run "$BINDIR/pg_ctl" -D "$PGDATA" -l "$logf" -W start >/dev/null
	elif [ -n "$CAPPED" ]; then
		bash "$CAPPED" run bash -c '. "$1" && shift && as_pg "$@"' _ "$BENCH_DIR/common.sh" \
			"$BINDIR/pg_ctl" -D "$PGDATA" -l "$logf" -W start >/dev/null
	else
		as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -l "$logf" -W start >/dev/null
	fi
	# Poll postmaster.pid's status line every 5 ms: "ready" is written when
	# the postmaster starts accepting connections.
	for ((i = 0; i < 60000; i++)); do
		if [ -f "$PGDATA/postmaster.pid" ]; then
			mapfile -t l <"$PGDATA/postmaster.pid" 2>/dev/null || true
			if [[ ${l[7]:-} == ready* ]]; then
				T_READY=$(now)
				SERVER_PID=${l[0]}
				break
			fi
		fi
		# Start-up can take seconds on a busy machine after drop_caches:
		# fail on the log's word, not on a short timeout.
		if ((i % 20 == 0)) && grep -Eq '(FATAL|PANIC):' "$logf" && ! server_running; then
			tail -20 "$logf" >&2
			die "server failed to start (log $logf)"
		fi
		sleep 0.005
	done
	[ -n "${T_READY:-}" ] || die "server not ready after 300 s"
	if [ -n "$CAPPED" ] && ! bash "$CAPPED" check "$SERVER_PID"; then
		die "server $SERVER_PID is not in the capped disk's cgroup"
	fi
}

# verify_lib: the running server and the bench database use PRIVLIB's copy.
verify_lib() {
	local probin
	lib_loaded "$PRIVLIB"
	probin=$(sql "select string_agg(distinct probin, ',') from pg_proc where probin like '%pg_warmcache%'")
	[ "$probin" = pg_warmcache ] || die "the extension's functions load \"$probin\", not pg_warmcache"
}

# lib_loaded DIR: the running server loaded DIR's pg_warmcache.so (PRIVLIB,
# or BASELIB for the base build).
lib_loaded() {
	local maps
	maps=$(grep -o '/[^ ]*/pg_warmcache\.so$' "/proc/$SERVER_PID/maps" | sort -u)
	maps=${maps#"$PG_ROOT"}
	[ "$maps" = "$1/pg_warmcache.so" ] ||
		die "the server loaded \"$maps\", not $1/pg_warmcache.so"
}

# A postmaster of ours that has not written postmaster.pid yet.
starting_postmaster() {
	pgrep -u "$PG_USER" -f -x "$SERVER_BINDIR/postgres -D $PGDATA" >/dev/null 2>&1
}

pg_stop() {
	local i
	for ((i = 0; i < 600; i++)); do
		if server_running || ! starting_postmaster; then break; fi
		sleep 0.1
	done
	if server_running; then
		as_pg "$BINDIR/pg_ctl" -D "$PGDATA" -m fast -w -t 600 stop >/dev/null
	fi
}

# reserve_huge_pages N: at least N huge pages in the kernel's pool, for a
# server with huge_pages = on (its shared memory then stays allocated
# between two starts; see warm-vs-prewarm.sh); the pool goes back to its
# old size when the script ends.
HUGE_PAGES_BEFORE=""
reserve_huge_pages() {
	local cur
	cur=$(cat /proc/sys/vm/nr_hugepages)
	[ -n "$HUGE_PAGES_BEFORE" ] || HUGE_PAGES_BEFORE=$cur
	((cur >= $1)) && return 0
	echo "$1" >/proc/sys/vm/nr_hugepages
	cur=$(cat /proc/sys/vm/nr_hugepages)
	((cur >= $1)) || die "could reserve only $cur of $1 huge pages"
}
release_huge_pages() {
	[ -z "$HUGE_PAGES_BEFORE" ] || echo "$HUGE_PAGES_BEFORE" >/proc/sys/vm/nr_hugepages
	HUGE_PAGES_BEFORE=""
}

# cpu_sampler_start FILE: the machine's CPU time once a second into FILE,
# each line the time (epoch seconds) and the first line of /proc/stat
# (user nice system idle iowait irq softirq steal ..., in clock ticks),
# until cpu_sampler_stop, which adds a last line: where the CPU went during
# a run, the kernel's and the host's (steal) share included.
#
# The first and the last line of FILE are preceded by a line of what the
# machine's memory management took back (mem_sample), whose change over a
# run says how much of the page cache was taken away under it.
CPU_SAMPLER=""
CPU_SAMPLE_FILE=""
CAPPED_DEV=""
cpu_sample() {
	local t
	t=$(now)
	printf '%s %s\n' "$t" "$(head -1 /proc/stat)"
	# The capped disk's reads so far: requests and 512-byte sectors.
	[ -z "$CAPPED_DEV" ] ||
		awk -v t="$t" -v d="$CAPPED_DEV" '$3 == d { print t, "disk", $4, $6 }' /proc/diskstats
	proc_reads_sample "$t"
}

# proc_reads_sample TIME: for each server process, from the kernel's
# counters (/proc/PID/io), the bytes it read from storage and its read
# calls so far: lines "<time> read <pid> <kind> <bytes> <calls>", kind by
# the process title: restore (pg_warmcache's processes), session (a session
# of the database bench: the clients, a loader), ioworker, other.  Beside
# the device's requests they tell whose reads took the device: the
# clients' 8 kB misses or the restore's larger pieces.
proc_reads_sample() {
	local p c title kind k v rb sc
	for p in /proc/[0-9]*; do
		{ read -r c <"$p/comm"; } 2>/dev/null || continue
		[ "$c" = postgres ] || continue
		{ IFS= read -r -d '' title <"$p/cmdline"; } 2>/dev/null || true
		case $title in
		*pg_warmcache*) kind=restore ;;
		*" bench [local]"*) kind=session ;;
		*"io worker"*) kind=ioworker ;;
		*) kind=other ;;
		esac
		rb=0 sc=0
		while read -r k v; do
			case $k in read_bytes:) rb=$v ;; syscr:) sc=$v ;; esac
		done 2>/dev/null <"$p/io" || continue
		echo "$1 read ${p#/proc/} $kind $rb $sc"
	done
}

# mem_sample: "<time> mem <paged out> <refaulted> <major faults>": the
# bytes that the kernel's data access monitor's schemes paged out since
# they started ("-" where none runs), and from /proc/vmstat the file pages
# read again after their eviction (workingset_refault_file) and the major
# faults, both counts of pages since boot.  The monitor pages out memory
# not accessed for a while on some virtual machines, the page cache
# included: a restore's pages that no query touched soon enough go too.
mem_sample() {
	local d f paged=- n
	for d in /sys/kernel/mm/damon/admin/kdamonds/[0-9]*; do
		[ "$(cat "$d/state" 2>/dev/null)" = on ] || continue
		echo update_schemes_stats >"$d/state" 2>/dev/null || continue
		for f in "$d"/contexts/*/schemes/*/stats/sz_applied; do
			[ -r "$f" ] || continue
			n=$(cat "$f")
			paged=$(( ${paged/-/0} + n ))
		done
	done
	printf '%s mem %s %s %s\n' "$(now)" "$paged" \
		"$(awk '$1 == "workingset_refault_file" { print $2 }' /proc/vmstat)" \
		"$(awk '$1 == "pgmajfault" { print $2 }' /proc/vmstat)"
}
cpu_sampler_start() {
	CPU_SAMPLE_FILE=$1
	mem_sample >"$1" 2>/dev/null || true
	# Until cpu_sampler_stop, or the script's end however it came (a
	# killed script would leave it running, holding its lock files).
	local me=$$
	(while kill -0 "$me" 2>/dev/null; do cpu_sample; sleep 1; done) >>"$1" 2>/dev/null &
	CPU_SAMPLER=$!
}
cpu_sampler_stop() {
	[ -n "$CPU_SAMPLER" ] || return 0
	kill "$CPU_SAMPLER" 2>/dev/null || true
	wait "$CPU_SAMPLER" 2>/dev/null || true
	mem_sample >>"$CPU_SAMPLE_FILE" 2>/dev/null || true
	cpu_sample >>"$CPU_SAMPLE_FILE"
	CPU_SAMPLER=""
}

# status_sampler_start SECONDS FILE CMD...: CMD every 5 s in the
# background, SECONDS / 5 + 1 times at most, its output into FILE, until
# status_sampler_stop.
STATUS_SAMPLER=""
status_sampler_start() {
	local n=$(($1 / 5 + 1)) f=$2
	shift 2
	(
		for ((i = 0; i < n; i++)); do
			"$@"
			sleep 5
		done
	) >"$f" 2>&1 &
	STATUS_SAMPLER=$!
}
status_sampler_stop() {
	kill "$STATUS_SAMPLER" 2>/dev/null || true
	wait "$STATUS_SAMPLER" 2>/dev/null || true
}

# activity_sampler_start FILE: five times a second, from one session of
# its own, what each client and each other process of the server that is
# not idle is doing: a line "<epoch>|<backend type>=<wait event or CPU>,..."
# (a client's "ClientRead" is the client's own time between queries), until
# activity_sampler_stop.  It shows where the queries wait while a restore
# runs beside them.  pg_stat_activity is the server's public view of it.
ACTIVITY_SAMPLER=""
activity_sampler_start() {
	psqlc -At -d "${DB:-bench}" >"$1" 2>/dev/null <<'EOF' &
SELECT extract(epoch FROM clock_timestamp())::numeric(16, 2) || '|' ||
       coalesce(string_agg(backend_type || '=' || coalesce(wait_event, 'CPU'), ','
                           ORDER BY backend_type), '')
  FROM pg_stat_activity
 WHERE pid <> pg_backend_pid()
   AND (backend_type = 'client backend' OR
        (coalesce(wait_event_type, '') NOT IN ('Activity', 'Timeout') AND
         coalesce(wait_event, '') <> 'IoWorkerMain'))
\watch 0.2
EOF
	ACTIVITY_SAMPLER=$!
}
activity_sampler_stop() {
	[ -n "$ACTIVITY_SAMPLER" ] || return 0
	kill "$ACTIVITY_SAMPLER" 2>/dev/null || true
	wait "$ACTIVITY_SAMPLER" 2>/dev/null || true
	ACTIVITY_SAMPLER=""
}

# Stop the server when the script ends, whatever the reason.
trap 'activity_sampler_stop 2>/dev/null || true; cpu_sampler_stop 2>/dev/null || true; pg_stop 2>/dev/null || true; release_huge_pages 2>/dev/null || true; chroot_down_all' EXIT
trap 'exit 130' INT TERM

write_conf() {
	cat >"$PGDATA/postgresql.conf" <<EOF
# written by pg_warmcache bench/lib.sh
listen_addresses = ''
port = $PGWC_PORT
unix_socket_directories = '$SOCK'
max_connections = 20
shared_buffers = 4GB
shared_preload_libraries = 'pg_warmcache,pg_prewarm'
dynamic_library_path = '$PRIVLIB:\$libdir'
pg_warmcache.autowarm = off
pg_warmcache.dump_interval = 0
pg_prewarm.autoprewarm = off
pg_prewarm.autoprewarm_interval = 0
wal_level = minimal
max_wal_senders = 0
max_wal_size = 2GB
checkpoint_timeout = 1h
autovacuum = off
log_line_prefix = '%m [%p] '
log_timezone = 'UTC'
timezone = 'UTC'
${EXTRA_CONF:-}
# per-run settings (the warm-up method) go here
include_if_exists = 'bench_run.conf'
EOF
	chown "$PG_USER:" "$PGDATA/postgresql.conf"
}

# run_conf LINES: the per-run settings, read at the next start.
run_conf() {
	printf '%s\n' "$1" >"$PGDATA/bench_run.conf"
	chown "$PG_USER:" "$PGDATA/bench_run.conf"
}

# alt_conf warmcache-altN: the lines of ALTN_CONF (N = 2, 3, 4), which
# must be set: more settings weighed in one run.
alt_conf() {
	local var="ALT${1#warmcache-alt}_CONF"
	[ -n "${!var:-}" ] || die "$1 needs $var"
	printf '%s\n' "${!var}"
}

# method_conf METHOD: the warm-up method's settings for the next start
# (none, or none-again, the same again as a control; autoprewarm,
# warmcache with the OS tier, or warmcache-buffers without it;
# warmcache-alt is warmcache with the lines of ALT_CONF added, by default
# pg_warmcache.platform_shortcuts = '' (no direct use of the system where
# PostgreSQL's interfaces do without): the same build with another setting
# in the same run, and warmcache-alt2, -alt3 and -alt4 the same with
# ALT2_CONF, ALT3_CONF and ALT4_CONF; warmcache-base is warmcache with the
# base build's library (BASE_REV, base_conf); WARMCACHE_CONF and
# AUTOPREWARM_CONF add lines of their own).
method_conf() {
	case "$1" in
	none | none-again | reader | reader-slow | pgfincore) run_conf $'pg_prewarm.autoprewarm = off\npg_warmcache.autowarm = off' ;;
	autoprewarm) run_conf $'pg_prewarm.autoprewarm = on\npg_warmcache.autowarm = off\n'"${AUTOPREWARM_CONF:-}" ;;
	warmcache) run_conf $'pg_prewarm.autoprewarm = off\npg_warmcache.autowarm = on\npg_warmcache.dump_os_cache = on\n'"${WARMCACHE_CONF:-}" ;;
	warmcache-buffers) run_conf $'pg_prewarm.autoprewarm = off\npg_warmcache.autowarm = on\npg_warmcache.dump_os_cache = off\n'"${WARMCACHE_CONF:-}" ;;
	warmcache-alt) run_conf $'pg_prewarm.autoprewarm = off\npg_warmcache.autowarm = on\npg_warmcache.dump_os_cache = on\n'"${ALT_CONF:-pg_warmcache.platform_shortcuts = ''}"$'\n'"${WARMCACHE_CONF:-}" ;;
	warmcache-base) [ -n "$BASELIB" ] || die "warmcache-base needs BASE_REV"
		run_conf $'pg_prewarm.autoprewarm = off\npg_warmcache.autowarm = on\npg_warmcache.dump_os_cache = on\n'"$(base_conf)"$'\n'"${WARMCACHE_CONF:-}" ;;
	warmcache-alt[234]) run_conf $'pg_prewarm.autoprewarm = off\npg_warmcache.autowarm = on\npg_warmcache.dump_os_cache = on\n'"$(alt_conf "$1")"$'\n'"${WARMCACHE_CONF:-}" ;;
	esac
}

# The log line that ends a restore of the saved file, as an extended
# regular expression: "restore of the saved set finished: restored ..."
# now, "pg_warmcache: restore finished: restored ..." in release 1.5 and
# before, which a base build (BASE_REV) may be.  The second group is the
# state.
WC_END_ERE='(restore of the saved set|pg_warmcache: restore) (finished|stopped|incomplete)'

# restore_re METHOD: the log line a method's restore ends with (none: empty).
restore_re() {
	case "$1" in
	autoprewarm) echo 'autoprewarm successfully prewarmed' ;;
	warmcache*) echo "$WC_END_ERE" ;;
	*) echo '' ;;
	esac
}

# prewarm_all: every relation fork of the current database ($DB, default
# bench) into shared buffers.
prewarm_all() {
	sql "select sum(pg_prewarm(c.oid, 'buffer', f)) from pg_class c, unnest(array['main', 'fsm', 'vm']) f
	     where c.relkind in ('r', 'i', 't', 'm') and c.relpersistence = 'p'
	       and pg_relation_size(c.oid, f) > 0" >/dev/null
}

# update_ext: bring pg_warmcache in every database of a reused cluster to
# the build's version.  ALTER EXTENSION UPDATE loads "$libdir/pg_warmcache",
# as CREATE EXTENSION does, so in a server that does not preload the
# private copy; then the functions load that copy again.
update_ext() {
	local stale
	run_conf "shared_preload_libraries = 'pg_prewarm'"
	pg_start "$CLDIR/logs/setup.log"
	stale=$(DB=postgres sql "select string_agg(datname, ' ') from pg_database
		where datallowconn and not datistemplate")
	install_ext update_ext_in $stale
	pg_stop
	run_conf ""
}

update_ext_in() {
	local db
	for db in "$@"; do
		DB=$db sql "do \$\$begin
			if exists (select from pg_extension e join pg_available_extensions a on a.name = e.extname
				where e.extname = 'pg_warmcache' and e.extversion <> a.default_version) then
				alter extension pg_warmcache update;
				update pg_proc set probin = 'pg_warmcache' where probin = '\$libdir/pg_warmcache';
			end if;
		end\$\$" >/dev/null
	done
}

# ensure_db [TAG [CMD...]]: reuse the cluster's pgbench database if it was
# made with this scale by this major (and variant TAG), else build it:
# initdb, pgbench -i -s SCALE, then CMD with the server up and the install
# lock held (default: CREATE EXTENSION pg_prewarm, pg_warmcache in bench).
ensure_db() {
	local scale=$SCALE stamp=$CLDIR/setup.ok want tag=${1:-}
	[ $# -eq 0 ] || shift
	[ $# -gt 0 ] || set -- sql "create extension pg_prewarm; create extension pg_warmcache"
	want="major=$PG_MAJOR scale=$scale lib=private${tag:+ $tag}"
	mkdir -p "$CLDIR/logs" "$SOCK"
	chown "$PG_USER:" "$CLDIR" "$CLDIR/logs" "$SOCK"
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$PGDATA/PG_VERSION" ]; then
		pg_stop
		write_conf
		run_conf ""
		say "reusing the scale-$scale database in $PGDATA"
		update_ext
		return 0
	fi
	pg_stop
	rm -rf "$PGDATA" "$stamp"
	local need avail
	need=$((scale * 25 + 1024))
	avail=$(df --output=avail -BM "$CLDIR" | tail -1 | tr -dc 0-9)
	((avail > need)) || die "$CLDIR: ${avail} MB free, a scale-$scale cluster needs ~${need} MB"
	say "creating a scale-$scale pgbench database in $PGDATA"
	as_pg "$BINDIR/initdb" -D "$PGDATA" -U "$PG_USER" --auth=trust -E UTF8 --locale=C >"$CLDIR/logs/initdb.log" 2>&1 ||
		{ tail "$CLDIR/logs/initdb.log" >&2; die "initdb failed"; }
	write_conf
	# CREATE EXTENSION loads "$libdir/pg_warmcache", which must not meet the
	# preloaded private copy: create it in a server that does not preload it.
	run_conf "shared_preload_libraries = 'pg_prewarm'"
	pg_start "$CLDIR/logs/setup.log"
	DB=postgres sql "create database bench"
	"$BINDIR/pgbench" -h "$SOCK" -p "$PGWC_PORT" -U "$PG_USER" -i -q -s "$scale" bench >"$CLDIR/logs/pgbench-init.log" 2>&1 ||
		{ tail "$CLDIR/logs/pgbench-init.log" >&2; die "pgbench -i failed"; }
	install_ext "$@"
	# Through dynamic_library_path, i.e. the private copy the server preloaded.
	sql "update pg_proc set probin = 'pg_warmcache' where probin = '\$libdir/pg_warmcache'; checkpoint"
	pg_stop
	run_conf ""
	echo "$want" >"$stamp"
}

# Files of the bench database's relations (all forks and segments).
db_files() {
	local oid
	oid=$(sql "select oid from pg_database where datname = 'bench'")
	local f
	for f in "$PGDATA/base/$oid"/*; do
		[[ ${f##*/} =~ ^[0-9]+(_(fsm|vm|init))?(\.[0-9]+)?$ ]] && echo "$f"
	done
	return 0
}

# bench_db_dd KEY: with the cluster's server started once, sets files (the
# bench database's relation files), blcksz, version and dbmb (its size in
# MB); then dd of those files, cold (cold_read: CR_*), holding BENCH_LOCK.
bench_db_dd() {
	run_conf ""
	pg_start "$CLDIR/logs/files.log"
	verify_lib
	mapfile -t files < <(db_files)
	blcksz=$(sql "show block_size")
	version=$("$BINDIR/postgres" --version)
	dbmb=$(sql "select pg_database_size('bench') / 1048576")
	pg_stop
	say "$1: cold sequential read of the database's ${#files[@]} files (${dbmb} MB)"
	locked cold_read "${files[@]}"
	say "$1: dd $CR_RATE MB/s"
}

# for_each_cluster FUNC: for each major of the script's pglist, pg_warmcache
# built and installed (use_pg); for each disk of its disklist, the cluster
# at its scale (use_cluster) with the pgbench database (ensure_db, holding
# BENCH_LOCK) and the dd of its files (bench_db_dd); then FUNC KEY, KEY
# being pg<major>-<disk>, which writes $out/raw/KEY.meta (cluster_meta);
# last the library's changes, if any, added to that file (note_so).
for_each_cluster() {
	local pg disk key
	for pg in "${pglist[@]}"; do
		use_pg "$pg"
		for disk in "${disklist[@]}"; do
			use_cluster "$disk" "$scale"
			locked ensure_db
			key=pg$pg-$disk
			bench_db_dd "$key"
			"$1" "$key"
			note_so "$out/raw/$key.meta"
		done
	done
}

# cluster_meta FILE [KEY=VALUE...]: a cluster's result file: what
# bench_db_dd found (version, block size, size, the dd), its scale, the
# lines given, the library's md5 and the cap of the capped disk (empty on
# the local disk).
cluster_meta() {
	local f=$1
	shift
	write_meta "$f" "version=$version" "block_size=$blcksz" "scale=$SCALE" "db_mb=$dbmb" \
		"dd_bytes=$CR_BYTES" "dd_seconds=$CR_SECS" "dd_mb_per_s=$CR_RATE" "$@" \
		"so_md5=$SO_MD5" "capped=$([ -n "$CAPPED" ] && cap_text)"
	base_meta >>"$f"
}

# hot_start_sql FILE: warmup.sh's hot-start workload as a pgbench script:
# a hot set of 1/HOT_DIVISOR of pgbench_accounts, at the table's start.
hot_start_sql() {
	cat >"$1" <<EOF
\\set n 100000 * :scale
\\set aid random(1, :n / $HOT_DIVISOR)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
EOF
}

# Files of one relation's main fork.
rel_files() {
	local p
	p=$(sql "select pg_relation_filepath('$1')")
	local f
	for f in "$PGDATA/$p" "$PGDATA/$p".*; do
		[ -f "$f" ] && echo "$f"
	done
	return 0
}

# cold_read FILE...: with the server stopped, drop the OS cache and read the
# files sequentially with dd (under the cap on the capped disk); sets
# CR_BYTES, CR_SECS and CR_RATE (MB/s).
cold_read() {
	local t0 t1 bytes
	bytes=$(stat -c %s "$@" | awk '{ s += $1 } END { print s }')
	pg_stop
	drop_caches
	t0=$(now)
	if [ -n "$CAPPED" ]; then
		bash "$CAPPED" run bash -c 'for f; do dd if="$f" of=/dev/null bs=1M status=none; done' _ "$@"
	else
		for f in "$@"; do dd if="$f" of=/dev/null bs=1M status=none; done
	fi
	t1=$(now)
	CR_BYTES=$bytes
	CR_SECS=$(elapsed "$t0" "$t1")
	CR_RATE=$(awk -v b="$bytes" -v s="$CR_SECS" 'BEGIN { printf "%.1f", b / 1048576 / s }')
}

# A primary and a standby of it, in directory $W (pair_*): the primary at
# $W/primary, the standby at $W/standby, their sockets in $W, no TCP, logs
# in $W.  pair_sql PORT SQL runs SQL in database postgres.
pair_sql() { as_pg "$BINDIR/psql" -X -h "$W" -p "$1" -d postgres -Atqc "$2"; }
pair_stop() {
	as_pg "$BINDIR/pg_ctl" -D "$W/standby" -m immediate stop >/dev/null 2>&1 || true
	as_pg "$BINDIR/pg_ctl" -D "$W/primary" -m fast stop >/dev/null 2>&1 || true
}

# pair_primary PORT CONF: both servers stopped and removed, a new primary
# with pg_warmcache preloaded and the lines of CONF, started (log
# $W/primary.log).
pair_primary() {
	pair_stop
	rm -rf "$W/primary" "$W/standby"
	as_pg "$BINDIR/initdb" -D "$W/primary" -A trust >/dev/null
	cat >>"$W/primary/postgresql.conf" <<EOF
port = $1
unix_socket_directories = '$W'
listen_addresses = ''
shared_preload_libraries = 'pg_warmcache'
wal_keep_size = 1GB
$2
EOF
	: >"$W/primary.log"
	chown "$PG_USER:" "$W/primary.log"
	as_pg "$BINDIR/pg_ctl" -D "$W/primary" -l "$W/primary.log" -w start >/dev/null
}

# pair_standby PRIMARY_PORT PORT CONF LOG [keep]: the standby stopped and
# removed, a new one from a base backup of the primary with the lines of
# CONF, its files dropped from the OS page cache, started (log LOG).  The
# primary's saved file, which the backup copies, is removed unless the
# fifth argument is "keep".
pair_standby() {
	as_pg "$BINDIR/pg_ctl" -D "$W/standby" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$W/standby"
	as_pg "$BINDIR/pg_basebackup" -h "$W" -p "$1" -D "$W/standby" -R -X stream -c fast
	cat >>"$W/standby/postgresql.conf" <<EOF
port = $2
hot_standby = on
$3
EOF
	[ "${5:-}" = keep ] || rm -f "$W/standby/pg_warmcache.blocks"
	sync
	find "$W/standby" -type f -exec dd if={} iflag=nocache count=0 status=none \;
	: >"$4"
	chown "$PG_USER:" "$4"
	as_pg "$BINDIR/pg_ctl" -D "$W/standby" -l "$4" -w start >/dev/null
}
