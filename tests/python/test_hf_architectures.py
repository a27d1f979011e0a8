"""kvoracle.hf on random-initialised small transformers models of six architectures: recorded traces
rebuild eager attention, replay and verify; EvictingCache reproduces plain generate at full
budget and holds exactly k rows per head below it; what a trace cannot represent is refused."""

import os

import kvoracle
import numpy as np
import pytest
import torch
import transformers
from causal_attention import causal_probs
from kvoracle.hf import EvictingCache, record_trace
from safetensors import safe_open

pytestmark = pytest.mark.transformers

transformers.logging.set_verbosity_error()

SMALL = dict(
    vocab_size=96,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=256,
)


def generate(model, ids, cache, new_tokens):
    """Greedy generation of `new_tokens` through `cache` (unpadded, pad id 0)."""
    return model.generate(
        ids,
        past_key_values=cache,
        max_new_tokens=new_tokens,
        do_sample=False,
        attention_mask=torch.ones_like(ids),
        pad_token_id=0,
    )


def make(arch, **overrides):
    """A small model of `arch` with seeded random weights, eager attention, in eval mode."""
    torch.manual_seed(7)
    if arch == "gpt2":  # absolute positions, no GQA
        config = transformers.GPT2Config(vocab_size=96, n_embd=64, n_layer=2, n_head=4, n_positions=256, **overrides)
    else:
        cls = {
            "llama": transformers.LlamaConfig,
            "mistral": transformers.MistralConfig,
            "qwen2": transformers.Qwen2Config,
            "phi3": transformers.Phi3Config,
            "gemma2": transformers.Gemma2Config,
        }[arch]
        extra = {"num_key_value_heads": 2}
        if arch == "gemma2":
            extra.update(head_dim=16, attn_logit_softcapping=None, final_logit_softcapping=None, sliding_window=128)
        if arch in ("mistral", "phi3"):
            extra.update(sliding_window=None)
        if arch == "phi3":
            extra.update(pad_token_id=0)
        config = cls(**{**SMALL, **extra, **overrides})
    config._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return model.eval()


ARCHS = ["llama", "mistral", "qwen2", "phi3", "gemma2", "gpt2"]


@pytest.mark.parametrize("arch", ARCHS)
def test_recorded_trace_rebuilds_eager_attention_and_verifies(arch, tmp_path):
    model = make(arch)
    ids = torch.randint(0, 96, (1, 48), generator=torch.Generator().manual_seed(1))
    path = str(tmp_path / f"{arch}.safetensors")
    meta = record_trace(model, ids, path)
    assert model.config._attn_implementation == "eager"  # restored
    with torch.no_grad():
        eager = model(ids, output_attentions=True).attentions
    trace = kvoracle.read_trace(path)
    assert trace.n_layers == 2 and trace.n_tokens == 48
    assert meta["gqa_group"] == ("1" if arch == "gpt2" else "2")
    for layer in range(2):
        probs = causal_probs(trace.q(layer), trace.k(layer), trace.attn_scale)
        np.testing.assert_allclose(probs, eager[layer][0].double().numpy(), atol=1e-5, rtol=0)
    heads = kvoracle.replay(trace, policy=kvoracle.policy.H2O, budget="25%")
    assert len(heads) == 2 * trace.n_heads
    report = kvoracle.verify(trace, budget="25%", checks=["C1", "C2", "C3", "C10", "C15"])
    assert report["format"] == "kvoracle-report"
    assert report["theorem_failures"] == 0


@pytest.mark.parametrize("arch", ARCHS)
def test_evicting_cache_full_budget_is_plain_generate(arch):
    model = make(arch)
    ids = torch.randint(0, 96, (1, 24), generator=torch.Generator().manual_seed(2))
    args = dict(max_new_tokens=16, do_sample=False, attention_mask=torch.ones_like(ids), pad_token_id=0)
    plain = model.generate(ids, **args)
    evicting = model.generate(
        ids, past_key_values=EvictingCache(model, kvoracle.policy.H2O, "100%", max_len=40), **args
    )
    assert torch.equal(plain, evicting)


@pytest.mark.parametrize("arch", ARCHS)
def test_evicting_cache_holds_k_rows_per_head(arch):
    model = make(arch)
    ids = torch.randint(0, 96, (1, 30), generator=torch.Generator().manual_seed(3))
    cache = EvictingCache(model, kvoracle.policy.H2O, "12", log=True)
    generate(model, ids, cache, 10)
    kv_heads = 4 if arch == "gpt2" else 2
    for layer in range(2):
        assert cache.layers[layer].keys.shape[1:3] == (kv_heads, 12)
        assert cache.layers[layer].values.shape[2] == 12
        held = cache.held(layer)[0]
        assert held.shape == (kv_heads, 12) and bool((held[:, -1] == 38).all())  # the newest token is held
        # every step past the budget evicted exactly one row per head
        for kv in range(kv_heads):
            log = cache.evictions[(0, layer, kv)]
            assert len(log) == 39 - 12 and all(len(gone) == 1 for _, gone in log)
    assert cache.get_seq_length() == 39  # true positions go on: 30 prompt + 9 fed back


