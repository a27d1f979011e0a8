"""EvictingCache: a transformers Cache whose rows are evicted by a kvoracle policy, step by step,
per layer and KV head, inside `model.generate` or any forward loop.

Every new token is one step, as in kvoracle's EvictingDecoder: it takes a row, each query head of
a KV head's group attends the rows that head holds, the group's mean attention goes to
KvEvictionManager, and the rows it names leave the cache at once. A prompt is processed the same
way, token by token inside the one prefill call (with prompt_len = P the manager keeps everything
until the prompt is complete, then truncates once, as the H2O code does). Under per-head budgets
the steps run in the engine's own pools (kvoracle.EvictingPools, float32 on the CPU): each layer
hands its new tokens' q, k, v over once and the pools step through them in C++, KV heads on
threads, so a prompt costs about one prefill; the steps and kept sets are the engine's, and the
cache tensors keep the rows the pools hold.

Under a shared budget (budget_scope="layer" or "model") a layer's KV heads hold different counts:
each head's rows are packed to the left and the shorter heads padded with rows that no query sees
(position -1 in `held`). A layer's heads step in lockstep; transformers runs layer after layer, so
a model-wide budget needs every decision at the end of a call: prompt_len = the prompt's length,
then one token per call (generate does that).
"""

import numpy as np
import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from .._core import KvEvictionManager, KvoError
from .._core import policy as policy_names
from . import attention


class EvictingLayer(CacheLayerMixin):
    """One layer: keys/values [batch, kv_heads, held, d] and the true position of every row."""

    is_sliding = False
    is_compileable = False

    def __init__(self):
        super().__init__()
        self.positions = None  # int64 [batch, kv_heads, held]
        self.valid = None  # bool [batch, kv_heads, held] once a shared budget padded a head; None: all rows
        self.seen = 0  # tokens this layer has been given (the next token's position)
        self.pooled = False  # per-head budgets: kvoracle's pools decide; these tensors follow what they hold

    def lazy_initialization(self, key_states, value_states):
        self.dtype, self.device = key_states.dtype, key_states.device
        b, h, _, d = key_states.shape
        self.keys = key_states.new_zeros((b, h, 0, d))
        self.values = value_states.new_zeros((b, h, 0, value_states.shape[-1]))
        self.positions = torch.zeros((b, h, 0), dtype=torch.int64)
        self.is_initialized = True

    def update(self, key_states, value_states, cache_kwargs=None):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        m = key_states.shape[-2]
        new = torch.arange(self.seen, self.seen + m, dtype=torch.int64).expand(*key_states.shape[:2], m)
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self.values = torch.cat([self.values, value_states], dim=-2)
        self.positions = torch.cat([self.positions, new], dim=-1)
        if self.valid is not None:
            self.valid = torch.cat([self.valid, torch.ones(new.shape, dtype=torch.bool)], dim=-1)
        self.seen += m
        return self.keys, self.values

    def keep(self, rows):
        """rows: int64 [batch, kv_heads, kept], indices into the held axis (same count per head)."""
        self.keys = self.keys.gather(2, rows[..., None].expand(-1, -1, -1, self.keys.shape[-1]).to(self.device))
        self.values = self.values.gather(2, rows[..., None].expand(-1, -1, -1, self.values.shape[-1]).to(self.device))
        self.positions = self.positions.gather(2, rows)

    def live_rows(self):
        """bool [batch, kv_heads, held]: the rows that hold a token (padding rows are not live)."""
        return torch.ones(self.positions.shape, dtype=torch.bool) if self.valid is None else self.valid.clone()

    def keep_ragged(self, live):
        """live: bool [batch, kv_heads, held]; each head keeps its live rows, packed to the left and
        padded to the longest head with rows marked invalid (position -1)."""
        width = int(live.sum(-1).max())
        order = torch.sort((~live).to(torch.int8), dim=-1, stable=True).indices[..., :width]  # live rows first
        valid = live.gather(2, order)
        self.keep(order)
        self.positions = self.positions.masked_fill(~valid, -1)
        self.valid = None if bool(valid.all()) else valid

    def get_mask_sizes(self, cache_position):
        return self.held() + cache_position.shape[0], 0

    def held(self):
        return 0 if self.keys is None else self.keys.shape[-2]

    def get_seq_length(self):
        return self.seen  # true positions: RoPE and cache_position must not see the eviction

    def get_max_cache_shape(self):
        return -1

    def reset(self):
        self.keys = self.values = self.positions = None
        self.seen, self.is_initialized = 0, False


