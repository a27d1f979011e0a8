"""KvoraclePress as kvpress runs it, on a random small GQA Llama (nothing downloaded): every batch
row scored and cut as if it ran alone, kvpress's kept count for every policy and press, names a
press and a policy share refused unless qualified, what cannot run refused when the press is
built, and one clear line when it sits second in a ComposedPress (issue 30). EvictingCache's rows
are checked the same way."""
import numpy as np
import pytest
import torch
import transformers

import kvoracle
from kvoracle_press_configs import CONFIGS, RATIOS, every_configuration_is_listed

kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
from kvpress.utils import compute_n_kept  # noqa: E402
from transformers import DynamicCache  # noqa: E402

from kvoracle.hf import EvictingCache, KvoraclePress  # noqa: E402

pytestmark = [pytest.mark.transformers, pytest.mark.kvpress]
transformers.logging.set_verbosity_error()

P = 48


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(11)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                      initializer_range=0.2)  # sharp, content-dependent attention
    return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def rows():
    """Three prompts that differ (so that each row has its own kept set)."""
    return torch.randint(0, 128, (3, P), generator=torch.Generator().manual_seed(2))


def run(model, press, ids):
    """The compressed cache's keys per layer and the press's kept positions per layer."""
    cache = DynamicCache()
    with torch.no_grad(), press(model):
        model(ids, past_key_values=cache)
    return [layer.keys.clone() for layer in cache.layers], dict(press.kept_by_layer)


def test_the_configurations_cover_every_policy_and_press():
    assert every_configuration_is_listed() == (set(), set())


@pytest.mark.parametrize("ratio", RATIOS)
@pytest.mark.parametrize("name", list(CONFIGS))
def test_each_batch_row_is_cut_as_if_it_ran_alone(model, rows, name, ratio):
    press = KvoraclePress(compression_ratio=ratio, policy=name, options=CONFIGS[name])
    keys, kept = run(model, press, rows)
    k = compute_n_kept(P, ratio)
    for layer, sets in kept.items():
        assert sets.shape[:2] == (rows.shape[0], 2), (name, layer)
        if kvoracle._core.prefill_set(name)["name"] != "pyramidkv":  # PyramidKV's budget falls with the layer
            assert sets.shape[2] == k, (name, layer, sets.shape)  # kvpress's compute_n_kept
            assert keys[layer].shape[2] == k  # what kvpress's pipeline logs as the compressed context length
    for b in range(rows.shape[0]):
        alone_keys, alone = run(model, KvoraclePress(compression_ratio=ratio, policy=name, options=CONFIGS[name]),
                                rows[b:b + 1])
        for layer in kept:
            np.testing.assert_array_equal(kept[layer][b], alone[layer][0], err_msg=f"{name} layer {layer} row {b}")
            torch.testing.assert_close(keys[layer][b], alone_keys[layer][0], rtol=1e-5, atol=1e-6)
    # rows that differ keep different sets somewhere (the test can tell rows apart)
    if kvoracle._core.prefill_set(name)["name"] not in ("streaming", "window", "streaming_llm", "random"):
        assert any(not np.array_equal(s[0], s[1]) for s in kept.values()), name


def test_a_name_a_press_and_a_policy_share_must_be_qualified(model, rows):
    for shared in ("tova", "random"):
        with pytest.raises(kvoracle.KvoError, match=f"'policy:{shared}'.*'press:{shared}'"):
            KvoraclePress(compression_ratio=0.5, policy=shared)
    _, policy = run(model, KvoraclePress(compression_ratio=0.5, policy="policy:tova"), rows[:1])
    _, press = run(model, KvoraclePress(compression_ratio=0.5, policy="press:tova"), rows[:1])
    assert any(not np.array_equal(policy[layer], press[layer]) for layer in policy)  # two different rules


def test_what_cannot_run_is_refused_when_the_press_is_built(tmp_path):
    cases = [
        (dict(policy="full", compression_ratio=0.5), "keeps every token"),
        (dict(policy="oracle", compression_ratio=0.5), "offline optimum"),
        (dict(policy="optimum", compression_ratio=0.5), "needs trace="),
        (dict(policy="lru", compression_ratio=0.5), "unknown policy or press 'lru'"),
        (dict(policy="press:h2o", compression_ratio=0.5), "unknown press 'h2o'"),
        (dict(policy="snapkv", compression_ratio=0.5, options={"n_sink": 4}), "not a parameter of press 'snapkv'"),
        (dict(policy="snapkv", compression_ratio=0.5, options={"window_size": 2.5}), "must be an integer"),
        (dict(policy="h2o", compression_ratio=0.5, options={"window_size": 4}), "not a parameter of policy 'h2o'"),
        (dict(policy="h2o", compression_ratio=0.5, trace="t.safetensors"), "read by policy='optimum' only"),
        (dict(policy="h2o", compression_ratio=1.0), r"outside \[0, 1\)"),
    ]
    for kwargs, message in cases:
        with pytest.raises(kvoracle.KvoError, match=message):
            KvoraclePress(**kwargs)
    KvoraclePress(policy="full", compression_ratio=0.0)  # a full cache at ratio 0 is what it is


def test_second_in_a_composed_press_it_stops_with_one_clear_line(model, rows):
    first = KvoraclePress(compression_ratio=0.5, policy="knorm")
    ours_first = kvpress.ComposedPress([first, kvpress.KnormPress(compression_ratio=0.5)])
    with torch.no_grad(), ours_first(model):
        model(rows, past_key_values=DynamicCache())
    second = kvpress.ComposedPress([kvpress.KnormPress(compression_ratio=0.5),
                                    KvoraclePress(compression_ratio=0.5, policy="h2o")])
    with pytest.raises(kvoracle.KvoError, match="place KvoraclePress first") as e, torch.no_grad(), second(model):
        model(rows, past_key_values=DynamicCache())
    assert "\n" not in str(e.value)


def test_evicting_cache_runs_each_row_as_if_alone(model, rows):
    def held(ids):
        cache = EvictingCache(model, policy="tova", budget="16", prompt_len=0)
        with torch.no_grad():
            model.generate(ids, past_key_values=cache, max_new_tokens=6, do_sample=False, pad_token_id=0)
        return [cache.held(layer).clone() for layer in range(2)]

    together = held(rows[:2])
    for b in range(2):
        alone = held(rows[b:b + 1])
        for layer in range(2):
            torch.testing.assert_close(together[layer][b], alone[layer][0])
    assert not torch.equal(together[0][0], together[0][1])


def test_compare_presses_keeps_a_press_and_a_policy_of_one_name_apart_and_refuses_a_batch(model, rows, tmp_path):
    from kvoracle.hf import compare_presses, record_trace

    r = compare_presses(model, rows[0], 40, presses=["tova"], policies=["tova"], ratios=(0.5,))
    labels = {(x["press"], x["kind"]) for x in r["rows"]}
    assert labels == {("press:tova", "press"), ("policy:tova", "policy"), ("optimum", "optimum")}
    kept = {x["press"]: x["prompt_share"] for x in r["rows"]}
    assert kept["press:tova"] != kept["policy:tova"]  # the two rules, each measured
    # A batch is not one sequence: refused, not read as its rows end to end.
    with pytest.raises(kvoracle.KvoError, match="one sequence"):
        compare_presses(model, rows[:2], 40, presses=["knorm"], ratios=(0.5,))
    with pytest.raises(kvoracle.KvoError, match="one sequence"):
        record_trace(model, rows[:2], str(tmp_path / "t.safetensors"))
