"""KvoraclePress as kvpress runs it, on a random small GQA Llama (nothing downloaded): every batch
row scored and cut as if it ran alone, kvpress's kept count for every policy and press, names a
press and a policy share refused unless qualified, what cannot run refused when the press is
built, and one clear line when it sits second in a ComposedPress (issue 30). EvictingCache's rows
are checked the same way."""

import re

import kvoracle
import numpy as np
import pytest
import torch
import transformers
from kvoracle_press_configs import CONFIGS, FIRST_POLICY, POLICY_NAMES, RATIOS, SHARED, small_llama

kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
from kvoracle.hf import EvictingCache, KvoraclePress  # noqa: E402
from kvpress.utils import compute_n_kept  # noqa: E402
from transformers import DynamicCache  # noqa: E402

pytestmark = [pytest.mark.transformers, pytest.mark.kvpress]
transformers.logging.set_verbosity_error()

P = 48


@pytest.fixture(scope="module")
def model():
    return small_llama()


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
        alone_keys, alone = run(
            model, KvoraclePress(compression_ratio=ratio, policy=name, options=CONFIGS[name]), rows[b : b + 1]
        )
        for layer in kept:
            np.testing.assert_array_equal(kept[layer][b], alone[layer][0], err_msg=f"{name} layer {layer} row {b}")
            torch.testing.assert_close(keys[layer][b], alone_keys[layer][0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", [FIRST_POLICY, "knorm"])
def test_rows_that_differ_keep_different_sets(model, rows, name):
    """The rows above are told apart: a rule that reads attention or keys keeps other sets on them."""
    _, kept = run(model, KvoraclePress(compression_ratio=0.5, policy=name), rows)
    assert any(not np.array_equal(s[0], s[1]) for s in kept.values()), name


def test_a_name_a_press_and_a_policy_share_must_be_qualified(model, rows):
    assert SHARED  # today the TOVA and random rules
    for shared in SHARED:
        with pytest.raises(kvoracle.KvoError, match=f"'policy:{shared}'.*'press:{shared}'"):
            KvoraclePress(compression_ratio=0.5, policy=shared)
    _, policy = run(model, KvoraclePress(compression_ratio=0.5, policy=f"policy:{SHARED[0]}"), rows[:1])
    _, press = run(model, KvoraclePress(compression_ratio=0.5, policy=f"press:{SHARED[0]}"), rows[:1])
    assert any(not np.array_equal(policy[layer], press[layer]) for layer in policy)  # two different rules


def test_what_cannot_run_is_refused_when_the_press_is_built(tmp_path):
    refused = {p: kvoracle._core.policy_press_refusal(p, 0.5) for p in POLICY_NAMES}
    refused = {p: why for p, why in refused.items() if why}
    assert len(refused) >= 2  # today the full cache (keeps every token) and the offline schedule
    cases = [(dict(policy=p, compression_ratio=0.5), re.escape(why)) for p, why in refused.items()] + [
        (dict(policy="optimum", compression_ratio=0.5), "needs trace="),
        (dict(policy="no-such-rule", compression_ratio=0.5), "unknown policy or press 'no-such-rule'"),
        (dict(policy=f"press:{FIRST_POLICY}", compression_ratio=0.5), f"unknown press '{FIRST_POLICY}'"),
        (dict(policy="snapkv", compression_ratio=0.5, options={"n_sink": 4}), "not a parameter of press 'snapkv'"),
        (dict(policy="snapkv", compression_ratio=0.5, options={"window_size": 2.5}), "must be an integer"),
        (
            dict(policy=FIRST_POLICY, compression_ratio=0.5, options={"window_size": 4}),
            f"not a parameter of policy '{FIRST_POLICY}'",
        ),
        (dict(policy=FIRST_POLICY, compression_ratio=0.5, trace="t.safetensors"), "read by policy='optimum' only"),
        (dict(policy=FIRST_POLICY, compression_ratio=1.0), r"outside \[0, 1\)"),
    ]
    for kwargs, message in cases:
        with pytest.raises(kvoracle.KvoError, match=message):
            KvoraclePress(**kwargs)
    for p in refused:  # what keeps every token is what it is at ratio 0
        if "keeps every token" in refused[p]:
            KvoraclePress(policy=p, compression_ratio=0.0)


def test_second_in_a_composed_press_it_stops_with_one_clear_line(model, rows):
    first = KvoraclePress(compression_ratio=0.5, policy="knorm")
    ours_first = kvpress.ComposedPress([first, kvpress.KnormPress(compression_ratio=0.5)])
    with torch.no_grad(), ours_first(model):
        model(rows, past_key_values=DynamicCache())
    second = kvpress.ComposedPress(
        [kvpress.KnormPress(compression_ratio=0.5), KvoraclePress(compression_ratio=0.5, policy=FIRST_POLICY)]
    )
    with pytest.raises(kvoracle.KvoError, match="place KvoraclePress first") as e, torch.no_grad(), second(model):
        model(rows, past_key_values=DynamicCache())
    assert "\n" not in str(e.value)


def test_evicting_cache_runs_each_row_as_if_alone(model, rows):
    def held(ids):
        cache = EvictingCache(model, policy=FIRST_POLICY, budget="16", prompt_len=0)
        with torch.no_grad():
            model.generate(ids, past_key_values=cache, max_new_tokens=6, do_sample=False, pad_token_id=0)
        return [cache.held(layer).clone() for layer in range(2)]

    together = held(rows[:2])
    for b in range(2):
        alone = held(rows[b : b + 1])
        for layer in range(2):
            torch.testing.assert_close(together[layer][b], alone[layer][0])
    assert not torch.equal(together[0][0], together[0][1])


def test_compare_presses_keeps_a_press_and_a_policy_of_one_name_apart_and_refuses_a_batch(model, rows, tmp_path):
    from kvoracle.hf import compare_presses, record_trace

    shared = SHARED[0]
    r = compare_presses(model, rows[0], 40, presses=[shared], policies=[shared], ratios=(0.5,))
    labels = {(x["press"], x["kind"]) for x in r["rows"]}
    assert labels == {(f"press:{shared}", "press"), (f"policy:{shared}", "policy"), ("optimum", "optimum")}
    kept = {x["press"]: x["prompt_share"] for x in r["rows"]}
    assert kept[f"press:{shared}"] != kept[f"policy:{shared}"]  # the two rules, each measured
    # A batch is not one sequence: refused, not read as its rows end to end.
    with pytest.raises(kvoracle.KvoError, match="one sequence"):
        compare_presses(model, rows[:2], 40, presses=["knorm"], ratios=(0.5,))
    with pytest.raises(kvoracle.KvoError, match="one sequence"):
        record_trace(model, rows[:2], str(tmp_path / "t.safetensors"))
