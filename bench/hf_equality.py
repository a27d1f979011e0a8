"""Issue 57's equality measurement: the outcomes of the task suite answered by kvoracle's engine
(`kvoracle tasks run --json`) against the same suite answered by SmolLM2 in transformers
(`python -m kvoracle.hf.tasks --json`, loaded from the same GGUF, fp32, eager attention, kvoracle's
token ids), outcome by outcome: the same answer, score, tokens kept, needles held, input tokens and
budget, and `mass_of_optimum` (each read from its own implementation's trace) within 1e-5, the rule of
tests/python/test_hf_tasks.py. Prints, per row and budget, how many outcomes are equal, then every
outcome that differs with both sides' values, as Markdown.

The transformers side may also be a run's checkpoint folder (--checkpoint of kvoracle.hf.tasks, one
instance-*.json per answered instance): while the run is unfinished, the instances it has answered
are compared, and the first line says how many of the engine's instances that is.

Usage: hf_equality.py ENGINE.json TRANSFORMERS.json|CHECKPOINT_DIR"""

import collections
import glob
import json
import math
import os
import sys

COMPARED = ("answer", "score", "kept", "needles_held", "input_tokens", "budget")
MASS_TOLERANCE = 1e-5
# knorm's first-layer scores tie exactly for every repeat of a token (RoPE keeps a key's norm), and
# kvpress's torch.topk keeps other tied keys than kvoracle's earliest-first rule: another mass.
MASS_TIES = {"knorm"}


def outcomes(path):
    """(instance, row, budget) -> outcome, from a report's JSON or a checkpoint folder's instances."""
    if os.path.isdir(path):
        found = []
        for name in sorted(glob.glob(os.path.join(path, "instance-*.json"))):
            with open(name) as f:
                found += json.load(f)
    else:
        with open(path) as f:
            found = json.load(f)["outcomes"]
    return {(o["instance"], o["row"], o["budget"]): o for o in found}


def measured(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def differences(a, b):
    """The fields in which two outcomes of one (instance, row, budget) differ."""
    out = [f for f in COMPARED if measured(a[f]) != measured(b[f])]
    ma, mb = measured(a["mass_of_optimum"]), measured(b["mass_of_optimum"])
    if (ma is None) != (mb is None) or (ma is not None and a["row"] not in MASS_TIES and abs(ma - mb) > MASS_TOLERANCE):
        out.append("mass_of_optimum")
    return out


def main(engine_path, hf_path):
    engine, hf = outcomes(engine_path), outcomes(hf_path)
    scope = ""
    if os.path.isdir(hf_path):  # an unfinished run: the instances it has answered
        answered = {k[0] for k in hf}
        scope = f" (the {len(answered)} of {len({k[0] for k in engine})} instances the checkpoint holds)"
        engine = {k: o for k, o in engine.items() if k[0] in answered}
    only = sorted(set(engine) ^ set(hf))
    if only:
        print(f"{len(only)} outcomes answered by one side only, first: {only[0]}", file=sys.stderr)
        return 1
    cells = collections.defaultdict(lambda: [0, 0])
    differ = []
    for key in sorted(engine, key=lambda k: (k[1], k[2], k[0])):
        fields = differences(engine[key], hf[key])
        cells[(key[1], key[2])][0] += 1
        if fields:
            cells[(key[1], key[2])][1] += 1
            differ.append((key, fields))
    total = sum(c[0] for c in cells.values())
    print(f"{total} outcomes{scope}; {total - len(differ)} equal, {len(differ)} differ.\n")
    print("| row | budget | outcomes | equal | differ |")
    print("|---|---:|---:|---:|---:|")
    for (row, budget), (n, d) in cells.items():
        print(f"| {row} | {budget:g} | {n} | {n - d} | {d} |")
    if differ:
        print("\n| instance | row | budget | field | engine | transformers |")
        print("|---|---|---:|---|---|---|")
        for (instance, row, budget), fields in differ:
            for f in fields:
                a, b = engine[(instance, row, budget)][f], hf[(instance, row, budget)][f]
                print(f"| {instance} | {row} | {budget:g} | {f} | {json.dumps(a)} | {json.dumps(b)} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
