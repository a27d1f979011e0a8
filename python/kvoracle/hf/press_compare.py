"""compare_presses: kvpress's presses (and kvoracle's policies) against the exact prefill optimum on
one text, in both of the measures people ask for:

- retained mass: the attention mass the continuation's queries give the kept prompt keys, as a
  fraction of the optimum with the same k (kvoracle.prefill_optimum on a trace recorded of the
  whole text: exact, LP-dual certified), mean and worst over (layer, KV head);
- closed loop: the prompt compressed at prefill by the press (kvpress's own class when kvpress has
  it, KvoraclePress otherwise), then the continuation teacher-forced through transformers with
  position ids continuing after the prompt (as kvpress's pipeline does): NLL of the continuation
  tokens and mean KL(full || compressed) of the next-token distributions. The first continuation
  token is predicted from the uncompressed prefill, as in kvpress.

The ``optimum`` row compresses to the mass-optimal set: a look-ahead what-if (it reads the
continuation's attention); its mass fraction is 1 by definition, its NLL is measured, not bounded.
"""

import os
import tempfile

import numpy as np
import torch

from .. import _core
from .kvpress_press import KvoraclePress
from .record import record_trace


def _press(entry, ratio, trace_path, seed):
    import kvpress

    kind, name = entry["kind"], entry["name"]
    if kind == "press":
        cls = getattr(kvpress, dict(_core.press_names())[name])
        seeded = "seed" in cls.__dataclass_fields__  # RandomPress
        return cls(compression_ratio=ratio, **({"seed": seed} if seeded else {}))
    if kind == "optimum":
        return KvoraclePress(compression_ratio=ratio, policy="optimum", trace=trace_path)
    return KvoraclePress(compression_ratio=ratio, policy=f"policy:{name}", options={"seed": seed})


def _log_probs(logits):
    return torch.log_softmax(logits.double(), dim=-1)


def _prefill_then_continue(model, ids, P, press):
    """Logits predicting tokens P..n-1: the prefill under eager attention (ObservedAttention reads
    its weights) with the press's hook, then the continuation under SDPA with position ids after
    the prompt; one batched pass when every layer holds as many keys, else token by token (per-layer
    budgets: transformers sizes the causal mask by layer 0, which only a single query can skip)."""
    from transformers import DynamicCache

    n, cache, before = ids.shape[1], DynamicCache(), model.config._attn_implementation
    try:
        with torch.no_grad():
            model.set_attn_implementation("eager")
            if press is None:
                first = model(ids[:, :P], past_key_values=cache).logits[0, -1:]
            else:
                with press(model):
                    first = model(ids[:, :P], past_key_values=cache).logits[0, -1:]
            model.set_attn_implementation("sdpa")
            if len({layer.keys.shape[2] for layer in cache.layers}) == 1:
                rest = model(
                    ids[:, P : n - 1], past_key_values=cache, position_ids=torch.arange(P, n - 1).unsqueeze(0)
                ).logits[0]
            else:
                rest = torch.cat(
                    [
                        model(ids[:, t : t + 1], past_key_values=cache, position_ids=torch.tensor([[t]])).logits[0]
                        for t in range(P, n - 1)
                    ]
                )
    finally:
        model.set_attn_implementation(before)
    return torch.cat([first, rest])


def _kept_sets(entry, ratio, trace, layer, P, seed):
    """kvoracle's kept sets of a kvpress press on the recorded trace (equal to kvpress's own:
    tests/python/test_kvpress.py); None for a kvoracle policy (read from the press instead)."""
    if entry["kind"] == "press":
        return _core.run_press(trace, layer, P, entry["name"], compression_ratio=ratio, seed=seed)["kept"]
    return None


def _entries(presses, policies):
    """The rows' sets in order, each once: presses, policies, the optimum. A name in ``presses`` is
    a press and one in ``policies`` a policy, so tova and random mean what the list says."""
    entries = [_core.prefill_set(f"press:{n}") for n in presses] + [_core.prefill_set(f"policy:{p}") for p in policies]
    out, seen = [], set()
    for e in entries + [_core.prefill_set("optimum")]:
        if (e["kind"], e["name"]) not in seen:
            seen.add((e["kind"], e["name"]))
            out.append(e)
    return out


