#!/usr/bin/python3
"""Tables, CSV and plots of a bench/failover-patroni.sh run.

    bench/failover-patroni-report.py OUT_DIR

Reads OUT_DIR/raw (pgbench -P 1 output of the old leader and of the new
one, server logs, status lines, .meta files) and writes OUT_DIR/results.md
(also printed), summary.csv, tps.csv and one PNG per (major, event) through
gnuplot.  t90: the first second of the new leader's pgbench (which starts
the moment it accepts writes) whose TPS is at least 90% of the old leader's
steady state of the same run; mean 30 s: the mean TPS of its first 30 s over
that steady state.
"""
import csv
import glob
import os
import re
import statistics
import sys

from reportlib import (dd_text, fmt, machine_line, meta, plot, run_files, spread, t90_text, tps_series,
                       window_mean, write_medians)

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
out = sys.argv[1]
raw = os.path.join(out, "raw")

METHODS = ["off", "os", "buffer"]
EVENTS = ["switchover", "failover"]
# The promotion load's last line, as the work tree words it and as release
# 1.5 did ("pg_warmcache: promotion finished: ...").
PROMO = re.compile(r"(?:load of the primary's hot set at promotion|pg_warmcache: promotion) "
                   r"(finished|stopped|incomplete): restored (\d+) of (\d+) blocks? "
                   r".* in ([\d.]+) s, ([\d.]+) MB/s")


def since(rm, key):
    if rm.get(key) and rm.get("event_at"):
        return float(rm[key]) - float(rm["event_at"])
    return None


info = meta(os.path.join(out, "info.txt"))
steady_last = int(info.get("steady_last", "20"))
lines = []
p = lines.append
p(f"# Failover under Patroni: TPS of the new leader, {info.get('date', '')}")
p("")
p(f"Command: `{info.get('command', '')}` (effective: `{info.get('effective', '')}`), "
  f"{info.get('patroni', 'Patroni')}.  ")
p(machine_line(info))
p("")
p("Per run: etcd and two Patroni members on this host; a (local disk) leads, warm, under "
  "`pgbench -S -M prepared -c 2 -j 2` while b (data and postgres on the capped volume, started cold) "
  f"follows; the old leader's steady state is the median per-second TPS of the last {steady_last} s. "
  "Then the event (switchover: `patronictl switchover`; failover: SIGKILL to a's postmaster), b polled "
  "every 20 ms until it accepts writes, and at once the same pgbench against b. t90: first second of "
  "that pgbench with TPS >= 90% of the old leader's steady state; mean 30 s: mean TPS of its first 30 s "
  "over it (1.0 = as fast as the old leader). Writable: seconds from the event to b accepting writes; "
  "rejoin / follows: seconds from the event until a runs as b's replica / follows a dump b wrote after "
  "the event. Medians over repetitions, min-max in brackets. Methods: `pg_warmcache.follow_primary` "
  "off, os, buffer on every member.")

tps_rows, summary = [], []
keys = sorted({os.path.basename(f)[:-5] for f in glob.glob(os.path.join(raw, "pg*.meta"))
               if re.fullmatch(r"pg\d+", os.path.basename(f)[:-5])})
