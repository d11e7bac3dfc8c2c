# Mounting and unmounting the file systems a Debian chroot needs to build
# and run PostgreSQL: sourced by test/install-deps and test/run.
#
# chroot_mount DIR mounts /proc, /sys, /dev/pts (a new instance) and
# /dev/shm (a tmpfs) inside DIR; the device nodes are debootstrap's own, so
# nothing of the host's /dev is shared.  chroot_umount DIR ends every
# process whose root is DIR and unmounts what is mounted below DIR, deepest
# first.  A caller runs chroot_mount in a subshell with
#   trap 'chroot_umount DIR' EXIT; trap 'exit 130' INT TERM
# so that the mounts are undone on every way out, a failure or Ctrl-C
# included.

chroot_mounts_below() {
	local dir
	dir=$(realpath -m "$1")
	awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts |
		sort -r
}

chroot_umount() {
	local dir p root m tries
	dir=$(realpath -m "$1")
	for tries in 1 2 3; do
		for p in /proc/[0-9]*; do
			root=$(readlink "$p/root" 2>/dev/null) || continue
			[ "$root" = "$dir" ] && kill -KILL "${p#/proc/}" 2>/dev/null
		done
		for m in $(chroot_mounts_below "$dir"); do
			umount "$m" 2>/dev/null || true
		done
		[ -z "$(chroot_mounts_below "$dir")" ] && return 0
		sleep 1
	done
	for m in $(chroot_mounts_below "$dir"); do
		echo "chroot: $m is still mounted; unmounting it lazily" >&2
		umount -l "$m" || true
	done
}

chroot_mount() {
	local dir=$1
	mkdir -p "$dir/proc" "$dir/sys" "$dir/dev/pts" "$dir/dev/shm"
	mount -t proc proc "$dir/proc" &&
		mount -t sysfs sysfs "$dir/sys" &&
		mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$dir/dev/pts" &&
		mount -t tmpfs -o mode=1777,size=2g shm "$dir/dev/shm"
}

# chroot_run DIR USER CMD...: CMD as USER inside DIR, in a clean
# environment.
chroot_run() {
	local dir=$1 user=$2
	shift 2
	chroot --userspec="$user:$user" "$dir" /usr/bin/env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 HOME="$(chroot "$dir" getent passwd "$user" | cut -d: -f6)" \
		"$@"
}
