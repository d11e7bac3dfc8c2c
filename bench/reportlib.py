"""What bench/warmup-report.py and bench/failover-report.py both read: the
runs' key=value files, pgbench's progress lines and the server log's
timestamps, and how they print a figure."""

import datetime
import os
import re
import statistics

PROGRESS = re.compile(r"^progress: ([\d.]+) s, ([\d.]+) tps")
LOGTS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) UTC ")


def meta(path):
    """The key=value lines of a file, as a dict; empty if there is none."""
    d = {}
    if os.path.exists(path):
        for line in open(path):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                d[k] = v
    return d


def tps_series(path):
    """(second, TPS) of each pgbench progress line; empty without a file."""
    s = []
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            m = PROGRESS.match(line)
            if m:
                s.append((float(m.group(1)), float(m.group(2))))
    return s


def logts(line):
    """The epoch of a server log line's timestamp (UTC), or None."""
    m = LOGTS.match(line)
    if not m:
        return None
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
