"""The tables of docs/findings.md section 12 ("The paper's experiments on a small real model") from
bench/paper-study's output: OUTDIR/eval.json and eval-int4.json (kvoracle eval --json: perplexity
per policy and budget), OUTDIR/tasks.json (or several tasks-*.json, merged) and tasks-shotsN.json
(kvoracle tasks run --json: outcomes per instance) and OUTDIR/diversity.json (kvoracle eval diversity --json), with the findings every
run computed (their "paper_experiments" records, docs/checks.md#e4).

Each few-shot run's rows are also shown by the needle's depth, and, where its instances are the
ablation run's with shots before them, compared pair by pair with the same rows on the same
contexts without shots.

`--check DOC` prints nothing and fails when the document lacks a row of the claims' tables, of the
comparisons between policies or of the few-shot tables, by depth and without shots included: the
rows the docs quote.

Usage: paper_findings.py OUTDIR [--check DOC]"""

import argparse
import collections
import contextlib
import json
import os
import pathlib
import sys

from doc_rows import check_rows
from scipy import stats

# Each table: its title, the claim whose records name its rows (in the records' order), and whether
# the reference row (the policy the E5 and E9 records share, h2o) joins them, last. Row names come from the records' detail,
# which the policy registry names, so that no policy is spelled here.
TABLES = [
    ("Figure 2c (E4): masking heavy hitters, random tokens, recent tokens", "E4", True),
    ("Figure 2d (E5): local against look-ahead heavy hitters", "E5", False),
    ("Table 1 (E6): sparse-transformer patterns without and with heavy hitters", "E6", True),
    ("Table 6 (E9): heavy hitters only, recent tokens only, both", "E9", True),
]
NOT_ROWS = {"budget", "metric", "full", "tolerance", "shots"}  # the other numbers of a detail


def record_rows(records, claim):
    """The rows the claim's records measured (their detail's numbers), in first-seen order."""
    rows = []
    for r in records:
        if r["id"] != claim:
            continue
        for key, value in r["detail"].items():
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            if numeric and key not in NOT_ROWS and key not in rows:
                rows.append(key)
    return rows


def reference_row(records):
    """The one row every E5 and E9 record measures (h2o), or None unless there is exactly one."""
    sets = [set(record_rows([r], r["id"])) for r in records if r["id"] in ("E5", "E9")]
    if {r["id"] for r in records} >= {"E5", "E9"}:
        common = set.intersection(*sets)
        if len(common) == 1:
            return common.pop()
    return None


