"""bench/hf_equality.py (issue 57's equality measurement) on hand-made results whose differences are
known: equal outcomes, a different answer, a mass beyond the tolerance, knorm's tied mass let
through, outcomes answered by one side only refused, and an unfinished run's checkpoint compared on
the instances it holds."""

import json
import os
import subprocess
import sys

from task_outcomes import outcome

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf_equality.py")


def run(tmp_path, engine, hf):
    for name, outs in (("engine", engine), ("hf", hf)):
        (tmp_path / f"{name}.json").write_text(json.dumps({"protocol": "prefill", "outcomes": outs}))
    return subprocess.run(
        [sys.executable, SCRIPT, str(tmp_path / "engine.json"), str(tmp_path / "hf.json")],
        capture_output=True,
        text=True,
    )


def test_counts_and_lists_every_difference(tmp_path):
    engine = [
        dict(outcome(f"i{i}", "niah", row, 0.2, 1.0), mass_of_optimum=0.9)
        for i in range(3)
        for row in ("snapkv", "knorm")
    ]
    hf = [dict(o) for o in engine]
    hf[0]["answer"] = "y"  # i0 snapkv: another answer
    hf[2]["mass_of_optimum"] = 0.9 + 2e-5  # i1 snapkv: the mass beyond 1e-5
    hf[3]["mass_of_optimum"] = 0.7  # i1 knorm: tied keys, another mass: not a difference
    hf[4]["mass_of_optimum"] = 0.9 + 5e-6  # i2 snapkv: within the tolerance
    r = run(tmp_path, engine, hf)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("6 outcomes; 4 equal, 2 differ.")
    assert "| knorm | 0.2 | 3 | 3 | 0 |" in r.stdout and "| snapkv | 0.2 | 3 | 1 | 2 |" in r.stdout
    assert '| i0 | snapkv | 0.2 | answer | "x" | "y" |' in r.stdout
    assert "| i1 | snapkv | 0.2 | mass_of_optimum | 0.9 |" in r.stdout


def test_refuses_outcomes_of_one_side_only(tmp_path):
    engine = [outcome("i0", "niah", "snapkv", 0.2, 1.0), outcome("i1", "niah", "snapkv", 0.2, 1.0)]
    r = run(tmp_path, engine, engine[:1])
    assert r.returncode == 1 and "1 outcomes answered by one side only" in r.stderr


def test_a_checkpoint_is_compared_on_the_instances_it_holds(tmp_path):
    engine = [outcome(f"i{i}", "niah", row, 0.2, 1.0) for i in range(3) for row in ("snapkv", "knorm")]
    (tmp_path / "engine.json").write_text(json.dumps({"protocol": "prefill", "outcomes": engine}))
    checkpoint = tmp_path / "hf-checkpoint"
    checkpoint.mkdir()
    (checkpoint / "instance-a.json").write_text(json.dumps(engine[:2]))
    (checkpoint / "instance-b.json").write_text(json.dumps([engine[4], dict(engine[5], answer="y")]))
    (checkpoint / "manifest.json").write_text("{}")  # the checkpoint's other files are not instances
    r = subprocess.run(
        [sys.executable, SCRIPT, str(tmp_path / "engine.json"), str(checkpoint)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("4 outcomes (the 2 of 3 instances the checkpoint holds); 3 equal, 1 differ.")
    assert '| i2 | knorm | 0.2 | answer | "x" | "y" |' in r.stdout
