#!/usr/bin/python3
"""Tables, CSV and a plot of a bench/failover.sh run.

    bench/failover-report.py OUT_DIR

Reads OUT_DIR/raw (pgbench -P 1 output of the primary and of the promoted
standby, server logs, status lines, .meta files) and writes
OUT_DIR/results.md (also printed), summary.csv, tps.csv, cost.csv and one
PNG per major through gnuplot.  t90, mean 30 s / 60 s: as warmup-report.py,
against the primary's steady state of the same run.
"""
import csv
import glob
import os
import re
import statistics
import sys

from reportlib import (dd_text, fmt, logts, machine_line, med, meta, plot, run_files, spread, t90_text,
                       tps_series, window_mean, write_medians)

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
out = sys.argv[1]
raw = os.path.join(out, "raw")

METHODS = ["none", "os", "buffer"]
# The promotion load's last line, as the work tree words it and as release
# 1.5 did ("pg_warmcache: promotion finished: ...").
PROMO = re.compile(r"(?:load of the primary's hot set at promotion|pg_warmcache: promotion) "
                   r"(finished|stopped|incomplete): restored (\d+) of (\d+) blocks? "
                   r"\((\d+) into the OS cache only\), skipped (\d+), in ([\d.]+) s, ([\d.]+) MB/s")
PROMO_START = "loading the primary's hot set into shared buffers"
TICK = os.sysconf("SC_CLK_TCK")


def promotion(logpath):
    r = {"start": None, "done": None, "blocks": None, "total": None, "secs": None, "rate": None,
         "word": None}
    if not os.path.exists(logpath):
        return r
    for line in open(logpath, errors="replace"):
        if PROMO_START in line and r["start"] is None:
            r["start"] = logts(line)
        m = PROMO.search(line)
        if m:
            r.update(done=logts(line), word=m.group(1), blocks=int(m.group(2)), total=int(m.group(3)),
                     secs=float(m.group(6)), rate=float(m.group(7)))
    return r


info = meta(os.path.join(out, "info.txt"))
steady_last = int(info.get("steady_last", "30"))
lines = []
p = lines.append
p(f"# Failover: TPS of a promoted standby, {info.get('date', '')}")
p("")
p(f"Command: `{info.get('command', '')}` (effective: `{info.get('effective', '')}`; "
  f"{info.get('env', '')}).  ")
p(machine_line(info))
p("")
p("Per run: the primary (local disk, warm) under `pgbench -S -c 2 -j 2` while a cold standby (data on the "
  "capped volume) replays and follows; the primary's steady state is the median per-second TPS of the "
  f"last {steady_last} s of that run. Then the primary stops (immediate), the standby is promoted "
  "(`pg_ctl promote -w`) and the same pgbench runs against it. t90: first second (of that pgbench) "
  "whose TPS >= 90% of the primary's steady state; mean 30 s / 60 s: mean TPS of its first 30 / 60 s over "
  "the primary's steady state (1.0 = as fast as the warm primary). Medians over repetitions, min-max in "
  "brackets. Methods: none = `follow_primary = off` (today), os, buffer.")

tps_rows, summary, cost_rows = [], [], []
keys = sorted({os.path.basename(f)[:-5] for f in glob.glob(os.path.join(raw, "pg*.meta"))
               if re.fullmatch(r"pg\d+", os.path.basename(f)[:-5])})
