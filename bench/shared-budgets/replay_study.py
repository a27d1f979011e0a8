"""kvoracle's own policies under budgets shared by a layer's KV heads or by the whole model, on a
recorded trace: the attention mass each keeps (mean over decoding steps and query heads) per budget
scope, and how far the heads' counts move apart. Usage: replay_study.py TRACE [--budgets 5%,...]
[--policies h2o,tova,scissorhands] [--prompt-len 0] (docs/findings.md §11 has the command and the
table it printed)."""

import argparse

import kvoracle as kvo
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--budgets", default="5%,10%,20%,50%")
    ap.add_argument("--policies", default=",".join([kvo.policy.H2O, kvo.policy.TOVA, kvo.policy.SCISSORHANDS]))
    ap.add_argument("--prompt-len", type=int, default=0)
    a = ap.parse_args()
    trace = kvo.read_trace(a.trace)
    scopes = ["head", "layer", "model"]
    print("| policy | budget | " + " | ".join(f"mass @{s}" for s in scopes) + " | counts @layer | counts @model |")
    print("|---|---:|" + "---:|" * (len(scopes) + 2))
    for policy in a.policies.split(","):
        for budget in a.budgets.split(","):
            mass, spread = {}, {}
            for scope in scopes:
                heads = kvo.replay(
                    trace, policy, budget=budget, gqa="kv-mean", prompt_len=a.prompt_len, budget_scope=scope
                )
                mass[scope] = float(np.mean([h["mean_retained_mass"] for h in heads]))
                # one record per query head: a KV head's count is its group's first head's
                counts = [len(h["kept"][-1]) for h in heads[:: trace.n_heads // trace.n_kv_heads]]
                spread[scope] = f"{min(counts)}–{max(counts)}"
            print(
                f"| {policy} | {budget} | "
                + " | ".join(f"{mass[s]:.4f}" for s in scopes)
                + f" | {spread['layer']} | {spread['model']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
