"""KvoraclePress: any kvoracle policy as a kvpress press (kvpress 0.5.5's BasePress interface), so
kvpress's pipeline and benchmarks can run kvoracle's policies, its own computation of kvpress's
presses, and the oracle-guided choice from a recorded trace.

At prefill, per layer, the press builds a one-layer kvoracle trace of the prompt (post-RoPE queries
recomputed from the hidden states the way kvpress's SnapKV does, the cache's keys and values) and
keeps per KV head the k = kvpress's compute_n_kept(P, compression_ratio) positions that:
- ``policy="optimum"``: maximise the attention mass the queries *after* the prompt give the kept
  keys (kvoracle.prefill_optimum on ``trace``, a recording of prompt + continuation: look-ahead,
  a what-if reference no online press can reach on that objective);
- a press name of ``kvoracle.press_names()`` (``"snapkv"``...): kvoracle's computation of it;
- a policy name of ``kvoracle.policies()`` (default: the registry's first, H2O): the policy replayed over
  the prompt on KV-head units (the group's mean attention) with the prompt held whole and cut to k
  once after its last token (kvoracle's prompt semantics), i.e. the cache it holds after the prompt.
"""
from dataclasses import dataclass, field

import numpy as np
import torch
from kvpress.presses.base_press import BasePress
from kvpress.utils import compute_n_kept, get_prerope_query_states
from transformers.models.llama.modeling_llama import rotate_half

from .. import _core


def _press_names():
    return {name for name, _ in _core.press_names()}


@dataclass
class KvoraclePress(BasePress):
    """kvpress press running a kvoracle policy; see the module docstring."""

    compression_ratio: float = 0.0
    policy: str = field(default_factory=lambda: _core.policies()[0]["name"])
    trace: str = ""  # policy="optimum": a kvoracle trace of the prompt and its continuation
    options: dict = field(default_factory=dict)  # press parameters (window_size, ...) or policy seed
    _recorded: object = field(default=None, init=False, repr=False)
    # The positions kept per layer by the last compression, [H_kv, k] each (compare_presses reads them).
    kept_by_layer: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        if not 0 <= self.compression_ratio < 1:
            raise _core.KvoError(f"KvoraclePress: compression_ratio {self.compression_ratio} is outside [0, 1)")
        presses, policies = _press_names(), {p["name"] for p in _core.policies()}
        if self.policy == "optimum":
            if not self.trace:
                raise _core.KvoError("KvoraclePress: policy 'optimum' needs trace= (a recording of prompt + continuation)")
            self._recorded = _core.read_trace(self.trace)
        elif self.policy not in presses and self.policy not in policies:
            raise _core.KvoError(f"KvoraclePress: unknown policy '{self.policy}' (kvoracle policies: "
                                 f"{', '.join(sorted(policies))}; presses: {', '.join(sorted(presses))}; or optimum)")

    def kept(self, module, hidden_states, keys, values, kwargs):
        """Positions kept per KV head, [H_kv, k] (ascending)."""
        n_kv, P = keys.shape[1], keys.shape[2]
        k = compute_n_kept(P, self.compression_ratio)
        layer = module.layer_idx
        if self.policy == "optimum":
            rec = self._recorded
            if rec.n_tokens <= P or not np.allclose(rec.k(layer)[:, :P], keys[0].float().cpu().numpy(), atol=1e-4,
                                                     rtol=1e-4):
                raise _core.KvoError(f"KvoraclePress: the trace {self.trace} is not a recording of this prompt "
                                     f"followed by a continuation (layer {layer})")
            return np.stack([_core.prefill_optimum(rec, layer, kv, P, k)["set"] for kv in range(n_kv)])
        cos, sin = kwargs["position_embeddings"]
        q = get_prerope_query_states(module, hidden_states)
        q = q * cos[:, -P:].unsqueeze(1) + rotate_half(q) * sin[:, -P:].unsqueeze(1)
        arrays = [[t[0].detach().float().cpu().numpy()] for t in (q, keys, values)]
        one = _core.Trace.from_arrays(*arrays, attn_scale=float(module.scaling), prompt_len=P)
        # The model layer this one is (pyramidkv's budget falls with it).
        one.metadata = {"model_layers": str(layer), "model_n_layers": str(module.config.num_hidden_layers)}
        if self.policy in _press_names():
            return np.stack(_core.run_press(one, 0, P, self.policy, compression_ratio=self.compression_ratio,
                                            **self.options)["kept"])
        heads = _core.replay(one, policy=self.policy, budget=str(k), gqa="kv-mean", prompt_len=P,
                             seed=int(self.options.get("seed", 0)))
        # One record per query head; a KV head's group shares its cache: take the group's first.
        group = q.shape[1] // n_kv
        first = {h["head"] // group: h for h in sorted(heads, key=lambda h: -h["head"])}
        return np.stack([np.asarray(first[kv]["kept"][-1]) for kv in range(n_kv)])

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        if self.compression_ratio == 0:
            return keys, values
        kept = self.kept(module, hidden_states, keys, values, kwargs)
        self.kept_by_layer[module.layer_idx] = kept
        idx = torch.as_tensor(kept, device=keys.device, dtype=torch.long)
        idx = idx[None, :, :, None].expand(keys.shape[0], -1, -1, keys.shape[-1])
        return keys.gather(2, idx).contiguous(), values.gather(2, idx).contiguous()
