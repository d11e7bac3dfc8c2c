#!/usr/bin/python3
"""Tables, CSV and plots of a bench/warmup.sh run.

    bench/warmup-report.py OUT_DIR

Reads OUT_DIR/raw (pgbench -P 1 output, server logs, .meta files written by
warmup.sh) and writes OUT_DIR/results.md (also printed), tps.csv,
summary.csv and one PNG per (pg, disk, workload) through gnuplot.
"""
import csv
import glob
import os
import re
import statistics
import sys

from reportlib import (activity_shares, cpu_shares, disk_rate, fmt, from_readiness, logts, machine_line, med,
                       mem_change, meta, pgbench_duration, plot, proc_reads, run_files, tps_series, window_mean,
                       write_medians)

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
out = sys.argv[1]
raw = os.path.join(out, "raw")

METHODS = ["none", "autoprewarm", "warmcache-buffers", "warmcache", "warmcache-base", "warmcache-alt", "warmcache-alt2", "warmcache-alt3", "warmcache-alt4", "none-again", "reader", "reader-slow", "pgfincore"]
WORKLOADS = ["uniform", "hot", "hot-start"]
WIN_FROM, WIN_LEN, WIN_END = 3, 5, 30   # windows 3-7, 8-12, ... up to second 30
CPU_WIN = (3, 12)    # the seconds where a restore, if any, mostly runs
READY = "database system is ready to accept connections"
APW = re.compile(r"autoprewarm successfully prewarmed (\d+) of (\d+) previously-loaded blocks")
# The restore's last line, as the work tree words it and as release 1.5
# did ("pg_warmcache: restore finished: ..."), which a base build
# (warmcache-base) may be.
WC = re.compile(r"(?:restore of the saved set|pg_warmcache: restore) (finished|stopped|incomplete): "
                r"restored (\d+) of (\d+) blocks? "
                r"\((\d+) into the OS cache only\), skipped (\d+), in ([\d.]+) s, ([\d.]+) MB/s")
WC_CPU = re.compile(r"The restore workers used ([\d.]+) s of CPU")


def restores(method):
    """Whether the method restores anything in the server (bench/lib.sh's
    restore_re has a log line for it): not none, its control, or a reader."""
    return method == "autoprewarm" or method.startswith("warmcache")


def restore_info(logpath, method):
    """ready (epoch), done (epoch), blocks restored, total, extra text."""
    r = {"ready": None, "done": None, "blocks": None, "total": None, "note": ""}
    if not os.path.exists(logpath):
        return r
    for line in open(logpath, errors="replace"):
        ts = logts(line)
        if READY in line and r["ready"] is None:
            r["ready"] = ts
        if method == "autoprewarm":
            m = APW.search(line)
            if m:
                r.update(done=ts, blocks=int(m.group(1)), total=int(m.group(2)))
        elif method.startswith("warmcache"):
            m = WC.search(line)
            if m:
                r.update(done=ts, blocks=int(m.group(2)), total=int(m.group(3)))
                r["note"] = (f"{m.group(1)}; OS only {m.group(4)}, skipped {m.group(5)}, "
                             f"logged {m.group(6)} s {m.group(7)} MB/s")
            m = WC_CPU.search(line)
            if m and r["done"] is not None:
                r["note"] += f", workers' CPU {m.group(1)} s"
    return r


def first_second_at(series, level):
    """The first second of [(second, TPS)] whose TPS reaches level, or None."""
    return next((sec for sec, t in series if t >= level), None)


def worst_window(r, n):
    """The lowest ratio of run r's TPS to run n's over the 5-second windows
    from the third second (the table against no warm-up), or None."""
    def wm(series, a, b):
        xs = [t for sec, t in series if a <= sec <= b]
        return sum(xs) / len(xs) if xs else None
    xs = []
    for a in range(WIN_FROM, WIN_END + 1, WIN_LEN):
        b = min(a + WIN_LEN - 1, WIN_END)
        x, y = wm(r["series"], a, b), wm(n["series"], a, b)
        if x is not None and y:
            xs.append(x / y)
    return min(xs, default=None)


