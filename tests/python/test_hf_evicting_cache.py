"""kvoracle.hf's EvictingCache inside transformers' generate, on the tiny test model loaded from its
GGUF file: with the whole budget it is plain generate, and every eviction it makes (per head, with
the budget shared by a layer's heads or by the whole model) is the one kvoracle's own
EvictingDecoder makes on the same tokens."""

import json
import subprocess

import kvoracle as kvo
import numpy as np
import pytest
import torch
from kvoracle.hf import EvictingCache

pytestmark = pytest.mark.transformers

APACHE = "/usr/share/common-licenses/Apache-2.0"


@pytest.fixture(scope="module")
def apache_ids(tmp_path_factory, kvoracle, tiny_model_path):
    """kvoracle's token ids of the first 128 tokens of the Apache-2.0 text."""
    path = str(tmp_path_factory.mktemp("apache") / "kvo.safetensors")
    subprocess.run(
        [kvoracle, "-q", "record", "--text", APACHE, "--tokens", "128", "--model", tiny_model_path, "--out", path],
        check=True,
    )
    return torch.tensor(np.asarray(kvo.read_trace(path).tokens), dtype=torch.long)[None]


def shape(model):
    c = model.config
    return c.num_hidden_layers, c.num_key_value_heads, c.hidden_size // c.num_attention_heads


def cpp_evictions(probe, tiny_model_path, tmp_path, ids, *args):
    """The evictions kvoracle's EvictingDecoder makes on these token ids: [layer][kv head] -> {step: evicted}."""
    (tmp_path / "ids.json").write_text(json.dumps({"ids": ids}))
    probe("evict", tiny_model_path, tmp_path / "ids.json", *args[:2], tmp_path / "evictions.json", *args[2:])
    cpp = json.loads((tmp_path / "evictions.json").read_text())
    return [[{entry[0]: entry[1:] for entry in head} for head in layer] for layer in cpp]


def test_evicting_cache_full_budget_reproduces_generate(hf_tiny, apache_ids):
    ids = apache_ids
    prompt = ids[:, :64]
    args = dict(max_new_tokens=32, do_sample=False, attention_mask=torch.ones_like(prompt))
    plain = hf_tiny.generate(prompt, **args)
    full = hf_tiny.generate(prompt, past_key_values=EvictingCache(hf_tiny, "h2o", "100%", max_len=96), **args)
    assert torch.equal(plain, full)


def test_evicting_cache_agrees_with_evicting_decoder(hf_tiny, apache_ids, probe, tiny_model_path, tmp_path):
    """h2o at k = 24 over a 64-token prompt and 40 generated tokens: every head holds 24 rows, and
    every eviction (each layer and KV head at each of the 79 steps past the budget) is the one
    kvoracle's EvictingDecoder makes on the same tokens."""
    layers, kv_heads, head_dim = shape(hf_tiny)
    prompt = apache_ids[:, :64]
    cache = EvictingCache(hf_tiny, "h2o", "24", log=True)
    out = hf_tiny.generate(
        prompt, past_key_values=cache, max_new_tokens=40, do_sample=False, attention_mask=torch.ones_like(prompt)
    )
    assert all(tuple(layer.keys.shape) == (1, kv_heads, 24, head_dim) for layer in cache.layers)
    cpp = cpp_evictions(probe, tiny_model_path, tmp_path, out[0, :-1].tolist(), "h2o", "24")
    decisions = differing = 0
    for layer in range(layers):
        for kv in range(kv_heads):
            theirs, ours = cpp[layer][kv], dict(cache.evictions[(0, layer, kv)])
            assert ours.keys() == theirs.keys()
            decisions += len(ours)
            differing += sum(ours[s] != theirs[s] for s in ours)
    assert decisions == layers * kv_heads * (103 - 24) and differing == 0


