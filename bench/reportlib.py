"""What the report scripts of bench/ share: the runs' key=value files,
pgbench's progress lines and the server log's timestamps, how they
print a figure and how they plot TPS over time."""

import datetime
import glob
import os
import re
import statistics
import subprocess

PROGRESS = re.compile(r"^progress: ([\d.]+) s, ([\d.]+) tps")
DURATION = re.compile(r"^duration: ([\d.]+) s")
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


def run_files(raw, prefix, methods):
    """(method, repetition, base path, meta) of each run of raw/ whose
    .meta file is PREFIX-METHOD-rREP.meta, METHOD matching the regular
    expression methods, in the order of the file names."""
    for f in sorted(glob.glob(os.path.join(raw, f"{prefix}-*-r*.meta"))):
        m = re.fullmatch(rf"{re.escape(prefix)}-({methods})-r(\d+)\.meta", os.path.basename(f))
        if m:
            yield m.group(1), int(m.group(2)), f[:-5], meta(f)


def tps_series(path):
    """(second, TPS) of each pgbench progress line; empty without a file."""
    s = []
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            m = PROGRESS.match(line)
            if m:
                s.append((float(m.group(1)), float(m.group(2))))
    return s


def pgbench_duration(path):
    """The seconds of pgbench's timed run (its "duration" line), or None."""
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            m = DURATION.match(line)
            if m:
                return float(m.group(1))
    return None


def from_readiness(series, late):
    """[(second, TPS)] counted from late seconds before pgbench's first
    second: each progress line's second shifted by late and spread over the
    whole seconds it overlaps, the seconds before it at 0 TPS.  pgbench
    counts from after its clients connected, so a run whose connections
    waited (for catalog reads behind a restore, say) would otherwise start
    its clock late and look warmer than it was."""
    if not series or not late or late <= 0:
        return series
    end = series[-1][0] + late
    bins = [0.0] * int(end)
    for sec, t in series:
        a, b = sec - 1 + late, sec + late
        k = int(a)
        while k < len(bins) and k < b:
            bins[k] += t * (min(b, k + 1) - max(a, k))
            k += 1
    return [(float(k + 1), t) for k, t in enumerate(bins)]


def logts(line):
    """The epoch of a server log line's timestamp (UTC), or None."""
    m = LOGTS.match(line)
    if not m:
        return None
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def machine_line(info):
    """The results page's line on the machine and the build, from the run's
    info.txt (bench/lib.sh, run_info)."""
    base = f", and as warmcache-base the build of {info['base']} (BASE_REV)" if info.get("base") else ""
    return (f"Machine: {info.get('host', '')}; pg_warmcache {info.get('repo', '')}{base}. "
            "Other work on the machine makes absolute numbers noisy: compare methods within one table.")


def spread(xs, spec=".2f"):
    """median (min-max)"""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    if len(xs) == 1:
        return format(xs[0], spec)
    return f"{format(statistics.median(xs), spec)} ({format(min(xs), spec)}-{format(max(xs), spec)})"


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def t90_text(t90s, n):
    """The t90 of a method's runs (None: a run that did not get there in
    its n seconds): median (min-max); where runs did not get there, they
    count as the longest, and the median alone, or >n."""
    if all(x is not None for x in t90s):
        return spread(t90s, ".0f")
    mt = statistics.median([x if x is not None else float("inf") for x in t90s])
    return f">{n}" if mt == float("inf") else f"{mt:.0f}"


def dd_text(raw, key):
    """The dd runs of a major, raw/KEY-dd-TAG.meta, oldest first: "TAG MB/s
    (MB in s)", comma-separated; empty without any."""
    dds = [(os.path.basename(f)[len(key) + 4:-5], meta(f))
           for f in sorted(glob.glob(os.path.join(raw, f"{key}-dd-*.meta")), key=os.path.getmtime)]
    return ", ".join(f"{t} {d['dd_mb_per_s']} MB/s ({int(d['dd_bytes']) / 1048576:.0f} MB in {d['dd_seconds']} s)"
                     for t, d in dds if d.get("dd_mb_per_s"))


