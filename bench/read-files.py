#!/usr/bin/env python3
"""Read the files named on the command line once, sequentially, 256 kB at a
time through the OS page cache, with no server in between: what bringing
those bytes in from the device costs the rest of the machine, whoever does
it.  The reads are the size a restore's chunk is (32 blocks).

    bench/read-files.py [--rate MBPS] FILE...

With --rate the reads are spread out to at most MBPS megabytes a second
(1 MB = 1048576 bytes); without, they go as fast as the device answers.
Stops at SIGTERM.  Prints "seconds bytes" of what it read.  Used by
bench/warmup.sh's reader methods."""

import os
import signal
import sys
import time

CHUNK = 256 * 1024


def main():
    args = sys.argv[1:]
    rate = 0.0
    if len(args) >= 2 and args[0] == "--rate":
        rate = float(args[1]) * 1048576
        args = args[2:]
    if not args:
        sys.exit("usage: read-files.py [--rate MBPS] FILE...")
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    start = time.monotonic()
    done = 0
    for path in args:
        fd = os.open(path, os.O_RDONLY)
        try:
            off = 0
            while not stop:
                n = len(os.pread(fd, CHUNK, off))
                if n == 0:
                    break
                off += n
                done += n
                if rate > 0:
                    ahead = done / rate - (time.monotonic() - start)
                    if ahead > 0:
                        time.sleep(ahead)
        finally:
            os.close(fd)
        if stop:
            break
    print(f"{time.monotonic() - start:.3f} {done}")


if __name__ == "__main__":
    main()