def print_sign_tests(records):
    """The paired sign tests the claims' records carry (tasks run's outcomes), one row each."""
    tests = [(r, t) for r in records for t in r["detail"].get("paired", [])]
    if not tests:
        return
    print("\n| comparison | budget | instances | better | worse | p (sign test) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r, t in tests:
        against = row_name(t["against"])
        shots = r["detail"].get("shots")
        label = r["detail"]["budget_label"] + (f", {shots} shots" if shots else "")
        print(
            f"| `{t['row']}` against {against} | {label} | {t['instances']} | {t['better']} | {t['worse']} | "
            f"{t['p_value']:.2g} |"
        )


def comparisons_side_by_side(records):
    """The table of the claims' sign tests between two policies (not against the full cache), one line
    per comparison with every budget beside the others."""
    cells, budgets = {}, []
    for r in records:
        budget = r["detail"]["budget_label"]
        for t in r["detail"].get("paired", []):
            if t["against"] == "full-cache":
                continue
            cells.setdefault((r["id"], t["row"], t["against"]), {})[budget] = t
            if budget not in budgets:
                budgets.append(budget)
    if not cells:
        return []
    lines = [
        "| claim | comparison | " + " | ".join(f"{b}: better / worse | p" for b in budgets) + " |",
        "|---|---|" + "---:|---:|" * len(budgets),
    ]
    for (claim, row, against), by_budget in cells.items():
        parts = []
        for b in budgets:
            t = by_budget.get(b)
            parts += [f"{t['better']} / {t['worse']}", f"{t['p_value']:.2g}"] if t else ["–", "–"]
        lines.append(f"| {claim} | `{row}` against `{against}` | " + " | ".join(parts) + " |")
    return lines


def outcome_key(o):
    """An outcome's (row, budget): the full cache's budget is 1, whatever the run wrote."""
    return o["row"], 1.0 if o["row"] == "full-cache" else o["budget"]


def row_name(row):
    """A row as the tables name it: "full cache", or the policy in backquotes."""
    return "full cache" if row == "full-cache" else f"`{row}`"


def row_cells(key):
    """The row and budget cells of (row, budget): the full cache's budget is a dash."""
    row, budget = key
    return row_name(row), "–" if row == "full-cache" else percent(budget)


def scores_by_row(run):
    """{(row, budget): {instance: score}} of one run (the full cache's budget is 1)."""
    scores = {}
    for o in run["outcomes"]:
        scores.setdefault(outcome_key(o), {})[o["instance"]] = o["score"]
    return scores


def shots_against_none(plain, shot_runs):
    """The rows of a few-shot run against the same rows without shots, on the same contexts: `tasks
    generate --shots N` names each instance as its 0-shot instance of the same seed, with "-sN"
    appended, so the instances whose names match pair. One line per (shots, row, budget): the pairs,
    both mean scores, the instances scoring better and worse with shots, and the exact two-sided
    sign test (scipy's binomial test, which the suite's own sign test equals:
    tests/python/test_paired_power.py)."""
    without = scores_by_row(plain)
    lines = []
    for run in shot_runs:
        k = run["outcomes"][0].get("shots", 0)
        for key, with_shots in scores_by_row(run).items():
            base = without.get(key, {})
            plain_names = {i: i.removesuffix(f"-s{k}") for i in with_shots}
            pairs = [(base[plain_names[i]], s) for i, s in with_shots.items() if plain_names[i] in base]
            if not pairs:
                continue
            better = sum(b > a for a, b in pairs)
            worse = sum(b < a for a, b in pairs)
            p = stats.binomtest(min(better, worse), better + worse).pvalue if better + worse else 1.0
            row, budget = row_cells(key)
            lines.append(
                f"| {k} | {row} | {budget} | {len(pairs)} | {sum(a for a, _ in pairs) / len(pairs):.3f} | "
                f"{sum(b for _, b in pairs) / len(pairs):.3f} | {better} / {worse} | {p:.2g} |"
            )
    return lines


def by_depth(run):
    """The depths of a few-shot run's needles and one line per (row, budget): per depth, the score
    summed over the instances there (the instances answered, for 0/1 scores) of their count and the
    mean share of (layer, KV head) units that held the needle; None when the outcomes carry no depth."""
    if any("depth" not in o for o in run["outcomes"]):
        return None
    k = run["outcomes"][0].get("shots", 0)
    depths = sorted({o["depth"] for o in run["outcomes"]})
    cells = {}
    for o in run["outcomes"]:
        cell = cells.setdefault(outcome_key(o), {}).setdefault(o["depth"], [0, 0, 0.0])
        cell[0] += o["score"]
        cell[1] += 1
        cell[2] += o.get("needles_held", 0.0)
    lines = []
    for key, at in cells.items():
        name, shown = row_cells(key)
        parts = [f"{at[d][0]:g} / {at[d][1]}, {at[d][2] / at[d][1]:.3f}" if d in at else "–" for d in depths]
        lines.append(f"| {k} | {name} | {shown} | " + " | ".join(parts) + " |")
    return depths, lines


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def percent(b):
    return f"{100 * b:g}%"


def eval_values(ev):
    """{(policy, budget share): perplexity}, the budgets in order, the full cache's perplexity."""
    values, budgets = {}, []
    for p in ev["points"]:
        b = p["budget"]
        share = float(b[:-1]) / 100 if b.endswith("%") else float(b)
        share = share if share <= 1 else share / ev["tokens"]
        values[(p["policy"], share)] = p["ppl"]
        if share not in budgets:
            budgets.append(share)
    return values, [b for b in budgets if b < 1], ev["full_ppl"]


def task_values(tr):
    """{(row, budget): mean score}, the budgets, the full cache's mean score and instance count
    (an instance answered by the same row in several runs counts once)."""
    sums = collections.defaultdict(lambda: [0.0, 0])
    seen = set()
    for o in tr["outcomes"]:
        key = outcome_key(o)
        if (key, o["instance"]) in seen:
            continue
        seen.add((key, o["instance"]))
        sums[key][0] += o["score"]
        sums[key][1] += 1
    values = {key: s / n for key, (s, n) in sums.items()}
    budgets = sorted({b for (row, b) in values if row != "full-cache"})
    return values, budgets, values[("full-cache", 1.0)], sums[("full-cache", 1.0)][1]


def merged(paths):
    """The outcomes and findings of several `tasks run --json` files (one run per budget, say)."""
    runs = [load(p) for p in paths]
    runs = [r for r in runs if r]
    if not runs:
        return None
    return {
        "outcomes": [o for r in runs for o in r["outcomes"]],
        "paper_experiments": [e for r in runs for e in r.get("paper_experiments", [])],
    }


def main(out):
    """Print the section's tables; return the rows the docs quote (the claims' tables, the comparisons
    between policies, the few-shot tables)."""
    quoted = []

    def row_line(line):
        print(line)
        quoted.append(line)

    ev = load(os.path.join(out, "eval.json"))
    # tasks.json, or one file per run: tasks-*.json (the few-shot runs are tasks-shots*.json)
    task_files = [
        os.path.join(out, f)
        for f in sorted(os.listdir(out))
        if f.startswith("tasks") and f.endswith(".json") and not f.startswith("tasks-shots")
    ]
    tr = merged(task_files)
    if ev:
        e_values, e_budgets, full_ppl = eval_values(ev)
        print(f"Perplexity: `kvoracle eval`, {ev['tokens']} GPL-3 tokens, full cache {full_ppl:.2f}.")
    if tr:
        t_values, t_budgets, full_acc, n = task_values(tr)
        print(f"Accuracy: `kvoracle tasks run`, {n} instances, dynamic protocol, full cache {full_acc:.3f}.")
    records = [r for result in (ev, tr) for r in (result or {}).get("paper_experiments", [])]
    reference = reference_row(records)
    for title, claim, with_reference in TABLES:
        rows = record_rows(records, claim)
        if not rows:
            continue
        if with_reference and reference:  # last, after the rows it is compared with
            rows = [r for r in rows if r != reference] + [reference]
        print(f"\n**{title}**\n")
        head = ["row"]
        if ev:
            head += [f"ppl {percent(b)}" for b in e_budgets]
        if tr:
            head += [f"accuracy {percent(b)}" for b in t_budgets]
        print("| " + " | ".join(head) + " |")
        print("|---|" + "---:|" * (len(head) - 1))
        cells = ["full cache"]
        if ev:
            cells += [f"{full_ppl:.2f}"] * len(e_budgets)
        if tr:
            cells += [f"{full_acc:.3f}"] * len(t_budgets)
        row_line("| " + " | ".join(cells) + " |")
        for row in rows:
            cells = [f"`{row}`"]
            if ev:
                cells += [f"{e_values[(row, b)]:.2f}" if (row, b) in e_values else "–" for b in e_budgets]
            if tr:
                cells += [f"{t_values[(row, b)]:.3f}" if (row, b) in t_values else "–" for b in t_budgets]
            row_line("| " + " | ".join(cells) + " |")
        print_sign_tests([r for r in records if r["id"] == claim])
    side_by_side = comparisons_side_by_side([r for r in records if r["id"] in {c for _, c, _ in TABLES}])
    if side_by_side:
        print("\n**The claims' comparisons between policies** (paired sign tests, every budget)\n")
        print(side_by_side[0])
        print(side_by_side[1])
        for line in side_by_side[2:]:
            row_line(line)
    q = load(os.path.join(out, "eval-int4.json"))
    if q:
        values, budgets, full_ppl = eval_values(q)
        full_q = next(p["ppl"] for p in q["points"] if p["policy"].startswith("full+"))
        print("\n**Table 5 (E8): h2o with a 4-bit KV cache** (perplexity)\n")
        print("| row | " + " | ".join(percent(b) for b in budgets) + " |")
        print("|---|" + "---:|" * len(budgets))
        print("| full cache | " + " | ".join(f"{full_ppl:.2f}" for _ in budgets) + " |")
        print("| full cache, 4-bit K/V | " + " | ".join(f"{full_q:.2f}" for _ in budgets) + " |")
        for row in record_rows(q.get("paper_experiments", []), "E8"):
            if all((row, b) in values for b in budgets):
                print(f"| `{row}` | " + " | ".join(f"{values[(row, b)]:.2f}" for b in budgets) + " |")
    shot_runs = [
        load(os.path.join(out, f))
        for f in sorted(os.listdir(out))
        if f.startswith("tasks-shots") and f.endswith(".json")
    ]
    shot_runs = sorted((r for r in shot_runs if r), key=lambda r: r["outcomes"][0].get("shots", 0))
    if shot_runs:
        print("\n**Table 4 (E7): few-shot inputs** (accuracy)\n")
        budgets = task_values(shot_runs[0])[1]
        row = next(iter(record_rows(shot_runs[0].get("paper_experiments", []), "E7")), reference)
        print("| shots | instances | full cache | " + " | ".join(f"`{row}` {percent(b)}" for b in budgets) + " |")
        print("|---:|---:|---:|" + "---:|" * len(budgets))
        for run in shot_runs:
            values, _, full_acc, n = task_values(run)
            k = run["outcomes"][0].get("shots", 0)
            cells = [f"{values.get((row, b), float('nan')):.3f}" for b in budgets]
            row_line(f"| {k} | {n} | {full_acc:.3f} | " + " | ".join(cells) + " |")
        print_sign_tests([r for run in shot_runs for r in run.get("paper_experiments", []) if r["id"] == "E7"])
        for run in shot_runs:
            depth_rows = by_depth(run)
            if not depth_rows:
                continue
            depths, lines = depth_rows
            print("\n**By the needle's depth** (answered / instances, mean share of units holding the needle)\n")
            print("| shots | row | budget | " + " | ".join(f"depth {d:g}" for d in depths) + " |")
            print("|---:|---|---:|" + "---:|" * len(depths))
            for line in lines:
                row_line(line)
        paired = shots_against_none(tr, shot_runs) if tr else []
        if paired:
            print("\n**The same contexts without shots** (paired sign tests)\n")
            print("| shots | row | budget | instances | without shots | with shots | better / worse | p |")
            print("|---:|---|---:|---:|---:|---:|---:|---:|")
            for line in paired:
                row_line(line)
    div = load(os.path.join(out, "diversity.json"))
    if div:
        print(
            f"\n**Appendix C (E10): diversity of greedy continuations** ({div['prompts']} prompts of "
            f"{div['prompt_tokens']} tokens, {div['new_tokens']} new tokens each)\n"
        )
        print("| row | budget | distinct-1 | distinct-2 | distinct-3 | 4-gram repetition |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in [div["full"]] + div["rows"]:
            name = row_name(r["row"])
            print(
                f"| {name} | {percent(r['budget'])} | {r['distinct1']:.3f} | {r['distinct2']:.3f} | "
                f"{r['distinct3']:.3f} | {r['repetition4']:.3f} |"
            )
    print("\n**Findings** (docs/checks.md#e4; loss: ppl / full − 1, or full accuracy − accuracy)\n")
    print("| claim | variant | budget | the paper's statement holds | metric |")
    print("|---|---|---:|---|---:|")
    for result in (ev, q, tr, *shot_runs, div):
        for r in (result or {}).get("paper_experiments", []):
            d = r["detail"]
            holds = "yes" if r["holds"] else "no"
            print(f"| {r['id']} | {r['variant']} | {d['budget_label']} | {holds} | {r['metric']:.3f} |")
    return quoted


if __name__ == "__main__":
    parser = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[-1].removeprefix("Usage: "))
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--check", type=pathlib.Path, help="fail when a quoted row is not in this document")
    args = parser.parse_args()
    if not args.out.is_dir():
        parser.error(f"{args.out}: not a study's folder")
    if args.check is None:
        main(args.out)
    else:
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            rows = main(args.out)
        sys.exit(check_rows(rows, args.check, f"the study {args.out}"))
