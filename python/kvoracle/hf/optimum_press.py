"""OptimumPress: the exact query-aware prefill optimum as a kvpress press: the ceiling every prefill
press is measured against, inside kvpress's own pipeline and evaluation.

For each context it keeps, per (layer, KV head), the k = kvpress's compute_n_kept(P, ratio) context
keys that receive the most attention from the queries that follow the context in the *full cache's*
run (the question, then the full cache's greedy answer), mean over the KV head's query group: a
modular objective, so the top-k is exact (kvoracle's prefill oracle, docs/presses.md). With several
questions on one context (kvpress's pipeline answers them on one compressed cache) the questions'
weights add. ``scope``: "head" keeps k per unit; "layer", "layerwise" and "model" share a budget of
the same total across a layer's KV heads or the model's units (docs/allocation.md). Counts that
differ between units are held as kvpress's AdaKVPress holds them: every key stays in the cache (so
every layer keeps one length, which transformers' attention masks need) and the evicted ones are
masked through kvpress's attention patch. Eager attention does not go through that patch (refused in
one line), and the patch's fake key fails, as it does for AdaKVPress, where no half-space holds
every query of a KV head (a random tiny model's).

The press needs the questions before the context is prefilled: ``prepare(model, context_ids,
questions_ids, max_new_tokens)`` runs the full cache and records its trace, and kvoracle's pipeline
(``kvoracle.hf.kvpress_eval.register``) calls it for every context; ``use(mass, context)`` takes a
reference built elsewhere (run_tasks builds one per instance).
"""

import os
import tempfile
from dataclasses import dataclass, field

import numpy as np
import torch
from kvpress.presses.base_press import BasePress
from kvpress.utils import compute_n_kept

from .. import _core

SCOPES = ("head", "layer", "layerwise", "model")


def _refuse(message):
    raise _core.KvoError(f"OptimumPress: {message}")


def greedy_answer(model, cache, question_ids, start, max_new_tokens):
    """kvpress's pipeline's greedy answer (generate_answer): the question at positions start..,
    then up to max_new_tokens tokens, a stopping token after the first included; returns their ids."""
    device = question_ids.device
    position_ids = torch.arange(start, start + question_ids.shape[1], device=device)[None]
    stop = model.generation_config.eos_token_id
    stop = set(stop if isinstance(stop, (list, tuple)) else [] if stop is None else [stop])
    with torch.no_grad():
        logits = model(
            input_ids=question_ids, past_key_values=cache, position_ids=position_ids, logits_to_keep=1
        ).logits
        ids = [int(logits[0, -1].argmax())]  # kvpress does not stop on the first token
        position = start + question_ids.shape[1]
        for _ in range(max_new_tokens - 1):
            step = torch.tensor([[ids[-1]]], device=device)
            logits = model(
                input_ids=step, past_key_values=cache, position_ids=torch.tensor([[position]], device=device)
            )
            ids.append(int(logits.logits[0, -1].argmax()))
            position += 1
            if ids[-1] in stop:
                break
    return ids


def full_cache_reference(model, context_ids, questions_ids, max_new_tokens):
    """The prefill optimum's reference for one context: the full cache answers each question greedily
    (as kvpress's pipeline does, the cache cut back to the context between questions), and each run
    (context, question, answer) is recorded, its question and answer run on the context's cache;
    returns kvoracle.MassOfOptimum over every run."""
    from transformers import DynamicCache

    from .record import record_trace

    context_ids = context_ids[:1]
    P = context_ids.shape[1]
    cache = DynamicCache()
    with torch.no_grad():
        model.model(input_ids=context_ids, past_key_values=cache)
    mass = None
    with tempfile.TemporaryDirectory(prefix="kvoracle-optimum-") as folder:
        for x, question in enumerate(questions_ids):
            question = question.to(context_ids.device)
            answer = greedy_answer(model, cache, question, P, max_new_tokens)
            cache.crop(P)
            ids = torch.cat([context_ids, question, torch.tensor([answer], device=context_ids.device)], dim=1)
            path = os.path.join(folder, f"run{x}.safetensors")
            record_trace(model, ids, path, values=False, cache=cache)  # the question and answer on the context
            cache.crop(P)
            trace = _core.read_trace(path)
            if mass is None:
                mass = _core.MassOfOptimum(trace, P)
            else:
                mass.add(trace)
            os.remove(path)
    return mass


