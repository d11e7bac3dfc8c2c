#!/usr/bin/python3
"""The table of a bench/upgrade.sh run: per method, t90 and the mean TPS
of the run over the steady state, median (min-max); then import against
none per repetition, beside the control (none again against none).

    bench/upgrade-report.py OUT_DIR"""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reportlib import meta, run_files, tps_series, spread, t90_text, window_mean  # noqa: E402

out = sys.argv[1]
raw = os.path.join(out, "raw")
info = meta(os.path.join(out, "info.txt"))
steady_files = glob.glob(os.path.join(raw, "pg*-steady.pgbench"))
if not steady_files:
    sys.exit("upgrade-report.py: no steady state in " + raw)
prefix = os.path.basename(steady_files[0])[: -len("-steady.pgbench")]
steady_series = [t for sec, t in tps_series(steady_files[0]) if sec > 5]
steady = sum(steady_series) / len(steady_series) if steady_series else None
seconds = int(info.get("command", "--seconds 60").split("--seconds ")[1].split()[0])

runs = {}
for method, rep, base, _ in run_files(raw, prefix, "none|import|none-again"):
    tpss = [t for _, t in tps_series(base + ".pgbench")]
    t90 = next((i + 1 for i, t in enumerate(tpss) if steady and t >= 0.9 * steady), None)
    runs.setdefault(method, {})[rep] = (t90, window_mean(tpss, seconds, steady))

dd = meta(os.path.join(raw, f"{prefix}-dd-run.meta"))
print("# The first start after pg_upgrade\n")
print(f"    {info.get('command', '')}")
print(f"    {info.get('date', '')}, {info.get('host', '')}, pg_warmcache {info.get('repo', '')}")
print(f"    capped disk: {info.get('cap', '')}; dd of the database's files {dd.get('dd_mb_per_s', '?')} MB/s")
print(f"    steady state: {steady:.0f} TPS, {info.get('clients', '2')} clients\n" if steady else "")
print(f"| method | t90 (s) | mean {seconds} s / steady | repetitions |")
print("|---|---|---|---|")
for method in ("none", "import", "none-again"):
    r = runs.get(method, {})
    reps = sorted(r)
    print(f"| {method} | {t90_text([r[k][0] for k in reps], seconds)} | "
          f"{spread([r[k][1] for k in reps], '.3f')} | {len(reps)} |")

print(f"\nPer repetition, against none in the same repetition (mean {seconds} s; t90):\n")
print("| | per repetition | median |")
print("|---|---|---|")
for method in ("import", "none-again"):
    means, t90s = [], []
    for rep in sorted(runs.get(method, {})):
        if rep in runs.get("none", {}):
            (t, m), (t0, m0) = runs[method][rep], runs["none"][rep]
            means.append(m / m0 if m and m0 else None)
            t90s.append(t / t0 if t and t0 else None)
    label = "import / none" if method == "import" else "control: none again / none"
    print(f"| {label}, mean | {' '.join('-' if x is None else f'{x:.2f}' for x in means)} | "
          f"{spread(means, '.2f')} |")
    print(f"| {label}, t90 | {' '.join('-' if x is None else f'{x:.2f}' for x in t90s)} | "
          f"{spread(t90s, '.2f')} |")
restored = []
for f in sorted(glob.glob(os.path.join(raw, f"{prefix}-import-r*.log"))):
    for line in open(f, errors="replace"):
        if "import finished" in line or "import incomplete" in line or "import stopped" in line:
            restored.append(line.split("LOG:", 1)[-1].strip())
if restored:
    print("\nThe imports, as the server logged them:\n")
    for line in restored:
        print(f"- {line}")
