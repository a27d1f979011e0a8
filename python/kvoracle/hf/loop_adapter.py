"""Adapter between a generation loop and kvoracle's eviction manager, in numpy (no torch needed).

A decoder that keeps, per layer, a K/V tensor [batch, kv_heads, held, head_dim] calls
``EvictionAdapter.step(layer, attn)`` after each new token with that token's attention weights
[batch, heads, held] over the keys it holds (the new one last). The adapter registers the step with
the manager (mean over each KV head's query group) and returns, per sequence and KV head, the
indices into the held axis to keep, ascending; every KV head keeps the same number of rows, so
the decoder can gather them into a dense tensor (docs/python.md has the transformers loop).
"""

import numpy as np

from .._core import KvEvictionManager


class EvictionAdapter:
    def __init__(self, policy, budget, n_layers, n_heads, n_kv_heads, max_len, batch=1, prompt_len=0):
        if n_heads % n_kv_heads:
            raise ValueError("n_heads must be a multiple of n_kv_heads")
        self.group = n_heads // n_kv_heads
        self.n_layers, self.n_kv_heads, self.batch = n_layers, n_kv_heads, batch
        self.manager = KvEvictionManager(
            policy, budget, n_layers, n_kv_heads, batch=batch, max_len=max_len, prompt_len=prompt_len
        )
        # positions[b][layer][kv]: token positions held, ascending (the decoder's held axis)
        self.positions = [
            [[np.zeros(0, dtype=np.int32) for _ in range(n_kv_heads)] for _ in range(n_layers)] for _ in range(batch)
        ]
        self.next_pos = np.zeros((batch, n_layers), dtype=np.int64)

    def step(self, layer, attn):
        """attn: [batch, heads, held] attention of the new token (held includes it, last).
        Returns keep[b][kv]: indices into the held axis to keep."""
        attn = np.asarray(attn, dtype=np.float64)
        if attn.ndim != 3 or attn.shape[0] != self.batch or attn.shape[1] != self.group * self.n_kv_heads:
            raise ValueError(f"attn must be [batch={self.batch}, heads={self.group * self.n_kv_heads}, held]")
        keep = []
        for b in range(self.batch):
            pos = int(self.next_pos[b, layer])
            row = []
            for kv in range(self.n_kv_heads):
                held = np.append(self.positions[b][layer][kv], pos).astype(np.int32)
                if attn.shape[2] != held.size:
                    raise ValueError(f"attn covers {attn.shape[2]} keys, the cache holds {held.size}")
                probs = attn[b, kv * self.group : (kv + 1) * self.group].mean(axis=0)
                gone = self.manager.step(b, layer, kv, pos, held, probs)
                mask = ~np.isin(held, gone)
                self.positions[b][layer][kv] = held[mask]
                row.append(np.nonzero(mask)[0])
            self.next_pos[b, layer] = pos + 1
            keep.append(row)
        return keep
