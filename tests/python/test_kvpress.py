"""kvpress's presses (kvpress 0.5.5, installed by scripts/setup-deps) against kvoracle's own
computation of them (kvoracle.run_press, core/press.hpp) on the tiny test model through transformers (mechanics; random weights give no ties a trained
model would not):
the same kept set on every layer and KV head, up to the ties docs/presses.md lists."""

import kvoracle as kvo
import numpy as np
import pytest
import torch
from kvoracle.hf import record_trace

kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
from transformers import DynamicCache  # noqa: E402

pytestmark = [pytest.mark.transformers, pytest.mark.kvpress]

APACHE = "/usr/share/common-licenses/Apache-2.0"
P = 512
CLASSES = {name: getattr(kvpress, cls) for name, cls in kvo.press_names()}
# (press, compression ratios): lagkv at 0.3 too, where its ranks (not only its forced tokens) decide.
CASES = [(name, r) for name in CLASSES for r in (0.5, 0.8)] + [("lagkv", 0.3)]


@pytest.fixture(scope="module")
def prompt(hf_tiny, tmp_path_factory, kvoracle, tiny_model_path):
    import subprocess

    d = tmp_path_factory.mktemp("kvpress")
    subprocess.run(
        [
            kvoracle,
            "-q",
            "record",
            "--text",
            APACHE,
            "--tokens",
            str(P),
            "--model",
            tiny_model_path,
            "--out",
            str(d / "ids.safetensors"),
        ],
        check=True,
    )
    ids = torch.tensor(np.asarray(kvo.read_trace(str(d / "ids.safetensors")).tokens), dtype=torch.long)[None]
    record_trace(hf_tiny, ids, str(d / "hf.safetensors"))
    return ids, kvo.read_trace(str(d / "hf.safetensors"))


def record_scores(press):
    """Wraps the press's score() so that each layer's scores of batch row 0 are kept (fp64 copies,
    taken before a wrapper such as AdaKVPress changes them in place); returns {layer: [H_kv, P]}."""
    scores, score = {}, press.score

    def keep_scores(module, *args, **kwargs):
        s = score(module, *args, **kwargs)
        scores[module.layer_idx] = s[0].double().numpy()
        return s

    press.score = keep_scores
    return scores


def kvpress_run(model, ids, trace, name, ratio):
    """Runs the press through its own forward hook; returns its scores and the positions its
    compressed cache holds (matched to the trace's keys), per layer."""
    seeded = "seed" in CLASSES[name].__dataclass_fields__  # RandomPress
    press = CLASSES[name](compression_ratio=ratio, **({"seed": 0} if seeded else {}))
    scores = record_scores(press)
    return scores, held_positions(model, ids, trace, press)


def held_positions(model, ids, trace, press):
    """The positions the press's compressed cache holds after the prompt, per layer and KV head
    (each held key matched to the trace's)."""
    cache = DynamicCache()
    with torch.no_grad(), press(model):
        model(ids, past_key_values=cache)
    kept = []
    for layer in range(trace.n_layers):
        keys, held = trace.k(layer).astype(np.float64), cache.layers[layer].keys[0].double().numpy()
        row = []
        for h in range(trace.n_kv_heads):
            dist = ((held[h][:, None, :] - keys[h][None]) ** 2).sum(-1)
            assert dist.min(1).max() < 1e-8 * (keys[h] ** 2).sum(-1).mean()  # each held key is one of the trace's
            row.append(np.sort(dist.argmin(1)))
        kept.append(row)
    return kept


