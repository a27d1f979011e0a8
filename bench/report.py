"""Turns Google Benchmark JSON (with repetitions) into a Markdown table of medians and ratios
against the baseline measured in the same run. Standard library only.

Usage: report.py BENCH.json [RSS.json] > table.md
RSS.json (optional, written by scripts/bench): peak resident memory in KiB of each benchmark run
alone in its own process.
Baselines: greedy/* against greedy/naive, replay/* and verify/* against replay/full, static/* none.
"""
import json
import math
import statistics
import sys
from collections import defaultdict

BASELINE = {"greedy": "greedy/naive", "replay": "replay/full", "verify": "replay/full", "scorer": "replay/h2o"}
RATE_COUNTERS = ("GFLOP/s", "GB/s")  # per-repetition rates: medians are taken


def main(path, rss_path=None):
    data = json.load(open(path))
    rss = json.load(open(rss_path)) if rss_path else {}
    runs = defaultdict(list)
    counters = {}
    rates = defaultdict(lambda: defaultdict(list))
    skipped = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        if b.get("error_occurred"):
            skipped[b["run_name"]] = b.get("error_message", "")
            continue
        name = b["run_name"]
        runs[name].append(b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]])
        counters[name] = {k: v for k, v in b.items() if k in ("nodes", "exact", "gain_evals", "flop/byte", "bytes/step")}
        for k in RATE_COUNTERS:
            if k in b:
                rates[name][k].append(b[k])
    ctx = data["context"]
    print(f"Machine: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, host {ctx.get('host_name')}, "
          f"date {ctx.get('date')}; {len(next(iter(runs.values())))} repetitions, medians.\n")
    print("| benchmark | median ms | ratio to baseline | counters | peak RSS MiB |")
    print("|---|---:|---:|---|---:|")
    med = {n: statistics.median(t) for n, t in runs.items()}
    for name, m in med.items():
        family = name.split("/")[0]
        base = BASELINE.get(family) if family != "scorer" or name.startswith("scorer/cpu/") else None
        ratio = ""
        if base:
            args = name.split("/")[2:]
            bname = "/".join([base] + args)
            if bname in med:
                ratio = f"{m / med[bname]:.3f}"
        c = ", ".join(f"{k}={v:.4g}" for k, v in counters[name].items())
        c = ", ".join(filter(None, [c] + [f"{k}={statistics.median(v):.4g}" for k, v in rates[name].items()]))
        if family in ("replay", "verify") or name.startswith("scorer/cpu/"):  # items: head-steps of a one-head trace
            c = f"{int(name.split('/')[2]) * 1000.0 / m:.4g} head-steps/s"
        mem = f"{rss[name] / 1024:.1f}" if name in rss else ""
        print(f"| `{name}` | {m:.4g} | {ratio} | {c} | {mem} |")
    for name, why in skipped.items():
        print(f"| `{name}` | skipped | | {why} | |")
    roofline(rates, counters)
    scaling(med)


def roofline(rates, counters):
    """The scoring loop against min(peak flops, intensity x bandwidth of the same data size), all
    measured in this run, one thread."""
    peak = rates.get("machine/peak-mul-add", {}).get("GFLOP/s")
    if not peak:
        return
    peak = statistics.median(peak)
    rows = []
    for name, v in rates.items():
        if not name.startswith("scorer/logits/") or "GFLOP/s" not in v:
            continue
        slots = name.split("/")[2]
        bw = rates.get("machine/read-bandwidth/" + slots, {}).get("GB/s")
        if not bw:
            continue
        bw = statistics.median(bw)
        ai = counters[name]["flop/byte"]
        roof = min(peak, ai * bw)
        got = statistics.median(v["GFLOP/s"])
        rows.append(f"| `{name}` | {ai:.3g} | {bw:.4g} | {roof:.4g} | {got:.4g} | {got / roof:.2f} |")
    if rows:
        print(f"\nRoofline of the scoring loop (one thread; peak multiply-add {peak:.4g} GFLOP/s; bandwidth of a block "
              "of the same size):\n")
        print("| loop | flop/byte | read GB/s | roofline GFLOP/s | measured GFLOP/s | fraction of roofline |")
        print("|---|---:|---:|---:|---:|---:|")
        print("\n".join(rows))


def scaling(med):
    """Exponent b of time ~ c * x^b, least squares in log space, along each numeric argument of a
    family while the other arguments stay fixed (argument 1 is n for most suites, 2 is k)."""
    groups = defaultdict(list)
    for name, m in med.items():
        parts = name.split("/")
        nums = []
        for p in parts[2:]:
            try:
                nums.append(float(p))
            except ValueError:
                nums = None
                break
        if not nums:
            continue
        family = "/".join(parts[:2])
        for pos in range(len(nums)):
            fixed = tuple(v for q, v in enumerate(nums) if q != pos)
            groups[(family, pos, fixed)].append((nums[pos], m))
    rows = []
    for (family, pos, fixed), pts in sorted(groups.items()):
        xs = sorted(set(x for x, _ in pts))
        if len(xs) < 2:
            continue
        lx = [math.log(x) for x, _ in pts]
        ly = [math.log(y) for _, y in pts]
        mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
        b = sum((a - mx) * (c - my) for a, c in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
        other = ", ".join(f"{v:g}" for v in fixed) or "-"
        rows.append(f"| `{family}` | argument {pos + 1} over {', '.join(f'{x:g}' for x in xs)} | {other} | {b:.2f} |")
    if rows:
        print("\nScaling (time ~ x^b, fitted on the medians):\n")
        print("| family | varied | other arguments | exponent b |")
        print("|---|---|---|---:|")
        print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
