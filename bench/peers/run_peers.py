"""Peers run in one invocation on the same inputs as kvoracle (through its Python module), reported
as medians and ratios: (1) NumPy H2O replay (reference-code style) vs kvoracle's greedy scorer, per
head-step; (2) the lazy greedy of apricot and of submodlib on facility location; (3) HiGHS on the
offline oracle's MILP vs kvoracle's min-cost-flow oracle.
Usage: run_peers.py [--smoke] [--json FILE]  (prints a Markdown section; FILE: the rows for
bench/write_doc.py). Exits non-zero when any peer and kvoracle disagree."""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one thread each, peers and kvoracle alike

import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import kvoracle  # noqa: E402
import numpy as np  # noqa: E402
from dynamic_milp import solve_milp  # noqa: E402
from h2o_numpy import h2o_layer  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_tables import peers_table  # noqa: E402


def median_time(fn, reps):
    ts = []
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def h2o_peer(n, heads, d, reps):
    g = np.random.default_rng(7)
    q = g.standard_normal((heads, n, d), dtype=np.float32)
    k = g.standard_normal((heads, n, d), dtype=np.float32)
    scale = 1.0 / np.sqrt(d)
    trace = kvoracle.Trace.from_arrays([q], [k], attn_scale=scale)
    budget = n // 5
    heavy, recent = budget - budget // 2, budget // 2
    t_np, ev_np = median_time(lambda: h2o_layer(q, k, heavy, recent, scale), reps)
    t_kv, res = median_time(lambda: kvoracle.score(trace, kvoracle.policy.H2O, budgets=[str(budget)], threads=1), reps)
    ev_kv = np.stack([u["evict_step"] for u in res["units"]])
    agree = float((ev_np == ev_kv).mean())
    steps = heads * n
    # The multiply-adds no exact implementation can skip: q_i . k_j for every cached j at every step
    # (the cache holds min(i + 1, budget + 1) tokens when step i scores it), 2 flops each.
    flops = 2 * d * heads * sum(min(i + 1, budget + 1) for i in range(n))
    return {
        "n": n,
        "heads": heads,
        "numpy_s": t_np,
        "kvoracle_s": t_kv,
        "numpy_rate": steps / t_np,
        "kvoracle_rate": steps / t_kv,
        "speedup": t_np / t_kv,
        "agree": agree,
        "flops": flops,
    }


def similarity(n, seed=3):
    """RBF similarities of n points in 16 dimensions (dense, symmetric, in (0, 1])."""
    g = np.random.default_rng(seed)
    x = g.standard_normal((n, 16))
    sq = (x * x).sum(axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0)
    return np.exp(-d2 / 16.0)


def fl_value(s, picks):
    return float(s[:, list(picks)].max(axis=1).sum())


def fl_peer(n, k, reps):
    warnings.filterwarnings("ignore")
    from apricot import FacilityLocationSelection
    from submodlib import FacilityLocationFunction

    s = similarity(n)

    def run_apricot():
        sel = FacilityLocationSelection(k, metric="precomputed", optimizer="lazy", verbose=False)
        sel.fit(s)
        return sel.ranking

    def run_submodlib():
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            f = FacilityLocationFunction(n=n, mode="dense", sijs=s, separate_rep=False)
            return [
                i
                for i, _ in f.maximize(
                    budget=k,
                    optimizer="LazyGreedy",
                    stopIfZeroGain=False,
                    stopIfNegativeGain=False,
                    verbose=False,
                    show_progress=False,
                )
            ]

    run_apricot() if n <= 1000 else None  # numba compiles on the first call: keep it out of the timing
    t_ap, p_ap = median_time(run_apricot, reps)
    t_sm, p_sm = median_time(run_submodlib, reps)
    t_kv, r = median_time(lambda: kvoracle.greedy_facility_location(s, k, "lazy"), reps)
    layouts = {}
    if n >= 10000:  # what the input's memory layout costs kvoracle (the peers get the C-ordered s)
        fortran = np.asfortranarray(s)
        layouts["a Fortran-ordered"] = median_time(lambda: kvoracle.greedy_facility_location(fortran, k), reps)[0]
        del fortran
        asym = s.copy()
        asym[0, 1] += 1e-9  # no longer symmetric: kvoracle makes one column-major copy
        layouts["an asymmetric C-ordered"] = median_time(lambda: kvoracle.greedy_facility_location(asym, k), reps)[0]
    return {
        "n": n,
        "k": k,
        "apricot_s": t_ap,
        "submodlib_s": t_sm,
        "kvoracle_s": t_kv,
        "values": (fl_value(s, p_ap), fl_value(s, p_sm), r["value"]),
        "layouts": layouts,
    }


