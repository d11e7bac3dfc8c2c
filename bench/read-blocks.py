#!/usr/bin/env python3
"""Read one 8 kB block of each (file, block) pair named on standard input
("PATH BLOCK" per line), in that order, with no server in between: the
floor under a restore that reads those blocks, whatever it does besides.

    bench/read-blocks.py [--ahead N] < list

With --ahead 0 each block is read when its turn comes, one read at a time,
as a reader that goes relation by relation does.  With --ahead N the
blocks N places further on are announced to the kernel first
(posix_fadvise WILLNEED), so that up to N reads are in flight, as a
restore that looked ahead across relations could.  A file is opened once
for as long as it is needed.  Prints "seconds blocks".  Used by
bench/many-objects.sh, run after the OS cache was dropped."""

import os
import sys
import time

BLCKSZ = 8192


def main():
    ahead = 0
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--ahead" and args[1].isdigit():
        ahead = int(args[1])
    elif args:
        sys.exit("usage: read-blocks.py [--ahead N] < list")
    todo = []
    for line in sys.stdin:
        path, block = line.rsplit(None, 1)
        todo.append((path, int(block)))
    last_use = {path: i for i, (path, _) in enumerate(todo)}
    fds = {}

    def fd_of(path):
        if path not in fds:
            fds[path] = os.open(path, os.O_RDONLY)
        return fds[path]

    t0 = time.monotonic()
    for i in range(min(ahead, len(todo))):
        path, block = todo[i]
        os.posix_fadvise(fd_of(path), block * BLCKSZ, BLCKSZ, os.POSIX_FADV_WILLNEED)
    for i, (path, block) in enumerate(todo):
        if ahead and i + ahead < len(todo):
            p2, b2 = todo[i + ahead]
            os.posix_fadvise(fd_of(p2), b2 * BLCKSZ, BLCKSZ, os.POSIX_FADV_WILLNEED)
        if len(os.pread(fd_of(path), BLCKSZ, block * BLCKSZ)) != BLCKSZ:
            sys.exit(f"short read of block {block} of {path}")
        if last_use[path] == i:
            os.close(fds.pop(path))
    print(f"{time.monotonic() - t0:.3f} {len(todo)}")


if __name__ == "__main__":
    main()
