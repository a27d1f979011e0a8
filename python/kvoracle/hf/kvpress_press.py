"""KvoraclePress: any kvoracle policy as a kvpress press (kvpress 0.5.5's BasePress interface), so
kvpress's pipeline and benchmarks can run kvoracle's policies, its own computation of kvpress's
presses, and the oracle-guided choice from a recorded trace.

At prefill, per layer and per batch row (each row is scored and cut on its own, exactly as if it
ran alone), the press builds a one-layer kvoracle trace of the row's prompt (post-RoPE queries
recomputed from the hidden states the way kvpress's SnapKV does, the cache's keys and values) and
keeps per KV head the positions that ``policy`` names:

- ``"optimum"``: the k = kvpress's compute_n_kept(P, compression_ratio) positions that maximise the
  attention mass the queries *after* the prompt give the kept keys (kvoracle.prefill_optimum on
  ``trace``, a recording of prompt + continuation: look-ahead, a what-if reference no online press
  can reach on that objective);
- a press of ``kvoracle.press_names()`` (``"snapkv"``, or ``"press:tova"``): kvoracle's computation
  of it, with that press's own count (PyramidKV's per-layer budget);
- a policy of ``kvoracle.policies()`` (default: the registry's first, H2O; ``"policy:tova"``): the
  policy replayed over the prompt on KV-head units (the group's mean attention) with the prompt
  held whole and cut to k once after its last token (kvoracle.policy_prefill_kept).

A name that is both a press and a policy (``tova``, ``random``) must be qualified; every
configuration that cannot run is refused when the press is built, in one line.
"""

from dataclasses import dataclass, field

import numpy as np
import torch
from kvpress.presses.base_press import BasePress
from kvpress.utils import compute_n_kept, get_prerope_query_states
from transformers.models.llama.modeling_llama import rotate_half

from .. import _core


def _refuse(message):
    raise _core.KvoError(f"KvoraclePress: {message}")


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        _refuse(f"option {name}={value!r} must be an integer >= {minimum}")


@dataclass
class KvoraclePress(BasePress):
    """kvpress press running a kvoracle policy, press or the prefill optimum; see the module docstring."""

    compression_ratio: float = 0.0
    policy: str = field(default_factory=lambda: _core.policies()[0]["name"])
    trace: str = ""  # policy="optimum": a kvoracle trace of the prompt and its continuation
    options: dict = field(default_factory=dict)  # press parameters (window_size, ...) or a policy's seed
    _recorded: object = field(default=None, init=False, repr=False)
    _set: dict = field(default=None, init=False, repr=False)
    # The positions kept per layer by the last compression, [batch, H_kv, k] each (compare_presses reads them).
    kept_by_layer: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        if not 0 <= self.compression_ratio < 1:
            _refuse(f"compression_ratio {self.compression_ratio} is outside [0, 1)")
        try:
            self._set = _core.prefill_set(self.policy)
        except _core.KvoError as e:
            _refuse(str(e))
        kind, name, options = self._set["kind"], self._set["name"], dict(self.options)
        if self.trace and kind != "optimum":
            _refuse(f"trace= is read by policy='optimum' only, not by '{self.policy}'")
        if kind == "optimum":
            if not self.trace:
                _refuse("policy 'optimum' needs trace= (a recording of prompt + continuation)")
            if options:
                _refuse(f"policy 'optimum' takes no options (got {', '.join(sorted(options))})")
            self._recorded = _core.read_trace(self.trace)
        elif kind == "press":
            allowed = _core.press_parameters(name)
            for key, value in options.items():
                if key not in allowed:
                    _refuse(
                        f"option '{key}' is not a parameter of press '{name}' (it reads: "
                        f"{', '.join(allowed) or 'none'})"
                    )
                _check_int(key, value, 0)
        else:
            why = _core.policy_press_refusal(name, float(self.compression_ratio))
            if why:
                _refuse(why)
            for key, value in options.items():
                if key != "seed":
                    _refuse(f"option '{key}' is not a parameter of policy '{name}' as a press (it takes: seed)")
                _check_int(key, value, 0)

    def _row_kept(self, module, hidden_states, keys, values, kwargs, row, k):
        """Positions kept per KV head of one batch row, [H_kv, k'] (ascending), computed from that
        row alone, and k' (k, or the press's own count)."""
        n_kv, P = keys.shape[1], keys.shape[2]
        layer, kind, name = module.layer_idx, self._set["kind"], self._set["name"]
        if kind == "optimum":
            rec = self._recorded
            if rec.n_tokens <= P or not np.allclose(
                rec.k(layer)[:, :P], keys[row].float().cpu().numpy(), atol=1e-4, rtol=1e-4
            ):
                _refuse(
                    f"the trace {self.trace} is not a recording of the prompt of batch row {row} followed by a "
                    f"continuation (layer {layer})"
                )
            return np.stack([_core.prefill_optimum(rec, layer, kv, P, k)["set"] for kv in range(n_kv)]), k
        cos, sin = kwargs["position_embeddings"]
        cos, sin = (t[row : row + 1] if t.shape[0] > 1 else t for t in (cos, sin))
        q = get_prerope_query_states(module, hidden_states[row : row + 1])
        q = q * cos[:, -P:].unsqueeze(1) + rotate_half(q) * sin[:, -P:].unsqueeze(1)
        arrays = [[t[0].detach().float().cpu().numpy()] for t in (q, keys[row : row + 1], values[row : row + 1])]
        one = _core.Trace.from_arrays(*arrays, attn_scale=float(module.scaling), prompt_len=P)
        # The model layer this one is (pyramidkv's budget falls with it).
        one.metadata = {"model_layers": str(layer), "model_n_layers": str(module.config.num_hidden_layers)}
        if kind == "press":
            r = _core.run_press(one, 0, P, name, compression_ratio=self.compression_ratio, **self.options)
            return np.stack(r["kept"]), int(r["n_kept"])
        seed = int(self.options.get("seed", 0))
        return np.stack(_core.policy_prefill_kept(one, name, P, k, seed=seed)), k

    def kept(self, module, hidden_states, keys, values, kwargs):
        """Positions kept per batch row and KV head, [batch, H_kv, k] (ascending)."""
        batch, n_kv, P = keys.shape[:3]
        layer = module.layer_idx
        if hidden_states.shape[1] != P:
            _refuse(
                f"layer {layer} holds {P} keys for {hidden_states.shape[1]} prompt queries: a press before it "
                "(in a ComposedPress) has already cut this layer and kvpress does not say which positions it "
                "kept; place KvoraclePress first"
            )
        k = compute_n_kept(P, self.compression_ratio)
        rows = []
        for row in range(batch):
            kept, want = self._row_kept(module, hidden_states, keys, values, kwargs, row, k)
            kept = np.asarray(kept, dtype=np.int64)
            if kept.shape != (n_kv, want) or (np.diff(kept, axis=1) <= 0).any() or kept.min() < 0 or kept.max() >= P:
                _refuse(
                    f"internal: '{self.policy}' kept {kept.shape} positions on layer {layer}, row {row}, not "
                    f"{want} distinct ones per KV head"
                )
            rows.append(kept)
        return np.stack(rows)

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        if self.compression_ratio == 0:
            return keys, values
        kept = self.kept(module, hidden_states, keys, values, kwargs)
        self.kept_by_layer[module.layer_idx] = kept
        idx = torch.as_tensor(kept, device=keys.device, dtype=torch.long)
        idx = idx[:, :, :, None].expand(-1, -1, -1, keys.shape[-1])
        return keys.gather(2, idx).contiguous(), values.gather(2, idx).contiguous()
