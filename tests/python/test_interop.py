"""Trace files cross the Python boundary unchanged: a file written by the safetensors package
reads back identically in kvoracle, a file kvoracle writes loads in Python with the same values,
and a dense attention tensor [H, n, n] exported from numpy replays."""

import json
import subprocess

import numpy as np
from safetensors.numpy import load_file, save_file

META = {"format": "kvoracle-trace", "format_version": "1", "attn_scale": "0.125", "prompt_len": "3"}


def test_python_written_trace_round_trips(probe, tmp_path):
    rng = np.random.default_rng(0)
    n, d = 12, 8
    for dtype in (np.float32, np.float16):
        tensors = {
            "layers.0.q": rng.standard_normal((4, n, d)).astype(dtype),
            "layers.0.k": rng.standard_normal((2, n, d)).astype(dtype),
            "layers.0.v": rng.standard_normal((2, n, d)).astype(dtype),
            "tokens": np.arange(n, dtype=np.int32),
        }
        src, dst = tmp_path / "py.safetensors", tmp_path / "kvo.safetensors"
        save_file(tensors, str(src), metadata=META)
        probe("trace-roundtrip", src, dst)
        back = load_file(str(dst))
        for name, value in tensors.items():
            assert back[name].dtype == (np.int32 if name == "tokens" else np.float32)
            assert np.array_equal(back[name], value.astype(back[name].dtype)), name


def test_bf16_reads_exactly(probe, tmp_path):
    import safetensors

    src, dst = tmp_path / "bf.safetensors", tmp_path / "out.safetensors"
    q = np.random.default_rng(1).standard_normal((1, 4, 2)).astype(np.float32)
    bits = (q.view(np.uint32) >> 16).astype(np.uint16)  # truncate to bf16
    header = {
        "__metadata__": META,
        "layers.0.q": {"dtype": "BF16", "shape": [1, 4, 2], "data_offsets": [0, 16]},
        "layers.0.k": {"dtype": "BF16", "shape": [1, 4, 2], "data_offsets": [16, 32]},
    }
    h = json.dumps(header).encode()
    src.write_bytes(len(h).to_bytes(8, "little") + h + bits.tobytes() + bits.tobytes())
    assert safetensors.safe_open(str(src), "numpy") is not None  # the package accepts the file
    probe("trace-roundtrip", src, dst)
    want = (bits.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(load_file(str(dst))["layers.0.q"], want)


def test_dense_attention_export_replays(kvoracle, tmp_path):
    # What the docs' Hugging Face `output_attentions` snippet produces: [H, n, n] causal rows.
    rng = np.random.default_rng(2)
    H, n = 3, 20
    logits = rng.standard_normal((H, n, n))
    logits[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = -np.inf
    attn = np.exp(logits - logits.max(axis=2, keepdims=True))
    attn /= attn.sum(axis=2, keepdims=True)
    path = tmp_path / "dense.safetensors"
    save_file({"layers.0.attn": attn.astype(np.float32)}, str(path), metadata=META)
    out = tmp_path / "steps.jsonl"
    subprocess.run(
        [kvoracle, "-q", "replay", str(path), "--policy", "h2o", "--budget", "6", "--out", str(out)], check=True
    )
    rows = [json.loads(line) for line in open(out)]
    assert len(rows) == H * n
    assert all(len(r["kept"]) <= 6 for r in rows)