class EvictingCache(Cache):
    """A transformers Cache evicting with a kvoracle policy:

        cache = kvoracle.hf.EvictingCache(model, policy=kvoracle.policy.H2O, budget="20%")
        out = model.generate(ids, past_key_values=cache, max_new_tokens=64)

    The model is needed because each step's attention weights are seen only by the attention
    function: the constructor routes the model's attention through kvoracle's ("kvoracle",
    torch SDPA when no EvictingCache is active; `model.set_attn_implementation(...)` restores).
    budget: tokens ("64") or a ratio ("20%") of max_len, which defaults to the first call's
    length (the prompt), as kvpress's compression ratio does. Unpadded sequences only.
    log=True keeps every eviction: `evictions[(seq, layer, kv_head)]` = [(step, [positions])].
    Other keyword arguments are kvoracle's run options (prompt_len, recent, seed, sinks, history,
    objective, ...: `help(kvoracle.KvEvictionManager)`), passed to the eviction manager.
    """

    def __init__(self, model, policy=policy_names.H2O, budget="20%", max_len=None, log=False, **options):
        config = model.config.get_text_config(decoder=True)
        self.n_layers = config.num_hidden_layers
        self.n_positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", 1 << 20)
        super().__init__(layers=[EvictingLayer() for _ in range(self.n_layers)])
        self.policy, self.budget_spec, self.max_len = policy, str(budget), max_len
        self.options = options
        self.manager, self.batch = None, None
        self.pools = None  # per sequence, kvoracle's EvictingPools (per-head budgets)
        self.log = log
        self._evictions = {} if log else None
        self._pending = None
        # Every argument checked now (policy, budget, run options), as KvoraclePress does, rather than
        # first inside generate: a manager of the model's shape over its positions, then dropped.
        n_kv = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
        try:
            KvEvictionManager(
                policy, self.budget_spec, self.n_layers, n_kv, max_len=max_len or self.n_positions, **options
            )
        except (KvoError, TypeError) as e:
            raise KvoError(f"EvictingCache: {e}") from None
        attention.route(model)

    # transformers calls update() just before the layer's attention function: remember the layer.
    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        if self._pending is not None:
            raise KvoError(
                f"EvictingCache: layer {self._pending} never reached kvoracle's attention function (the model's "
                "attention is no longer 'kvoracle'?)"
            )
        if self.manager is None:
            self._start(key_states)
        keys, values = self.layers[layer_idx].update(key_states, value_states, cache_kwargs)
        self._pending = layer_idx
        attention._active.handler = self
        return keys, values

    def _start(self, key_states):
        self.batch, n_kv = key_states.shape[0], key_states.shape[1]
        if self.options.get("budget_scope") == "model" and int(self.options.get("prompt_len", 0)) < key_states.shape[2]:
            raise KvoError(
                f"EvictingCache: budget_scope='model' decides once every layer saw a position, and transformers runs "
                f"the {key_states.shape[2]}-token prompt layer after layer; give prompt_len={key_states.shape[2]} "
                "(then one token per call)"
            )
        budget, max_len = self.budget_spec, self.max_len
        if max_len is None:  # a ratio refers to the prompt; positions may go on to the model's limit
            prompt = key_states.shape[2]
            budget = str(
                KvEvictionManager(self.policy, budget, self.n_layers, n_kv, max_len=prompt, **self.options).budget(0, 0)
            )
            max_len = max(self.n_positions, prompt)
        self.manager = KvEvictionManager(
            self.policy,
            budget,
            self.n_layers,
            n_kv,
            batch=self.batch,
            max_len=max_len,
            **self.options,
        )
        if self.manager.budget_scope == "head":  # the engine's pools: a prompt at the cost of one prefill
            for layer in self.layers:
                layer.pooled = True

    @property
    def evictions(self):
        """With log=True, {(seq, layer, kv_head): [(step, [positions])]}: every eviction; else None."""
        if self._evictions is None or self.pools is None:
            return self._evictions
        out = {}
        for b, pools in enumerate(self.pools):
            for layer in range(self.n_layers):
                for kv in range(self.manager_kv):
                    logged = pools.evictions(layer, kv)
                    if logged:
                        out[(b, layer, kv)] = [(step, [int(g) for g in gone]) for step, gone in logged]
        return out

    def _attend_pooled(self, layer_idx, query, key, value, scale):
        """Per-head budgets: each sequence's new tokens go through kvoracle's pools (EvictingPools,
        the engine's decoder), one step per token, KV heads on threads."""
        b_n, h, m, d = query.shape
        h_kv = key.shape[1]
        if value.shape[-1] != d or key.shape[-1] != d:
            raise KvoError(
                f"EvictingCache: layer {layer_idx} has keys of {key.shape[-1]} and values of {value.shape[-1]} per "
                f"head for queries of {d}; kvoracle's pools hold one head size"
            )
        if self.pools is None:
            from .._core import EvictingPools

            self.manager_kv, self.scale = h_kv, float(scale)
            self.pools = [
                EvictingPools(self.manager, self.n_layers, h_kv, d, h // h_kv, float(scale), seq=b) for b in range(b_n)
            ]
            for pools in self.pools:
                pools.set_eviction_log(self.log)
        elif abs(float(scale) - self.scale) > 1e-12 * self.scale:
            raise KvoError(f"EvictingCache: layer {layer_idx} scales its logits by {scale}, layer 0 by {self.scale}")
        layer = self.layers[layer_idx]
        pos0 = layer.seen - m
        out = []
        live = torch.zeros(layer.positions.shape, dtype=torch.bool)
        for b in range(b_n):
            q = query[b].transpose(0, 1).reshape(m, h * d).float().cpu().numpy()
            k = key[b, :, -m:].transpose(0, 1).reshape(m, h_kv * d).float().cpu().numpy()
            v = value[b, :, -m:].transpose(0, 1).reshape(m, h_kv * d).float().cpu().numpy()
            out.append(torch.from_numpy(self.pools[b].attend_layer(layer_idx, pos0, q, k, v)).view(m, h, d))
            for kv in range(h_kv):  # the cache's rows follow what the pools hold
                held = self.pools[b].held(layer_idx, kv)
                live[b, kv] = torch.from_numpy(np.isin(layer.positions[b, kv].numpy(), held))
        if not bool(live.all()):
            counts = live.sum(-1)
            if bool((counts == counts.flatten()[0]).all()):
                layer.keep(live.nonzero()[:, 2].view(b_n, h_kv, -1))
            else:  # per-head budgets of different sizes (budget overrides)
                layer.keep_ragged(live)
        return torch.stack(out).to(device=query.device, dtype=query.dtype)

    def attend(self, module, query, key, value, scale, kwargs):
        """Per new token: its queries attend the rows held; the manager evicts; rows leave."""
        attention._active.handler = None
        layer_idx, self._pending = self._pending, None
        if module.layer_idx != layer_idx:
            raise KvoError(
                f"EvictingCache: attention of layer {module.layer_idx} after the cache update of layer {layer_idx}"
            )
        layer = self.layers[layer_idx]
        attention.refuse_unless_plain(module, {**kwargs, "sliding_window": None}, key.shape[2])
        window = kwargs.get("sliding_window")
        if window is not None and layer.seen > window:
            raise KvoError(
                f"EvictingCache: layer {layer_idx} attends a sliding window of {window} tokens; "
                f"past {window} tokens the model's own cache drops rows, which kvoracle does not model"
            )
        if layer.pooled:
            return self._attend_pooled(layer_idx, query, key, value, scale)
        b_n, h_kv, n_rows, _ = key.shape
        m, group = query.shape[2], query.shape[1] // h_kv
        first = n_rows - m  # rows of earlier tokens
        if self.manager.budget_scope != "head":
            return self._attend_shared(layer, layer_idx, query, key, value, scale, first)
        out = query.new_empty(b_n, m, query.shape[1], value.shape[-1])
        live = torch.ones(b_n, h_kv, n_rows, dtype=torch.bool)
        positions = layer.positions
        for b in range(b_n):
            evicted = False  # until the first eviction of this call, the visible rows are a prefix
            for t in range(m):
                if evicted:
                    rows = self._visible_rows(live[b, :, : first + t + 1], layer_idx)  # [h_kv, c]
                    k_rows = key[b].gather(1, rows[..., None].expand(-1, -1, key.shape[-1]))
                    v_rows = value[b].gather(1, rows[..., None].expand(-1, -1, value.shape[-1]))
                    held = positions[b].gather(1, rows).numpy().astype(np.int32)
                else:
                    rows = None
                    k_rows, v_rows = key[b, :, : first + t + 1], value[b, :, : first + t + 1]  # [h_kv, c, d]
                    held = positions[b, :, : first + t + 1].numpy().astype(np.int32)
                q_t = query[b, :, t].view(h_kv, group, -1)  # [h_kv, g, d]
                probs = torch.softmax((q_t.float() @ k_rows.float().transpose(1, 2)) * scale, dim=-1)  # [h_kv, g, c]
                out[b, t] = (probs.to(v_rows.dtype) @ v_rows).reshape(query.shape[1], -1)
                mean = probs.detach().double().mean(1).numpy()  # the scores, not part of any gradient
                pos = int(held[0, -1])
                for kv in range(h_kv):
                    gone = self.manager.step(b, layer_idx, kv, pos, held[kv], mean[kv])
                    if len(gone):
                        index = torch.from_numpy(np.nonzero(np.isin(held[kv], gone))[0])
                        live[b, kv, index if rows is None else rows[kv][index]] = False
                        evicted = True
                        if self._evictions is not None:
                            self._evictions.setdefault((b, layer_idx, kv), []).append((pos, [int(g) for g in gone]))
        counts = live.sum(-1)
        if bool((counts != counts.flatten()[0]).any()):
            raise KvoError(
                f"EvictingCache: layer {layer_idx} KV heads hold different numbers of rows "
                f"({counts.tolist()}); per-head budgets need a ragged cache"
            )
        if not bool(live.all()):
            layer.keep(live.nonzero()[:, 2].view(b_n, h_kv, -1))
        return out

    def _attend_shared(self, layer, layer_idx, query, key, value, scale, first):
        """A shared budget: each KV head attends its own live rows (the others masked out); what the
        group evicts while another head steps arrives through take_evicted."""
        b_n, h_kv, n_rows, _ = key.shape
        m, group = query.shape[2], query.shape[1] // h_kv
        out = query.new_empty(b_n, m, query.shape[1], value.shape[-1])
        live = layer.live_rows()
        positions = layer.positions.numpy()

        def drop(b, kv, gone, c, step):
            self._drop(live, positions, layer_idx, b, kv, gone, step, c)

        for b in range(b_n):
            for t in range(m):
                c, pos = first + t + 1, int(positions[b, 0, first + t])
                for kv in range(h_kv):
                    drop(b, kv, self.manager.take_evicted(b, layer_idx, kv), c, pos - 1)  # decided at pos - 1
                visible = live[b, :, :c]  # [h_kv, c]
                q_t = query[b, :, t].view(h_kv, group, -1)
                scores = (q_t.float() @ key[b, :, :c].float().transpose(1, 2)) * scale  # [h_kv, g, c]
                probs = torch.softmax(scores.masked_fill(~visible[:, None, :], float("-inf")), dim=-1)
                out[b, t] = (probs.to(value.dtype) @ value[b, :, :c]).reshape(query.shape[1], -1)
                mean = probs.detach().double().mean(1).numpy()
                for kv in range(h_kv):
                    rows = np.nonzero(visible[kv].numpy())[0]
                    held = positions[b, kv, rows].astype(np.int32)
                    drop(b, kv, self.manager.step(b, layer_idx, kv, pos, held, mean[kv, rows]), c, pos)
        if self.manager.budget_scope == "layer":  # the layer's last step decided for every head
            for b in range(b_n):
                for kv in range(h_kv):
                    drop(b, kv, self.manager.take_evicted(b, layer_idx, kv), n_rows, int(positions[b, 0, -1]))
        if not bool(live.all()):
            layer.keep_ragged(live)
        return out

    @staticmethod
    def _visible_rows(visible, layer_idx):
        counts = visible.sum(-1)
        if bool((counts != counts[0]).any()):
            raise KvoError(
                f"EvictingCache: layer {layer_idx} KV heads hold different numbers of rows "
                f"({counts.tolist()}); per-head budgets need a ragged cache"
            )
        return visible.nonzero()[:, 1].view(visible.shape[0], -1)

    def _drop(self, live, positions, layer_idx, b, kv, gone, step, c=None):
        """Marks the rows of the positions `gone` (among the first c) dead in live[b, kv]; logs them."""
        if len(gone):
            c = positions.shape[-1] if c is None else c
            live[b, kv, :c] &= torch.from_numpy(~np.isin(positions[b, kv, :c], gone))
            if self._evictions is not None:
                self._evictions.setdefault((b, layer_idx, kv), []).append((step, [int(g) for g in gone]))

    def _settle(self):
        """Drops what a model-wide budget's last decision evicted from layers that have not stepped
        since (they would drop it at their next step)."""
        if self.manager is None or self.manager.budget_scope == "head":
            return
        for layer_idx, layer in enumerate(self.layers):
            if not layer.is_initialized:
                continue
            live, positions = layer.live_rows(), layer.positions.numpy()
            for b in range(positions.shape[0]):
                for kv in range(positions.shape[1]):
                    gone = self.manager.take_evicted(b, layer_idx, kv)
                    self._drop(live, positions, layer_idx, b, kv, gone, layer.seen - 1)
            if not bool(live.all()):
                layer.keep_ragged(live)

    def held(self, layer_idx):
        """Rows held per (sequence, KV head) of a layer: true positions, [batch, kv_heads, held]
        (-1: a padding row, where heads hold different counts)."""
        self._settle()
        return self.layers[layer_idx].positions

    def budget(self, layer_idx, kv_head=0):
        return None if self.manager is None else self.manager.budget(layer_idx, kv_head)

    def bytes_held(self):
        """K/V bytes of the rows held (padding rows under a shared budget not counted)."""
        self._settle()
        total = 0
        for l in self.layers:
            if l.is_initialized:
                rows = l.keys.shape[-2] * l.keys.shape[1] * l.keys.shape[0] if l.valid is None else int(l.valid.sum())
                total += rows * (
                    l.keys.shape[-1] * l.keys.element_size() + l.values.shape[-1] * l.values.element_size()
                )
        return total

    def _unsupported(self, what):
        raise KvoError(f"EvictingCache: {what} is not supported (each sequence has its own eviction history)")

    def reorder_cache(self, beam_idx):
        self._unsupported("beam search")

    def crop(self, max_length):
        self._unsupported("cropping (assisted decoding)")

    def batch_repeat_interleave(self, repeats):
        self._unsupported("num_return_sequences > 1")

    def batch_select_indices(self, indices):
        self._unsupported("selecting sequences")