def milp_peer(n, reps):
    g = np.random.default_rng(11)
    logits = g.standard_normal((n, n)) * 2
    w = np.zeros((n, n))
    for i in range(n):
        e = np.exp(logits[i, : i + 1] - logits[i, : i + 1].max())
        w[i, : i + 1] = e / e.sum()
    k = n // 5
    t_milp, v_milp = median_time(lambda: solve_milp(w, k), max(1, reps // 3))
    t_kv, r = median_time(lambda: kvoracle.offline_optimum(w, k), reps)
    return {
        "n": n,
        "k": k,
        "highs_s": t_milp,
        "kvoracle_s": t_kv,
        "speedup": t_milp / t_kv,
        "highs_value": v_milp,
        "kvoracle_value": r["value"],
    }


def h2o_row(r):
    return {
        "peer": "NumPy H2O replay (reference style)",
        "kind": "replay",  # kvoracle.policy.H2O against the NumPy replay
        "n": r["n"],
        "input": f"1 layer x {r['heads']} heads, n = {r['n']}, d = 64, k = 20%",
        "peer_s": r["numpy_s"],
        "kvoracle_s": r["kvoracle_s"],
        "target": 50.0,
        "same": r["agree"] == 1.0,
        "flops": r["flops"],
        "agreement": f"same eviction step for {100 * r['agree']:.2f}% of tokens "
        f"({r['numpy_rate']:.3g} vs {r['kvoracle_rate']:.3g} head-steps/s)",
    }


def fl_rows(r):
    va, vs, vk = r["values"]
    same = abs(va - vk) <= 1e-9 * vk and abs(vs - vk) <= 1e-9 * vk
    return [
        {
            "peer": f"{name} lazy greedy, facility location",
            "kind": "fl",
            "n": r["n"],
            "input": f"n = {r['n']}, k = {r['k']}, dense RBF similarities (C-ordered, symmetric)",
            "peer_s": t,
            "kvoracle_s": r["kvoracle_s"],
            "target": 1.0,
            "same": same,
            "agreement": f"values apricot {va:.6f}, submodlib {vs:.6f}, kvoracle {vk:.6f} "
            f"({'same' if same else 'DIFFERENT'})"
            + "".join(f"; kvoracle on {what} copy {sec:.3g} s" for what, sec in r["layouts"].items()),
        }
        for name, t in (("apricot", r["apricot_s"]), ("submodlib", r["submodlib_s"]))
    ]


def milp_row(r):
    same = abs(r["highs_value"] - r["kvoracle_value"]) <= 1e-6 * max(1.0, r["kvoracle_value"])
    return {
        "peer": "HiGHS MILP of the offline oracle",
        "kind": "milp",
        "n": r["n"],
        "input": f"n = {r['n']}, k = {r['k']}, softmax rows",
        "peer_s": r["highs_s"],
        "kvoracle_s": r["kvoracle_s"],
        "target": 100.0 if r["n"] >= 200 else None,
        "same": same,
        "agreement": f"optimum {r['highs_value']:.6f} vs {r['kvoracle_value']:.6f} ({'same' if same else 'DIFFERENT'})",
    }


def main():
    args = sys.argv[1:]
    smoke = "--smoke" in args
    json_out = args[args.index("--json") + 1] if "--json" in args else None
    reps = 1 if smoke else 3
    rows = []
    for n in [128] if smoke else [256, 1024]:
        rows.append(h2o_row(h2o_peer(n, heads=4 if smoke else 8, d=64, reps=reps)))
    for n in [300] if smoke else [1000, 3000, 10000]:
        rows += fl_rows(fl_peer(n, 50 if not smoke else 10, reps if n < 10000 else 1))
    for n in [40] if smoke else [100, 200]:
        rows.append(milp_row(milp_peer(n, reps)))
    print("### Peers (bench/peers/run_peers.py, one thread each)\n")
    print("\n".join(peers_table(rows)))
    if json_out:
        with open(json_out + ".tmp", "w") as f:
            json.dump({"smoke": smoke, "rows": rows}, f, indent=1)
        os.replace(json_out + ".tmp", json_out)
    bad = [r for r in rows if not r["same"]]
    if bad:
        sys.exit(f"{bad[0]['peer']} and kvoracle disagree on {bad[0]['input']}: a bug")


if __name__ == "__main__":
    main()
