#!/usr/bin/python3
"""Tables and CSV of a bench/never-evict.sh run.

    bench/never-evict-report.py OUT_DIR

Reads OUT_DIR/raw (pgbench -P 1 output, the lists of the hot set's pages
before the restore and after it, .meta files) and writes OUT_DIR/results.md
(also printed) and summary.csv, one line per run.
"""
import csv
import glob
import os
import re
import sys

from reportlib import fmt, machine_line, meta, spread, tps_series

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
out = sys.argv[1]
raw = os.path.join(out, "raw")

METHODS = ["none", "warmcache", "warmcache-base", "warmcache-alt", "none-again"]
WIN = 5
# The restore's last line, as the work tree words it and as release 1.5
# did, which a base build (warmcache-base) may be.
WC = re.compile(r"(?:restore of the saved set|pg_warmcache: restore) (finished|stopped|incomplete): "
                r"restored (\d+) of (\d+) blocks? \((\d+) into the OS cache only\), skipped (\d+), in ([\d.]+) s")


def lines_of(path):
    return set(open(path).read().split("\n")) - {""} if os.path.exists(path) else set()


def page(line):
    return line.split(" ", 1)[1]


def tps_from(series, start):
    """Per-second TPS of the seconds after start (a progress line at s covers (s - 1, s])."""
    return [t for s, t in series if s - 1 >= start - 0.5]


def windows(xs):
    return [sum(xs[i:i + WIN]) / len(xs[i:i + WIN]) for i in range(0, len(xs), WIN) if len(xs[i:i + WIN]) >= 3]


info = meta(os.path.join(out, "info.txt"))
lines = []
p = lines.append
p(f"# The restore beside a cached hot set, saved set twice shared_buffers: {info.get('date', '')}")
p("")
p(f"Command: `{info.get('command', '')}` (effective: `{info.get('effective', '')}`; {info.get('env', '')}).  ")
p(machine_line(info))
p("")
p("Hot pages: the pages of pgbench_accounts and its primary key in shared buffers when the restore "
  "is asked for (pg_buffercache). Kept: of those, in the same buffer once pgbench and the restore "
  "have ended (a page evicted and read again by the queries comes back in another buffer); cached: "
  "in any buffer. TPS / none: the method's mean TPS over the same seconds as `none`'s of the same "
  "repetition, from the restore's request to the end; worst window: the lowest of those ratios over "
  f"{WIN}-s windows. With several repetitions: median (min-max).")

summary = []
keys = sorted(os.path.basename(f)[:-5] for f in glob.glob(os.path.join(raw, "pg*-*.meta"))
              if re.fullmatch(r"pg\d+-(local|capped)", os.path.basename(f)[:-5]))