def against_base(runs, rev):
    """The lines "new against base": per repetition, warmcache's t90, means
    and worst window over warmcache-base's of the same repetition, and
    none-again's over none's, the control, where the run has them."""
    def per_rep(m, d, f):
        a = {r["rep"]: r for r in runs.get(m, [])}
        b = {r["rep"]: r for r in runs.get(d, [])}
        out = []
        for rep in sorted(set(a) & set(b)):
            x, y = f(a[rep], b[rep])
            out.append((rep, x / y if x is not None and y else None))
        return out

    def cells(xs):
        if not xs:
            return "| |"
        got = [x for _, x in xs if x is not None]
        return (" ".join(f"r{rep} " + fmt(x, ".3f") for rep, x in xs) + " | "
                + (f"{statistics.median(got):.3f} ({min(got):.3f}-{max(got):.3f})" if got else "-"))

    figs = [("t90", lambda a, b: (a["t90"], b["t90"])),
            ("mean 30 s", lambda a, b: (a["m30"], b["m30"])),
            ("mean 60 s", lambda a, b: (a["m60"], b["m60"]))]
    if "none" in runs:
        nn = {r["rep"]: r for r in runs["none"]}
        figs.append(("worst 5-s window / none", lambda a, b: (
            worst_window(a, nn[a["rep"]]) if a["rep"] in nn else None,
            worst_window(b, nn[b["rep"]]) if b["rep"] in nn else None)))
    ctl = "none-again" in runs and "none" in runs
    t = [f"New against base: warmcache (this build) over warmcache-base (the same settings, "
         f"base {rev}'s library) in the same repetition, per repetition, then median (min-max); "
         "t90 below 1 and the others above 1 favour this build. "
         + ("Control: none-again over none the same way (for the worst window, none-again's own "
            "worst window against none), what the machine's spread alone gives."
            if ctl else "This row has no control (none-again): the spread of the ratio is the only measure of the noise."),
         "",
         "| figure | new / base, per repetition | median (min-max) |"
         + (" control, per repetition | median (min-max) |" if ctl else ""),
         "|---|---|---|" + ("---|---|" if ctl else "")]
    for name, f in figs:
        xs = per_rep("warmcache", "warmcache-base", f)
        if all(x is None for _, x in xs):
            continue
        line = f"| {name} | {cells(xs)} |"
        if ctl:
            if name.startswith("worst"):
                nn = {r["rep"]: r for r in runs["none"]}
                cx = [(r["rep"], worst_window(r, nn[r["rep"]])) for r in
                      sorted(runs["none-again"], key=lambda r: r["rep"]) if r["rep"] in nn]
            else:
                cx = per_rep("none-again", "none", f)
            line += f" {cells(cx)} |"
        t.append(line)
    return "\n".join(t)


info = meta(os.path.join(out, "info.txt"))
lines = []
p = lines.append
p(f"# Warm-up after a restart: {info.get('date', '')}")
p("")
p(f"Command: `{info.get('command', '')}` (effective: `{info.get('effective', '')}`; "
  f"{info.get('env', '')}).  ")
p(machine_line(info))
p("")
p("Load avg at end: the 1-minute load average when pgbench ended; the benchmark itself accounts "
  "for about 2 (2 clients, 2 backends on 2 cores): much more means other work competed for the CPU.  ")
p("t90: first second whose TPS >= 90% of steady state. mean 30 s / 60 s: mean TPS of the first "
  "30 / 60 s over steady state. Restore: from the server accepting connections to the restore's "
  "log line (autoprewarm: \"successfully prewarmed\"; pg_warmcache: \"restore of the saved set finished\"); "
  "MB/s = restored blocks over that time. With several repetitions: medians.")

tps_rows = []
summary = []
keys = sorted({os.path.basename(f)[:-5] for f in glob.glob(os.path.join(raw, "pg*-*.meta"))
               if re.fullmatch(r"pg\d+-(local|capped)", os.path.basename(f)[:-5])})
