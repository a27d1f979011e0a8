"""The conformance kit's Python side (docs/conformance.md): drive an eviction scorer written in
Python over a golden file's trace, or turn kept masks held as numpy arrays into the decisions that
``kvoracle.conformance_check`` compares with the golden ones."""

import numpy as np

from ._core import KvoError


def kv_attention(trace, layer):
    """The attention of each KV head of ``layer``: the mean over its query heads, ``[kv_heads, n, n]``
    in float64 (what the golden units replay)."""
    a = np.asarray(trace.attn(layer), dtype=np.float64)
    n, group = trace.n_tokens, trace.n_heads // trace.n_kv_heads
    return a.reshape(trace.n_kv_heads, group, n, n).mean(axis=1)


def _evicted(tokens, cache, where):
    out = sorted(int(t) for t in tokens)
    held = set(cache)
    for t in out:
        if t not in held:
            raise KvoError(f"{where}: the scorer evicted token {t}, which the cache does not hold")
    if len(set(out)) != len(out):
        raise KvoError(f"{where}: the scorer evicted a token twice")
    return out


def drive(evict, trace, policy, budget, tied=None):
    """Runs a scorer over every step of ``trace`` and returns its decisions for case ``policy@budget``.

    At every step i (ascending) the new token i joins the cache and ``evict(unit, i, attention, cache)``
    returns the tokens to remove from it (any iterable; empty: none); ``cache`` is the tokens held,
    ascending, and ``attention`` the float64 attention of query i over tokens 0..i. ``tied`` says
    which units share one kept set, as the golden file's contract does:

    - None: each (layer, KV head) its own; ``unit`` is ``(layer, head)``, ``attention`` that KV
      head's row, ``[i + 1]``;
    - ``"layer"`` (OpenVINO GenAI's blocks): a layer's KV heads share one; ``unit`` is
      ``(layer, None)``, ``attention`` ``[kv_heads, i + 1]``; decisions name the layer only;
    - ``"model"`` (llama.cpp's position removal): one set for the whole model; ``unit`` is None,
      ``attention`` ``[layers, kv_heads, i + 1]``; decisions name neither layer nor head."""
    if tied not in (None, "layer", "model"):
        raise KvoError(f"tied: expected None, 'layer' or 'model', got {tied!r}")
    layers = [kv_attention(trace, layer) for layer in range(trace.n_layers)]
    if tied == "model":
        units = [None]
    elif tied == "layer":
        units = [(ly, None) for ly in range(trace.n_layers)]
    else:
        units = [(ly, h) for ly in range(trace.n_layers) for h in range(trace.n_kv_heads)]
    caches = {u: [] for u in units}
    out = []
    for i in range(trace.n_tokens):
        for u in units:
            cache = caches[u]
            cache.append(i)
            if u is None:
                row = np.stack([a[:, i, : i + 1] for a in layers])
            elif u[1] is None:
                row = layers[u[0]][:, i, : i + 1]
            else:
                row = layers[u[0]][u[1], i, : i + 1]
            where = f"step {i}"
            if u is not None:
                where += f", layer {u[0]}" + ("" if u[1] is None else f", KV head {u[1]}")
            gone = _evicted(evict(u, i, row, list(cache)), cache, where)
            if not gone:
                continue
            caches[u] = [t for t in cache if t not in set(gone)]
            decision = {"policy": policy, "budget": int(budget), "step": i, "evicted": gone}
            if u is not None:
                decision["layer"] = u[0]
                if u[1] is not None:
                    decision["head"] = u[1]
            out.append(decision)
    return out


def decisions_from_kept(policy, budget, kept):
    """The decisions of case ``policy@budget`` from a boolean array ``kept[layer, kv_head, step, token]``
    (True: the token is in the cache after the step), one decision per unit and step."""
    kept = np.asarray(kept, dtype=bool)
    if kept.ndim != 4 or kept.shape[2] != kept.shape[3]:
        raise KvoError(f"kept: expected a [layers, kv_heads, n, n] array, got shape {list(kept.shape)}")
    out = []
    for layer, head, step in np.ndindex(*kept.shape[:3]):
        tokens = np.flatnonzero(kept[layer, head, step]).tolist()
        out.append(
            {"policy": policy, "budget": int(budget), "layer": layer, "head": head, "step": step, "kept": tokens}
        )
    return out
