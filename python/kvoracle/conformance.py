"""The conformance kit's Python side (docs/conformance.md): drive an eviction scorer written in
Python, or a kvpress press itself, over a golden file's trace, or turn kept masks held as numpy
arrays into the decisions that ``kvoracle.conformance_check`` compares with the golden ones."""

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


def _press_label(press):
    """The golden case's name of a kvpress press: its registry key ("snapkv"), qualified where a
    kvoracle policy shares it ("press:tova"), or "adakv(NAME)" around AdaKVPress."""
    from . import _core

    names = {cls: name for name, cls in _core.press_names()}
    policies = {p["name"] for p in _core.policies()}
    inner = press.press if type(press).__name__ == "AdaKVPress" else press
    # A subclass (a scorer under test built on one of kvpress's presses) is named by its kvpress base.
    known = [c.__name__ for c in type(inner).__mro__ if c.__name__ in names]
    if not known:
        raise KvoError(
            f"press: the kit has no golden semantics for {type(inner).__name__} (known: {', '.join(sorted(names))})"
        )
    name = names[known[0]]
    if inner is not press:
        return f"adakv({name})"
    return f"press:{name}" if name in policies else name


class _Config:
    """The fields of a transformers config that kvpress's presses read."""

    def __init__(self, trace):
        self.num_attention_heads = trace.n_heads
        self.num_key_value_heads = trace.n_kv_heads
        self.num_hidden_layers = trace.n_layers
        self.head_dim = trace.head_dim
        self.hidden_size = trace.n_heads * trace.head_dim
        self._attn_implementation = "sdpa"  # AdaKVPress refuses eager attention


def _attention_module(trace, layer):
    """A stand-in for a Llama-like attention layer: the queries come straight from the hidden
    states (q_proj is the identity), so that kvpress reads the trace's own post-RoPE queries."""
    import torch

    module = torch.nn.Module()
    module.config = _Config(trace)
    module.layer_idx = layer
    module.head_dim = trace.head_dim
    module.q_proj = torch.nn.Identity()
    return module


def _layer_inputs(trace, layer, P):
    """One trace's q (scaled to kvpress's 1 / sqrt(head_dim)), k and v of a layer's prompt, float32;
    a trace without values gets value rows that name their positions."""
    d = trace.head_dim
    q = np.asarray(trace.q(layer), dtype=np.float32)[:, :P] * np.float32(trace.attn_scale * np.sqrt(d))
    k = np.asarray(trace.k(layer), dtype=np.float32)[:, :P]
    try:
        v = np.asarray(trace.v(layer), dtype=np.float32)[:, :P]
    except KvoError:  # no values in this layer
        v = np.broadcast_to(np.arange(P, dtype=np.float32)[None, :, None], k.shape)
    return q, k, v


def drive_press(press, trace, policy=None, budget=None, batch_with=()):
    """Runs a kvpress press's own ``compress`` on every layer of ``trace``'s prompt and returns its
    decisions for the golden case ``policy@budget`` (default: the press's case name, as
    ``conformance golden --presses`` names it, and kvpress's n_kept at its compression ratio): at
    the prompt's last step, per (layer, KV head), the prompt tokens its compressed cache lacks.

    The trace needs q and k (``conformance_kit_trace("press")``, or one recorded by
    ``kvoracle.hf.record_trace``). Each layer's press sees a Llama-like module whose q_proj is the
    identity and position embeddings that rotate nothing, so its queries are the trace's post-RoPE
    queries (scaled to kvpress's 1 / sqrt(head_dim)); float32. ``batch_with``: traces of the same
    shape that fill the batch's first rows, the golden trace being the last, so that a press which
    lets one row's decisions leak into another's is caught. The kept positions are read back from
    the values the press kept (each position's value row is matched; a trace without values gets
    rows that name their positions). AdaKVPress's masked keys are read from the module.
    ``attentions`` are given (the causal softmax of q and k) only to ObservedAttentionPress, which
    needs them; every other press computes its own, as under SDPA."""
    import torch
    from kvpress import ObservedAttentionPress

    P = int(trace.prompt_len)
    if P < 2 or trace.head_dim == 0:
        raise KvoError(
            "trace: a press needs q and k and a prompt of at least 2 tokens (conformance_kit_trace('press'))"
        )
    rows = [*batch_with, trace]
    shape = (trace.n_layers, trace.n_heads, trace.n_kv_heads, trace.head_dim)
    for other in batch_with:
        if (other.n_layers, other.n_heads, other.n_kv_heads, other.head_dim) != shape or other.prompt_len < P:
            raise KvoError("batch_with: every trace needs the golden trace's layers, heads, head_dim and prompt")
    policy = _press_label(press) if policy is None else policy
    if budget is None:
        budget = max(1, int(P * (1 - press.compression_ratio)))  # kvpress's compute_n_kept
    H, Hkv, d = trace.n_heads, trace.n_kv_heads, trace.head_dim
    b, B = len(rows) - 1, len(rows)  # the golden trace's row, the batch
    inner = press.press if type(press).__name__ == "AdaKVPress" else press
    out = []
    for layer in range(trace.n_layers):
        q, k, v = (np.stack(x) for x in zip(*(_layer_inputs(t, layer, P) for t in rows)))
        k, v = torch.from_numpy(np.ascontiguousarray(k)), torch.from_numpy(np.ascontiguousarray(v))
        hidden = torch.from_numpy(np.ascontiguousarray(q.transpose(0, 2, 1, 3).reshape(B, P, H * d)))
        rope = (torch.ones(B, P, d), torch.zeros(B, P, d))
        attentions = None
        if isinstance(inner, ObservedAttentionPress):
            logits = torch.from_numpy(q) @ k.repeat_interleave(H // Hkv, dim=1).transpose(2, 3) / np.sqrt(d)
            attentions = torch.softmax(logits + torch.full((P, P), float("-inf")).triu(1), dim=-1)
        module = _attention_module(trace, layer)
        with torch.no_grad():
            _, kept_values = press.compress(module, hidden, k, v, attentions, {"position_embeddings": rope})
        masked = getattr(module, "masked_key_indices", None)
        for head in range(Hkv):
            if masked is not None:
                rows_, heads, seqs = (t.numpy() for t in masked)
                gone = sorted(int(j) for j in seqs[(heads == head) & (rows_ == b)])
            else:
                position = {v[b, head, j].numpy().tobytes(): j for j in range(P)}
                if len(position) < P:
                    raise KvoError(
                        f"trace: layer {layer} KV head {head} repeats a value row; its kept positions are ambiguous"
                    )
                held = {position.get(r.numpy().tobytes(), -1) for r in kept_values[b, head]}
                if -1 in held:
                    raise KvoError(f"press: layer {layer} KV head {head} kept a value row the golden trace lacks")
                gone = sorted(set(range(P)) - held)
            if gone:
                decision = {"policy": policy, "budget": int(budget), "layer": layer, "head": head, "step": P - 1}
                out.append({**decision, "evicted": gone})
    return out