@pytest.mark.parametrize("scope, prompt_len", [("layer", 0), ("model", 64)])
def test_evicting_cache_shares_budgets_as_the_evicting_decoder(
    hf_tiny, apache_ids, probe, tiny_model_path, tmp_path, scope, prompt_len
):
    """h2o at k = 24 with the budget shared by each layer's KV heads (evicting from the first token)
    or by the whole model (the 64-token prompt held whole, then one decision per token): the heads'
    counts differ, each layer (or the model) holds its sum, and every eviction is the one kvoracle's
    EvictingDecoder makes on the same tokens with the same scope."""
    layers, kv_heads, head_dim = shape(hf_tiny)
    prompt = apache_ids[:, :64]
    cache = EvictingCache(hf_tiny, kvo.policy.H2O, "24", log=True, budget_scope=scope, prompt_len=prompt_len)
    out = hf_tiny.generate(
        prompt, past_key_values=cache, max_new_tokens=24, do_sample=False, attention_mask=torch.ones_like(prompt)
    )
    counts = [[int((cache.held(layer)[0, kv] >= 0).sum()) for kv in range(kv_heads)] for layer in range(layers)]
    assert len({c for row in counts for c in row}) > 1
    if scope == "layer":
        assert all(sum(row) == kv_heads * 24 for row in counts)
    assert sum(map(sum, counts)) == layers * kv_heads * 24
    assert cache.bytes_held() == layers * kv_heads * 24 * head_dim * 2 * 4
    cpp = cpp_evictions(probe, tiny_model_path, tmp_path, out[0, :-1].tolist(), kvo.policy.H2O, "24", scope, prompt_len)
    decisions = differing = 0
    for layer in range(layers):
        for kv in range(kv_heads):
            theirs = cpp[layer][kv]
            ours = {step: sorted(gone) for step, gone in cache.evictions.get((0, layer, kv), [])}
            assert ours.keys() == theirs.keys(), (layer, kv)
            decisions += len(ours)
            differing += sum(ours[s] != theirs[s] for s in ours)
    assert decisions > 0 and differing == 0


@pytest.mark.parametrize(
    "args, options, message",
    [
        (("lru", "20%"), {}, "EvictingCache: unknown policy 'lru'"),
        (("h2o", "0"), {}, "EvictingCache: budget '0' must be > 0"),
        (("h2o", "lots"), {}, "EvictingCache: budget 'lots' is not a number"),
        (("h2o", "20%"), {"recnt": 4}, "EvictingCache: KvEvictionManager: unknown option 'recnt'"),
        (("lookahead", "8"), {}, "EvictingCache: policy lookahead follows a schedule"),
    ],
)
def test_evicting_cache_checks_its_arguments_when_built(hf_tiny, args, options, message):
    """A bad policy, budget or option is refused by the constructor in one line, before generate,
    and the model's attention is left as it was."""
    before = hf_tiny.config._attn_implementation
    with pytest.raises(ValueError, match=message):
        EvictingCache(hf_tiny, *args, **options)
    assert hf_tiny.config._attn_implementation == before


def test_only_offline_policies_read_a_schedule_trace(hf_tiny, trace_file):
    trace = kvo.read_trace(str(trace_file))
    with pytest.raises(ValueError, match="schedule_trace is read by the offline policies .* not by h2o"):
        EvictingCache(hf_tiny, "h2o", "8", schedule_trace=trace)
    EvictingCache(hf_tiny, "oracle", "8", schedule_trace=trace)  # its schedule: accepted
    hf_tiny.set_attn_implementation("eager")


def test_evicting_pools_refuse_what_they_cannot_hold():
    """kvoracle.EvictingPools (the engine's pools EvictingCache drives): a manager of another shape,
    rows of the wrong width and a layer outside the model are refused in one line."""
    from kvoracle import EvictingPools, KvEvictionManager, KvoError

    manager = KvEvictionManager("h2o", "4", 2, 2, max_len=16)
    with pytest.raises(KvoError, match="not the pools' shape"):
        EvictingPools(manager, 3, 2, 8, 2, 0.35)
    pools = EvictingPools(manager, 2, 2, 8, 2, 0.35)
    q, kv = np.zeros((3, 32), np.float32), np.zeros((3, 16), np.float32)
    with pytest.raises(KvoError, match=r"q \[T, 32\], k and v \[T, 16\]"):
        pools.attend_layer(0, 0, q, kv[:, :8], kv)
    with pytest.raises(KvoError, match="layer 2 outside"):
        pools.attend_layer(2, 0, q, kv, kv)
    out = pools.attend_layer(0, 0, np.ones((6, 32), np.float32), np.ones((6, 16), np.float32), kv[:1].repeat(6, 0))
    held = list(pools.held(0, 0))
    assert out.shape == (6, 32) and len(held) == 4 and held[-1] == 5  # the budget, the newest token held
