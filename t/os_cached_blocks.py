#!/usr/bin/env python3
# Copyright (c) 2026, pg_warmcache developers
#
# The blocks of each file the OS page cache holds, by mincore(2) on a
# read-only mapping that is never touched: an oracle for the tests that
# shares no code with pg_warmcache's own walk.  A block counts when every
# OS page of it is resident, as the dump counts it.
#
#   os_cached_blocks.py BLOCK_SIZE FILE...
#
# Prints one line per file: the file, a tab, and its cached blocks as
# comma-separated ranges FIRST-LAST (inclusive), or nothing after the tab.

import ctypes
import ctypes.util
import mmap
import os
import sys

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                         ctypes.POINTER(ctypes.c_ubyte)]
MAP_FAILED = ctypes.c_void_p(-1).value


def cached_blocks(path, block_size):
    """The cached blocks of path, a list of (first, last) ranges."""
    page = mmap.PAGESIZE
    per_block = block_size // page
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return []
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr == MAP_FAILED:
            raise OSError(ctypes.get_errno(), "mmap failed: " + path)
        try:
            pages = (size + page - 1) // page
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore failed: " + path)
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    ranges = []
    for b in range(size // block_size):
        if all(vec[b * per_block + i] & 1 for i in range(per_block)):
            if ranges and ranges[-1][1] == b - 1:
                ranges[-1][1] = b
            else:
                ranges.append([b, b])
    return ranges


def main():
    block_size = int(sys.argv[1])
    if block_size % mmap.PAGESIZE != 0:
        sys.exit("block size %d is not a multiple of the page size %d"
                 % (block_size, mmap.PAGESIZE))
    for path in sys.argv[2:]:
        ranges = cached_blocks(path, block_size)
        print("%s\t%s" % (path, ",".join("%d-%d" % (a, b) for a, b in ranges)))


if __name__ == "__main__":
    main()
