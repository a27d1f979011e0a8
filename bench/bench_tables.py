"""Turns Google Benchmark JSON (with repetitions) into Markdown: medians, ratios against the
baseline measured in the same run, the scoring loop against its measured roofline, and the
exponent of time ~ x^b along each numeric argument. Standard library only.

Usage: bench_tables.py BENCH.json [RSS.json] > table.md
RSS.json (optional, written by scripts/bench): peak resident memory in KiB of each benchmark run
alone in its own process. bench/write_doc.py uses the same functions to write docs/benchmarks.md.
Baselines: greedy/* against greedy/naive, replay/* and verify/* against replay/full, scorer/cpu
against replay/h2o (the engine it reproduces); other families have none.
"""

import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, field

BASELINE = {
    "greedy": "greedy/naive",
    "replay": "replay/full",
    "verify": "attention/dense",
    "offline/streaming": "attention/dense",
    "offline/streaming-rows": "attention/dense",
    "offline/streaming-keep-all": "attention/dense",
    "offline/streaming-cheapest-seed": "attention/dense",
    "offline/streaming-real": "attention/dense",
    "offline/streaming-real-cheapest-seed": "attention/dense",
    "offline/assignment": "offline/ssp",
    "offline/bgl": "offline/ssp",
    "scorer/cpu": "replay/h2o",
    "scorer/budget": "replay/h2o-budget",
    "scorer/heads": "replay/h2o-heads",
    "scorer/cuda": "scorer/cpu-all-cores",
    "checks/power-law-fit": "verify/head",
    "model/evicting-decode-int4": "model/evicting-decode",
    "fl-layout": "fl-layout/column-major",
    "allocation": "allocation/per-head",
    "conformance/check": "conformance/golden",
    "allocation/decoding-layer": "allocation/decoding-per-head",
    "allocation/decoding-per-head": "allocation/decoding-per-head",
    "allocation/periodic": "allocation/decoding-per-head",
    "allocation/decoding-pages": "allocation/decoding-layer",
    "allocation/decoding-cg-layer": "allocation/decoding-cg-per-head",
    "allocation/decoding-cg-per-head": "allocation/decoding-cg-per-head",
    "allocation/decoding-cg-real-layer": "allocation/decoding-cg-real-per-head",
    "allocation/decoding-cg-real-per-head": "allocation/decoding-cg-real-per-head",
    "allocation/decoding-real-layer": "allocation/decoding-real-per-head",
    "allocation/decoding-real-per-head": "allocation/decoding-real-per-head",
    "allocation/scopes": "allocation/scopes",
    "allocation/presses": "allocation/scopes",
    "allocation/presses-per-layer": "allocation/presses",
}
COUNTERS = (
    "kernel_ms",
    "nodes",
    "exact",
    "gain_evals",
    "flop/byte",
    "bytes/step",
    "peak_growth_MiB",
    "bytes/(n*d)",
    "kv_bytes_held",
)
RATE_COUNTERS = ("GFLOP/s", "GB/s", "bytes_per_second")  # per-repetition rates: medians are taken
UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


@dataclass
class Result:
    times_ms: list = field(default_factory=list)
    counters: dict = field(default_factory=dict)
    rates: dict = field(default_factory=lambda: defaultdict(list))
    rss_kib: float = None

    @property
    def median_ms(self):
        return statistics.median(self.times_ms)

    def rate(self, key):
        return statistics.median(self.rates[key]) if self.rates.get(key) else None


@dataclass
class Run:
    context: dict
    results: dict  # name -> Result, in benchmark order
    skipped: dict  # name -> reason