for key in keys:
    km = meta(os.path.join(raw, key + ".meta"))
    ddtxt = dd_text(raw, key)
    p("")
    p(f"## {km.get('version', key)}, scale {km.get('scale', '?')} ({km.get('db_mb', '?')} MB), "
      f"shared_buffers {km.get('shared_buffers', '?')}")
    p("")
    p(f"b on the capped volume ({km.get('capped', '?')}); pg_warmcache.dump_interval "
      f"{km.get('dump_interval', '?')} s; {km.get('load_seconds', '?')} s of pgbench on a before the event, "
      f"{km.get('seconds', '?')} s on b after it; "
      f"{'members pinned: a and its pgbench on CPU 0, b and its pgbench on CPU 1' if km.get('pin') == '1' else 'not pinned'}.  ")
    p(f"dd bs=1M of b's database files after drop_caches, under the cap: {ddtxt or '-'}.")
    if km.get("so_changed"):
        p(f"\nWARNING: the pg_warmcache library changed during the run: {km['so_changed']}")

    for event in EVENTS:
        runs = {}
        for method, rep, base, rm in run_files(raw, f"{key}-{event}", "off|os|buffer"):
            old = tps_series(base + ".primary.pgbench")
            steady = statistics.median([t for _, t in old[-steady_last:]]) if old else None
            series = tps_series(base + ".pgbench")
            for sec, t in series:
                tps_rows.append([key, event, method, rep, sec, t, t / steady if steady else None])
            tpss = [t for _, t in series]
            t90 = next((sec for sec, t in series if steady and t >= 0.9 * steady), None)
            promo = None
            if os.path.exists(base + ".log"):
                for line in open(base + ".log", errors="replace"):
                    mm = PROMO.search(line)
                    if mm:
                        promo = f"{mm.group(1)}: {mm.group(2)} of {mm.group(3)} in {float(mm.group(4)):.2f} s"
            before = " ".join(open(base + ".before").read().split()) if os.path.exists(base + ".before") else ""
            r = dict(rep=rep, steady=steady, series=series, t90=t90, n=len(series),
                     m30=window_mean(tpss, 30, steady), writable=since(rm, "writable"),
                     rejoin=since(rm, "rejoined"), follows=since(rm, "following"), promo=promo,
                     before=before, load=rm.get("load_end"))
            runs.setdefault(method, []).append(r)
            summary.append([key, event, method, rep, steady, t90, r["m30"], r["writable"], r["rejoin"],
                            r["follows"], promo, r["load"], before])
        if not runs:
            continue
        order = [m for m in METHODS if m in runs]
        p("")
        p(f"### After a {event}")
        p("")
        p("| follow_primary | t90 (s) | mean 30 s / steady | old leader steady TPS | writable (s) | "
          "old leader rejoins (s) | follows the new one (s) | t90 per rep |")
        p("|---|---:|---:|---:|---:|---:|---:|---|")
        for method in order:
            rr = runs[method]
            nmax = max(r["n"] for r in rr)
            t90s = [r["t90"] for r in rr]
            p(f"| {method} | {t90_text(t90s, nmax)} | {spread([r['m30'] for r in rr])} | "
              f"{spread([r['steady'] for r in rr], '.0f')} | {spread([r['writable'] for r in rr], '.1f')} | "
              f"{spread([r['rejoin'] for r in rr], '.1f')} | {spread([r['follows'] for r in rr], '.1f')} | "
              + " ".join(fmt(x, ".0f", ">" + str(nmax)) for x in t90s) + " |")
        p("")
        p("| run | steady | t90 | mean 30 | b's status before the event | promotion load (b's log) | load |")
        p("|---|---:|---:|---:|---|---|---:|")
        for method in order:
            for r in sorted(runs[method], key=lambda r: r["rep"]):
                p(f"| {method} r{r['rep']} | {fmt(r['steady'], '.0f')} | {fmt(r['t90'], '.0f', '>' + str(r['n']))} | "
                  f"{fmt(r['m30'])} | {r['before'].replace('|', ' ')} | {r['promo'] or '-'} | {r['load'] or '-'} |")

        pdir = os.path.join(out, "plotdata")
        os.makedirs(pdir, exist_ok=True)
        plots = []
        for method in order:
            dat = os.path.join(pdir, f"{key}-{event}-{method}.dat")
            write_medians(dat, [[(sec, t / r["steady"]) for sec, t in r["series"]]
                                for r in runs[method] if r["steady"]])
            plots.append(f"'{dat}' using 1:2 with lines lw 2 title 'follow_primary = {method}' noenhanced")
        plots.append("1 with lines dt 2 lw 1.5 lc rgb 'black' title 'old leader steady state'")
        plots.append("0.9 with lines dt 3 lw 1 lc rgb 'gray50' title '90%'")
        png = os.path.join(out, f"{key}-{event}.png")
        nrep = max(len(v) for v in runs.values())
        p(plot(os.path.join(pdir, f"{key}-{event}.gp"), png,
               f"PostgreSQL {key[2:]} under Patroni, scale {km.get('scale', '?')}, shared_buffers "
               f"{km.get('shared_buffers', '?')}: TPS of the new leader after a {event} (median of {nrep} reps)",
               "seconds since the new leader accepts writes (pgbench -S -c 2 -j 2 -M prepared)",
               "TPS / old leader steady-state TPS", "below horizontal", plots))

with open(os.path.join(out, "tps.csv"), "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["pg", "event", "method", "rep", "second", "tps", "tps_over_steady"])
    wr.writerows(tps_rows)
with open(os.path.join(out, "summary.csv"), "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["pg", "event", "method", "rep", "old_leader_steady_tps", "t90_s", "mean30_frac",
                 "writable_s", "old_leader_rejoined_s", "old_leader_follows_s", "promotion_load",
                 "load_avg_end", "status_before"])
    wr.writerows(summary)
text = "\n".join(lines) + "\n"
with open(os.path.join(out, "results.md"), "w") as fh:
    fh.write(text)
sys.stdout.write(text)
