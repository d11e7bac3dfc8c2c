#!/usr/bin/python3
"""The table of a bench/matrix.sh run: each target, what was measured
(median over the repetitions, min-max in brackets) and pass or fail.

    bench/matrix-report.py OUT_DIR

Reads only what the row scripts wrote: warmup.sh's summary.csv, tps.csv and
results.md (dd), never-evict.sh's summary.csv, restore-ddl.sh's runs.csv,
warm-vs-prewarm.sh's raw.csv.
"""
import csv
import os
import re
import statistics
import sys

WINDOWS = [(3, 7), (8, 12), (13, 17), (18, 22), (23, 27), (28, 30)]


def med(xs):
    return statistics.median(xs) if xs else None


def spread(xs, fmt):
    if not xs:
        return "-"
    m = fmt.format(med(xs))
    if len(xs) == 1:
        return m
    return f"{m} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def fmt_or_dash(x):
    return f"{x:.2f}" if x is not None else "-"


def rows_of(path):
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def t90(x):
    # ">60" in the tables is a t90 never reached: count it as the run's end
    v = num(x)
    return v if v is not None else 61.0


lines = []
BASE = {"rev": "base"}   # the base build's revision (info.txt's base=), when the run has one


def mark(ok):
    return "-" if ok is None else ("pass" if ok else "**FAIL**")


def add(pg, row, what, target, measured, ok):
    lines.append(f"| {pg} | {row} | {what} | {target} | {measured} | {mark(ok)} |")


def per_method(summary, workload, method, col, conv=num):
    # A column a run's report did not write yet (own_tps before 2a38e0d)
    # reads as empty.
    return [conv(r.get(col, "")) for r in summary
            if r["workload"] == workload and r["method"] == method
            and conv(r.get(col, "")) is not None]


def by_rep(summary, workload, method, col, conv=num):
    """{repetition: value} of a method's runs (warmup.sh's summary.csv)."""
    return {r["rep"]: conv(r.get(col, "")) for r in summary
            if r["workload"] == workload and r["method"] == method and conv(r.get(col, "")) is not None}


def ratios_text(a, b):
    """Per repetition a / b of two {repetition: value}, then median (min-max);
    the list of ratios too."""
    reps = sorted(set(a) & set(b), key=int)
    xs = [a[k] / b[k] for k in reps if b[k]]
    if not xs:
        return "-", []
    return (" ".join(f"r{k} {a[k] / b[k]:.3f}" for k in reps if b[k]) + ": " + spread(xs, "{:.3f}")), xs


def against_base(pg, row, summary, w):
    """The rows "new against base" of a warmup.sh row: warmcache's t90 and
    mean60 over warmcache-base's, repetition by repetition.  Shown, not
    marked: the reader weighs them against the row's control."""
    if not by_rep(summary, w, "warmcache-base", "t90_s", t90):
        return
    rev = BASE["rev"]
    txt, _ = ratios_text(by_rep(summary, w, "warmcache", "t90_s", t90),
                         by_rep(summary, w, "warmcache-base", "t90_s", t90))
    add(pg, row, f"new against base {rev}: t90 / base's, per repetition", "(shown; <= 1 is better)", txt, None)
    txt, _ = ratios_text(by_rep(summary, w, "warmcache", "mean60_frac"),
                         by_rep(summary, w, "warmcache-base", "mean60_frac"))
    add(pg, row, f"new against base {rev}: mean60 / base's, per repetition", "(shown; >= 1 is better)", txt, None)


def tps_by_run(d, workload=None):
    """{(method, rep): {second: TPS}} of a warmup.sh row's tps.csv."""
    tps = {}
    for r in rows_of(os.path.join(d, "tps.csv")):
        if workload is None or r["workload"] == workload:
            tps.setdefault((r["method"], r["rep"]), {})[int(float(r["second"]))] = float(r["tps"])
    return tps


def window_mean(s, lo, hi):
    xs = [s[i] for i in range(lo, hi + 1) if i in s]
    return sum(xs) / len(xs) if xs else None