for key in keys:
    km = meta(os.path.join(raw, key + ".meta"))
    pgv, disk = key.split("-", 1)
    runs = {}
    for f in glob.glob(os.path.join(raw, key + "-*-r*.meta")):
        m = re.fullmatch(re.escape(key) + r"-(.+)-r(\d+)\.meta", os.path.basename(f))
        if not m or m.group(1) not in METHODS:
            continue
        base = f[:-5]
        rm = meta(f)
        before, after = lines_of(base + ".before"), lines_of(base + ".after")
        after_pages = {page(x) for x in after}
        series = tps_series(base + ".pgbench")
        off = float(rm["trigger"]) - float(rm["bench_start"]) if rm.get("trigger") else 0.0
        r = {"key": key, "method": m.group(1), "rep": int(m.group(2)),
             "hot_pages": len(before), "kept_same_buffer": len(before & after),
             "cached_after": sum(1 for x in before if page(x) in after_pages),
             "buffers": rm.get("buffers", ""), "unused_before": rm.get("unused_buffers_before", ""),
             "unused_after": rm.get("unused_buffers_after", ""),
             "tps_after": tps_from(series, off), "tps_all": [t for _, t in series]}
        w = WC.search(rm.get("restore", ""))
        r.update(restore_end=w.group(1) if w else "", restored=w.group(2) if w else "",
                 saved=w.group(3) if w else "", os_only=w.group(4) if w else "",
                 restore_s=w.group(6) if w else "")
        runs[(r["method"], r["rep"])] = r
    for r in runs.values():
        base = runs.get(("none", r["rep"]))
        r["ratio_after"] = r["ratio_worst_window"] = r["ratio_all"] = None
        if base and r["tps_after"] and base["tps_after"]:
            n = min(len(r["tps_after"]), len(base["tps_after"]))
            a, b = r["tps_after"][:n], base["tps_after"][:n]
            r["ratio_after"] = sum(a) / sum(b)
            r["ratio_worst_window"] = min(x / y for x, y in zip(windows(a), windows(b)))
            n = min(len(r["tps_all"]), len(base["tps_all"]))
            r["ratio_all"] = sum(r["tps_all"][:n]) / sum(base["tps_all"][:n])
    p("")
    p(f"## {km.get('version', pgv)}, {disk} disk" + (f" ({km['capped']})" if km.get("capped") else "")
      + f", scale {km.get('scale', '?')} ({km.get('db_mb', '?')} MB)")
    p("")
    p(f"Cold sequential read of the database files (dd bs=1M after drop_caches"
      + (", under the cap" if disk == "capped" else "") + f"): {km.get('dd_mb_per_s', '?')} MB/s "
      f"({int(km.get('dd_bytes', 0)) / 1048576:.0f} MB in {km.get('dd_seconds', '?')} s).  ")
    sb = int(km.get("shared_buffers_kb", 0))
    p(f"Saved set: {km.get('saved_blocks', '?')} blocks; shared_buffers {sb // 1024} MB "
      f"({sb * 1024 // int(km.get('block_size', 8192))} buffers); the restore asked for "
      f"{km.get('trigger', '?')} s after the server accepted connections, pgbench {km.get('seconds', '?')} s.")
    if km.get("so_changed"):
        p(f"\nWARNING: the pg_warmcache library changed during the run: {km['so_changed']}")
    p("")
    p("| method | runs | hot pages | kept (same buffer) | fewest kept | cached after | TPS / none | worst window / none | whole run / none | restored (OS only), s |")
    p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for mth in METHODS:
        rs = sorted((r for r in runs.values() if r["method"] == mth), key=lambda r: r["rep"])
        if not rs:
            continue
        rest = "; ".join(f"r{r['rep']} {r['restored']} of {r['saved']} ({r['os_only']}), {r['restore_s']}"
                         for r in rs if r["restored"]) or "-"
        p(f"| {mth} | {len(rs)} | {spread([r['hot_pages'] for r in rs], '.0f')} "
          f"| {spread([r['kept_same_buffer'] for r in rs], '.0f')} "
          f"| {min(r['kept_same_buffer'] - r['hot_pages'] for r in rs):+d} "
          f"| {spread([r['cached_after'] for r in rs], '.0f')} "
          f"| {'-' if mth == 'none' else spread([r['ratio_after'] for r in rs])} "
          f"| {'-' if mth == 'none' else spread([r['ratio_worst_window'] for r in rs])} "
          f"| {'-' if mth == 'none' else spread([r['ratio_all'] for r in rs])} | {rest} |")
    p("")
    p("Fewest kept: the largest loss of any run, kept minus hot pages (0: none evicted).  "
      "Per run, buffers unused before the restore's request / after: "
      + "; ".join(f"{r['method']} r{r['rep']} {r['unused_before']} / {r['unused_after']} of {r['buffers']}"
                  for r in sorted(runs.values(), key=lambda r: (r["rep"], r["method"]))))
    for r in runs.values():
        summary.append({"key": key, "pg": pgv[2:], "disk": disk, "method": r["method"], "rep": r["rep"],
                        "hot_pages": r["hot_pages"], "kept_same_buffer": r["kept_same_buffer"],
                        "cached_after": r["cached_after"], "buffers": r["buffers"],
                        "unused_before": r["unused_before"], "unused_after": r["unused_after"],
                        "tps_after_mean": fmt(sum(r["tps_after"]) / len(r["tps_after"]) if r["tps_after"] else None, ".1f", ""),
                        "ratio_after": fmt(r["ratio_after"], ".4f", ""),
                        "ratio_worst_window": fmt(r["ratio_worst_window"], ".4f", ""),
                        "ratio_all": fmt(r["ratio_all"], ".4f", ""), "restore_end": r["restore_end"],
                        "restored": r["restored"], "saved": r["saved"], "os_only": r["os_only"],
                        "restore_s": r["restore_s"]})

with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
    cols = ["key", "pg", "disk", "method", "rep", "hot_pages", "kept_same_buffer", "cached_after", "buffers",
            "unused_before", "unused_after", "tps_after_mean", "ratio_after", "ratio_worst_window", "ratio_all",
            "restore_end", "restored", "saved", "os_only", "restore_s"]
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    for r in sorted(summary, key=lambda r: (r["key"], r["rep"], r["method"])):
        w.writerow(r)
text = "\n".join(lines) + "\n"
open(os.path.join(out, "results.md"), "w").write(text)
print(text, end="")