for key in keys:
    km = meta(os.path.join(raw, key + ".meta"))
    ddtxt = dd_text(raw, key)
    p("")
    p(f"## {km.get('version', key)}, scale {km.get('scale', '?')} ({km.get('db_mb', '?')} MB)")
    p("")
    p(f"Standby on the capped volume ({km.get('capped', '?')}); primary's "
      f"pg_warmcache.dump_interval {km.get('dump_interval', '?')} s, {km.get('follow_seconds', '?')} s of "
      f"pgbench on the primary before the failover, {km.get('seconds', '?')} s after it.  ")
    p(f"dd bs=1M of the standby's database files after drop_caches, under the cap: {ddtxt or '-'}.")
    if km.get("so_changed"):
        p(f"\nWARNING: the pg_warmcache library changed during the run: {km['so_changed']}")

    runs = {}
    for method, rep, base, rm in run_files(raw, key, "none|os|buffer"):
        prim = tps_series(base + ".primary.pgbench")
        steady = statistics.median([t for _, t in prim[-steady_last:]]) if prim else None
        series = tps_series(base + ".pgbench")
        for sec, t in series:
            tps_rows.append([key, method, rep, sec, t, t / steady if steady else None])
        tpss = [t for _, t in series]
        t90 = None
        if steady:
            for sec, t in series:
                if t >= 0.9 * steady:
                    t90 = sec
                    break
        pr = promotion(base + ".log")
        promote = float(rm["promote"]) if rm.get("promote") else None
        before = open(base + ".before").read().split() if os.path.exists(base + ".before") else []
        r = dict(rep=rep, steady=steady, series=series, t90=t90, n=len(series),
                 m30=window_mean(tpss, 30, steady), m60=window_mean(tpss, 60, steady),
                 promote_s=float(rm["promoted"]) - promote if promote and rm.get("promoted") else None,
                 load_done=pr["done"] - promote if pr["done"] and promote else None,
                 load_secs=pr["secs"], blocks=pr["blocks"], total=pr["total"], rate=pr["rate"],
                 word=pr["word"], before=" ".join(before),
                 ready_s=float(rm["standby_ready"]) - float(rm["standby_launch"]) if rm.get("standby_ready") else None,
                 load=rm.get("load_end"), drops=rm.get("foreign_drop_caches", "?"))
        runs.setdefault(method, []).append(r)
        summary.append([key, method, rep, steady, t90, r["m30"], r["m60"], r["promote_s"], r["load_done"],
                        r["load_secs"], r["blocks"], r["total"], r["rate"], r["word"], r["ready_s"], r["load"],
                        r["before"]])
    if runs:
        order = [m for m in METHODS if m in runs]
        p("")
        p("| method | t90 (s) | mean 30 s / steady | mean 60 s / steady | primary steady TPS | "
          "promotion load done (s after promote) | blocks loaded | t90 per rep |")
        p("|---|---:|---:|---:|---:|---:|---:|---|")
        for method in order:
            rr = runs[method]
            nmax = max(r["n"] for r in rr)
            t90s = [r["t90"] for r in rr]
            p(f"| {method} | {t90_text(t90s, nmax)} | {spread([r['m30'] for r in rr])} | "
              f"{spread([r['m60'] for r in rr])} | "
              f"{spread([r['steady'] for r in rr], '.0f')} | {spread([r['load_done'] for r in rr], '.1f')} | "
              f"{spread([r['blocks'] for r in rr], '.0f')} | "
              + " ".join(fmt(x, ".0f", ">" + str(nmax)) for x in t90s) + " |")
        p("")
        p("Per run: the standby's `warmcache_status()` just before the primary stopped (time, state, "
          "restore_source, follow_state, followed_dump_at, followed buffer / OS tier, of which warm, "
          "restore blocks done / total, in recovery, buffers in use; then the primary's last published "
          "dump), the promotion's own log line, `pg_ctl promote -w`'s time, the standby's start-up time "
          "(pg_ctl start to ready), load average at the end, and how often other work dropped the OS cache during "
          "the run (the kernel's log; `?`: not recorded).")
        p("")
        p("| run | steady | t90 | mean 30 / 60 | status before the failover | promotion load (log) | promote (s) | standby start (s) | load | others' drop_caches |")
        p("|---|---:|---:|---|---|---|---:|---:|---:|---:|")
        for method in order:
            for r in sorted(runs[method], key=lambda r: r["rep"]):
                lg = (f"{r['word']}: {r['blocks']} of {r['total']} in {r['load_secs']:.2f} s, {r['rate']:.0f} MB/s"
                      if r["word"] else "-")
                p(f"| {method} r{r['rep']} | {fmt(r['steady'], '.0f')} | {fmt(r['t90'], '.0f', '>' + str(r['n']))} | "
                  f"{fmt(r['m30'])} / {fmt(r['m60'])} | {r['before'].replace('|', ' ')} | {lg} | "
                  f"{fmt(r['promote_s'], '.2f')} | {fmt(r['ready_s'], '.1f')} | {r['load'] or '-'} | {r['drops']} |")

        # The same against one steady state for all runs of this major (the
        # median of the runs' steady states): other work on the machine
        # lowers a run's steady state now and then, which flatters that run.
        pooled = med([r["steady"] for rr in runs.values() for r in rr])
        if pooled:
            p("")
            p(f"Against the median of all runs' steady states ({pooled:.0f} TPS) instead of each run's own:")
            p("")
            p("| method | t90 (s) | mean 30 s / steady | mean 60 s / steady |")
            p("|---|---:|---:|---:|")
            for method in order:
                rr = runs[method]
                t90s = []
                for r in rr:
                    t = next((sec for sec, x in r["series"] if x >= 0.9 * pooled), None)
                    t90s.append(t if t is not None else float("inf"))
                mt = statistics.median(t90s)
                nmax = max(r["n"] for r in rr)
                ts = " ".join(f"{x:.0f}" if x != float("inf") else f">{nmax}" for x in t90s)
                p(f"| {method} | {mt:.0f} ({ts}) | "
                  f"{spread([window_mean([t for _, t in r['series']], 30, pooled) for r in rr])} | "
                  f"{spread([window_mean([t for _, t in r['series']], 60, pooled) for r in rr])} |"
                  .replace("| inf (", f"| >{nmax} ("))

        # the plot: per second, the median over repetitions of TPS / steady
        pdir = os.path.join(out, "plotdata")
        os.makedirs(pdir, exist_ok=True)
        plots = []
        for method in order:
            dat = os.path.join(pdir, f"{key}-{method}.dat")
            write_medians(dat, [[(sec, t / r["steady"]) for sec, t in r["series"]]
                                for r in runs[method] if r["steady"]])
            label = {"none": "none (follow_primary = off)", "os": "follow_primary = os",
                     "buffer": "follow_primary = buffer"}[method]
            plots.append(f"'{dat}' using 1:2 with lines lw 2 title '{label}' noenhanced")
        plots.append("1 with lines dt 2 lw 1.5 lc rgb 'black' title 'primary steady state'")
        plots.append("0.9 with lines dt 3 lw 1 lc rgb 'gray50' title '90%'")
        png = os.path.join(out, f"{key}-failover.png")
        nrep = max(len(v) for v in runs.values())
        p(plot(os.path.join(pdir, f"{key}.gp"), png,
               f"PostgreSQL {key[2:]}, scale {km.get('scale', '?')}, shared_buffers 4GB, standby on the "
               f"capped volume: TPS after the promotion (median of {nrep} reps)",
               "seconds since the promotion (pgbench -S -c 2 -j 2 -M prepared against the promoted standby)",
               "TPS / primary steady-state TPS", "below horizontal", plots))

    # the primary's cost of publishing
    # several cost files (an added run's <key>-cost2.csv ...): all rows count
    cfs = sorted(glob.glob(os.path.join(raw, f"{key}-cost*.csv")))
    if cfs:
        cm = meta(cfs[-1][:-4] + ".meta")
        rows = [r for cf in cfs for r in csv.DictReader(open(cf))]
        pub = [r for r in rows if r.get("kind") == "publish"]
        ctl = [r for r in rows if r.get("kind") == "control"]
        ckp = [r for r in rows if r.get("kind") == "after checkpoint"]
        for r in rows:
            cost_rows.append([key] + [r.get(k) for k in ("rep", "kind", "wal_bytes", "cpu_dump_ns",
                                                         "publish_ticks", "wall_ms", "blocks")])
        if pub:
            wal = med([float(r["wal_bytes"]) for r in pub])
            walc = med([float(r["wal_bytes"]) for r in ctl]) if ctl else 0.0
            extra = wal - (walc or 0.0)
            pubcpu = med([int(r["publish_ticks"]) * 1000.0 / TICK for r in pub])
            ctlcpu = med([int(r["publish_ticks"]) * 1000.0 / TICK for r in ctl]) if ctl else 0.0
            dumpcpu = med([int(r["cpu_dump_ns"]) / 1e6 for r in pub])
            p("")
            p(f"### {key.upper()}: the primary's cost at pg_warmcache.dump_interval = 300")
            p("")
            p(f"Warm primary (scale {km.get('scale', '?')}, shared_buffers 4GB, "
              f"{cm.get('shared_buffers_used', '?')} buffers in use) under pgbench -S -c 2; "
              f"{len(pub)} times `warmcache_dump_now()` and the wait until its publication is visible, "
              "in one session; control: the same time without a dump. The dump: "
              f"{cm.get('dump_blocks', '?')} blocks, file {cm.get('dump_file_bytes', '?')} bytes; published rows "
              f"{cm.get('published_rows', '?')}, data {cm.get('published_data_bytes', '?')} bytes, stored "
              f"(compressed) {cm.get('published_stored_bytes', '?')} bytes, the table with its TOAST and index "
              f"{cm.get('published_relation_bytes', '?')} bytes (autovacuum is off in the bench).")
            p("")
            p("| | per dump, median (min-max) | per hour (12 dumps) |")
            p("|---|---:|---:|")
            p(f"| WAL, dump + publication (bytes) | {spread([float(r['wal_bytes']) for r in pub], '.0f')} | |")
            p(f"| WAL, control interval (bytes) | {spread([float(r['wal_bytes']) for r in ctl], '.0f')} | |")
            p(f"| extra WAL (bytes) | {extra:.0f} | {12 * extra / 1024:.0f} kB |")
            if ckp:
                wk = med([float(r["wal_bytes"]) for r in ckp])
                p(f"| WAL of a dump + publication right after a checkpoint (bytes; full-page images) | "
                  f"{spread([float(r['wal_bytes']) for r in ckp], '.0f')} | {12 * wk / 1024:.0f} kB |")
            pubs = pub + ckp
            pubcpu = med([int(r["publish_ticks"]) * 1000.0 / TICK for r in pubs])
            p(f"| publish worker CPU (ms, postmaster's children, {1000 / TICK:.0f} ms ticks, {len(pubs)} publications; "
              f"control {fmt(ctlcpu, '.0f')}) | "
              f"{spread([int(r['publish_ticks']) * 1000.0 / TICK for r in pubs], '.0f')}, mean "
              f"{sum(int(r['publish_ticks']) for r in pubs) * 1000.0 / TICK / len(pubs):.0f} | "
              f"{12 * sum(int(r['publish_ticks']) for r in pubs) * 1000.0 / TICK / len(pubs):.0f} ms |")
            p(f"| the dump itself, backend CPU (ms; paid with or without the channel) | "
              f"{spread([int(r['cpu_dump_ns']) / 1e6 for r in pub], '.1f')} | {12 * dumpcpu:.0f} ms |")
            p(f"| wall time, dump to publication visible (ms) | {spread([float(r['wall_ms']) for r in pub], '.0f')} | |")

with open(os.path.join(out, "tps.csv"), "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["pg", "method", "rep", "second", "tps", "tps_over_steady"])
    wr.writerows(tps_rows)
with open(os.path.join(out, "summary.csv"), "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["pg", "method", "rep", "primary_steady_tps", "t90_s", "mean30_frac", "mean60_frac",
                 "promote_s", "load_done_s_after_promote", "load_logged_s", "load_blocks", "load_total",
                 "load_mb_per_s", "load_word", "standby_ready_s", "load_avg_end", "status_before"])
    wr.writerows(summary)
with open(os.path.join(out, "cost.csv"), "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["pg", "rep", "kind", "wal_bytes", "cpu_dump_ns", "publish_ticks", "wall_ms", "blocks"])
    wr.writerows(cost_rows)
text = "\n".join(lines) + "\n"
with open(os.path.join(out, "results.md"), "w") as fh:
    fh.write(text)
sys.stdout.write(text)
