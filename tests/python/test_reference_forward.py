"""An independent numpy forward pass of the Llama architecture (fp32) on the GGUF weights;
kvoracle's logits for the first 32 tokens of a real text must agree to 1e-3 relative."""

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
from safetensors.numpy import load_file


def _weights(path):
    r = GGUFReader(path)
    w = {}
    for t in r.tensors:
        shape = tuple(int(x) for x in reversed(t.shape))  # numpy order: rows, cols
        w[t.name] = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
    meta = {k: r.fields[k].contents() for k in r.fields if k.startswith("llama.")}
    return w, meta


def _rms(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def _rope(x, heads, hd, theta):
    # GGUF stores q/k permuted for rotation of adjacent pairs (2i, 2i+1).
    T = x.shape[0]
    x = x.reshape(T, heads, hd // 2, 2)
    inv = theta ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    c, s = np.cos(ang).astype(np.float32)[:, None, :], np.sin(ang).astype(np.float32)[:, None, :]
    a, b = x[..., 0], x[..., 1]
    return np.stack([a * c - b * s, a * s + b * c], axis=-1).reshape(T, heads * hd)


def reference_logits(path, tokens):
    w, m = _weights(path)
    L, H, Hkv = m["llama.block_count"], m["llama.attention.head_count"], m["llama.attention.head_count_kv"]
    eps, theta = m["llama.attention.layer_norm_rms_epsilon"], m["llama.rope.freq_base"]
    E = w["token_embd.weight"]
    D = E.shape[1]
    hd = D // H
    T = len(tokens)
    x = E[tokens]
    mask = np.triu(np.full((T, T), -np.inf, dtype=np.float32), 1)
    for l in range(L):
        p = f"blk.{l}."
        h = _rms(x, w[p + "attn_norm.weight"], eps)
        q = _rope(h @ w[p + "attn_q.weight"].T, H, hd, theta)
        k = _rope(h @ w[p + "attn_k.weight"].T, Hkv, hd, theta)
        v = h @ w[p + "attn_v.weight"].T
        out = np.zeros((T, D), dtype=np.float32)
        for head in range(H):
            g = head // (H // Hkv)
            qh, kh, vh = q[:, head * hd : (head + 1) * hd], k[:, g * hd : (g + 1) * hd], v[:, g * hd : (g + 1) * hd]
            s = qh @ kh.T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, head * hd : (head + 1) * hd] = s @ vh
        x = x + out @ w[p + "attn_output.weight"].T
        h = _rms(x, w[p + "ffn_norm.weight"], eps)
        gate = h @ w[p + "ffn_gate.weight"].T
        x = x + ((gate / (1 + np.exp(-gate))) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
    return _rms(x, w["output_norm.weight"], eps) @ E.T


def test_logits_agree_with_the_numpy_reference(model_path, probe, text_path, tmp_path):
    out = tmp_path / "logits.safetensors"
    probe("logits", model_path, text_path, 32, out)
    ours = load_file(out)
    ref = reference_logits(model_path, ours["tokens"].astype(np.int64))
    err = np.abs(ours["logits"] - ref).max() / np.abs(ref).max()
    assert err <= 1e-3, f"relative max error {err:.3g}"
    assert (ours["logits"].argmax(axis=1) == ref.argmax(axis=1)).mean() >= 0.97