def compare_presses(
    model, input_ids, prompt_len, presses=None, ratios=(0.5, 0.8, 0.9, 0.95), policies=None, seed=0, progress=None
):
    """Records per (press or policy, ratio): mass fraction of the optimum (mean, worst), prompt mass
    kept, continuation NLL and mean KL to the full cache. ``presses``: kvpress registry names
    (default: every press kvoracle computes); ``policies``: kvoracle policies run as KvoraclePress
    (default: the registry's first, H2O); an ``optimum`` row is always added. Each row's ``press``
    is its label (``press:tova`` and ``policy:tova`` where a press and a policy share the name) and
    ``kind`` says press, policy or optimum. ``progress``: called once per finished row."""
    ids = torch.as_tensor(np.asarray(input_ids) if not torch.is_tensor(input_ids) else input_ids)
    if ids.ndim == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.ndim != 1:  # a batch would otherwise be read as one sequence, its rows end to end
        raise _core.KvoError(
            f"compare_presses: input_ids must be one sequence ([n] or [1, n]), not shape {tuple(ids.shape)}"
        )
    ids = ids.reshape(1, -1)
    n, P = ids.shape[1], int(prompt_len)
    if not 1 <= P < n - 1:
        raise _core.KvoError(f"compare_presses: prompt_len must be in [1, {n - 2}] (a continuation of 2+ tokens)")
    if presses is None:
        presses = [name for name, _ in _core.press_names()]
    if policies is None:
        policies = [_core.policies()[0]["name"]]
    entries = _entries(presses, policies)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "text.safetensors")
        record_trace(model, ids, path)
        trace = _core.read_trace(path)
        L, n_kv = trace.n_layers, trace.n_kv_heads
        units = [(layer, kv) for layer in range(L) for kv in range(n_kv)]
        weights = {u: np.asarray(_core.prefill_optimum(trace, u[0], u[1], P, 0)["weights"]) for u in units}
        best = {u: np.cumsum(np.sort(w)[::-1]) for u, w in weights.items()}  # optimum at k: best[u][k - 1]
        full = _log_probs(_prefill_then_continue(model, ids, P, None))
        target = ids[0, P:n]
        full_nll = float(-full[torch.arange(n - P), target].mean())
        rows = []
        for entry in entries:
            for ratio in ratios:
                press = _press(entry, ratio, path, seed)
                lp = _log_probs(_prefill_then_continue(model, ids, P, press))
                nll = float(-lp[torch.arange(n - P), target].mean())
                kl = float((full.exp() * (full - lp)).sum(-1).clamp_min(0).mean())
                fractions, shares, ks = [], [], []
                for layer in range(L):
                    kept = _kept_sets(entry, ratio, trace, layer, P, seed)
                    if kept is None:
                        kept = press.kept_by_layer[layer][0]  # batch row 0: the one sequence
                    for kv in range(n_kv):
                        w, S = weights[(layer, kv)], np.asarray(kept[kv])
                        opt, value, mass = best[(layer, kv)][len(S) - 1], w[S].sum(), best[(layer, kv)][-1]
                        fractions.append(value / opt if opt > 0 else 1.0)
                        shares.append(value / mass if mass > 0 else 1.0)
                        ks.append(len(S))
                rows.append(
                    {
                        "press": entry["label"],
                        "kind": entry["kind"],
                        "compression_ratio": ratio,
                        "k": float(np.mean(ks)),
                        "mass_fraction": float(np.mean(fractions)),
                        "worst_fraction": float(np.min(fractions)),
                        "prompt_share": float(np.mean(shares)),
                        "nll": nll,
                        "mean_kl": kl,
                    }
                )
                if progress:
                    progress(rows[-1])
    return {"tokens": n, "prompt_len": P, "full_nll": full_nll, "rows": rows}