@dataclass
class OptimumPress(BasePress):
    """The exact query-aware prefill optimum as a kvpress press; see the module docstring."""

    compression_ratio: float = 0.0
    scope: str = "head"
    # Where counts that differ between units are masked: "kvpress" (module.masked_key_indices, read by
    # kvpress's attention patch, as AdaKVPress) or "kvoracle" (module.kvoracle_evicted, read by the
    # attention handler run_tasks answers under, MaskedAttention; eager attention works too).
    mask: str = "kvpress"
    _mass: object = field(default=None, init=False, repr=False)
    _context: int = field(default=0, init=False, repr=False)
    _units: list = field(default=None, init=False, repr=False)  # this context's kept positions per unit

    def __post_init__(self):
        if not 0 <= self.compression_ratio < 1:
            _refuse(f"compression_ratio {self.compression_ratio} is outside [0, 1)")
        if self.scope not in SCOPES:
            _refuse(f"scope '{self.scope}' is not one of {', '.join(SCOPES)}")
        if self.mask not in ("kvpress", "kvoracle"):
            _refuse(f"mask '{self.mask}' is not kvpress or kvoracle")

    def prepare(self, model, context_ids, questions_ids, max_new_tokens):
        """Builds the reference for the next context: the full cache's runs of its questions."""
        if context_ids.shape[0] != 1:
            _refuse(f"the reference is one context's; got a batch of {context_ids.shape[0]}")
        self.use(full_cache_reference(model, context_ids, questions_ids, max_new_tokens), context_ids.shape[1])

    def use(self, mass, context):
        """Takes the reference (kvoracle.MassOfOptimum of the full cache's runs) of the next context."""
        self._mass, self._context, self._units = mass, int(context), None
        return self

    def _layer_sets(self, layer, n_layers, n_kv, P):
        if self._mass is None:
            _refuse(
                "no reference for this context: run the press in kvoracle's pipeline (kvoracle.hf.kvpress_eval."
                "register()) or call prepare(model, context_ids, questions_ids, max_new_tokens) first"
            )
        if P != self._context:
            _refuse(f"layer {layer} holds {P} context keys; the reference was built for a context of {self._context}")
        if self._units is None:
            sets = self._mass.optimum_sets(self.scope, compute_n_kept(P, self.compression_ratio))
            if len(sets) != n_layers * n_kv:
                _refuse(f"the reference has {len(sets)} (layer, KV head) units; the model has {n_layers * n_kv}")
            self._units = [np.asarray(s, dtype=np.int64) for s in sets]
        return self._units[layer * n_kv : (layer + 1) * n_kv]

    @property
    def kept_units(self):
        """The positions each (layer, KV head) kept in the last compression, layer-major (sets)."""
        return [set(u.tolist()) for u in self._units or []]

    @property
    def masks(self):
        """Whether the last compression masked (kept every key, evicted some per unit)."""
        return self._units is not None and len(set(map(len, self._units))) > 1

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        if self.compression_ratio == 0:
            return keys, values
        batch, n_kv, P = keys.shape[:3]
        if batch != 1:
            _refuse(f"the reference is one context's; kvpress passed a batch of {batch}")
        layer = module.layer_idx
        sets = self._layer_sets(layer, module.config.num_hidden_layers, n_kv, P)
        if not self.masks:  # one count for every unit: the cache holds only the kept keys
            idx = torch.as_tensor(np.stack(sets), device=keys.device)[None, :, :, None].expand(
                -1, -1, -1, keys.shape[-1]
            )
            return keys.gather(2, idx).contiguous(), values.gather(2, idx).contiguous()
        implementation = module.config._attn_implementation
        if implementation == "eager" and self.mask == "kvpress":
            _refuse(
                f"scope '{self.scope}' keeps different counts per unit, which kvpress masks through its attention "
                "patch; eager attention does not go through it: load the model with attn_implementation='sdpa'"
            )
        evicted = np.ones((n_kv, P), dtype=bool)
        for h, s in enumerate(sets):
            evicted[h, s] = False
        if self.mask == "kvoracle":
            module.kvoracle_evicted = torch.as_tensor(evicted, device=keys.device)
            return keys, values
        heads, positions = np.nonzero(evicted)
        module.masked_key_indices = (
            torch.zeros(len(heads), dtype=torch.long, device=keys.device),
            torch.as_tensor(heads, device=keys.device),
            torch.as_tensor(positions, device=keys.device),
        )
        return keys, values


class MaskedAttention:
    """Attention handler (kvoracle.hf.attention.activate) for an OptimumPress with mask="kvoracle":
    each KV head's queries attend every key but the context positions the press evicted from that
    (layer, KV head) (module.kvoracle_evicted, [H_kv, P]); exact softmax over the rest."""

    def attend(self, module, query, key, value, scale, kwargs):
        import math

        from . import attention

        attention.refuse_unless_plain(module, kwargs, key.shape[2])
        evicted = getattr(module, "kvoracle_evicted", None)
        if evicted is None:
            return attention.causal_sdpa(query, key, value, scale)
        b, h, q, _ = query.shape
        h_kv, n = key.shape[1], key.shape[2]
        group = h // h_kv
        keep = torch.ones(h_kv, q, n, dtype=torch.bool, device=query.device).tril(n - q)
        keep[:, :, : evicted.shape[1]] &= ~evicted[:, None, :]
        logits = (query.float() @ key.repeat_interleave(group, 1).float().transpose(-1, -2)) * scale
        logits = logits.masked_fill(~keep.repeat_interleave(group, 0)[None], -math.inf)
        out = torch.softmax(logits, -1) @ value.repeat_interleave(group, 1).float()
        return out.transpose(1, 2).contiguous().to(query.dtype)