def test_refuses_logit_softcapping(tmp_path):
    model = make("gemma2", attn_logit_softcapping=50.0)
    path = tmp_path / "g.safetensors"
    with pytest.raises(kvoracle.KvoError, match=r"caps its attention logits \(softcap = 50.0\)"):
        record_trace(model, torch.arange(20), str(path))
    assert os.listdir(tmp_path) == []  # no partial file
    with pytest.raises(kvoracle.KvoError, match="softcap"):
        model.generate(
            torch.arange(1, 9)[None],
            attention_mask=torch.ones(1, 8, dtype=torch.long),
            max_new_tokens=2,
            past_key_values=EvictingCache(model, kvoracle.policy.H2O, "4"),
            pad_token_id=0,
        )


def test_refuses_a_sliding_window_shorter_than_the_sequence(tmp_path):
    model = make("mistral", sliding_window=16)
    record_trace(model, torch.arange(16), str(tmp_path / "ok.safetensors"))  # within the window: exact
    with pytest.raises(kvoracle.KvoError, match="sliding window of 16 tokens and the sequence has 17"):
        record_trace(model, torch.arange(17), str(tmp_path / "m.safetensors"))
    assert os.listdir(tmp_path) == ["ok.safetensors"]


def test_refuses_bad_input(tmp_path):
    model = make("llama")
    good = str(tmp_path / "t.safetensors")
    with pytest.raises(kvoracle.KvoError, match="token id 96 at position 3 is outside the model's vocabulary of 96"):
        record_trace(model, [1, 2, 3, 96], good)
    with pytest.raises(kvoracle.KvoError, match=r"one sequence of integer token ids"):
        record_trace(model, torch.zeros(2, 5, dtype=torch.long), good)
    with pytest.raises(kvoracle.KvoError, match="cannot write"):
        record_trace(model, [1, 2, 3], str(tmp_path / "missing" / "t.safetensors"))
    with pytest.raises(kvoracle.KvoError, match=r"layers must be distinct model layers in 0\.\.1"):
        record_trace(model, [1, 2, 3], good, layers=[2])
    with pytest.raises(kvoracle.KvoError, match="dtype 'f8'"):
        record_trace(model, [1, 2, 3], good, dtype="f8")
    with pytest.raises(kvoracle.KvoError, match="exceed the model's 256 positions"):
        record_trace(model, torch.zeros(257, dtype=torch.long), good)
    assert os.listdir(tmp_path) == []
    padded = torch.tensor([[1, 1, 1, 1], [0, 1, 1, 1]])
    with pytest.raises(kvoracle.KvoError, match="padding"):
        model.generate(
            torch.arange(8).view(2, 4),
            attention_mask=padded,
            max_new_tokens=2,
            past_key_values=EvictingCache(model, kvoracle.policy.H2O, "4"),
            pad_token_id=0,
        )


