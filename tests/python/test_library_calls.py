"""The oracles' command modes are library calls that the CLI and the Python module share: the same
records from `kvoracle oracle static|prefill` and from `kvoracle.static_oracle` /
`kvoracle.prefill_oracle`, and the older one-command spellings give the same files."""

import json
import subprocess

import kvoracle as kvo
import numpy as np
import pytest


@pytest.fixture
def trace_file(tmp_path):
    g = np.random.default_rng(5)
    q = [g.standard_normal((4, 48, 8), dtype=np.float32) for _ in range(2)]
    k = [g.standard_normal((2, 48, 8), dtype=np.float32) for _ in range(2)]
    v = [g.standard_normal((2, 48, 8), dtype=np.float32) for _ in range(2)]
    path = tmp_path / "t.safetensors"
    kvo.write_trace(str(path), kvo.Trace.from_arrays(q, k, v, attn_scale=0.5))
    return path


def same_records(a, b, rel=1e-12):
    """Equal keys, strings and integers; floats to `rel`. The CLI under test and the pip-built module
    may be compiled for different instruction sets (the sanitizer pass builds the CLI with
    -march=native, the module is portable), and fused multiply-adds move the last bits of a double."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_records(a[k], b[k], rel) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_records(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=rel, abs=1e-300)
    return a == b


def test_same_records_tells_a_last_bit_from_a_difference():
    r = [{"press": "knorm", "k": 16, "value": 6.405401407506152}]
    assert same_records(r, [{"press": "knorm", "k": 16, "value": 6.405401407506153}])
    assert not same_records(r, [{"press": "knorm", "k": 16, "value": 6.40540140}])
    assert not same_records(r, [{"press": "knorm", "k": 15, "value": 6.405401407506152}])
    assert not same_records(r, [{"press": "snapkv", "k": 16, "value": 6.405401407506152}])
    assert not same_records(r, r + r)


def run(kvoracle, *args):
    subprocess.run([kvoracle, "-q", *map(str, args)], check=True, stdout=subprocess.DEVNULL)


def test_static_oracle_same_records_from_cli_and_python(kvoracle, trace_file, tmp_path):
    out = tmp_path / "static.jsonl"
    run(kvoracle, "oracle", "static", trace_file, "--budget", "6", "--every", "5", "--objective", "mass", "--out", out)
    cli = [json.loads(line) for line in open(out)]
    py = kvo.static_oracle(kvo.read_trace(str(trace_file)), every=5, budget="6", objective="mass")
    assert same_records(py, cli) and len(cli) == 2 * 4 * 11
    legacy = tmp_path / "legacy.jsonl"
    run(kvoracle, "oracle", trace_file, "--budget", "6", "--every", "5", "--objective", "mass", "--out", legacy)
    assert legacy.read_bytes() == out.read_bytes()


def test_prefill_oracle_same_records_from_cli_and_python(kvoracle, trace_file, tmp_path):
    out = tmp_path / "prefill.json"
    run(kvoracle, "oracle", "prefill", trace_file, "--prompt-len", "32", "--presses", "knorm,streaming_llm",
        "--compression-ratio", "0.5", "--n-sink", "2", "--json", out)  # fmt: skip
    cli = json.load(open(out))
    py = kvo.prefill_oracle(kvo.read_trace(str(trace_file)), 32, presses="knorm,streaming_llm", ratios=[0.5], n_sink=2)
    assert same_records(py["records"], cli["records"]) and len(cli["records"]) == 2 * 2 * 2
    assert [s["press"] for s in py["summary"]] == ["knorm", "streaming_llm"]
    assert all(0 < s["fraction_of_optimum"] <= 1 + 1e-12 for s in py["summary"])
    legacy = tmp_path / "legacy.json"
    run(kvoracle, "oracle", trace_file, "--prefill", "32", "--presses", "knorm,streaming_llm",
        "--compression-ratio", "0.5", "--n-sink", "2", "--json", legacy)  # fmt: skip
    assert legacy.read_bytes() == out.read_bytes()


def test_library_calls_refuse_bad_requests(trace_file):
    t = kvo.read_trace(str(trace_file))
    with pytest.raises(ValueError, match="objective is dense-acc"):
        kvo.static_oracle(t, objective="acc")
    with pytest.raises(ValueError, match=r"prompt_len must be in \[1, 47\]"):
        kvo.prefill_oracle(t, 48)
    with pytest.raises(ValueError, match="unknown press parameter 'windowsize'"):
        kvo.prefill_oracle(t, 32, windowsize=3)
