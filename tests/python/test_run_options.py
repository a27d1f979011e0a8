"""The run options of the Python module and of the CLI come from one table (core/run_options.hpp):
the same names, the same defaults (prompt_len from the trace's metadata in both), the same parser,
and the same kept sets for the same options."""

import json
import subprocess

import kvoracle as kvo
import numpy as np
import pytest

# Every option of the table, in the CLI's spelling and as a Python keyword.
OPTIONS = {
    "sinks": "--sinks",
    "history": "--history",
    "objective": "--objective",
    "concave": "--concave",
    "window": "--window",
    "alpha": "--alpha",
    "budget": "--budget",
    "recent": "--recent",
    "budget_overrides": "--budget-override",
    "seed": "--seed",
    "gqa": "--gqa",
    "prompt_len": "--prompt-len",
    "layers": "--layers",
    "heads": "--heads",
}


def trace_with_prompt(tmp_path, prompt_len=10):
    g = np.random.default_rng(4)
    q = [g.standard_normal((4, 40, 8), dtype=np.float32) for _ in range(2)]
    k = [g.standard_normal((2, 40, 8), dtype=np.float32) for _ in range(2)]
    t = kvo.Trace.from_arrays(q, k, attn_scale=0.5, prompt_len=prompt_len)
    path = tmp_path / "t.safetensors"
    kvo.write_trace(str(path), t)
    return kvo.read_trace(str(path)), path


def cli_kept(kvoracle, path, tmp_path, args):
    out = tmp_path / "steps.jsonl"
    subprocess.run([kvoracle, "-q", "replay", str(path), *args, "--out", str(out)], check=True)
    rows = [json.loads(line) for line in open(out)]
    return {(r["layer"], r["head"], r["step"]): sorted(r["kept"]) for r in rows}


def python_kept(trace, **options):
    heads = kvo.replay(trace, **options)
    return {(h["layer"], h["head"], i): sorted(k.tolist()) for h in heads for i, k in enumerate(h["kept"])}


def test_every_option_of_the_cli_is_a_python_keyword(kvoracle):
    help_text = subprocess.run([kvoracle, "replay", "--help"], capture_output=True, text=True, check=True).stdout
    doc = kvo.replay.__doc__
    for name, flag in OPTIONS.items():
        assert flag in help_text, flag
        assert f"  {name}=" in doc, name


@pytest.mark.parametrize(
    "policy,options",
    [
        (kvo.policy.STREAMING, {"sinks": 2, "budget": "8"}),
        (kvo.policy.SCISSORHANDS, {"history": 4, "budget": "25%", "recent": "2"}),
        (kvo.policy.H2O_PAPER, {"concave": "sqrt", "budget": "9", "layers": [1]}),
        (kvo.policy.GREEDY, {"objective": "fl", "window": 4, "budget": "8", "heads": [0, 3]}),
        (kvo.policy.RANDOM, {"seed": 7, "budget": "6", "budget_overrides": ["L1=10"]}),
        (kvo.policy.H2O, {"gqa": "kv-mean", "budget": "7", "prompt_len": 3}),
    ],
)
def test_same_options_same_kept_sets(kvoracle, tmp_path, policy, options):
    trace, path = trace_with_prompt(tmp_path)
    args = ["--policy", policy]
    for name, value in options.items():
        items = value if isinstance(value, list) else [value]
        args += [OPTIONS[name], ",".join(str(x) for x in items)]
    assert python_kept(trace, policy=policy, **options) == cli_kept(kvoracle, path, tmp_path, args)


def test_prompt_len_defaults_to_the_traces_metadata(tmp_path):
    trace, _ = trace_with_prompt(tmp_path, prompt_len=12)
    assert trace.prompt_len == 12
    assert python_kept(trace, budget="6") == python_kept(trace, budget="6", prompt_len=12)
    assert python_kept(trace, budget="6") != python_kept(trace, budget="6", prompt_len=0)


def test_errors_name_the_option(tmp_path):
    trace, _ = trace_with_prompt(tmp_path)
    with pytest.raises(ValueError, match=r"replay: unknown option 'budgett' \(options: .*sinks, history"):
        kvo.replay(trace, budgett="3")
    with pytest.raises(ValueError, match="^history must be >= 1$"):
        kvo.replay(trace, policy=kvo.policy.SCISSORHANDS, history=0)
    with pytest.raises(ValueError, match="sinks: 'two' is not an integer"):
        kvo.replay(trace, sinks="two")
    with pytest.raises(ValueError, match="takes one value, not a list"):
        kvo.replay(trace, budget=["3"])
    with pytest.raises(ValueError, match="not a bool"):
        kvo.replay(trace, sinks=True)
