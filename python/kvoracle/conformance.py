"""The conformance kit's Python side (docs/conformance.md): drive an eviction scorer written in
Python over a golden file's trace, or turn kept masks held as numpy arrays into the decisions that
``kvoracle.conformance_check`` compares with the golden ones."""

import numpy as np

from ._core import KvoError


def cache_attention(trace, layer, step, cache):
    """What a golden unit's policy sees at ``step``: for each KV head of ``layer``, the attention of
    query ``step`` over the tokens of ``cache`` (ascending, ``step`` included), each query head's row
    renormalised over ``cache`` and then averaged over the KV head's query heads. Returns
    ``[kv_heads, len(cache)]`` in float64, each row summing to 1."""
    a = np.asarray(trace.attn(layer), dtype=np.float64)[:, step, cache]
    a = a / a.sum(axis=1, keepdims=True)
    return a.reshape(trace.n_kv_heads, trace.n_heads // trace.n_kv_heads, len(cache)).mean(axis=1)


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
    ascending, and ``attention`` what the golden policies see (``cache_attention``): the attention of
    query i over ``cache``, float64, the last axis aligned with ``cache``. ``tied`` says which units
    share one kept set, as the golden file's contract does:

    - None: each (layer, KV head) its own; ``unit`` is ``(layer, head)``, ``attention``
      ``[len(cache)]``;
    - ``"layer"`` (OpenVINO GenAI's blocks): a layer's KV heads share one; ``unit`` is
      ``(layer, None)``, ``attention`` ``[kv_heads, len(cache)]``; decisions name the layer only;
    - ``"model"`` (llama.cpp's position removal): one set for the whole model; ``unit`` is None,
      ``attention`` ``[layers, kv_heads, len(cache)]``; decisions name neither layer nor head."""
    if tied not in (None, "layer", "model"):
        raise KvoError(f"tied: expected None, 'layer' or 'model', got {tied!r}")
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
                row = np.stack([cache_attention(trace, ly, i, cache) for ly in range(trace.n_layers)])
            elif u[1] is None:
                row = cache_attention(trace, u[0], i, cache)
            else:
                row = cache_attention(trace, u[0], i, cache)[u[1]]
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
