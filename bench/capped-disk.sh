#!/bin/bash
# A small cloud volume on this machine: a loop device whose reads are capped
# (by default 3000 IOPS and 125 MB/s, like a baseline cloud SSD volume), with
# an ext4 file system on it.  Needs root.  Processes started under
# `capped-disk.sh run CMD...` are throttled, and so are their children: start
# the server from inside it.
#
#   capped-disk.sh up [DIR] [SIZE]   image DIR.img of SIZE (8G), loop device,
#                                    ext4, mounted at DIR (/var/tmp/capped),
#                                    and the cap set on it
#   capped-disk.sh run CMD...        run CMD inside the throttled cgroup
#   capped-disk.sh check PID         exit 0 if process PID is in that cgroup
#   capped-disk.sh down [DIR]        unmount and detach
#
# Environment, read by `up` (which also resets the cap of a disk already up):
#   CAP_IOPS          read operations per second (3000)
#   CAP_BPS           read bytes per second (131072000 = 125 MB/s)
#   CAP_READAHEAD_KB  read_ahead_kb of the loop device; unset: the kernel's
#                     value stays (`up` prints it).  Every read request costs
#                     one operation whatever its size, so readahead changes
#                     what a sequential reader gets out of the IOPS.
#
# The cap is the io.max of cgroup v2 (riops, rbps) in the cgroup
# capped_disk.  Where the io controller is bound to a cgroup v1 hierarchy
# (hybrid set-ups), the same limits go to blkio.throttle.read_*_device.
# Writes are not capped.
set -euo pipefail

DIR_DEFAULT=/var/tmp/capped
NAME=capped_disk
iops=${CAP_IOPS:-3000}
bps=${CAP_BPS:-131072000}

die() { echo "capped-disk.sh: $*" >&2; exit 1; }

# The cgroup directory, and its kind: "v2" or "v1".
cgroup_dir() {
	local m
	for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		if [ "$(stat -fc %T "$m" 2>/dev/null)" = cgroup2fs ] &&
			grep -qw io "$m/cgroup.controllers" 2>/dev/null; then
			echo "v2 $m/$NAME"
			return 0
		fi
	done
	[ -d /sys/fs/cgroup/blkio ] && { echo "v1 /sys/fs/cgroup/blkio/$NAME"; return 0; }
	die "no cgroup v2 io controller and no v1 blkio hierarchy"
}

# set_cap MAJ:MIN IOPS BPS: creates the cgroup and caps reads from that
# device; IOPS and BPS "max" lift the cap.
set_cap() {
	local majmin=$1 kind cg
	read -r kind cg < <(cgroup_dir)
	if [ "$kind" = v2 ]; then
		grep -qw io "$(dirname "$cg")/cgroup.subtree_control" ||
			echo +io >"$(dirname "$cg")/cgroup.subtree_control" ||
			die "cannot enable the io controller below $(dirname "$cg")"
		mkdir -p "$cg"
		echo "$majmin riops=$2 rbps=$3" >"$cg/io.max"
	else
		# v1 knows no "max": 0 removes the device's limit.
		mkdir -p "$cg"
		echo "$majmin ${2/max/0}" >"$cg/blkio.throttle.read_iops_device"
		echo "$majmin ${3/max/0}" >"$cg/blkio.throttle.read_bps_device"
	fi
}

cmd=${1:-}
shift || true
case "$cmd" in
up)
	dir=${1:-$DIR_DEFAULT}
	size=${2:-8G}
	img=$dir.img
	mkdir -p "$dir"
	if ! mountpoint -q "$dir"; then
		[ -f "$img" ] || fallocate -l "$size" "$img"
		loop=$(losetup -j "$img" | cut -d: -f1 | head -1)
		[ -n "$loop" ] || loop=$(losetup --find --show --direct-io=on "$img")
		blkid "$loop" >/dev/null 2>&1 || mkfs.ext4 -q "$loop"
		mount "$loop" "$dir"
	fi
	dev=$(findmnt -n -o SOURCE "$dir")
	majmin=$(lsblk -n -d -o MAJ:MIN "$dev" | tr -d ' ')
	ra=/sys/block/$(basename "$dev")/queue/read_ahead_kb
	[ -z "${CAP_READAHEAD_KB:-}" ] || echo "$CAP_READAHEAD_KB" >"$ra"
	set_cap "$majmin" "$iops" "$bps"
	chmod 777 "$dir"
	echo "capped disk $dev ($majmin) mounted at $dir: reads capped at $iops IOPS, $bps B/s; read_ahead_kb $(cat "$ra")"
	;;
run)
	[ $# -gt 0 ] || die "run: no command"
	read -r _ cg < <(cgroup_dir)
	[ -d "$cg" ] || die "no cgroup $cg: run \"capped-disk.sh up\" first"
	echo $$ >"$cg/cgroup.procs"
	exec "$@"
	;;
check)
	[ -n "${1:-}" ] || die "check: no PID"
	grep -Eq "^[0-9]+:(blkio)?:/$NAME\$" "/proc/$1/cgroup"
	;;
down)
	dir=${1:-$DIR_DEFAULT}
	dev=$(findmnt -n -o SOURCE "$dir" || true)
	[ -z "$dev" ] || set_cap "$(lsblk -n -d -o MAJ:MIN "$dev" | tr -d ' ')" max max 2>/dev/null || true
	umount "$dir" 2>/dev/null || true
	[ -z "$dev" ] || losetup -d "$dev" 2>/dev/null || true
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	case "$cmd" in -h | --help) exit 0 ;; *) exit 2 ;; esac
	;;
esac
