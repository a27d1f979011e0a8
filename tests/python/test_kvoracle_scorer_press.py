"""KvoraclePress of a press as a kvpress ScorerPress (python/kvoracle/hf/kvpress_press.py): a press is a
ScorerPress and a policy is not; under kvpress's wrappers (AdaKVPress, CriticalKVPress,
KeyRerotationPress, ChunkPress, DecodingPress) it keeps what the same wrapper keeps around
kvpress's own press; under DecodingPress a press that reads more queries than kvpress passes is
refused in one line. A random small GQA Llama, nothing downloaded."""

import kvoracle
import numpy as np
import pytest
import torch
import transformers
from kvoracle_press_configs import CONFIGS, small_llama

kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
from kvoracle.hf import KvoraclePress, KvoracleScorerPress  # noqa: E402
from kvpress.presses.scorer_press import ScorerPress  # noqa: E402
from transformers import DynamicCache  # noqa: E402

pytestmark = [pytest.mark.transformers, pytest.mark.kvpress]
transformers.logging.set_verbosity_error()

P = 48
# (kvoracle press, its options, kvpress's own press of the same parameters)
PAIRS = {
    "knorm": ({}, lambda r: kvpress.KnormPress(compression_ratio=r)),
    "snapkv": ({"window_size": 2}, lambda r: kvpress.SnapKVPress(compression_ratio=r, window_size=2)),
    "press:tova": ({}, lambda r: kvpress.TOVAPress(compression_ratio=r)),
    "streaming_llm": ({"n_sink": 2}, lambda r: kvpress.StreamingLLMPress(compression_ratio=r, n_sink=2)),
    "keydiff": ({}, lambda r: kvpress.KeyDiffPress(compression_ratio=r)),
}
WRAPPERS = {
    "AdaKVPress": lambda p: kvpress.AdaKVPress(press=p),
    "CriticalKVPress": lambda p: kvpress.CriticalKVPress(press=p),
    "KeyRerotationPress": lambda p: kvpress.KeyRerotationPress(press=p),
    "ChunkPress": lambda p: kvpress.ChunkPress(press=p, chunk_length=24),
}


@pytest.fixture(scope="module")
def model():
    return small_llama("sdpa")  # AdaKVPress refuses eager attention


def distinct_tokens(rows, length, seed):
    """Rows of tokens none of which repeats within a row: a repeated token has a key of the same norm
    at another position (RoPE keeps norms), and knorm's tie is broken by kvoracle toward the earlier
    position but by torch.topk as it likes."""
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randperm(128, generator=g)[:length] for _ in range(rows)])


@pytest.fixture(scope="module")
def ids():
    return distinct_tokens(2, P, 4)


def what_is_kept(model, press, ids, new_tokens=0):
    """The cache's keys per layer after the prompt and `new_tokens` decoding steps, and AdaKV's masks.
    The decoded tokens are fixed, not generated: kvpress's wrappers hold the cache in top-k order and
    kvoracle in position order, so attention sums in another order and a generated token could differ."""
    cache = DynamicCache()
    fed = distinct_tokens(ids.shape[0], 128, 6)
    fed = torch.stack([row[~torch.isin(row, own)][:new_tokens] for row, own in zip(fed, ids)])  # none in the prompt
    with torch.no_grad(), press(model):
        model(ids, past_key_values=cache)
        for step in range(new_tokens):
            model(fed[:, step : step + 1], past_key_values=cache)
    masks = [getattr(layer.self_attn, "masked_key_indices", None) for layer in model.model.layers]
    for layer in model.model.layers:
        layer.self_attn.masked_key_indices = None
    return [layer.keys.clone() for layer in cache.layers], masks


def same_kept(a, b):
    """The same keys held per (batch row, KV head), in any order (wrappers gather in top-k order, and
    torch.topk orders equal scores, such as the forced ones, as it likes)."""
    if a.shape != b.shape:
        return False
    x, y = a.flatten(0, 1).double().numpy(), b.flatten(0, 1).double().numpy()
    for u, v in zip(x, y):
        u, v = u[np.lexsort(u.T[::-1])], v[np.lexsort(v.T[::-1])]
        if not np.allclose(u, v, atol=1e-6):
            return False
    return True


def test_a_press_is_a_scorer_press_and_a_policy_or_the_optimum_is_not(tmp_path):
    for name, options in CONFIGS.items():
        press = KvoraclePress(compression_ratio=0.5, policy=name, options=dict(options))
        kind = kvoracle._core.prefill_set(name)
        is_score = kind["kind"] == "press" or any(
            p["name"] == kind["name"] and p["prefill_score"] for p in kvoracle.policies()
        )
        assert isinstance(press, ScorerPress) == is_score == isinstance(press, KvoracleScorerPress), name
        assert isinstance(press, KvoraclePress)
    reads = {name: kvoracle.press_queries_read(name, 100, window_size=8) for name in ("knorm", "tova", "snapkv")}
    assert reads == {"knorm": 0, "tova": 1, "snapkv": 8}
    assert kvoracle.press_queries_read("observed_attention", 100) == 100
    positional = KvoraclePress(0.5, "knorm")
    assert isinstance(positional, KvoracleScorerPress) and positional.compression_ratio == 0.5


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
@pytest.mark.parametrize("name", list(PAIRS))
def test_wrapped_it_keeps_what_the_wrapper_keeps_around_kvpress_own_press(model, ids, wrapper, name):
    options, theirs = PAIRS[name]
    ours = KvoraclePress(compression_ratio=0.5, policy=name, options=dict(options))
    keys_ours, masks_ours = what_is_kept(model, WRAPPERS[wrapper](ours), ids)
    keys_theirs, masks_theirs = what_is_kept(model, WRAPPERS[wrapper](theirs(0.5)), ids)
    for a, b in zip(keys_ours, keys_theirs):
        assert same_kept(a, b), (wrapper, name)
    for a, b in zip(masks_ours, masks_theirs):
        if a is None or b is None:
            assert a is None and b is None
            continue
        assert set(zip(*(t.tolist() for t in a))) == set(zip(*(t.tolist() for t in b))), (wrapper, name)


