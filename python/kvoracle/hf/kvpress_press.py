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

A press is a score: ``KvoraclePress(policy="snapkv")`` is a ``KvoracleScorerPress``, a kvpress
``ScorerPress`` whose ``score()`` is kvoracle's computation of the press's scores, so kvpress's
wrappers that take a ScorerPress (AdaKVPress, DecodingPress, ChunkPress, CriticalKVPress,
KeyRerotationPress, ...) run it exactly as they run kvpress's own press. Alone it still cuts with
kvoracle's kept sets (ties: the earlier position). So is a policy whose cut keeps the top-k of a
per-token score (``policies()``' ``prefill_score``: h2o's accumulated attention, tova's last
attention, scissorhands' marks): its ``score()`` is that score after the prompt
(kvoracle.policy_prefill_scores), with its recent window one above the row's highest score. It
reads every prompt query, so DecodingPress's buffer cannot serve it. Any other policy and the
optimum are not scores: they stay a plain BasePress, which those wrappers do not take.
"""

from dataclasses import dataclass, field

import numpy as np
import torch
from kvpress.presses.base_press import BasePress
from kvpress.presses.scorer_press import ScorerPress
from kvpress.utils import compute_n_kept, get_prerope_query_states
from transformers.models.llama.modeling_llama import rotate_half

from .. import _core


def _refuse(message):
    raise _core.KvoError(f"KvoraclePress: {message}")


def _refuse_partial_queries(name, queries, P, layer):
    """A policy (a score or not) replays every prompt query; a wrapper that passes fewer (kvpress's
    DecodingPress passes its buffer of recent hidden states) cannot run it."""
    _refuse(
        f"policy '{name}' replays all {P} prompt queries, and kvpress passed {queries} hidden states on layer "
        f"{layer}: a wrapper that passes only recent hidden states (DecodingPress, CAMPress) cannot run a policy; "
        "a press that reads no more queries than it passes can (kvoracle.press_queries_read)"
    )


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        _refuse(f"option {name}={value!r} must be an integer >= {minimum}")


def _is_score(policy):
    """Whether a policy name is a score: a press kvoracle computes, or a policy whose prompt cut is the
    top-k of a per-token score; bad names are refused later."""
    try:
        kind = _core.prefill_set(policy) if isinstance(policy, str) else None
    except _core.KvoError:
        return False
    if kind is None or kind["kind"] == "optimum":
        return False
    if kind["kind"] == "press":
        return True
    return any(p["name"] == kind["name"] and p["prefill_score"] for p in _core.policies())


@dataclass
class KvoraclePress(BasePress):
    """kvpress press running a kvoracle policy, press or the prefill optimum; see the module docstring."""

    def __new__(cls, *args, **kwargs):
        # A press kvoracle computes is a score: built as the ScorerPress subclass.
        policy = kwargs.get("policy", args[1] if len(args) > 1 else None)
        if cls is KvoraclePress and _is_score(policy):
            cls = KvoracleScorerPress
        return super().__new__(cls)

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

    def _row_trace(self, module, hidden_states, keys, values, kwargs, row):
        """One batch row as a one-layer kvoracle trace of its P keys. The queries are recomputed from
        the hidden states as kvpress's SnapKV does; when kvpress passes fewer hidden states than
        keys (DecodingPress's buffer), they are the last positions' and the earlier queries are
        zeros, which the caller may only use with a press that does not read them."""
        P, q_len = keys.shape[2], hidden_states.shape[1]
        cos, sin = kwargs["position_embeddings"]
        cos, sin = (t[row : row + 1] if t.shape[0] > 1 else t for t in (cos, sin))
        q = get_prerope_query_states(module, hidden_states[row : row + 1])
        q = q * cos[:, -q_len:].unsqueeze(1) + rotate_half(q) * sin[:, -q_len:].unsqueeze(1)
        if q_len < P:
            q = torch.cat([q.new_zeros(*q.shape[:2], P - q_len, q.shape[3]), q], dim=2)
        arrays = [[t[0].detach().float().cpu().numpy()] for t in (q, keys[row : row + 1], values[row : row + 1])]
        one = _core.Trace.from_arrays(*arrays, attn_scale=float(module.scaling), prompt_len=P)
        # The model layer this one is (pyramidkv's budget falls with it).
        one.metadata = {
            "model_layers": str(module.layer_idx),
            "model_n_layers": str(module.config.num_hidden_layers),
        }
        return one

    def _row_press(self, module, hidden_states, keys, values, kwargs, row):
        """kvoracle's run of the press on one batch row: its scores [H_kv, P], kept sets and count.
        Refuses, in one line, fewer hidden states than the press reads queries."""
        P, q_len, name = keys.shape[2], hidden_states.shape[1], self._set["name"]
        reads = _core.press_queries_read(name, P, **self.options)
        if q_len < reads:
            _refuse(
                f"press '{name}' reads the last {reads} of the {P} queries, and kvpress passed {q_len} hidden states "
                f"on layer {module.layer_idx} (a DecodingPress buffer holds fewer: raise hidden_states_buffer_size)"
            )
        one = self._row_trace(module, hidden_states, keys, values, kwargs, row)
        return _core.run_press(one, 0, P, name, compression_ratio=self.compression_ratio, **self.options)

    def _row_kept(self, module, hidden_states, keys, values, kwargs, row, k):
        """Positions kept per KV head of one batch row, [H_kv, k'] (ascending), computed from that
        row alone, k' (k, or the press's own count), and a press's scores [H_kv, P] (else None)."""
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
            return np.stack([_core.prefill_optimum(rec, layer, kv, P, k)["set"] for kv in range(n_kv)]), k, None
        if kind == "press":
            r = self._row_press(module, hidden_states, keys, values, kwargs, row)
            return np.stack(r["kept"]), int(r["n_kept"]), r["scores"]
        if hidden_states.shape[1] != P:
            _refuse_partial_queries(name, hidden_states.shape[1], P, layer)
        one = self._row_trace(module, hidden_states, keys, values, kwargs, row)
        seed = int(self.options.get("seed", 0))
        return np.stack(_core.policy_prefill_kept(one, name, P, k, seed=seed)), k, None

    def kept(self, module, hidden_states, keys, values, kwargs):
        """Positions kept per batch row and KV head, [batch, H_kv, k] (ascending)."""
        return self._cut(module, hidden_states, keys, values, kwargs)[0]

    def _cut(self, module, hidden_states, keys, values, kwargs):
        """The kept positions [batch, H_kv, k] (ascending), and the order the compressed cache holds
        them in: a press's as kvpress's ScorerPress gathers them (torch.topk's: descending score,
        equal scores by position), so that wrappers that read the cache's order later (DecodingPress
        pooling SnapKV's scores) see what they see with kvpress's press; ascending otherwise."""
        batch, n_kv, P = keys.shape[:3]
        layer = module.layer_idx
        if hidden_states.shape[1] > P:
            _refuse(
                f"layer {layer} holds {P} keys for {hidden_states.shape[1]} prompt queries: a press before it "
                "(in a ComposedPress) has already cut this layer and kvpress does not say which positions it "
                "kept; place KvoraclePress first"
            )
        k = compute_n_kept(P, self.compression_ratio)
        rows, orders = [], []
        for row in range(batch):
            kept, want, scores = self._row_kept(module, hidden_states, keys, values, kwargs, row, k)
            kept = np.asarray(kept, dtype=np.int64)
            if kept.shape != (n_kv, want) or (np.diff(kept, axis=1) <= 0).any() or kept.min() < 0 or kept.max() >= P:
                _refuse(
                    f"internal: '{self.policy}' kept {kept.shape} positions on layer {layer}, row {row}, not "
                    f"{want} distinct ones per KV head"
                )
            if hidden_states.shape[1] < P and want != k:
                _refuse(
                    f"press '{self._set['name']}' keeps its own count ({want} on layer {layer}), not the {k} kvpress's "
                    "DecodingPress asks for (kvpress's own PyramidKVPress is not supported there either)"
                )
            rows.append(kept)
            if scores is not None:
                kept = np.take_along_axis(
                    kept, np.argsort(-np.take_along_axis(scores, kept, axis=1), axis=1, kind="stable"), axis=1
                )
            orders.append(kept)
        return np.stack(rows), np.stack(orders)

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        if self.compression_ratio == 0:
            return keys, values
        kept, order = self._cut(module, hidden_states, keys, values, kwargs)
        self.kept_by_layer[module.layer_idx] = kept
        idx = torch.as_tensor(order, device=keys.device, dtype=torch.long)
        idx = idx[:, :, :, None].expand(-1, -1, -1, keys.shape[-1])
        return keys.gather(2, idx).contiguous(), values.gather(2, idx).contiguous()


@dataclass
class KvoracleScorerPress(KvoraclePress, ScorerPress):
    """KvoraclePress of a press kvoracle computes or of a score policy, as a kvpress ScorerPress:
    score() gives kvoracle's scores for each batch row, [batch, H_kv, P] in the keys' dtype, so
    kvpress's wrappers run it as they run kvpress's own press; compress() alone keeps kvoracle's kept
    sets (a press's ties: the earlier position; a policy's: its own cut), in kvpress's cache order."""

    def score(self, module, hidden_states, keys, values, attentions, kwargs):
        if self._set["kind"] == "press":
            rows = [
                self._row_press(module, hidden_states, keys, values, kwargs, row)["scores"]
                for row in range(keys.shape[0])
            ]
        else:
            rows = [
                self._row_policy_scores(module, hidden_states, keys, values, kwargs, row)
                for row in range(keys.shape[0])
            ]
        return torch.as_tensor(np.stack(rows), device=keys.device).to(keys.dtype)

    def _row_policy_scores(self, module, hidden_states, keys, values, kwargs, row):
        """A score policy's scores [H_kv, P] on one batch row after the prompt, cut at kvpress's k for
        this press's ratio (the recent window, +inf in kvoracle, one above the row's highest here)."""
        P, name = keys.shape[2], self._set["name"]
        if hidden_states.shape[1] != P:
            _refuse_partial_queries(name, hidden_states.shape[1], P, module.layer_idx)
        k = compute_n_kept(P, self.compression_ratio)
        if k >= P:
            return np.zeros((keys.shape[1], P))
        one = self._row_trace(module, hidden_states, keys, values, kwargs, row)
        scores = _core.policy_prefill_scores(one, name, P, k, seed=int(self.options.get("seed", 0)))
        finite = scores[np.isfinite(scores)]
        scores[~np.isfinite(scores)] = (finite.max() if finite.size else 0.0) + 1.0
        return scores