@pytest.mark.parametrize("name,ratio", CASES)
def test_press_keeps_what_kvpress_keeps(hf_tiny, prompt, name, ratio):
    ids, trace = prompt
    theirs_scores, theirs = kvpress_run(hf_tiny, ids, trace, name, ratio)
    exact, near_ties, rank_swaps = 0, 0, 0
    for layer in range(trace.n_layers):
        ours = kvo.run_press(trace, layer, P, name, compression_ratio=ratio)
        s_ours, s_theirs = ours["scores"], theirs_scores[layer]
        if name == "lagkv":  # ranks in a partition: a near-tie of the fp32 spreads may swap two ranks
            rank_swaps += int((np.abs(s_ours - s_theirs) > 1e-9).sum())
        else:
            assert np.abs(s_ours - s_theirs).max() <= 1e-5 * np.abs(s_theirs).max(), (name, layer)
        for h in range(trace.n_kv_heads):
            mine, kv = set(ours["kept"][h].tolist()), set(theirs[layer][h].tolist())
            assert len(mine) == len(kv) == ours["n_kept"]
            if mine == kv:
                exact += 1
                continue
            # Only tokens whose kvpress score sits at the boundary (a tie, or fp32 against fp64
            # within 1e-6 relative) may differ: torch.topk leaves the order of ties unspecified.
            s = s_theirs[h]
            boundary = np.sort(s)[::-1][ours["n_kept"] - 1]
            for j in mine ^ kv:
                assert abs(s[j] - boundary) <= 1e-6 * max(abs(boundary), 1e-30), (name, layer, h, j)
            near_ties += 1
    units = trace.n_layers * trace.n_kv_heads
    print(f"{name} {ratio}: {exact} units exact, {near_ties} differ at a tie, {rank_swaps} rank swaps")
    assert exact + near_ties == units
    if name not in ("knorm", "lagkv", "non_causal_attn"):  # fp32 ties on this text (docs/presses.md)
        assert exact == units, (name, ratio, near_ties)
    assert rank_swaps <= 0.01 * units * P


def test_kvoracle_press_runs_in_kvpress_pipeline(hf_tiny, tiny_model_path):
    """KvoraclePress through kvpress's own pipeline: computing kvpress's SnapKV itself it answers
    exactly as SnapKVPress; kvoracle's h2o and tova run as presses too."""
    import os

    from kvoracle.hf import KvoraclePress
    from transformers import AutoTokenizer, pipeline

    tok = AutoTokenizer.from_pretrained(os.path.dirname(tiny_model_path), gguf_file=os.path.basename(tiny_model_path))
    pipe = pipeline("kv-press-text-generation", model=hf_tiny, tokenizer=tok)
    context = open(APACHE).read()[:2500]
    ask = {"question": "Which license is this?", "max_new_tokens": 12}
    theirs = pipe(context, press=kvpress.SnapKVPress(compression_ratio=0.7), **ask)["answer"]
    ours = pipe(context, press=KvoraclePress(compression_ratio=0.7, policy="snapkv"), **ask)["answer"]
    assert ours == theirs and ours.strip()
    shared = next(p["name"] for p in kvo.policies() if p["name"] in CLASSES)  # a policy and a press
    for policy in (kvo.policies()[0]["name"], f"policy:{shared}"):
        assert pipe(context, press=KvoraclePress(compression_ratio=0.7, policy=policy), **ask)["answer"].strip()
    with pytest.raises(kvo.KvoError, match="unknown policy or press 'lru'"):
        KvoraclePress(compression_ratio=0.5, policy="lru")
    with pytest.raises(kvo.KvoError, match="needs trace="):
        KvoraclePress(compression_ratio=0.5, policy="optimum")