def load(path, rss_path=None):
    data = json.load(open(path))
    rss = json.load(open(rss_path)) if rss_path else {}
    results, skipped = {}, {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"]
        if b.get("error_occurred"):
            skipped[name] = b.get("error_message", "")
            continue
        r = results.setdefault(name, Result())
        r.times_ms.append(b["real_time"] * UNIT_MS[b["time_unit"]])
        r.counters = {k: v for k, v in b.items() if k in COUNTERS}
        for k in RATE_COUNTERS:
            if k in b:
                r.rates[k].append(b[k])
    for name, kib in rss.items():
        if name in results:
            results[name].rss_kib = kib
    return Run(data["context"], results, skipped)


def family(name):
    return "/".join(name.split("/")[:2])


def args_key(name):
    """The numeric arguments as written (…/256/64/iterations:1 -> ['256', '64'])."""
    return [p for p in name.split("/")[2:] if p != "real_time" and ":" not in p]


def numeric_args(name):
    """The numeric arguments of a benchmark name (…/256/64 -> [256.0, 64.0]); None if any is not."""
    try:
        return [float(p) for p in name.split("/")[2:] if p != "real_time" and ":" not in p]
    except ValueError:
        return None


def baseline_of(name):
    base = BASELINE.get(family(name)) or BASELINE.get(name.split("/")[0])
    if not base or (name.startswith("scorer/") and family(name) not in BASELINE):
        return None
    suffix = ["real_time"] if name.endswith("/real_time") else []
    return "/".join([base] + args_key(name) + suffix)


def ratio(run, name):
    base = baseline_of(name)
    if base and base in run.results:
        return run.results[name].median_ms / run.results[base].median_ms
    return None


def head_steps_per_s(name, median_ms):
    """replay/verify/scorer-cpu benchmarks run one head of an n-token trace: n head-steps."""
    if name.split("/")[0] in ("replay", "verify") or name.startswith("scorer/cpu/"):
        return int(name.split("/")[2]) * 1000.0 / median_ms
    return None


def counter_text(name, r):
    hs = head_steps_per_s(name, r.median_ms)
    parts = [f"{hs:.4g} head-steps/s"] if hs else []
    parts += [f"{k}={v:.4g}" for k, v in r.counters.items()]
    for k in r.rates:
        v = r.rate(k)
        parts.append(f"GB/s={v / 1e9:.4g}" if k == "bytes_per_second" else f"{k}={v:.4g}")
    return ", ".join(parts)


def main_table(run):
    lines = ["| benchmark | median ms | ratio to baseline | counters | peak RSS MiB |", "|---|---:|---:|---|---:|"]
    for name, r in run.results.items():
        q = ratio(run, name)
        mem = f"{r.rss_kib / 1024:.1f}" if r.rss_kib is not None else ""
        lines.append(
            f"| `{name}` | {r.median_ms:.4g} | {'' if q is None else f'{q:.3f}'} | {counter_text(name, r)} | {mem} |"
        )
    for name, why in run.skipped.items():
        lines.append(f"| `{name}` | skipped | | {why} | |")
    return lines


def peak_gflops(run):
    """The one-core fp64 multiply-add peak measured in this run (machine/peak-mul-add), or None."""
    r = run.results.get("machine/peak-mul-add")
    return r.rate("GFLOP/s") if r else None


def roofline_rows(run):
    """(name, flop/byte, bandwidth GB/s, roofline, measured GFLOP/s) of the scoring loop against
    min(peak flops, intensity x bandwidth of the same data size), all measured in this run."""
    peak = peak_gflops(run)
    if not peak:
        return peak, []
    rows = []
    for name, r in run.results.items():
        if not name.startswith("scorer/logits/") or r.rate("GFLOP/s") is None:
            continue
        bw_r = run.results.get("machine/read-bandwidth/" + name.split("/")[2])
        if not bw_r or bw_r.rate("GB/s") is None:
            continue
        bw, ai = bw_r.rate("GB/s"), r.counters["flop/byte"]
        rows.append((name, ai, bw, min(peak, ai * bw), r.rate("GFLOP/s")))
    return peak, rows


def roofline_table(run):
    peak, rows = roofline_rows(run)
    if not rows:
        return []
    lines = [
        f"Roofline of the scoring loop (one thread; peak multiply-add {peak:.4g} GFLOP/s; read bandwidth of "
        "a block of the same size):",
        "",
        "| loop | flop/byte | read GB/s | roofline GFLOP/s | measured GFLOP/s | fraction of roofline |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, ai, bw, roof, got in rows:
        lines.append(f"| `{name}` | {ai:.3g} | {bw:.4g} | {roof:.4g} | {got:.4g} | {got / roof:.2f} |")
    return lines


def scaling_fits(run):
    """Exponent b of time ~ c * x^b, least squares in log space, along each numeric argument of a
    family while the other arguments stay fixed: [(family, position, xs, fixed, b, points)]."""
    groups = defaultdict(list)
    for name, r in run.results.items():
        nums = numeric_args(name)
        if not nums:
            continue
        for pos in range(len(nums)):
            fixed = tuple(v for q, v in enumerate(nums) if q != pos)
            groups[(family(name), pos, fixed)].append((nums[pos], r.median_ms))
    fits = []
    for (fam, pos, fixed), pts in sorted(groups.items()):
        pts = [(x, y) for x, y in pts if x > 0 and y > 0]  # e.g. a thread count of 0 (= all cores)
        xs = sorted(set(x for x, _ in pts))
        if len(xs) < 2:
            continue
        lx = [math.log(x) for x, _ in pts]
        ly = [math.log(y) for _, y in pts]
        mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
        b = sum((a - mx) * (c - my) for a, c in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
        fits.append((fam, pos, xs, fixed, b, sorted(pts)))
    return fits


def scaling_table(run):
    fits = scaling_fits(run)
    if not fits:
        return []
    lines = [
        "Scaling (time ~ x^b, fitted on the medians; argument 1 is n for most suites):",
        "",
        "| family | varied | other arguments | exponent b |",
        "|---|---|---|---:|",
    ]
    for fam, pos, xs, fixed, b, _ in fits:
        other = ", ".join(f"{v:g}" for v in fixed) or "-"
        lines.append(f"| `{fam}` | argument {pos + 1} over {', '.join(f'{x:g}' for x in xs)} | {other} | {b:.2f} |")
    return lines


def peers_table(rows):
    """Markdown of bench/peers/run_peers.py's rows: times, kvoracle's speed-up and the agreement."""
    lines = [
        "| peer | input | peer time s | kvoracle time s | kvoracle speed-up | agreement |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['peer']} | {r['input']} | {r['peer_s']:.4g} | {r['kvoracle_s']:.4g} "
            f"| {r['peer_s'] / r['kvoracle_s']:.3g}x | {r['agreement']} |"
        )
    return lines


def render(run):
    ctx = run.context
    reps = len(next(iter(run.results.values())).times_ms) if run.results else 0
    out = [
        f"Machine: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, host {ctx.get('host_name')}, "
        f"date {ctx.get('date')}; {reps} repetitions, medians.",
        "",
    ]
    for section in (main_table(run), roofline_table(run), scaling_table(run)):
        if section:
            out += section + [""]
    return "\n".join(out)


if __name__ == "__main__":
    print(render(load(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)))