def window_medians(tps, method, peer, windows):
    """Per window, the median over the repetitions that ran both methods
    of method's mean TPS over peer's in the same repetition."""
    reps = sorted({rep for (m, rep) in tps if m == method} & {rep for (m, rep) in tps if m == peer})
    out = []
    for w in windows:
        xs = []
        for rep in reps:
            x, y = window_mean(tps[(method, rep)], *w), window_mean(tps[(peer, rep)], *w)
            if x is not None and y:
                xs.append(x / y)
        out.append(med(xs) if xs else None)
    return out


# The reboot row's first minute in 5-s windows.
MINUTE_WINDOWS = [(a, a + 4) for a in range(1, 60, 5)]


def warmup_rows(pg, d, row):
    summary = rows_of(os.path.join(d, "summary.csv"))
    if not summary:
        add(pg, row, "no results", "", "-", False)
        return
    for w in sorted({r["workload"] for r in summary if r["workload"] != "idle"}):
        name = {"uniform": "uniform", "hot": "recent rows hot"}.get(w, w)
        wc = per_method(summary, w, "warmcache", "t90_s", t90)
        ap = per_method(summary, w, "autoprewarm", "t90_s", t90)
        wc60 = per_method(summary, w, "warmcache", "mean60_frac")
        ap60 = per_method(summary, w, "autoprewarm", "mean60_frac")
        bs = per_method(summary, w, "warmcache-base", "t90_s", t90)
        bs60 = per_method(summary, w, "warmcache-base", "mean60_frac")
        btxt = f"; base {BASE['rev']} {spread(bs, '{:.0f}')}" if bs else ""
        btxt60 = f"; base {BASE['rev']} {spread(bs60, '{:.2f}')}" if bs60 else ""
        if row == "reboot":
            res = open(os.path.join(d, "results.md")).read() if os.path.exists(os.path.join(d, "results.md")) else ""
            m = re.search(r"\((\d+) MB in ([0-9.]+) s\)", res)
            dd = float(m.group(2)) if m else None
            lim = 1.25 * dd if dd else None
            # pgfincore, the manual peer, where the run has it.
            pf = per_method(summary, w, "pgfincore", "t90_s", t90)
            pf60 = per_method(summary, w, "pgfincore", "mean60_frac")
            ptxt = f"; pgfincore {spread(pf, '{:.0f}')}" if pf else ""
            ptxt60 = f"; pgfincore {spread(pf60, '{:.2f}')}" if pf60 else ""
            # The targets hold in every repetition, not only in the median.
            add(pg, "reboot (256MB)", "t90, s",
                f"<= 1.25 x dd = {lim:.1f}, each repetition" if lim else "<= 1.25 x dd (dd missing)",
                spread(wc, "{:.0f}") + (f"; autoprewarm {spread(ap, '{:.0f}')}" if ap else "") + ptxt + btxt,
                max(wc) <= lim if wc and lim else None)
            add(pg, "reboot (256MB)", "mean60 / steady", ">= 0.75, each repetition",
                spread(wc60, "{:.2f}") + (f"; autoprewarm {spread(ap60, '{:.2f}')}" if ap60 else "") + ptxt60
                + btxt60,
                min(wc60) >= 0.75 if wc60 else None)
            # Against each run's own warm level (warmup.sh AFTER_SECONDS):
            # shown, not judged; it tells the machine's drift from the
            # warm-up's cost.
            own = per_method(summary, w, "warmcache", "own_tps")
            if own:
                wco = per_method(summary, w, "warmcache", "t90_own_s", t90)
                apo = per_method(summary, w, "autoprewarm", "t90_own_s", t90)
                wc60o = per_method(summary, w, "warmcache", "mean60_own_frac")
                ap60o = per_method(summary, w, "autoprewarm", "mean60_own_frac")
                add(pg, "reboot (256MB)", "t90 against the run's own warm level, s", "(shown)",
                    spread(wco, "{:.0f}") + (f"; autoprewarm {spread(apo, '{:.0f}')}" if apo else ""),
                    None)
                add(pg, "reboot (256MB)", "mean60 / the run's own warm level", "(shown)",
                    spread(wc60o, "{:.2f}") + (f"; autoprewarm {spread(ap60o, '{:.2f}')}" if ap60o else ""),
                    None)
            # Every 5-s window of the first minute against autoprewarm's
            # queries in the same repetition (issue 57's target).
            wm = window_medians(tps_by_run(d, w), "warmcache", "autoprewarm", MINUTE_WINDOWS)
            if any(x is not None for x in wm):
                got = [x for x in wm if x is not None]
                add(pg, "reboot (256MB)", "every 5-s window of the first minute / autoprewarm's "
                    "(per window the median)", ">= 1",
                    " ".join(fmt_or_dash(x) for x in wm) + f": worst {min(got):.2f}",
                    min(got) >= 1.0)
            against_base(pg, "reboot (256MB)", summary, w)
            continue
        add(pg, name, "t90, s", "<= autoprewarm's",
            f"{spread(wc, '{:.0f}')} vs {spread(ap, '{:.0f}')}" + btxt,
            med(wc) <= med(ap) if wc and ap else None)
        add(pg, name, "mean60 / steady", ">= autoprewarm's",
            f"{spread(wc60, '{:.2f}')} vs {spread(ap60, '{:.2f}')}" + btxt60,
            med(wc60) >= med(ap60) if wc60 and ap60 else None)
        against_base(pg, name, summary, w)