@pytest.mark.parametrize("name", ["knorm", "snapkv", "press:tova"])
def test_under_decoding_press_it_keeps_what_kvpress_own_press_keeps(model, ids, name):
    options, theirs = PAIRS[name]

    def decoding(base):
        return kvpress.DecodingPress(
            base_press=base, compression_interval=4, target_size=40, hidden_states_buffer_size=8
        )

    # SnapKV with a window of one: its forced window's scores are equal, and the cache holds equal
    # scores by position in kvoracle and as torch.topk likes in kvpress; the next compression pools
    # SnapKV's scores over that order. Also one batch row: kvpress gives the window the largest score
    # of the whole batch, kvoracle that of the row (each row is cut as if it ran alone).
    if name == "snapkv":
        options, theirs = {"window_size": 1}, lambda r: kvpress.SnapKVPress(compression_ratio=r, window_size=1)
    ours = KvoraclePress(policy=name, options=dict(options))
    keys_ours, _ = what_is_kept(model, decoding(ours), ids[:1], new_tokens=10)
    keys_theirs, _ = what_is_kept(model, decoding(theirs(0.0)), ids[:1], new_tokens=10)
    for a, b in zip(keys_ours, keys_theirs):
        assert same_kept(a, b), name
    assert all(40 <= k.shape[2] < 40 + 4 for k in keys_ours)


def test_under_decoding_press_a_press_reading_every_query_is_refused_in_one_line(model, ids):
    press = kvpress.DecodingPress(
        base_press=KvoraclePress(policy="observed_attention"), compression_interval=2, target_size=40
    )
    with pytest.raises(kvoracle.KvoError, match="reads the last 50 of the 50 queries, and kvpress passed 2") as e:
        what_is_kept(model, press, ids, new_tokens=4)
    assert "\n" not in str(e.value)
    with pytest.raises(AssertionError, match="requires a ScorerPress"):
        kvpress.DecodingPress(base_press=KvoraclePress(policy=kvoracle.policy.WINDOW))
    policy = kvpress.DecodingPress(base_press=KvoraclePress(policy=kvoracle.policy.H2O), compression_interval=2,
                                   target_size=40)  # fmt: skip
    with pytest.raises(kvoracle.KvoError, match="replays all 50 prompt queries, and kvpress passed 2") as e:
        what_is_kept(model, policy, ids, new_tokens=4)
    # h2o is a score (AdaKVPress runs it): the refusal names what DecodingPress lacks, the queries.
    assert "\n" not in str(e.value) and "not a score" not in str(e.value) and "DecodingPress" in str(e.value)


SCORE_POLICIES = [p["name"] for p in kvoracle.policies() if p["prefill_score"]]


@pytest.mark.parametrize("policy", SCORE_POLICIES)
def test_a_score_policy_under_wrappers_keeps_its_own_cut(model, ids, policy):
    """h2o, tova and scissorhands as ScorerPresses: ChunkPress over one chunk and AdaKVPress with a
    safeguard of the whole budget keep exactly the policy's own cut (its top-k); AdaKVPress with
    kvpress's default safeguard keeps the layer's H k between its heads."""
    name = f"policy:{policy}"
    alone = KvoraclePress(compression_ratio=0.5, policy=name)
    assert isinstance(alone, KvoracleScorerPress)
    keys_alone, _ = what_is_kept(model, alone, ids)
    kept = dict(alone.kept_by_layer)
    keys_chunk, _ = what_is_kept(model, kvpress.ChunkPress(press=KvoraclePress(0.5, name), chunk_length=P), ids)
    for a, b in zip(keys_alone, keys_chunk):
        assert same_kept(a, b), policy
    _, masks = what_is_kept(model, kvpress.AdaKVPress(press=KvoraclePress(0.5, name), alpha_safeguard=1.0), ids)
    for layer, mask in enumerate(masks):
        evicted = set(zip(*(t.tolist() for t in mask)))
        for b in range(ids.shape[0]):
            for h in range(kept[layer].shape[1]):
                held = {j for j in range(P) if (b, h, j) not in evicted}
                assert held == set(kept[layer][b, h].tolist()), (policy, layer, b, h)
    _, masks = what_is_kept(model, kvpress.AdaKVPress(press=KvoraclePress(0.5, name)), ids)
    for mask in masks:
        assert len(mask[0]) == ids.shape[0] * kept[0].shape[1] * (P - P // 2)