for key in keys:
    km = meta(os.path.join(raw, key + ".meta"))
    blcksz = int(km.get("block_size", "8192"))
    pgv, disk = key.split("-", 1)
    ddrate = float(km["dd_mb_per_s"]) if km.get("dd_mb_per_s") else None
    p("")
    p(f"## {km.get('version', pgv)}, {disk} disk"
      + (f" ({km['capped']})" if km.get("capped") else "")
      + f", scale {km.get('scale', '?')} ({km.get('db_mb', '?')} MB)")
    p("")
    p(f"Cold sequential read of the database files (dd bs=1M after drop_caches"
      + (", under the cap" if disk == "capped" else "") + f"): {fmt(ddrate, '.0f')} MB/s "
      f"({int(km.get('dd_bytes', 0)) / 1048576:.0f} MB in {km.get('dd_seconds', '?')} s), "
      "the time a warm-up that needs every block cannot beat.")
    if km.get("so_changed"):
        p(f"\nWARNING: the pg_warmcache library changed during the run: {km['so_changed']}")

    idle_secs = {}
    for method in METHODS:
        secs = []
        for f in glob.glob(os.path.join(raw, f"{key}-idle-{method}*.meta")):
            ri = restore_info(f[:-5] + ".log", method)
            if ri["done"] and ri["ready"]:
                secs.append(ri["done"] - ri["ready"])
        idle_secs[method] = med(secs)
    for w in WORKLOADS:
        sm = meta(os.path.join(raw, f"{key}-{w}-steady.meta"))
        if not sm:
            continue
        st = tps_series(os.path.join(raw, f"{key}-{w}-steady.pgbench"))
        nst = int(sm.get("steady_seconds", 20))
        steady1 = statistics.median([t for _, t in st[-nst:]]) if st else None
        st2f = os.path.join(raw, f"{key}-{w}-steady2.pgbench")
        st2 = tps_series(st2f) if os.path.exists(st2f) else []
        steady2 = statistics.median([t for _, t in st2]) if st2 else None
        steady = max([x for x in (steady1, steady2) if x is not None], default=None)
        runs = {}
        for method, rep, base, rm in run_files(raw, f"{key}-{w}", r"[\w-]+"):
            # pgbench's seconds count from when its clients connected; the
            # figures count from when they were launched, the moment the
            # server was ready (reportlib.from_readiness): a method that
            # holds up connections (pgfincore's loader queues a read per
            # page in the throttle ahead of their catalog reads; a restore
            # delays them a second or two) must not start its clock late.
            # What pgbench spent outside its timed run is shown too.
            series = tps_series(base + ".pgbench")
            dur = pgbench_duration(base + ".pgbench")
            late = None
            if series and dur and rm.get("bench_start") and rm.get("bench_end"):
                late = max(0.0, float(rm["bench_end"]) - float(rm["bench_start"]) - dur)
                series = from_readiness(series, late)
            for sec, t in series:
                tps_rows.append([pgv, disk, w, method, rep, sec, t])
            ri = restore_info(base + ".log", method)
            # The reader methods: what read-files.py read before pgbench ended.
            reader = ""
            rd = base + ".reader"
            parts = open(rd).read().split() if os.path.exists(rd) else []
            if len(parts) == 2:
                reader = (f"read {int(parts[1]) / 1048576:.0f} MB in {float(parts[0]):.1f} s"
                          + (f" ({rm['reader_rate']} MB/s at most)" if rm.get("reader_rate") else ""))
            # pgfincore: when its loader returned, and the pages it advised.
            ld = base + ".loader"
            parts = open(ld).read().split() if os.path.exists(ld) else []
            if len(parts) == 2:
                reader = f"pgfadvise_loader() returned after {float(parts[0]):.1f} s, {parts[1]} pages advised"
            tpss = [t for _, t in series]
            t90 = first_second_at(series, 0.9 * steady) if steady else None
            m30 = window_mean(tpss, 30, steady)
            m60 = window_mean(tpss, 60, steady)
            # The run's own warm level (AFTER_SECONDS): the same figures
            # against it.
            af = base + "-after.pgbench"
            after = [t for _, t in tps_series(af)] if os.path.exists(af) else []
            own = statistics.median(after) if after else None
            t90_own = first_second_at(series, 0.9 * own) if own else None
            rs = (ri["done"] - ri["ready"]) if ri["done"] and ri["ready"] else None
            rate = ri["blocks"] * blcksz / 1048576 / rs if rs and ri["blocks"] is not None else None
            t_b = float(rm["bench_start"]) if rm.get("bench_start") else None
            cpu_win = cpu_shares(base + ".stat", t_b, *CPU_WIN) if t_b else None
            cpu_all = cpu_shares(base + ".stat")
            runs.setdefault(method, []).append(dict(
                cpu_win=cpu_win, cpu_all=cpu_all, mem=mem_change(base + ".stat"), late=late,
                act=activity_shares(base + ".activity", t_b, *CPU_WIN) if t_b else None,
                disk=disk_rate(base + ".stat", t_b, *CPU_WIN) if t_b else None,
                reads=proc_reads(base + ".stat", t_b, *CPU_WIN) if t_b else {},
                rep=rep, series=series, t90=t90, m30=m30, m60=m60, rs=rs, rate=rate,
                own=own, t90_own=t90_own, m60_own=window_mean(tpss, 60, own) if own else None,
                blocks=ri["blocks"], total=ri["total"], note=ri["note"], reader=reader, n=len(series),
                ready_after=(float(rm["ready"]) - float(rm["launch"])) if rm.get("ready") else None,
                load=float(rm["load_end"]) if rm.get("load_end") else None))
        if not runs:
            continue
        p("")
        p(f"### {pgv.upper()}, {disk} disk, workload {w}: steady state {fmt(steady, '.0f')} TPS")
        p("")
        p(f"Steady state: median TPS of a warm run before the runs {fmt(steady1, '.0f')}, after them "
          f"{fmt(steady2, '.0f')}; the higher counts.")
        p("")
        p(f"Saved state: {sm.get('autoprewarm_blocks', '?')} blocks (autoprewarm.blocks), "
          f"{sm.get('warmcache_buffers_blocks', '?')} (pg_warmcache.blocks with dump_os_cache = off), "
          f"{sm.get('warmcache_blocks', '?')} (with dump_os_cache = on; by rank, os = the OS tier: "
          f"{sm.get('warmcache_ranks', '?')}); shared_buffers {sm.get('shared_buffers', '?')}; the OS cache "
          f"held {sm.get('os_resident', '?')} of the database files when the dumps were made.")
        p("")
        for when, suffix in (("on the warm server before its restart", "-warm"),
                             ("on a cold start before the runs", "")):
            em = meta(os.path.join(raw, f"{key}-{w}-estimate{suffix}.meta"))
            if em:
                p(f"Predicted by warmcache_estimate() {when}: restore "
                  f"{em.get('restore_seconds') or '?'} s ({em.get('restore_basis', '?')}); the same pages by "
                  f"themselves {em.get('natural_seconds') or '?'} s ({em.get('natural_basis', '?')}).")
                p("")
        p("| method | t90 (s) | mean 30 s / steady | mean 60 s / steady | restore (s) | restored blocks | restore MB/s | reps (t90 each) | load avg at end |")
        p("|---|---:|---:|---:|---:|---:|---:|---|---|")
        order = [m for m in METHODS if m in runs] + [m for m in runs if m not in METHODS]
        for method in order:
            rr = runs[method]
            t90s = [r["t90"] for r in rr]
            nmax = max(r["n"] for r in rr)
            t90m = med(t90s) if all(x is not None for x in t90s) else None
            t90txt = fmt(t90m, ".0f") if t90m is not None else f">{nmax}"
            rsm = med([r["rs"] for r in rr])
            if restores(method) and rsm is None:
                rstxt = "not seen"
            else:
                rstxt = fmt(rsm, ".1f")
            blk = med([r["blocks"] for r in rr])
            p(f"| {method} | {t90txt} | {fmt(med([r['m30'] for r in rr]))} | {fmt(med([r['m60'] for r in rr]))} | "
              f"{rstxt} | {fmt(blk, '.0f')} | {fmt(med([r['rate'] for r in rr]), '.0f')} | "
              + " ".join(fmt(x, ".0f", ">" + str(nmax)) for x in t90s) + " | "
              + " ".join(fmt(r["load"], ".1f") for r in rr) + " |")
            for r in rr:
                summary.append([pgv, disk, w, method, r["rep"], steady, r["t90"], r["m30"], r["m60"],
                                r["rs"], r["blocks"], r["total"], r["rate"], r["ready_after"], r["note"],
                                r["own"], r["t90_own"], r["m60_own"]])
        if any(r["own"] for m in order for r in runs[m]):
            p("")
            p("Against each run's own warm level (the same server right after the run, everything "
              "prewarmed, the workload again: median TPS), per repetition: the level, t90 and mean "
              "60 s over it; and the level over the steady state.")
            p("")
            p("| method | own level (TPS) | own / steady | t90 (s) | mean 60 s / own |")
            p("|---|---|---|---|---|")
            for method in order:
                rr = runs[method]
                nmax = max(r["n"] for r in rr)
                cell = lambda xs, f, none="-": " ".join(f"r{r['rep']} " + fmt(x, f, none)
                                                       for r, x in zip(rr, xs))
                p(f"| {method} | {cell([r['own'] for r in rr], '.0f')} | "
                  f"{cell([r['own'] / steady if r['own'] and steady else None for r in rr], '.2f')} | "
                  f"{cell([r['t90_own'] for r in rr], '.0f', '>' + str(nmax))} | "
                  f"{cell([r['m60_own'] for r in rr], '.2f')} |")
        notes = [f"{m} r{r['rep']}: {r['note']}" for m in order for r in runs[m] if r["note"]]
        if notes:
            p("")
            p("pg_warmcache's own log: " + "; ".join(notes) + ".")
        lates = [f"{m} " + " ".join(fmt(r["late"], ".1f") for r in runs[m]) for m in order]
        p("")
        p("pgbench's run beyond its timed run, per repetition, in seconds (its clients' connections "
          "and its exit; the figures above count from before them, the server's readiness, with no "
          "transactions in that time): " + "; ".join(lates) + ".")
        notes = [f"{m} r{r['rep']}: {r['reader']}" for m in order for r in runs[m] if r["reader"]]
        if notes:
            p("")
            p("The readers (bench/read-files.py, until pgbench ended) and loaders (pgfincore): "
              + "; ".join(notes) + ".")

        # Against no warm-up, repetition by repetition (rep r of each method
        # ran back to back): TPS in 5-second windows from the third second,
        # and the mean over the first 30 s.
        if "none" in runs:
            base = {r["rep"]: r for r in runs["none"]}
            wins = [(a, min(a + WIN_LEN - 1, WIN_END)) for a in range(WIN_FROM, WIN_END + 1, WIN_LEN)]

            def wmean(series, a, b):
                xs = [t for sec, t in series if a <= sec <= b]
                return sum(xs) / len(xs) if xs else None

            def ratios(r, a, b):
                n = base.get(r["rep"])
                if not n:
                    return None
                x, y = wmean(r["series"], a, b), wmean(n["series"], a, b)
                return x / y if x is not None and y else None

            def cell(xs):
                xs = [x for x in xs if x is not None]
                if not xs:
                    return "-"
                return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"

            others = [m for m in order if m != "none"]
            if others:
                p("")
                p("Against no warm-up (TPS of the method / TPS of `none` in the same repetition; "
                  "median over repetitions, min-max in brackets), per window of seconds since ready, "
                  f"and the mean of seconds 1-{WIN_END}:")
                p("")
                p("| method | " + " | ".join(f"{a}-{b} s" for a, b in wins) + f" | worst window | 1-{WIN_END} s |")
                p("|---|" + "---:|" * (len(wins) + 2))
                for method in others:
                    cells = [cell([ratios(r, a, b) for r in runs[method]]) for a, b in wins]
                    worst = [min([x for x in (ratios(r, a, b) for a, b in wins) if x is not None], default=None)
                             for r in runs[method]]
                    p(f"| {method} | " + " | ".join(cells) + f" | {cell(worst)} | "
                      f"{cell([ratios(r, 1, WIN_END) for r in runs[method]])} |")
                    # The same from the medians over repetitions of each side:
                    # less moved by one repetition that other work disturbed.
                    mr = []
                    for a, b in wins + [(1, WIN_END)]:
                        x = med([wmean(r["series"], a, b) for r in runs[method]])
                        y = med([wmean(r["series"], a, b) for r in runs["none"]])
                        mr.append(x / y if x is not None and y else None)
                    p(f"| {method}, ratio of medians | " + " | ".join(fmt(x) for x in mr[:-1])
                      + f" | {fmt(min([x for x in mr[:-1] if x is not None], default=None))} | {fmt(mr[-1])} |")

                # The same ratio over two spans, one per repetition: while a
                # restore mostly runs, and after.  A cost of the restore
                # shows in the first; a cost of having restored (a fuller
                # OS cache, a fuller shared_buffers) in the second.  The
                # control's row is what the machine's spread alone gives.
                spans = [(CPU_WIN[0], CPU_WIN[1]), (CPU_WIN[1] + 1, WIN_END)]
                p("")
                p("The same ratio over " + " and ".join(f"seconds {a}-{b}" for a, b in spans)
                  + ", per repetition (r1, r2, ...), then median (min-max):")
                p("")
                p("| method | " + " | ".join(f"{a}-{b} s" for a, b in spans) + " |")
                p("|---|" + "---|" * len(spans))
                for method in others:
                    cells = []
                    for a, b in spans:
                        xs = [ratios(r, a, b) for r in sorted(runs[method], key=lambda r: r["rep"])]
                        cells.append(" ".join(fmt(x) for x in xs) + "; " + cell(xs))
                    p(f"| {method} | " + " | ".join(cells) + " |")
            p("")
            p("Restore time under this workload against the idle restore (median of the idle runs):")
            p("")
            p("| method | restore with the workload (s), median (min-max) | idle restore (s) | ratio |")
            p("|---|---:|---:|---:|")
            for method in [m for m in others if restores(m)]:
                rs = [r["rs"] for r in runs[method] if r["rs"] is not None]
                idl = idle_secs.get(method)
                rtxt = f"{statistics.median(rs):.1f} ({min(rs):.1f}-{max(rs):.1f})" if rs else "not seen"
                ratio = fmt(statistics.median(rs) / idl) if rs and idl else "-"
                p(f"| {method} | {rtxt} | {fmt(idl, '.1f')} | {ratio} |")

        # The work tree against the base build (warmcache-base: the same
        # settings, BASE_REV's library), repetition by repetition, beside
        # the control, none-again against none the same way: what the
        # machine's spread alone gives.
        if "warmcache" in runs and "warmcache-base" in runs:
            p("")
            p(against_base(runs, info.get("base", "?")))

        # Where the machine's CPU went: the queries' (user), the kernel's
        # (system, interrupts: reads, copies, the loop device's work), the
        # host's (steal: a virtual machine's CPU taken away).  Medians over
        # the repetitions; steal per repetition, as a run whose TPS stands
        # apart may owe it to the host.
        cpu_rows = [(m, r) for m in order for r in runs[m] if r["cpu_all"]]
        if cpu_rows:
            sts = [(lbl, cpu_shares(os.path.join(raw, f"{key}-{w}-{f}.stat")))
                   for lbl, f in (("steady state before", "steady"), ("steady state after", "steady2"))]
            p("")
            p("Where the machine's CPU went (/proc/stat sampled once a second; % of all CPUs' time, "
              f"median over repetitions): seconds {CPU_WIN[0]}-{CPU_WIN[1]} of each run, the whole run, "
              "and the warm runs that measured the steady state; steal per repetition over the whole run.")
            p("")
            p("| method | seconds | user | system | irq+softirq | iowait | steal | idle | steal per rep |")
            p("|---|---|---:|---:|---:|---:|---:|---:|---|")
            for method in order:
                rr = [r for r in runs[method] if r["cpu_all"]]
                if not rr:
                    continue
                for lbl, k in ((f"{CPU_WIN[0]}-{CPU_WIN[1]}", "cpu_win"), ("all", "cpu_all")):
                    xs = [r[k] for r in rr if r[k]]
                    if not xs:
                        continue
                    cells = [fmt(med([x[f] for x in xs]), ".1f")
                             for f in ("user", "system", "irq", "iowait", "steal", "idle")]
                    per = " ".join(f"r{r['rep']} {r['cpu_all']['steal']:.1f}" for r in rr) if k == "cpu_all" else ""
                    p(f"| {method} | {lbl} | " + " | ".join(cells) + f" | {per} |")
            for lbl, x in sts:
                if x:
                    p(f"| {lbl} | all | " + " | ".join(fmt(x[f], ".1f") for f in
                                                      ("user", "system", "irq", "iowait", "steal", "idle")) + " | |")

        # What the machine took back from the page cache under each run:
        # pages a restore loaded and no query read for a minute may be
        # paged out by the host's monitor, and read again from the device.
        mem_rows = [r for m in order for r in runs[m] if r["mem"]]
        if mem_rows:
            p("")
            p("What the machine's memory management took back during each run (bench/lib.sh, "
              "mem_sample): MB paged out by the kernel's data access monitor ('-': none runs), "
              "MB of file pages read again after their eviction, major faults; per repetition.")
            p("")
            p("| method | paged out MB | refaulted MB | major faults |")
            p("|---|---|---|---|")
            for method in order:
                rr = [r for r in runs[method] if r["mem"]]
                if not rr:
                    continue
                cell = lambda k, f: " ".join(
                    f"r{r['rep']} " + ("-" if r["mem"][k] is None else format(r["mem"][k], f)) for r in rr)
                p(f"| {method} | {cell('paged_mb', '.0f')} | {cell('refault_mb', '.0f')} | {cell('majfaults', 'd')} |")

        # Where the clients waited while a restore, if any, ran beside
        # them, per repetition, beside the device's rate: a restore that
        # slows the queries shows whether they wait for reads, for a lock
        # or for the CPU.
        act_rows = [(m, r) for m in order for r in runs[m] if r["act"]]
        if act_rows:
            p("")
            p(f"What the clients did in seconds {CPU_WIN[0]}-{CPU_WIN[1]} of each run (pg_stat_activity "
              "five times a second; % of the clients' samples): running, waiting for a read (their "
              "own or one issued for them), waiting for their client, anything else (its most "
              "frequent events); the other processes that were not idle (mean number per sample, "
              "by wait event); the capped disk's reads; what the restore's processes and the "
              "sessions (the clients, and a loader) read from storage, by the kernel's count of "
              "each process, with the sessions' read calls a second, which page-cache hits "
              "count too.")
            p("")
            p("| method | rep | TPS / steady | running | read | client | other | other processes | disk MB/s, IOPS "
              "| restore MB/s | sessions MB/s, calls/s |")
            p("|---|---|---:|---:|---:|---:|---|---|---|---|---|")
            for method, r in act_rows:
                a = r["act"]
                tw = [t for sec, t in r["series"] if CPU_WIN[0] <= sec <= CPU_WIN[1]]
                rel = statistics.mean(tw) / steady if tw and steady else None
                oth = f"{a['other']:.0f}" + ("".join(f"; {e} {c}" for e, c in a["other_events"])
                                              if a["other_events"] else "")
                procs = "; ".join(f"{k}: " + " ".join(f"{e} {v:.2f}" for e, v in sorted(
                    evs.items(), key=lambda x: -x[1])[:3]) for k, evs in sorted(a["procs"].items()))
                dk = f"{r['disk'][0]:.0f}, {r['disk'][1]:.0f}" if r["disk"] else "-"
                rd = r["reads"]
                rs_ = f"{rd['restore'][0]:.0f}" if "restore" in rd else "-"
                ss_ = f"{rd['session'][0]:.0f}, {rd['session'][1]:.0f}" if "session" in rd else "-"
                p(f"| {method} | r{r['rep']} | {fmt(rel)} | {a['cpu']:.0f} | {a['read']:.0f} | "
                  f"{a['client']:.0f} | {oth} | {procs or '-'} | {dk} | {rs_} | {ss_} |")

        # the plot: median TPS per second over repetitions
        pdir = os.path.join(out, "plotdata")
        os.makedirs(pdir, exist_ok=True)
        plots = []
        for method in order:
            dat = os.path.join(pdir, f"{key}-{w}-{method}.dat")
            write_medians(dat, [r["series"] for r in runs[method]])
            plots.append(f"'{dat}' using 1:2 with lines lw 2 title '{method}' noenhanced")
        png = os.path.join(out, f"{key}-{w}.png")
        if steady:
            plots.append(f"{steady} with lines dt 2 lw 1.5 lc rgb 'black' title 'steady state ({steady:.0f} TPS)'")
            plots.append(f"{0.9 * steady} with lines dt 3 lw 1 lc rgb 'gray50' title '90%'")
        p(plot(os.path.join(pdir, f"{key}-{w}.gp"), png,
               f"PostgreSQL {pgv[2:]}, {disk} disk, scale {km.get('scale', '?')}, "
               f"shared_buffers {sm.get('shared_buffers', '?')}, workload {w}: TPS after a cold restart",
               "seconds since the server accepted connections", "TPS (pgbench -S -c 2 -j 2 -M prepared)",
               "bottom right", plots))

    # idle restore
    idle = []
    idle_meta = None
    for method in METHODS:
        fs = sorted(glob.glob(os.path.join(raw, f"{key}-idle-{method}.meta"))
                    + glob.glob(os.path.join(raw, f"{key}-idle-{method}-r*.meta")))
        for f in fs:
            im = meta(f)
            idle_meta = idle_meta or im
            mr = re.search(r"-r(\d+)\.meta$", f)
            ri = restore_info(f[:-5] + ".log", method)
            launch = float(im["launch"])
            since_start = ri["done"] - launch if ri["done"] else None
            since_ready = ri["done"] - ri["ready"] if ri["done"] and ri["ready"] else None
            rate = ri["blocks"] * blcksz / 1048576 / since_ready if since_ready and ri["blocks"] is not None else None
            idle.append((method, ri, since_start, since_ready, rate))
            summary.append([pgv, disk, "idle", method, int(mr.group(1)) if mr else 1, None, None, None, None,
                            since_ready, ri["blocks"], ri["total"], rate, float(im["ready"]) - launch, ri["note"],
                            None, None, None])
    if idle:
        p("")
        p(f"### {pgv.upper()}, {disk} disk: idle restore (no clients, dumps of workload "
          f"{idle_meta.get('dumps', '?')})")
        p("")
        p("| method | restored blocks | done after pg_ctl start (s) | done after ready (s) | MB/s | % of dd |")
        p("|---|---:|---:|---:|---:|---:|")
        for method, ri, ss, sr, rate in idle:
            blk = f"{ri['blocks']} of {ri['total']}" if ri["blocks"] is not None else "not seen"
            pct = fmt(100 * rate / ddrate, ".0f") + "%" if rate and ddrate else "-"
            p(f"| {method} | {blk} | {fmt(ss, '.1f')} | {fmt(sr, '.1f')} | {fmt(rate, '.0f')} | {pct} |")
        notes = [f"{m}: {ri['note']}" for m, ri, *_ in idle if ri["note"]]
        if notes:
            p("")
            p("pg_warmcache's own log: " + "; ".join(notes) + ".")

with open(os.path.join(out, "tps.csv"), "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["pg", "disk", "workload", "method", "rep", "second", "tps"])
    wr.writerows(tps_rows)
with open(os.path.join(out, "summary.csv"), "w", newline="") as fh:
    wr = csv.writer(fh)
    wr.writerow(["pg", "disk", "workload", "method", "rep", "steady_tps", "t90_s", "mean30_frac",
                 "mean60_frac", "restore_s_after_ready", "restored_blocks", "dump_blocks",
                 "restore_mb_per_s", "ready_after_launch_s", "warmcache_log",
                 "own_tps", "t90_own_s", "mean60_own_frac"])
    wr.writerows(summary)
text = "\n".join(lines) + "\n"
with open(os.path.join(out, "results.md"), "w") as fh:
    fh.write(text)
sys.stdout.write(text)