def hot_start_rows(pg, d):
    tps = tps_by_run(d)
    mean = window_mean

    def against_none(method, by_rep=False):
        """Per repetition: the worst window's ratio to none and the mean
        of seconds 1-30's; per window: the ratios of every repetition.
        by_rep: {repetition: (worst, mean30)} instead."""
        reps = sorted({rep for (m, rep) in tps if m == method} & {rep for (m, rep) in tps if m == "none"})
        worst, mean30, per_window = [], [], {w: [] for w in WINDOWS}
        each = {}
        for rep in reps:
            a, b = tps[(method, rep)], tps[("none", rep)]
            ratios = []
            for w in WINDOWS:
                x, y = mean(a, *w), mean(b, *w)
                if x and y:
                    ratios.append(x / y)
                    per_window[w].append(x / y)
            if ratios:
                worst.append(min(ratios))
            if mean(a, 1, 30) and mean(b, 1, 30):
                mean30.append(mean(a, 1, 30) / mean(b, 1, 30))
            each[rep] = (min(ratios) if ratios else None,
                         mean(a, 1, 30) / mean(b, 1, 30) if mean(a, 1, 30) and mean(b, 1, 30) else None)
        if by_rep:
            return each
        medians = [med(xs) for xs in per_window.values() if xs]
        return worst, mean30, medians

    # "Every 5-s window >= 0.95x no warm-up", medians over the repetitions:
    # per window the median of its ratios over the repetitions, then the
    # worst window.  Taking each repetition's worst window first would score
    # the workload's own spread: a method that does nothing scored 0.88 to
    # 1.01 that way (docs/benchmarks.md, "Hot-start").
    worst, mean30, medians = against_none("warmcache")
    cw, cm, cmed = against_none("none-again")
    note = ""
    if cmed and min(cmed) < 0.97:
        note = f"; control {min(cmed):.3f}, below 0.97: the workload's spread is larger than the margin"
    add(pg, "hot-start", "every 5-s window from 3 s / none (per window the median)", ">= 0.95",
        (" ".join(f"{x:.2f}" for x in medians) + f": worst {min(medians):.2f}" + note) if medians else "-",
        min(medians) >= 0.95 if medians else None)
    add(pg, "hot-start", "mean 1-30 s / none", ">= 0.98",
        spread(mean30, "{:.3f}"), med(mean30) >= 0.98 if mean30 else None)
    # The statistic the matrix marked before 1.3: each repetition's worst
    # window, then the median over the repetitions.  Shown, not marked.
    add(pg, "hot-start", "each repetition's worst window / none", "-",
        spread(worst, "{:.2f}"), None)
    # The control: none once more against none.  Whatever it shows, the
    # workload's own spread gives with no warm-up at all.
    if cw:
        add(pg, "hot-start", "control: none again / none, per window the median", "-",
            " ".join(f"{x:.2f}" for x in cmed) + f": worst {min(cmed):.2f}", None)
        add(pg, "hot-start", "control: none again / none, mean 1-30 s", "-",
            spread(cm, "{:.3f}"), None)
        add(pg, "hot-start", "control: each repetition's worst window", "-",
            spread(cw, "{:.2f}"), None)
    # The work tree against the base build (warmcache-base, BASE_REV's
    # library), repetition by repetition, beside the control's figures
    # above: shown, not marked.
    bw, bm, bmed = against_none("warmcache-base")
    if bw:
        rev = BASE["rev"]
        add(pg, "hot-start", f"base {rev}: every 5-s window from 3 s / none (per window the median)", "-",
            " ".join(f"{x:.2f}" for x in bmed) + f": worst {min(bmed):.2f}", None)
        new, base = against_none("warmcache", True), against_none("warmcache-base", True)
        txt, _ = ratios_text({k: v[0] for k, v in new.items() if v[0]}, {k: v[0] for k, v in base.items() if v[0]})
        add(pg, "hot-start", f"new against base {rev}: each repetition's worst window / base's", "(shown; >= 1 is better)",
            txt + (f"; control's worst window / none {spread(cw, '{:.2f}')}" if cw else ""), None)
        txt, _ = ratios_text({k: v[1] for k, v in new.items() if v[1]}, {k: v[1] for k, v in base.items() if v[1]})
        add(pg, "hot-start", f"new against base {rev}: mean 1-30 s / base's", "(shown; >= 1 is better)",
            txt + (f"; control / none {spread(cm, '{:.3f}')}" if cm else ""), None)
    # The floor: the same files read once, as fast as the device answers,
    # by a plain reader outside the server (bench/read-files.py).
    fw, fm, fmed = against_none("reader")
    if fw:
        add(pg, "hot-start", "floor: a plain reader of the files / none, per window the median", "-",
            " ".join(f"{x:.2f}" for x in fmed) + f": worst {min(fmed):.2f}", None)
        add(pg, "hot-start", "floor: a plain reader of the files / none, mean 1-30 s", "-",
            spread(fm, "{:.3f}"), None)
    summary = rows_of(os.path.join(d, "summary.csv"))
    beside = per_method(summary, "hot-start", "warmcache", "restore_s_after_ready")
    idle = per_method(summary, "idle", "warmcache", "restore_s_after_ready")
    if beside and idle:
        ratio = med(beside) / med(idle)
        add(pg, "hot-start", "restore beside the workload / idle", "<= 3",
            f"{ratio:.2f} ({spread(beside, '{:.1f}')} s / {spread(idle, '{:.1f}')} s)", ratio <= 3)
    else:
        add(pg, "hot-start", "restore beside the workload / idle", "<= 3", "-", None)


