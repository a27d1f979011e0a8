"""H2O replay written the way the reference code does it (h2o_hf utils_real_drop,
H2OKVCache_LayerWise), in NumPy: all heads of a layer at once, a compacted cache per head,
attention of the new query over it, accumulated scores, and when the cache exceeds heavy + recent,
the top-`heavy` scores among positions [0, len - recent) plus the last `recent` positions (a
vectorised top-k per step). fp64, so its decisions can be compared with kvoracle's."""

import numpy as np


def h2o_layer(q, k, heavy, recent, scale):
    """q [H, n, d], k [H, n, d] (one key head per query head); returns evict_step [H, n] (-1: kept)."""
    H, n, d = q.shape
    q = q.astype(np.float64)
    k = k.astype(np.float64)
    rows = np.arange(H)[:, None]
    idx = np.zeros((H, 0), dtype=np.int64)  # cached token positions, in order
    score = np.zeros((H, 0))
    evict = np.full((H, n), -1, dtype=np.int64)
    for i in range(n):
        idx = np.concatenate([idx, np.full((H, 1), i)], axis=1)
        score = np.concatenate([score, np.zeros((H, 1))], axis=1)
        logits = np.einsum("hd,hld->hl", q[:, i], k[rows, idx]) * scale
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        score += probs
        length = idx.shape[1]
        if length > heavy + recent:
            cand = length - recent
            top = np.argpartition(-score[:, :cand], heavy - 1, axis=1)[:, :heavy]
            keep = np.zeros((H, length), dtype=bool)
            keep[rows, top] = True
            keep[:, cand:] = True
            gone = idx[~keep].reshape(H, -1)
            evict[rows, gone] = i
            idx = idx[keep].reshape(H, -1)
            score = score[keep].reshape(H, -1)
    return evict
