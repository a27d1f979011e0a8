"""The figures of docs/findings.md section 9 from a task study (bench/tasks-study): reads
OUTDIR/streaming.json and OUTDIR/prefill.json (kvoracle tasks run --json) and prints Markdown.

Only (task, length) cells where the full cache scores on some instance are compared; the others
are listed as what the model cannot do. Per row and budget: mean score over instances, the full
cache's mean on the same instances, and an exact sign test (McNemar) on the instances where the
two differ. Then every row against the references (oracle top-k under streaming, the prefill
optimum of attention mass under prefill compression), and whether retained mass predicts the
answer (Spearman's rho over outcomes, and instances where the mass optimum loses to another row).

Usage: tasks_findings.py OUTDIR"""

import collections
import json
import sys

import kvoracle as kvo
from scipy import stats

FULL, TOPK, OPTIMUM = "full-cache", "topk", "optimum"
HEAVY = kvo.policies()[0]["name"]  # the registry's first policy: H2O, the paper's


def load(path):
    with open(path) as f:
        return json.load(f)["outcomes"]


def by_key(outcomes):
    """{(row, budget): {instance: outcome}}, and the full cache's outcome per instance."""
    rows = collections.defaultdict(dict)
    full = {}
    for o in outcomes:
        if o["row"] == FULL:
            full[o["instance"]] = o
        else:
            rows[(o["row"], o["budget"])][o["instance"]] = o
    return rows, full


def capable(full):
    """Instances of (task, length) cells where the full cache scores on some instance."""
    best = collections.defaultdict(float)
    for o in full.values():
        best[(o["task"], o["length"])] = max(best[(o["task"], o["length"])], o["score"])
    return {i for i, o in full.items() if best[(o["task"], o["length"])] > 0}, best


def sign_test(a, b):
    """Exact two-sided sign test on paired scores (McNemar's exact test for 0/1 scores)."""
    up = sum(1 for x, y in zip(a, b) if x > y)
    down = sum(1 for x, y in zip(a, b) if x < y)
    if up + down == 0:
        return up, down, 1.0
    return up, down, stats.binomtest(up, up + down, 0.5).pvalue


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def fmt(x, d=3):
    return "-" if x != x else f"{x:.{d}f}"


def full_cache_table(full, best):
    tasks = sorted({o["task"] for o in full.values()})
    lengths = sorted({o["length"] for o in full.values()})
    print("| task | " + " | ".join(str(n) for n in lengths) + " |")
    print("|---|" + "---:|" * len(lengths))
    for t in tasks:
        cells = []
        for n in lengths:
            s = [o["score"] for o in full.values() if o["task"] == t and o["length"] == n]
            cells.append(f"{mean(s):.2f} ({len(s)})" + ("" if best[(t, n)] > 0 else " fails"))
        print(f"| {t} | " + " | ".join(cells) + " |")


def against_full(rows, full, keep, title):
    """Per row and budget: mean score against the full cache on the same instances."""
    print(f"\n{title}\n")
    print(
        "| row | budget | n | score | full cache | difference | better / worse | sign test p | needles held | mass of optimum |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for (row, b), inst in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ids = sorted(i for i in inst if i in keep)
        a = [inst[i]["score"] for i in ids]
        f = [full[i]["score"] for i in ids]
        up, down, p = sign_test(a, f)
        print(
            f"| {row} | {b:g} | {len(ids)} | {mean(a):.3f} | {mean(f):.3f} | {mean(a) - mean(f):+.3f} | {up} / {down} | "
            f"{p:.3g} | {fmt(mean(inst[i]['needles_held'] for i in ids))} | "
            f"{fmt(mean(inst[i]['mass_of_optimum'] for i in ids))} |"
        )


def per_task(rows, full, keep, row, budget):
    """The paper's claim for one row and budget, task by task."""
    print(f"\n`{row}` at budget {budget:g}, task by task (instances of cells the full cache can do):\n")
    print("| task | n | score | full cache | difference | better / worse | sign test p |")
    print("|---|---:|---:|---:|---:|---|---:|")
    inst = rows.get((row, budget), {})
    for t in sorted({full[i]["task"] for i in keep}):
        ids = sorted(i for i in inst if i in keep and full[i]["task"] == t)
        a = [inst[i]["score"] for i in ids]
        f = [full[i]["score"] for i in ids]
        up, down, p = sign_test(a, f)
        print(
            f"| {t} | {len(ids)} | {mean(a):.3f} | {mean(f):.3f} | {mean(a) - mean(f):+.3f} | {up} / {down} | {p:.3g} |"
        )


def mass_and_answers(rows, keep):
    """Does the retained mass predict the answer? Spearman's rho over outcomes with a mass."""
    pairs = [
        (o["mass_of_optimum"], o["score"])
        for (row, _), inst in rows.items()
        if row != OPTIMUM
        for i, o in inst.items()
        if i in keep and o["mass_of_optimum"] is not None
    ]
    if len(pairs) > 2:
        rho, p = stats.spearmanr([m for m, _ in pairs], [s for _, s in pairs])
        print(f"\nSpearman's rho between mass of optimum and score: {rho:.3f} (p = {p:.3g}, {len(pairs)} outcomes)")


def optimum_loses(rows, keep):
    """Instances where the prefill optimum of attention mass answers worse than another row."""
    print(
        "\n| budget | instances | optimum's score | best row's score per instance | instances some row beats the optimum | optimum beats every row |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for b in sorted({b for (_, b) in rows}):
        opt = rows.get((OPTIMUM, b), {})
        ids = sorted(i for i in opt if i in keep)
        others = [inst for (row, bb), inst in rows.items() if bb == b and row != OPTIMUM]
        best = [max(inst[i]["score"] for inst in others if i in inst) for i in ids]
        beaten = sum(1 for i, x in zip(ids, best) if x > opt[i]["score"])
        wins = sum(1 for i, x in zip(ids, best) if x < opt[i]["score"])
        print(
            f"| {b:g} | {len(ids)} | {mean(opt[i]['score'] for i in ids):.3f} | {mean(best):.3f} | {beaten} | {wins} |"
        )


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    streaming, prefill = load(out + "/streaming.json"), load(out + "/prefill.json")
    srows, sfull = by_key(streaming)
    prows, pfull = by_key(prefill)
    keep, best = capable(sfull)
    same = sum(1 for i in sfull if i in pfull and sfull[i]["answer"] == pfull[i]["answer"])
    print(f"{len(sfull)} instances; the full cache's answers of the two runs agree on {same}.\n")
    print("Full cache, mean score (instances) per task and length; 'fails': never scores, left out:\n")
    full_cache_table(sfull, best)
    print(f"\n{len(keep)} instances in cells the full cache can do.")
    against_full(srows, sfull, keep, "Streaming eviction (every step evicts once the budget is full):")
    for b in sorted({b for (_, b) in srows}):
        per_task(srows, sfull, keep, HEAVY, b)
    mass_and_answers(srows, keep)
    against_full(prows, pfull, keep, "Prefill compression (the context compressed once):")
    per_task(prows, pfull, keep, HEAVY, 0.2)
    mass_and_answers(prows, keep)
    print("\nThe prefill optimum of attention mass against the other rows, instance by instance:")
    optimum_loses(prows, keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
