"""bench/tasks_findings.py (the figures of docs/findings.md section 9) on a hand-made study whose
every figure is known: a cell the full cache cannot do is left out, a row's difference from the
full cache and its sign test, the per-task claim, and the instances where the mass optimum loses."""

import json
import os
import subprocess
import sys

import kvoracle as kvo

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "tasks_findings.py")
HEAVY = kvo.policies()[0]["name"]


def outcome(instance, task, row, budget, score, mass=None, held=None):
    return {
        "instance": instance,
        "task": task,
        "length": 512,
        "depth": 0.5,
        "input_tokens": 500,
        "row": row,
        "budget": budget,
        "kept": 100.0,
        "score": score,
        "answer": str(score),
        "needles_held": held,
        "mass_of_optimum": mass,
    }


def test_findings_of_a_known_study(tmp_path):
    # Task a: the full cache answers 4 of 4; h2o at 0.2 answers 1 of them. Task b: the full cache
    # answers none (left out, whatever the rows score).
    full = [outcome(f"a{i}", "a", "full-cache", 1.0, 1.0, 1.0, 1.0) for i in range(4)]
    full += [outcome(f"b{i}", "b", "full-cache", 1.0, 0.0, 1.0, 1.0) for i in range(2)]
    stream = full + [outcome(f"a{i}", "a", HEAVY, 0.2, 1.0 if i == 0 else 0.0, 0.5 + i / 10, 0.0) for i in range(4)]
    stream += [outcome(f"b{i}", "b", HEAVY, 0.2, 1.0, 0.9, 1.0) for i in range(2)]
    # Prefill: the optimum answers a0 only; h2o answers a0 and a1.
    pre = list(full)
    pre += [outcome(f"a{i}", "a", "optimum", 0.2, 1.0 if i == 0 else 0.0, 1.0, 0.5) for i in range(4)]
    pre += [outcome(f"a{i}", "a", HEAVY, 0.2, 1.0 if i < 2 else 0.0, 0.8, 0.5) for i in range(4)]
    for name, outs in (("streaming", stream), ("prefill", pre)):
        (tmp_path / f"{name}.json").write_text(json.dumps({"protocol": "dynamic", "outcomes": outs}))
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], check=True, capture_output=True, text=True).stdout
    assert "6 instances; the full cache's answers of the two runs agree on 6." in out
    assert "| a | 1.00 (4) |" in out and "| b | 0.00 (2) fails |" in out
    assert "4 instances in cells the full cache can do." in out
    # h2o at 0.2 under streaming: 0.25 against 1.0 on task a's 4 instances, 0 better / 3 worse, p = 0.25.
    assert f"| {HEAVY} | 0.2 | 4 | 0.250 | 1.000 | -0.750 | 0 / 3 | 0.25 | 0.000 | 0.650 |" in out
    assert "| a | 4 | 0.250 | 1.000 | -0.750 | 0 / 3 | 0.25 |" in out
    # Prefill: one instance (a1) where a row beats the mass optimum, none the other way.
    assert "| 0.2 | 4 | 0.250 | 0.500 | 1 | 0 |" in out
    assert "Spearman's rho between mass of optimum and score" in out


def test_findings_usage_without_a_directory():
    r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
    assert r.returncode == 2 and "Usage: tasks_findings.py OUTDIR" in r.stderr