def window_mean(tpss, n, steady):
    """Mean TPS of the first n seconds over steady.  pgbench -T n may not
    print its last progress line: one missing second is tolerated."""
    if not steady or len(tpss) < n - 1:
        return None
    xs = tpss[:n]
    return sum(xs) / len(xs) / steady


def write_medians(path, runs):
    """Writes "second median" lines to path: per second, the median of what
    the runs' [(second, value)] series have for it."""
    bysec = {}
    for series in runs:
        for sec, x in series:
            bysec.setdefault(sec, []).append(x)
    with open(path, "w") as fh:
        for sec in sorted(bysec):
            fh.write(f"{sec} {statistics.median(bysec[sec])}\n")


def plot(gpfile, png, title, xlabel, ylabel, key, plots):
    """The PNG png of plots (gnuplot's plot arguments) through gnuplot, its
    script kept in gpfile.  Returns the report's line: the PNG's name, or
    why gnuplot failed."""
    gp = "\n".join([
        "set terminal pngcairo size 1000,560 font ',10'",
        f"set output '{png}'",
        f"set title '{title}' noenhanced",
        f"set xlabel '{xlabel}'",
        f"set ylabel '{ylabel}'",
        f"set key {key}",
        "set grid",
        "set yrange [0:*]",
        "set xrange [0:*]",
        "plot " + ", \\\n     ".join(plots),
        ""])
    with open(gpfile, "w") as fh:
        fh.write(gp)
    try:
        subprocess.run(["gnuplot"], input=gp, text=True, check=True)
        return f"\nPlot: {os.path.basename(png)}"
    except (OSError, subprocess.CalledProcessError) as e:
        return f"\n(gnuplot failed: {e})"


CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def mem_change(path):
    """What the machine's memory management took back over a run, from the
    first and last "mem" lines of a file of samples (bench/lib.sh,
    mem_sample): a dict of paged_mb (the data access monitor's schemes;
    None where none runs), refault_mb (file pages read again after their
    eviction) and majfaults.  None without two such lines."""
    if not os.path.exists(path):
        return None
    rows = [line.split() for line in open(path)]
    rows = [f for f in rows if len(f) == 5 and f[1] == "mem"]
    if len(rows) < 2:
        return None
    a, b = rows[0], rows[-1]
    paged = None if "-" in (a[2], b[2]) else (int(b[2]) - int(a[2])) / 1048576
    return {"paged_mb": paged, "refault_mb": (int(b[3]) - int(a[3])) * 4096 / 1048576,
            "majfaults": int(b[4]) - int(a[4])}


def cpu_shares(path, t0=None, a=None, b=None):
    """Where the machine's CPU time went, from a file of /proc/stat samples
    (bench/lib.sh, cpu_sampler_start): a dict of the shares, in % of all
    CPUs' time, of user (with nice), system, irq (with softirq), iowait,
    steal and idle, over the intervals between samples whose end lies
    between t0 + a and t0 + b seconds (t0: epoch; None: the whole file).
    None without samples."""
    if not os.path.exists(path):
        return None
    samples = []
    for line in open(path):
        f = line.split()
        if len(f) >= 10 and f[1] == "cpu":
            samples.append((float(f[0]), [int(x) for x in f[2:10]]))
    tot = [0] * 8
    for (ta, xa), (tb, xb) in zip(samples, samples[1:]):
        if t0 is not None and not (t0 + a <= tb <= t0 + b + 0.5):
            continue
        tot = [t + y - x for t, x, y in zip(tot, xa, xb)]
    n = sum(tot)
    if n <= 0:
        return None
    d = dict(zip(CPU_FIELDS, tot))
    return {"user": 100 * (d["user"] + d["nice"]) / n, "system": 100 * d["system"] / n,
            "irq": 100 * (d["irq"] + d["softirq"]) / n, "iowait": 100 * d["iowait"] / n,
            "steal": 100 * d["steal"] / n, "idle": 100 * d["idle"] / n}


