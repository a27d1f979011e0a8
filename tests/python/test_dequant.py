"""kvoracle's dequantisation equals the gguf package's numpy dequantisation, bit for bit, on
every tensor type the model file holds."""

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
from safetensors.numpy import load_file


def test_every_type_present_dequantises_identically(model_path, probe, tmp_path):
    reader = GGUFReader(model_path)
    by_type = {}
    for t in reader.tensors:
        by_type.setdefault(t.tensor_type.name, []).append(t)
    assert set(by_type) >= {"F32", "Q4_1", "Q8_0"}, by_type.keys()
    # Every tensor of layers 0 and 29, the embedding (Q8_0) and the final norm.
    chosen = [t for t in reader.tensors if t.name.startswith(("blk.0.", "blk.29.", "token_embd", "output_norm"))]
    assert {t.tensor_type.name for t in chosen} == set(by_type)
    out = tmp_path / "deq.safetensors"
    probe("dequant", model_path, out, *[t.name for t in chosen])
    ours = load_file(out)
    for t in chosen:
        ref = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(ours[t.name].shape)
        assert np.array_equal(ours[t.name], ref), f"{t.name} ({t.tensor_type.name}) differs"