def never_evict_rows(pg, d):
    # bench/never-evict.sh: the saved set twice shared_buffers, the queries'
    # hot set cached before the restore is asked for.
    summary = rows_of(os.path.join(d, "summary.csv"))
    wc = [r for r in summary if r["method"] == "warmcache"]
    if not wc:
        add(pg, "never-evict", "no results", "", "-", False)
        return
    lost = [int(r["hot_pages"]) - int(r["kept_same_buffer"]) for r in wc]
    add(pg, "never-evict", "hot pages evicted by the restore (pg_buffercache), per run", "0",
        ", ".join(f"{x} of {r['hot_pages']}" for x, r in zip(lost, wc)), max(lost) == 0)
    ratio = [num(r["ratio_after"]) for r in wc if num(r["ratio_after"]) is not None]
    add(pg, "never-evict", "TPS from the restore's request / none", ">= 0.98",
        spread(ratio, "{:.3f}"), med(ratio) >= 0.98 if ratio else None)
    worst = [num(r["ratio_worst_window"]) for r in wc if num(r["ratio_worst_window"]) is not None]
    add(pg, "never-evict", "each repetition's worst 5-s window / none", "-", spread(worst, "{:.2f}"), None)
    ctl = [num(r["ratio_after"]) for r in summary if r["method"] == "none-again" and num(r["ratio_after"]) is not None]
    if ctl:
        add(pg, "never-evict", "control: none again / none, from the same second", "-", spread(ctl, "{:.3f}"), None)
    into = [int(r["restored"]) - int(r["os_only"]) for r in wc if r["restored"] and r["os_only"]]
    add(pg, "never-evict", "blocks the restore put in shared buffers (of the saved set)", "-",
        spread(into, "{:.0f}") + (f" of {wc[0]['saved']}" if wc[0]["saved"] else ""), None)