def test_compare_presses_puts_the_optimum_on_top_of_the_mass(hf_tiny, prompt, kvoracle, tiny_model_path, tmp_path):
    import json
    import subprocess

    from kvoracle.hf import compare_presses

    ids, _ = prompt
    # keydiff, not knorm: RoPE keeps a key's norm, so in layer 0 every repeat of a token has the same
    # norm up to fp32 rounding, and knorm's order at the boundary is rounding in both implementations.
    r = compare_presses(hf_tiny, ids[0, :160], 128, presses=["snapkv", "pyramidkv", "keydiff"], ratios=(0.5, 0.8))
    rows = {(x["press"], x["compression_ratio"]): x for x in r["rows"]}
    first_policy = kvo.policies()[0]["name"]  # compare_presses' default policy
    assert set(p for p, _ in rows) == {"snapkv", "pyramidkv", "keydiff", first_policy, "optimum"} and len(rows) == 10
    for x in rows.values():
        assert 0 < x["mass_fraction"] <= 1 + 1e-9 and x["worst_fraction"] <= x["mass_fraction"] + 1e-12
        assert np.isfinite(x["nll"]) and x["mean_kl"] >= 0
    for ratio in (0.5, 0.8):
        assert rows[("optimum", ratio)]["mass_fraction"] == pytest.approx(1.0)
        assert rows[("keydiff", ratio)]["mass_fraction"] < 1
    # compressing less never keeps less of the optimum's mass share
    assert rows[("optimum", 0.5)]["prompt_share"] >= rows[("optimum", 0.8)]["prompt_share"]
    # The same protocol through kvoracle's own C++ model (eval prefill): the same closed-loop
    # numbers as transformers up to the two implementations' rounding.
    subprocess.run(
        [
            kvoracle,
            "-q",
            "eval",
            "prefill",
            "--text",
            APACHE,
            "--tokens",
            "160",
            "--prompt-len",
            "128",
            "--presses",
            "snapkv,pyramidkv,keydiff",
            "--policies",
            first_policy,
            "--compression-ratio",
            "0.5,0.8",
            "--model",
            tiny_model_path,
            "--json",
            str(tmp_path / "e.json"),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    ours = json.load(open(tmp_path / "e.json"))
    assert ours["full_nll"] == pytest.approx(r["full_nll"], abs=2e-4)
    for x in ours["rows"]:
        if x["set"] == "optimum_output_bound":
            continue
        want = rows[(x["set"], x["compression_ratio"])]
        assert x["mean_k"] == pytest.approx(want["k"])
        assert x["mass_fraction"] == pytest.approx(want["mass_fraction"], abs=1e-6), x["set"]
        if x["set"] in ("snapkv", "pyramidkv") and x["mean_k"] < 64:
            # k < window_size: the forced window's equal scores decide, and torch.topk's order is not
            # kvoracle's tie rule (docs/presses.md), so kvpress's class keeps other window keys.
            continue
        assert x["nll"] == pytest.approx(want["nll"], abs=5e-4), x["set"]
        assert x["mean_kl"] == pytest.approx(want["mean_kl"], rel=1e-3, abs=1e-5), x["set"]
    assert {x["set"] for x in ours["rows"]} == {
        "snapkv",
        "pyramidkv",
        "keydiff",
        first_policy,
        "optimum",
        "optimum_output_bound",
    }


def test_kvoracle_pyramidkv_keeps_kvpress_layer_budgets(hf_tiny, prompt):
    from kvoracle.hf import KvoraclePress

    ids, trace = prompt
    lengths = []
    for press in (
        kvpress.PyramidKVPress(compression_ratio=0.5),
        KvoraclePress(compression_ratio=0.5, policy="pyramidkv"),
    ):
        cache = DynamicCache()
        with torch.no_grad(), press(hf_tiny):
            hf_tiny(ids, past_key_values=cache)
        lengths.append([cache.layers[layer].keys.shape[2] for layer in range(trace.n_layers)])
    assert lengths[0] == lengths[1] and lengths[0][0] > lengths[0][-1]  # 448 falling to 64


def test_per_layer_compression_runs_each_layer_at_its_ratio(hf_tiny, prompt):
    """kvpress's PerLayerCompressionPress around SnapKV keeps, on every layer and KV head, what
    kvoracle's press keeps at that layer's ratio: the rule `kvoracle oracle allocation
    --layer-ratios` measures (oracle/allocation_methods.hpp)."""
    ids, trace = prompt
    ratios = [(0.25, 0.5, 0.75)[layer % 3] for layer in range(trace.n_layers)]
    press = kvpress.PerLayerCompressionPress(press=kvpress.SnapKVPress(), compression_ratios=ratios)
    theirs = held_positions(hf_tiny, ids, trace, press)
    for layer in range(trace.n_layers):
        ours = kvo.run_press(trace, layer, P, "snapkv", compression_ratio=ratios[layer])
        assert ours["n_kept"] == int(P * (1 - ratios[layer]))
        for h in range(trace.n_kv_heads):
            assert np.array_equal(np.sort(ours["kept"][h]), theirs[layer][h]), (layer, h)


@pytest.mark.parametrize("name,alpha", [("snapkv", 0.2), ("knorm", 0.2), ("tova", 0.2), ("snapkv", 0.0)])
def test_adakv_keeps_what_kvpress_adakv_keeps(hf_tiny, prompt, name, alpha):
    """kvoracle's AdaKVPress (core/adakv.hpp) against kvpress's: the same kept
    positions per layer and KV head, up to keys whose kvpress score ties the layer's boundary."""
    ids, trace = prompt
    ratio = 0.8
    inner = CLASSES[name](compression_ratio=ratio)
    scores = record_scores(inner)
    press = kvpress.AdaKVPress(press=inner, alpha_safeguard=alpha)
    hf_tiny.config._attn_implementation = "sdpa"  # AdaKVPress refuses eager attention
    try:
        with torch.no_grad(), press(hf_tiny):
            hf_tiny(ids, past_key_values=DynamicCache())
        masks = [layer.self_attn.masked_key_indices for layer in hf_tiny.model.layers]
    finally:
        hf_tiny.config._attn_implementation = "eager"
        for layer in hf_tiny.model.layers:
            layer.self_attn.masked_key_indices = None
    n_kept = max(1, int(P * (1 - ratio)))
    n_safe = max(1, int(n_kept * alpha)) if alpha > 0 else 0
    exact = near = 0
    for layer in range(trace.n_layers):
        evicted = set(zip(masks[layer][1].tolist(), masks[layer][2].tolist()))
        theirs = [set(range(P)) - {j for h2, j in evicted if h2 == h} for h in range(trace.n_kv_heads)]
        ours = [set(k.tolist()) for k in kvo.adakv_kept(trace, layer, P, name, ratio, alpha)]
        assert sum(map(len, ours)) == sum(map(len, theirs)) == trace.n_kv_heads * n_kept
        assert min(map(len, ours)) >= n_safe
        if ours == theirs:
            exact += 1
            continue
        # Only keys at the layer's boundary may differ: the lowest kept score among the shared
        # slots, within fp32 against fp64 rounding (torch.topk orders ties as it likes).
        s = scores[layer]
        shared = [np.sort([s[h][j] for j in theirs[h]])[::-1][n_safe:] for h in range(trace.n_kv_heads)]
        boundary = min(x.min() for x in shared if len(x))  # beyond each head's safeguarded top n_safe
        for h in range(trace.n_kv_heads):
            for j in ours[h] ^ theirs[h]:
                assert abs(s[h][j] - boundary) <= 1e-5 * max(abs(boundary), 1e-30), (name, layer, h, j)
        near += 1
    print(f"adakv({name}, {alpha}): {exact} layers exact, {near} differ at a tie")
    assert exact + near == trace.n_layers
    if name != "knorm":
        assert exact == trace.n_layers, (name, near)


def test_kvpress_attention_patch_calls_kvoracle_attention_as_it_calls_sdpa():
    """kvpress wraps every registered attention function at import (AdaKV's key masking) and passes
    dropout sixth by position, scaling by keyword: kvoracle's function takes SDPA's order, so a
    model routed through it still runs after kvpress was imported (before, a TypeError)."""
    import types

    from kvoracle.hf.attention import kvoracle_attention
    from kvpress.attention_patch import attention_patch

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 5, 8, generator=g) for _ in range(3))
    module = types.SimpleNamespace(layer_idx=0)
    want, _ = kvoracle_attention(module, q, k, v, None, scaling=0.3)
    got, _ = attention_patch(kvoracle_attention)(module, q, k, v, None, 0.0, scaling=0.3)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
