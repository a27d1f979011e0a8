"""Causal attention probabilities rebuilt in float64 from a trace's q and k, for the tests."""

import numpy as np


def causal_probs(q, k, scale):
    """q [H, n, d], k [H_kv, n, d] -> softmax(scale * q.k) over keys j <= i, [H, n, n]."""
    k = np.repeat(k.astype(np.float64), q.shape[0] // k.shape[0], axis=0)
    logits = np.einsum("hid,hjd->hij", q.astype(np.float64), k) * scale
    n = logits.shape[1]
    logits[:, np.triu(np.ones((n, n), dtype=bool), 1)] = -np.inf
    p = np.exp(logits - logits.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)
