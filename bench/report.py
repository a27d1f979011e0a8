"""Turns Google Benchmark JSON (with repetitions) into a Markdown table of medians and ratios
against the baseline measured in the same run. Standard library only.

Usage: report.py BENCH.json > table.md
Baselines: greedy/* against greedy/naive, replay/* and verify/* against replay/full, static/* none.
"""
import json
import statistics
import sys
from collections import defaultdict

BASELINE = {"greedy": "greedy/naive", "replay": "replay/full", "verify": "replay/full"}


def main(path):
    data = json.load(open(path))
    runs = defaultdict(list)
    counters = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"]
        runs[name].append(b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]])
        counters[name] = {k: v for k, v in b.items() if k in ("nodes", "exact", "gain_evals")}
    ctx = data["context"]
    print(f"Machine: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, host {ctx.get('host_name')}, "
          f"date {ctx.get('date')}; {len(next(iter(runs.values())))} repetitions, medians.\n")
    print("| benchmark | median ms | ratio to baseline | counters |")
    print("|---|---:|---:|---|")
    med = {n: statistics.median(t) for n, t in runs.items()}
    for name, m in med.items():
        family = name.split("/")[0]
        base = BASELINE.get(family)
        ratio = ""
        if base:
            args = name.split("/")[2:]
            bname = "/".join([base] + args)
            if bname in med:
                ratio = f"{m / med[bname]:.3f}"
        c = ", ".join(f"{k}={v:.4g}" for k, v in counters[name].items())
        if family in ("replay", "verify"):  # items are head-steps: one per token of the one-head trace
            c = f"{int(name.split('/')[2]) * 1000.0 / m:.4g} head-steps/s"
        print(f"| `{name}` | {m:.4g} | {ratio} | {c} |")


if __name__ == "__main__":
    main(sys.argv[1])
