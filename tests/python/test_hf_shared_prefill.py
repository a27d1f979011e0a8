"""kvoracle.hf.shared_prefill: many presses from one prefill. Each shareable press's cache equals,
bit for bit, what its own prefill leaves; a press with state on the modules or a hook before a
module runs is handed back (None) to run its own prefill; run_tasks(shared_prefill=True) answers
every outcome as a prefill per row does, the masked optima (which must run alone) included."""

import os

import kvoracle as kvo
import pytest
import torch
from kvoracle.hf import run_tasks
from kvoracle.hf.shared_prefill import prefill_with_presses

pytestmark = [pytest.mark.transformers, pytest.mark.kvpress]


@pytest.fixture(scope="module")
def setup(tiny_model_path):
    from transformers import AutoTokenizer

    m = kvo.Model(tiny_model_path)
    where, name = os.path.split(tiny_model_path)
    tok = AutoTokenizer.from_pretrained(where, gguf_file=name)
    suite = m.generate_tasks(tasks=["passkey", "niah"], lengths=[256], depths=[0.5], per_cell=1, task_seed=5)
    return m, tok, suite


def _own_prefill(model, ids, press):
    from transformers import DynamicCache

    cache = DynamicCache()
    with press(model), torch.no_grad():
        model.model(input_ids=ids, past_key_values=cache)
    return cache


def test_each_press_holds_what_its_own_prefill_leaves(hf_tiny):
    from kvpress import KnormPress, SnapKVPress, StreamingLLMPress, TOVAPress

    ids = torch.arange(3, 203)[None]

    class StatefulPress(KnormPress):  # leaves an attribute on the module, as masking presses do
        def compress(self, module, hidden_states, keys, values, attentions, kwargs):
            module.kvoracle_test_mark = True
            return super().compress(module, hidden_states, keys, values, attentions, kwargs)

    presses = [SnapKVPress(0.5), TOVAPress(0.8), KnormPress(0.3), StreamingLLMPress(0.6), StatefulPress(0.5)]
    caches = prefill_with_presses(hf_tiny, ids, presses)
    assert caches[-1] is None
    assert not any(hasattr(layer.self_attn, "kvoracle_test_mark") for layer in hf_tiny.model.layers)
    for press, cache in zip(presses[:-1], caches[:-1]):
        own = _own_prefill(hf_tiny, ids, press)
        assert len(cache.layers) == len(own.layers)
        for mine, theirs in zip(cache.layers, own.layers):
            assert mine.keys.shape[2] < ids.shape[1]  # compressed
            assert torch.equal(mine.keys, theirs.keys) and torch.equal(mine.values, theirs.values)
    # every hook is gone: a plain forward registers none
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in hf_tiny.modules())


def test_run_tasks_answers_as_a_prefill_per_row(hf_tiny, setup):
    m, tok, instances = setup
    args = dict(
        protocol="prefill",
        presses=["snapkv", "knorm"],
        policies=["h2o"],
        budgets=[0.5],
        optimum_scopes="head,layer",  # optimum@layer masks keys per unit: it runs its own prefill
    )
    apart = run_tasks(hf_tiny, tok, instances, token_ids=m, **args)
    together = run_tasks(hf_tiny, tok, instances, token_ids=m, shared_prefill=True, **args)
    assert together["outcomes"] == apart["outcomes"]
    assert len({o["answer"] for o in apart["outcomes"]}) > 2  # rows that differ: the comparison can fail
    rows = {p["row"] for p in together["profile"]}
    assert "shared-prefill" in rows and "shared-prefill" not in {p["row"] for p in apart["profile"]}
