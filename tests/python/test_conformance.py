"""The conformance kit from Python: a hand-written numpy TOVA that breaks ties toward the newer
token departs from the shipped golden file at its first open tie; the golden's own decisions,
given as dicts with numpy arrays, conform; bad decisions are refused in one line."""

import pathlib
import re

import kvoracle
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "conformance" / "golden" / "tie-trace.json"


def tova_ties_newer(trace, budget):
    """Evict the token the current query attends least; ties evict the newer (the bug)."""
    out = []
    group = trace.n_heads // trace.n_kv_heads
    for layer in range(trace.n_layers):
        attn = trace.attn(layer)
        for g in range(trace.n_kv_heads):
            a = attn[g * group : (g + 1) * group].astype(np.float64).mean(axis=0)
            cache = []
            for i in range(trace.n_tokens):
                cache.append(i)
                if len(cache) <= budget:
                    continue
                row = a[i, cache]
                worst = int(np.flatnonzero(row == row.min())[-1])
                out.append(
                    {
                        "policy": "tova",
                        "budget": budget,
                        "layer": layer,
                        "head": g,
                        "step": i,
                        "evicted": [cache[worst]],
                    }
                )
                del cache[worst]
    return out


def test_ties_toward_the_newer_token_depart_at_step_8():
    trace = kvoracle.read_trace(str(GOLDEN.with_suffix(".safetensors")))
    r = kvoracle.conformance_check(str(GOLDEN), tova_ties_newer(trace, 8))
    assert not r["conforms"]
    first = r["cases"][0]["first_departure"]
    assert (first["step"], first["layer"], first["head"], first["kind"]) == (8, 0, 0, "tie")
    assert first["expected"] == [4] and first["got"] == [5]
    assert "tova@8: first departs at step 8, layer 0, KV head 0 (tie)" in r.report.text


def test_the_golden_decisions_conform_as_numpy():
    golden = kvoracle.conformance_golden(policies="h2o,tova", budgets="8")
    rows = []
    for case in golden["cases"]:
        for unit in case["units"]:
            for i, step in enumerate(unit["steps"]):
                row = {"policy": case["policy"], "budget": np.int64(case["budget"]), "layer": unit["layer"]}
                rows.append({**row, "head": unit["head"], "step": i, "kept": np.array(step["kept"])})
    r = kvoracle.conformance_check(golden, rows)
    assert r["conforms"] and [c["case"] for c in r["cases"]] == ["h2o@8", "tova@8"]


def test_bad_decisions_are_refused_in_one_line():
    with pytest.raises(kvoracle.KvoError, match="no case random@8"):
        kvoracle.conformance_check(
            str(GOLDEN), [{"policy": "random", "budget": 8, "layer": 0, "head": 0, "step": 1, "evicted": []}]
        )
    with pytest.raises(kvoracle.KvoError, match="no field 'step'"):
        kvoracle.conformance_check(str(GOLDEN), [{"policy": "tova", "budget": 8, "layer": 0, "head": 0}])


def test_conformance_md_python_example():
    page = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    scope = {}
    exec(block, scope)  # noqa: S102
    assert not scope["verdict"]["conforms"]
    assert scope["verdict"]["cases"][0]["first_departure"]["kind"] == "tie"