# A wait event a process waits in for its own read of a block, or for one
# issued for it (asynchronous I/O, 18 and later).
READ_WAITS = {"DataFileRead", "DataFilePrefetch", "DataFileExtend", "AioIoCompletion",
              "AioIoUringExecution", "AioIoUringSubmit", "BufferIo", "BufferIO"}


def activity_shares(path, t0, a, b):
    """What the clients did between t0 + a and t0 + b seconds, from a file of
    pg_stat_activity samples (bench/lib.sh, activity_sampler_start): a dict
    with the number of samples, the clients' shares (in % of client
    samples) running (cpu), waiting for a read (read), for their client
    (client), for anything else (other, with its most frequent events),
    and the mean number of each other kind of process per sample, by what
    it did.  None without samples."""
    if not os.path.exists(path):
        return None
    n = 0
    cl = {"cpu": 0, "read": 0, "client": 0, "other": 0}
    other_ev = {}
    procs = {}
    for line in open(path):
        ts, _, rest = line.strip().partition("|")
        try:
            t = float(ts)
        except ValueError:
            continue
        if not (t0 + a <= t <= t0 + b):
            continue
        n += 1
        for item in filter(None, rest.split(",")):
            kind, _, ev = item.rpartition("=")
            if kind == "client backend":
                k = ("cpu" if ev == "CPU" else "read" if ev in READ_WAITS
                     else "client" if ev == "ClientRead" else "other")
                cl[k] += 1
                if k == "other":
                    other_ev[ev] = other_ev.get(ev, 0) + 1
            else:
                procs.setdefault(kind, {}).setdefault(ev, 0)
                procs[kind][ev] += 1
    if n == 0:
        return None
    tot = sum(cl.values()) or 1
    return {"n": n, **{k: 100 * v / tot for k, v in cl.items()},
            "other_events": sorted(other_ev.items(), key=lambda x: -x[1])[:3],
            "procs": {k: {e: c / n for e, c in v.items()} for k, v in procs.items()}}


def disk_rate(path, t0, a, b):
    """The capped disk's reads between t0 + a and t0 + b seconds, from the
    "disk" lines of a cpu_sampler file: (MB/s, requests/s), or None."""
    if not os.path.exists(path):
        return None
    rows = []
    for line in open(path):
        f = line.split()
        if len(f) == 4 and f[1] == "disk" and t0 + a <= float(f[0]) <= t0 + b + 0.5:
            rows.append((float(f[0]), int(f[2]), int(f[3])))
    if len(rows) < 2 or rows[-1][0] <= rows[0][0]:
        return None
    dt = rows[-1][0] - rows[0][0]
    return ((rows[-1][2] - rows[0][2]) * 512 / 1048576 / dt, (rows[-1][1] - rows[0][1]) / dt)


def proc_reads(path, t0, a, b):
    """What each kind of server process read from storage between t0 + a
    and t0 + b seconds, from the "read" lines of a cpu_sampler file
    (bench/lib.sh, proc_reads_sample): {kind: (MB/s, read calls/s)}, each
    process counted from its first to its last line in the window (one that
    exits in it loses at most its last second); {} without such lines."""
    if not os.path.exists(path):
        return {}
    first, last, times = {}, {}, []
    for line in open(path):
        f = line.split()
        if len(f) == 6 and f[1] == "read" and t0 + a <= float(f[0]) <= t0 + b + 0.5:
            row = (f[3], int(f[4]), int(f[5]))
            first.setdefault(f[2], row)
            last[f[2]] = row
            times.append(float(f[0]))
    if not times or max(times) <= min(times):
        return {}
    dt = max(times) - min(times)
    out = {}
    for pid, (kind, b0, c0) in first.items():
        _, b1, c1 = last[pid]
        mb, calls = out.get(kind, (0.0, 0.0))
        out[kind] = (mb + (b1 - b0) / 1048576 / dt, calls + (c1 - c0) / dt)
    return out
