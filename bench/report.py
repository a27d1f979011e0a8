"""Turns Google Benchmark JSON (with repetitions) into a Markdown table of medians and ratios
against the baseline measured in the same run. Standard library only.

Usage: report.py BENCH.json > table.md
Baselines: greedy/* against greedy/naive, replay/* and verify/* against replay/full, static/* none.
"""
import json
import statistics
import sys
from collections import defaultdict

BASELINE = {"greedy": "greedy/naive", "replay": "replay/full", "verify": "replay/full", "scorer": "replay/h2o"}
RATE_COUNTERS = ("GFLOP/s", "GB/s")  # per-repetition rates: medians are taken


def main(path):
    data = json.load(open(path))
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
    print("| benchmark | median ms | ratio to baseline | counters |")
    print("|---|---:|---:|---|")
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
        print(f"| `{name}` | {m:.4g} | {ratio} | {c} |")
    for name, why in skipped.items():
        print(f"| `{name}` | skipped | | {why} |")
    roofline(rates, counters)


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


if __name__ == "__main__":
    main(sys.argv[1])
