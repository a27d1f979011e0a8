"""Writes the generated part of docs/benchmarks.md and its SVG plots from one scripts/bench run:
the machine, the commit and the date, the targets of the issues with their measured status, the
peers, every suite's medians and ratios, the roofline and the scaling exponents. The hand-written
part of the file (after END_MARK) is kept. Outputs are written to a temporary file and renamed.

Usage: write_doc.py --bench BENCH.json [--rss RSS.json] [--peers PEERS.json] --doc docs/benchmarks.md
                    --plots docs/bench --commit SHA --command "scripts/bench"
"""

import argparse
import datetime
import json
import math
import os
import platform
import subprocess

import matplotlib

matplotlib.use("svg")
import bench_tables as report  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

END_MARK = "<!-- end of the generated part: everything below is written by hand -->"
plt.rcParams.update({"svg.hashsalt": "kvoracle", "font.size": 9})


def machine():
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
        mem = f"{mem / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        mem = "unknown memory"
    try:
        gpu = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
            ).stdout.strip()
            or "no GPU"
        )
    except (OSError, subprocess.SubprocessError):
        gpu = "no GPU"
    return f"{cpu}, {os.cpu_count()} logical CPUs, {mem}, {gpu}; {platform.system()} {platform.release()}"


def save(fig, path):
    tmp = path + ".tmp"
    fig.savefig(tmp, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def targets(run, peers):
    """(target, measured, status) rows: each issue's speed target against this run's numbers."""
    rows = []

    def ms(name):
        r = run.results.get(name)
        return r.median_ms if r else None

    def add(what, value, ok, text):
        rows.append(
            (
                what,
                text if value is not None else "not in this run",
                "" if value is None else ("met" if ok else "**not met**"),
            )
        )

    v = ms("static/branch-and-bound-fl/80/10")
    add(
        "facility location n = 80, k = 10 solved exactly in under 1 s",
        v,
        v is not None and v < 1000,
        f"{v:.4g} ms" if v else "",
    )
    v = ms("offline/assignment/2048")
    add(
        "offline oracle, one head, n = 2 048, k = 20%, under 2 s",
        v,
        v is not None and v < 2000,
        f"{v:.4g} ms" if v else "",
    )
    v = ms("offline/assignment/8192")
    add(
        "exact offline oracle, one head, n = 8 192, k = 20%, under 30 s",
        v,
        v is not None and v < 30000,
        f"{v / 1000:.3g} s" if v else "",
    )
    v, floor = ms("verify/head/8192"), ms("attention/dense/8192")
    q = v / floor if v and floor else None
    add(
        "verify, one head at n = 8 192, within 30x its dense attention",
        q,
        q is not None and q <= 30,
        f"{q:.1f}x ({v / 1000:.3g} s against {floor:.4g} ms)" if q else "",
    )
    pts = [(n, ms(f"verify/head/{n}")) for n in (1024, 2048, 4096, 8192)]
    pts = [(math.log(n), math.log(t)) for n, t in pts if t]
    fit = None
    if len(pts) >= 2:  # least-squares exponent over 1k..8k
        mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
        fit = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    add(
        "verify time grows no faster than n^2.1 from 1k to 8k",
        fit,
        fit is not None and fit <= 2.1,
        f"n^{fit:.2f}" if fit is not None else "",
    )
    a, e, v = ms("gather/assemble/8192"), ms("gather/encode/8192"), ms("verify/head/8192")
    q = (a + e) / v if a and e and v else None
    add(
        "encoding and assembling one verify head's results (what MPI adds per unit), n = 8 192, "
        "under 1% of the head's compute",
        q,
        q is not None and q < 0.01,
        f"{100 * q:.2f}% ({a + e:.3g} ms against {v / 1000:.3g} s)" if q else "",
    )
    v, floor = ms("model/task/h2o/4096/real_time"), ms("model/task/prefill/4096/real_time")
    q = v / floor if v and floor else None
    add(
        "one 4 096-token task instance under h2o at 20% (layered prefill, answer decoded) in at most 2x a "
        "full-attention prefill of it",
        q,
        q is not None and q <= 2,
        f"{q:.2f}x ({v / 1000:.3g} s against {floor / 1000:.3g} s)" if q else "",
    )
    full_name, h2o_name = (f"model/long-decode/{b}/iterations:1/manual_time" for b in (100, 20))
    full, h2o = ms(full_name), ms(h2o_name)
    if full and h2o:
        mem = run.results[h2o_name].counters["kv_bytes_held"] / run.results[full_name].counters["kv_bytes_held"]
        add(
            "decoding at 8 192 positions under h2o at 20% (EvictingDecoder) at least as fast as the full cache, "
            "holding at most a quarter of its K/V bytes",
            full / h2o,
            full >= h2o and mem <= 0.25,
            f"{full / h2o:.2f}x the full cache's tokens/s, {mem:.2f} of its K/V bytes",
        )
    else:
        add("decoding at 8 192 positions under h2o at 20% against the full cache", None, False, "")
    v = ms("model/prefill/1024/0/real_time")
    tps = 1024 / (v / 1000) if v else None
    add(
        "prefill of 1 024 tokens at >= 200 tokens/s",
        v,
        tps is not None and tps >= 200,
        f"{tps:.0f} tokens/s" if tps else "",
    )
    _, roof = report.roofline_rows(run)
    if roof:
        worst = min(got / r for _, _, _, r, got in roof)
        add(
            "the scorer's scoring loop at >= half its roofline",
            worst,
            worst >= 0.5,
            f"{worst:.2f} of the roofline at worst",
        )
    else:
        add("the scorer's scoring loop at >= half its roofline", None, False, "")
    if peers:
        by_kind = {}
        for r in peers["rows"]:
            by_kind.setdefault(r["kind"], []).append(r)
        h = by_kind.get("replay", [])  # the H2O replay against NumPy (bench/peers)
        if h:
            worst = min(r["peer_s"] / r["kvoracle_s"] for r in h)
            peak = report.peak_gflops(run)

            def ceiling(r):  # the peer's time over that of the unavoidable dot products at the fp64 peak
                return f" (ceiling {r['peer_s'] / (r['flops'] / (peak * 1e9)):.0f}x)" if peak and "flops" in r else ""

            add(
                ">= 50x the NumPy H2O replay per head-step",
                worst,
                worst >= 50,
                ", ".join(f"{r['peer_s'] / r['kvoracle_s']:.1f}x at n = {r['n']}{ceiling(r)}" for r in h),
            )
        f = by_kind.get("fl", [])
        if f:
            slower = [r for r in f if r["kvoracle_s"] >= r["peer_s"]]
            add(
                "facility-location greedy faster than apricot and submodlib, n = 1 000 to 10 000, same value",
                1,
                not slower and all(r["same"] for r in f),
                "slowest ratio "
                + f"{min(r['peer_s'] / r['kvoracle_s'] for r in f):.2g}x"
                + (
                    ", slower at " + ", ".join(f"{r['peer'].split()[0]} n = {r['n']}" for r in slower)
                    if slower
                    else "; same values"
                ),
            )
        m = [r for r in by_kind.get("milp", []) if r["target"]]
        if m:
            worst = min(r["peer_s"] / r["kvoracle_s"] for r in m)
            add(
                "exact offline oracle >= 100x HiGHS at n = 200, same optimum",
                worst,
                worst >= 100 and all(r["same"] for r in m),
                f"{worst:.0f}x",
            )
    return rows


def log_log(ax, xlabel, ylabel, title):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def plot_scaling(run, path):
    keep = (
        "replay/full",
        "replay/h2o",
        "scorer/cpu",
        "offline/streaming",
        "offline/assignment",
        "offline/ssp",
        "offline/bgl",
        "attention/dense",
        "static/topk",
        "verify/head",
        "gather",
        "io/read-trace",
    )
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for fam, pos, _xs, fixed, b, pts in report.scaling_fits(run):
        if fam not in keep or pos != 0:
            continue
        label = f"{fam}" + (f" ({', '.join(f'{v:g}' for v in fixed)})" if fixed else "") + f": b = {b:.2f}"
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=label)
    log_log(ax, "n (tokens or ground-set size)", "median time per run, ms", "Scaling in n (time ~ n^b)")
    save(fig, path)