def ddl_rows(pg, d):
    runs = rows_of(os.path.join(d, "runs.csv"))

    def secs(test, method):
        return [float(r["ms"]) / 1000 for r in runs
                if r["test"] == test and r["method"] == method and num(r["ms"]) is not None]
    lock = secs("lock", "warmcache")
    add(pg, "DDL", "ACCESS EXCLUSIVE lock granted, s (max)", "<= 0.5",
        f"{spread(lock, '{:.2f}')} (max {max(lock):.2f})" if lock else "-",
        max(lock) <= 0.5 if lock else None)
    tw, tn = secs("template", "warmcache"), secs("template", "none")
    add(pg, "DDL", "CREATE DATABASE ... TEMPLATE, s", "<= 1.25 x none",
        f"{spread(tw, '{:.2f}')} vs {spread(tn, '{:.2f}')}",
        med(tw) <= 1.25 * med(tn) if tw and tn else None)


def warm_rows(pg, d):
    # Three decimals: where the device's cap sets both times, the ratio is
    # 1 within a fraction of a percent, and two decimals showed 1.00 for a
    # failing 0.998.
    raw = rows_of(os.path.join(d, "raw.csv"))
    dd = rows_of(os.path.join(d, "dd.csv"))
    for cond in ("cpu", "iops", "capped"):
        t = {}
        for r in raw:
            if r["condition"] == cond and r["mode"] == "buffer":
                t[(r["method"], r["rep"])] = float(r["seconds"])
        ddr = [float(r["mb_per_s"]) for r in dd if r["condition"] == cond]
        target = 2.0 if cond == "iops" else 1.0
        for method, label in (("warm-parallel", "warm()"), ("warm", "warm(), no workers")):
            ratios = [t[("pg_prewarm", rep)] / t[(method, rep)]
                      for (m, rep) in t if m == method and ("pg_prewarm", rep) in t]
            add(pg, f"warm() {cond}", f"pg_prewarm s / {label} s",
                f">= {target:.1f}",
                spread(ratios, "{:.3f}") + (f"; dd {med(ddr):.0f} MB/s" if ddr else ""),
                (med(ratios) >= target if ratios else None) if method == "warm-parallel" else None)
        # The work tree's warm() against the base build's (warm-base: the
        # same call, BASE_REV's library), beside pg_prewarm's own spread
        # over the repetitions: what the machine alone varies.
        nb = {rep: x for (m, rep), x in t.items() if m == "warm-parallel"}
        bb = {rep: x for (m, rep), x in t.items() if m == "warm-base"}
        if bb:
            pw = [x for (m, rep), x in t.items() if m == "pg_prewarm"]
            txt, _ = ratios_text(nb, bb)
            add(pg, f"warm() {cond}", f"new against base {BASE['rev']}: warm() s / base's warm() s, per repetition",
                "(shown; <= 1 is better)",
                txt + (f"; control: pg_prewarm s / its median {min(pw) / med(pw):.3f}-{max(pw) / med(pw):.3f}"
                       if pw else ""), None)


def main():
    out = sys.argv[1]
    info = open(os.path.join(out, "info.txt")).read() if os.path.exists(os.path.join(out, "info.txt")) else ""
    m = re.search(r"^base=(\S+)", info, re.M)
    if m:
        BASE["rev"] = m.group(1)
    for pgdir in sorted(x for x in os.listdir(out) if re.fullmatch(r"pg\d+", x)):
        pg = pgdir[2:]
        for row in ("reboot", "hot-start", "uniform", "never-evict", "ddl", "warm"):
            d = os.path.join(out, pgdir, row)
            if not os.path.isdir(d):
                continue
            if row in ("reboot", "uniform"):
                warmup_rows(pg, d, row)
            elif row == "hot-start":
                hot_start_rows(pg, d)
            elif row == "never-evict":
                never_evict_rows(pg, d)
            elif row == "ddl":
                ddl_rows(pg, d)
            else:
                warm_rows(pg, d)
    print("# The warm-up matrix\n")
    for line in info.splitlines():
        print(f"    {line}")
    print("\n| PG | scenario | measure | target | measured: median (min-max) | |")
    print("|---|---|---|---|---|---|")
    for line in lines:
        print(line)
    fails = sum("FAIL" in x for x in lines)
    print(f"\n{len(lines)} rows, {fails} failed. Raw results: one directory per major and row.")


main()