def test_layers_and_dtypes(tmp_path):
    model = make("qwen2")
    ids = torch.arange(1, 33)
    path = str(tmp_path / "l1.safetensors")
    meta = record_trace(model, ids, path, layers=[1], dtype="bf16", values=False)
    assert meta["model_layers"] == "1"
    full = str(tmp_path / "full.safetensors")
    record_trace(model, ids, full)
    one, both = kvoracle.read_trace(path), kvoracle.read_trace(full)
    assert one.n_layers == 1
    with safe_open(path, "numpy") as f:
        assert sorted(f.keys()) == ["layers.0.k", "layers.0.q", "tokens"]
    np.testing.assert_allclose(one.q(0), both.q(1), rtol=1e-2, atol=1e-2)  # bf16 keeps 8 bits of mantissa
    assert list(one.tokens) == list(range(1, 33))


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gpt2"])
def test_recording_on_a_cache_gives_the_later_queries_and_every_key(arch, tmp_path):
    """What tasks' full-cache row does: the context prefilled into a cache by the model's own attention,
    then only the question and answer recorded on it. Keys, values and the later queries are the
    whole recording's, the earlier queries zeros, and the reference built on it is the same."""
    model = make(arch)
    ids = torch.randint(0, 96, (1, 40), generator=torch.Generator().manual_seed(4))
    context = 29
    whole, tail = str(tmp_path / "whole.safetensors"), str(tmp_path / "tail.safetensors")
    record_trace(model, ids, whole)
    cache = transformers.DynamicCache()
    with torch.no_grad():
        model(ids[:, :context], past_key_values=cache)
    meta = record_trace(model, ids, tail, cache=cache)
    assert meta["queries_from"] == str(context) and cache.get_seq_length() == 40
    a, b = kvoracle.read_trace(whole), kvoracle.read_trace(tail)
    assert b.n_tokens == 40 and list(b.tokens) == ids[0].tolist()
    for layer in range(2):
        np.testing.assert_allclose(b.k(layer), a.k(layer), atol=1e-5, rtol=0)
        np.testing.assert_allclose(b.v(layer), a.v(layer), atol=1e-5, rtol=0)
        np.testing.assert_allclose(b.q(layer)[:, context:], a.q(layer)[:, context:], atol=1e-5, rtol=0)
        assert not b.q(layer)[:, :context].any()
    rng = np.random.default_rng(5)
    kept = [sorted(rng.choice(context, 6, replace=False).tolist()) for _ in range(2 * a.n_kv_heads)]
    reference, on_cache = kvoracle.MassOfOptimum(a, context), kvoracle.MassOfOptimum(b, context)
    assert on_cache(kept, 6) == pytest.approx(reference(kept, 6), abs=1e-9)
    assert on_cache.optimum_sets("head", 6) == reference.optimum_sets("head", 6)
    cache.crop(context)
    with pytest.raises(kvoracle.KvoError, match="the cache holds 29 tokens; it must hold 1 to 28 of the 29"):
        record_trace(model, ids[:, :context], str(tmp_path / "bad.safetensors"), cache=cache)


def test_refuses_models_outside_the_attention_interface(tmp_path):
    """BLOOM adds ALiBi biases in its own attention code: kvoracle cannot see q.k alone."""
    torch.manual_seed(7)
    config = transformers.BloomConfig(vocab_size=96, hidden_size=64, n_layer=2, n_head=4)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with pytest.raises(
        kvoracle.KvoError, match="does not route its attention through transformers' attention interface"
    ):
        record_trace(model, torch.arange(1, 9), str(tmp_path / "b.safetensors"))
    with pytest.raises(kvoracle.KvoError, match="does not route"):
        EvictingCache(model, kvoracle.policy.H2O, "4")
    assert os.listdir(tmp_path) == []


def test_evicting_cache_prompt_len_truncates_once_after_the_prompt():
    """prompt_len = P: the prompt is kept whole until its last token, then cut to k at once (H2O code)."""
    model = make("llama")
    ids = torch.randint(1, 96, (1, 30), generator=torch.Generator().manual_seed(4))
    cache = EvictingCache(model, kvoracle.policy.H2O, "12", prompt_len=30, log=True)
    generate(model, ids, cache, 5)
    log = cache.evictions[(0, 0, 0)]
    assert log[0][0] == 29 and len(log[0][1]) == 30 - 12  # one truncation at the prompt's last token
    assert [len(gone) for _, gone in log[1:]] == [1] * 4 and tuple(cache.held(0).shape) == (1, 2, 12)


@pytest.mark.parametrize("scope", ["layer", "model"])
def test_evicting_cache_shared_budget_holds_the_group_sum(scope):
    """A layer's (or the model's) KV heads share h2o's budget: their counts differ, the padding rows
    are marked -1, the group holds the sum of its budgets, and bytes count the rows held."""
    model = make("llama")
    ids = torch.randint(1, 96, (1, 30), generator=torch.Generator().manual_seed(5))
    cache = EvictingCache(model, kvoracle.policy.H2O, "6", budget_scope=scope, prompt_len=30)
    generate(model, ids, cache, 8)
    counts = [[int((cache.held(layer)[0, kv] >= 0).sum()) for kv in range(2)] for layer in range(len(cache.layers))]
    assert sum(map(sum, counts)) == len(cache.layers) * 2 * 6
    if scope == "layer":
        assert all(sum(row) == 12 for row in counts)
    layer0 = cache.layers[0]
    assert cache.bytes_held() == sum(map(sum, counts)) * layer0.keys.shape[-1] * layer0.keys.element_size() * 2


def test_evicting_cache_model_scope_needs_the_prompt_whole():
    model = make("llama")
    ids = torch.randint(1, 96, (1, 12), generator=torch.Generator().manual_seed(6))
    cache = EvictingCache(model, kvoracle.policy.H2O, "4", budget_scope="model")
    with pytest.raises(kvoracle.KvoError, match="give prompt_len=12"):
        model(ids, past_key_values=cache)