def plot_peers(peers, path):
    rows = peers["rows"]
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(rows) + 1.2))
    labels = [f"{r['peer'].split(',')[0]}, n = {r['n']}" for r in rows]
    speed = [r["peer_s"] / r["kvoracle_s"] for r in rows]
    y = range(len(rows))
    ax.barh(
        list(y),
        speed,
        color=["tab:green" if r["target"] is None or s >= r["target"] else "tab:red" for r, s in zip(rows, speed)],
    )
    for i, r in enumerate(rows):
        if r["target"]:
            ax.plot([r["target"]] * 2, [i - 0.4, i + 0.4], color="black", linewidth=2)
    ax.axvline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.set_yticks(list(y), labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("kvoracle speed-up (peer time / kvoracle time); black bar: the issue's target")
    ax.set_title("kvoracle against the peers (same inputs, one thread)")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    save(fig, path)


def plot_roofline(run, path):
    peak, rows = report.roofline_rows(run)
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = [2 ** (e / 4) for e in range(-16, 17)]
    for name, ai, bw, _roof, got in rows:
        line = ax.plot(xs, [min(peak, x * bw) for x in xs], linewidth=1, label=f"roof, {name.split('/')[2]} slots")
        ax.plot([ai], [got], marker="o", color=line[0].get_color(), label=f"{name}: {got:.3g} GFLOP/s")
    log_log(
        ax,
        "arithmetic intensity, flop/byte",
        "GFLOP/s (fp64, one thread)",
        "The scorer's scoring loop against the measured roofline",
    )
    save(fig, path)
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench", required=True)
    p.add_argument("--rss")
    p.add_argument("--peers")
    p.add_argument("--doc", required=True)
    p.add_argument("--plots", required=True)
    p.add_argument("--commit", default="unknown")
    p.add_argument("--command", default="scripts/bench")
    a = p.parse_args()
    run = report.load(a.bench, a.rss)
    peers = None
    if a.peers:
        peers = json.load(open(a.peers))
    os.makedirs(a.plots, exist_ok=True)
    rel = os.path.relpath(a.plots, os.path.dirname(os.path.abspath(a.doc)))
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# Benchmarks",
        "",
        "<!-- generated by scripts/bench (bench/write_doc.py): do not edit above the end mark -->",
        "",
        "`scripts/bench` builds in Release, runs every Google Benchmark suite of `bench/` with "
        "repetitions and the peers of `bench/peers/`, and rewrites this part of the file with its plots "
        "in `docs/bench/`. Medians throughout; ratios are against a baseline measured in the same run "
        "(these machines are shared and noisy: compare ratios, not absolute times across runs). "
        "`scripts/bench --smoke` is a quick pass that writes nothing here; tests never assert timings.",
        "",
        "## Latest run",
        "",
        f"Command: `{a.command}` at commit {a.commit}, {date}. Machine: {machine()}.",
        "",
    ]
    rows = targets(run, peers)
    out += ["### Targets", "", "| target | measured | status |", "|---|---|---|"]
    out += [f"| {w} | {m} | {s} |" for w, m, s in rows]
    out.append("")
    if peers:
        plot_peers(peers, os.path.join(a.plots, "peers.svg"))
        out += [
            "### Peers",
            "",
            "`bench/peers/run_peers.py`: the peers and kvoracle (through its Python module, "
            "numpy-to-kvoracle conversion included) on the same inputs in one process, one thread each "
            "(OMP/BLAS/numba threads 1); medians of 3 (one run at n = 10 000). It exits non-zero when an "
            "optimum, an objective value or an eviction step differs.",
            "",
        ]
        out += report.peers_table(peers["rows"]) + ["", f"![kvoracle against the peers]({rel}/peers.svg)", ""]
    out += ["### Every suite", ""] + report.render(run).splitlines() + [""]
    plot_scaling(run, os.path.join(a.plots, "scaling.svg"))
    out += [f"![scaling in n]({rel}/scaling.svg)", ""]
    if plot_roofline(run, os.path.join(a.plots, "roofline.svg")):
        out += [f"![the scoring loop's roofline]({rel}/roofline.svg)", ""]
    out.append(END_MARK)
    tail = ""
    if os.path.exists(a.doc):
        old = open(a.doc).read()
        if END_MARK in old:
            tail = old.split(END_MARK, 1)[1]
    with open(a.doc + ".tmp", "w") as f:
        f.write("\n".join(out) + tail)
    os.replace(a.doc + ".tmp", a.doc)


if __name__ == "__main__":
    main()
