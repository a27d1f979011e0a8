"""The conformance kit from Python: a hand-written numpy TOVA that breaks ties toward the newer
token departs from the shipped golden file at its first open tie; the golden's own decisions,
given as dicts with numpy arrays, conform; bad decisions are refused in one line."""

import pathlib
import re

import kvoracle
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "conformance" / "golden" / "tie-trace.json"


def tova_ties_newer(trace, budget):
    """Evict the token the current query attends least; ties evict the newer (the bug)."""
    out = []
    group = trace.n_heads // trace.n_kv_heads
    for layer in range(trace.n_layers):
        attn = trace.attn(layer)
        for g in range(trace.n_kv_heads):
            a = attn[g * group : (g + 1) * group].astype(np.float64).mean(axis=0)
            cache = []
            for i in range(trace.n_tokens):
                cache.append(i)
                if len(cache) <= budget:
                    continue
                row = a[i, cache]
                worst = int(np.flatnonzero(row == row.min())[-1])
                out.append(
                    {
                        "policy": "tova",
                        "budget": budget,
                        "layer": layer,
                        "head": g,
                        "step": i,
                        "evicted": [cache[worst]],
                    }
                )
                del cache[worst]
    return out


def test_ties_toward_the_newer_token_depart_at_step_8():
    trace = kvoracle.read_trace(str(GOLDEN.with_suffix(".safetensors")))
    r = kvoracle.conformance_check(str(GOLDEN), tova_ties_newer(trace, 8))
    assert not r["conforms"]
    first = r["cases"][0]["first_departure"]
    assert (first["step"], first["layer"], first["head"], first["kind"]) == (8, 0, 0, "tie")
    assert first["expected"] == [4] and first["got"] == [5]
    assert "tova@8: first departs at step 8, layer 0, KV head 0 (tie)" in r.report.text


def test_the_golden_decisions_conform_as_numpy():
    golden = kvoracle.conformance_golden(policies="h2o,tova", budgets="8")
    rows = []
    for case in golden["cases"]:
        for unit in case["units"]:
            for i, step in enumerate(unit["steps"]):
                row = {"policy": case["policy"], "budget": np.int64(case["budget"]), "layer": unit["layer"]}
                rows.append({**row, "head": unit["head"], "step": i, "kept": np.array(step["kept"])})
    r = kvoracle.conformance_check(golden, rows)
    assert r["conforms"] and [c["case"] for c in r["cases"]] == ["h2o@8", "tova@8"]


def test_bad_decisions_are_refused_in_one_line():
    with pytest.raises(kvoracle.KvoError, match="no case random@8"):
        kvoracle.conformance_check(
            str(GOLDEN), [{"policy": "random", "budget": 8, "layer": 0, "head": 0, "step": 1, "evicted": []}]
        )
    with pytest.raises(kvoracle.KvoError, match="no field 'step'"):
        kvoracle.conformance_check(str(GOLDEN), [{"policy": "tova", "budget": 8, "layer": 0, "head": 0}])


def test_conformance_md_python_examples(monkeypatch):
    page = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    first, drive, _ = re.findall(r"```python\n(.*?)```", page, flags=re.S)  # the third needs kvpress (below)
    monkeypatch.chdir(ROOT)  # the page's paths are the repository's
    scope = {}
    exec(first, scope)  # noqa: S102
    assert not scope["verdict"]["conforms"]
    assert scope["verdict"]["cases"][0]["first_departure"]["kind"] == "tie"
    scope = {}
    exec(drive, scope)  # noqa: S102
    cases = {c["case"]: c for c in scope["llama"]["cases"]}
    assert cases["tova@8"]["conforms"] and cases["tova@8"]["decisions"] == 40 * 4


OPENVINO = ROOT / "conformance" / "golden" / "tie-trace-openvino.json"
LLAMA = ROOT / "conformance" / "golden" / "tie-trace-llama.json"
TIE_TRACE = ROOT / "conformance" / "golden" / "tie-trace.safetensors"


def paged_tova(start, block, recent_blocks, budget, block_of):
    """OpenVINO GenAI-style paged TOVA for ``kvoracle.conformance.drive(tied="layer")``: when a new
    block's first token overflows the budget, the block whose tokens the current query attends least
    (summed over the layer's KV heads) leaves whole; the start area
    and the last ``recent_blocks`` blocks stay. ``block_of(t)`` is the scorer's block index (the bug
    lives there)."""
    seen = []

    def evict(unit, i, attention, cache):
        if len(cache) <= budget:
            return []
        score = attention.sum(axis=0)  # each KV head's row over the cache, summed over the layer's
        newest = block_of(i)
        sums = {}
        for t, s in zip(cache, score):
            if t >= start and block_of(t) <= newest - recent_blocks:
                sums[block_of(t)] = sums.get(block_of(t), 0.0) + s
        worst = min(sums, key=lambda b: (sums[b], b))  # equal sums: the older block
        seen.append((unit, i, dict(zip(cache, score))))
        return [t for t in cache if t >= start and block_of(t) == worst]

    evict.seen = seen
    return evict


def test_a_paged_scorer_in_numpy_conforms_to_the_openvino_golden():
    trace = kvoracle.read_trace(str(TIE_TRACE))
    scorer = paged_tova(4, 4, 2, 16, lambda t: (t - 4) // 4)
    mine = kvoracle.conformance.drive(scorer, trace, "tova", 16, tied="layer")
    assert len(mine) == 2 * 6 and all("head" not in d and len(d["evicted"]) == 4 for d in mine)
    r = kvoracle.conformance_check(str(OPENVINO), mine)
    case = next(c for c in r["cases"] if c["case"] == "tova@16")
    assert case["conforms"], r.report.text


def test_a_block_index_off_by_one_departs_at_the_first_block_eviction():
    trace = kvoracle.read_trace(str(TIE_TRACE))
    scorer = paged_tova(4, 4, 2, 16, lambda t: (t - 4 + 1) // 4)
    r = kvoracle.conformance_check(str(OPENVINO), kvoracle.conformance.drive(scorer, trace, "tova", 16, tied="layer"))
    case = next(c for c in r["cases"] if c["case"] == "tova@16")
    first = case["first_departure"]
    assert not case["conforms"] and (first["step"], first["layer"], first["kind"]) == (16, 0, "differs")
    assert first["expected"] == [4, 5, 6, 7] and first["got"] == [4, 5, 6]


def tied_tova(newer_first):
    """llama.cpp-style TOVA for ``drive(tied="model")``: one position removed from every layer and
    head, the one the current query attends least summed over every (layer, KV head); sinks 0, 1 and
    the last 2 positions stay."""

    def evict(unit, i, attention, cache):
        if len(cache) <= 8:
            return []
        score = attention.sum(axis=(0, 1))
        candidates = [k for k, t in enumerate(cache) if 2 <= t <= i - 2]
        low = min(score[k] for k in candidates)
        ties = [k for k in candidates if score[k] == low]
        return [cache[ties[-1] if newer_first else ties[0]]]

    return evict


def test_one_position_for_the_whole_model_conforms_and_a_newer_tie_is_named():
    trace = kvoracle.read_trace(str(TIE_TRACE))
    good = kvoracle.conformance.drive(tied_tova(False), trace, "tova", 8, tied="model")
    assert len(good) == trace.n_tokens - 8 and all(set(d) == {"policy", "budget", "step", "evicted"} for d in good)
    r = kvoracle.conformance_check(str(LLAMA), good)
    assert next(c for c in r["cases"] if c["case"] == "tova@8")["conforms"], r.report.text
    bad = kvoracle.conformance.drive(tied_tova(True), trace, "tova", 8, tied="model")
    r = kvoracle.conformance_check(str(LLAMA), bad)
    first = next(c for c in r["cases"] if c["case"] == "tova@8")["first_departure"]
    assert first["kind"] == "tie" and first["got"] == [first["expected"][0] + 1]


def test_kept_masks_become_decisions_that_conform():
    golden = kvoracle.conformance_golden(policies="h2o", budgets="8")
    (case,) = golden["cases"]
    n = golden["trace"]["n"]
    kept = np.zeros((golden["trace"]["layers"], golden["trace"]["kv_heads"], n, n), dtype=bool)
    for unit in case["units"]:
        for i, step in enumerate(unit["steps"]):
            kept[unit["layer"], unit["head"], i, step["kept"]] = True
    assert kvoracle.conformance_check(golden, kvoracle.conformance.decisions_from_kept("h2o", 8, kept))["conforms"]
    kept[0, 1, 20:, 0] = ~kept[0, 1, 20:, 0]  # token 0 of (0, 1) flipped from step 20 on
    first = kvoracle.conformance_check(golden, kvoracle.conformance.decisions_from_kept("h2o", 8, kept))["cases"][0][
        "first_departure"
    ]
    assert (first["step"], first["layer"], first["head"]) == (20, 0, 1)
    with pytest.raises(kvoracle.KvoError, match="kept: expected a"):
        kvoracle.conformance.decisions_from_kept("h2o", 8, kept[0])


def test_drive_refuses_a_scorer_that_evicts_what_it_does_not_hold():
    trace = kvoracle.read_trace(str(TIE_TRACE))
    with pytest.raises(kvoracle.KvoError, match="step 0, layer 0, KV head 0: the scorer evicted token 3"):
        kvoracle.conformance.drive(lambda unit, i, a, cache: [3], trace, "tova", 8)
    with pytest.raises(kvoracle.KvoError, match="tied: expected"):
        kvoracle.conformance.drive(lambda *a: [], trace, "tova", 8, tied="head")


def long_trace(tmp_path, n=512, heads=2, seed=0):
    """A seeded 512-token trace with one KV head: Zipf-weighted keys and noisy logits, written in
    kvoracle's trace format (dense attention), long enough for fp16 sums to lose order."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2.0, (heads, n, n)) + np.log(rng.zipf(1.3, n).clip(max=1000))[None, None, :]
    logits = np.where(np.tril(np.ones((n, n), bool)), logits, -np.inf)
    a = np.exp(logits - logits.max(axis=2, keepdims=True))
    a /= a.sum(axis=2, keepdims=True)
    meta = {"format": "kvoracle-trace", "format_version": "1", "prompt_len": "0", "attn_scale": "1"}
    path = tmp_path / "long.safetensors"
    save_file({"layers.0.attn": a.astype(np.float32)}, str(path), metadata={**meta, "gqa_group": str(heads)})
    return kvoracle.read_trace(str(path))


def numpy_h2o(dtype, budget):
    """H2O in numpy: each token's attention accumulated in ``dtype``; outside the recent window of
    budget / 2, the lowest sum leaves (equal sums: the older)."""
    sums = {}

    def evict(unit, i, attention, cache):
        for t, p in zip(cache, attention):
            sums[t] = dtype(sums.get(t, dtype(0)) + dtype(p))
        if len(cache) <= budget:
            return []
        return [min(cache[: len(cache) - budget // 2], key=lambda t: (sums[t], t))]

    return evict


def test_scores_accumulated_in_fp16_depart_where_their_order_first_breaks(tmp_path):
    trace = long_trace(tmp_path)
    golden = kvoracle.conformance_golden(trace, policies="h2o", budgets="64")
    exact = kvoracle.conformance.drive(numpy_h2o(np.float64, 64), trace, "h2o", 64)
    assert kvoracle.conformance_check(golden, exact)["conforms"]
    half = kvoracle.conformance.drive(numpy_h2o(np.float16, 64), trace, "h2o", 64)
    broke = next(h["step"] for e, h in zip(exact, half) if e != h)  # where fp16 first chooses otherwise
    first = kvoracle.conformance_check(golden, half)["cases"][0]["first_departure"]
    assert (first["step"], first["kind"]) == (broke, "differs") and broke == 440


PRESS_GOLDEN = ROOT / "conformance" / "golden" / "press-trace.json"
PRESS_TRACE = ROOT / "conformance" / "golden" / "press-trace.safetensors"


def kvpress_presses(kvpress):
    """kvpress's own presses, as the shipped press file's cases make them (ratio 0.25, SnapKV's
    window of 4 on the 32-token prompt)."""
    snap = dict(compression_ratio=0.25, window_size=4)
    return [
        kvpress.SnapKVPress(**snap),
        kvpress.PyramidKVPress(**snap),
        kvpress.AdaKVPress(kvpress.SnapKVPress(**snap)),
        kvpress.KnormPress(compression_ratio=0.25),
        kvpress.TOVAPress(compression_ratio=0.25),
        kvpress.KeyDiffPress(compression_ratio=0.25),
        kvpress.StreamingLLMPress(compression_ratio=0.25),
        kvpress.ObservedAttentionPress(compression_ratio=0.25),
    ]


@pytest.mark.kvpress
def test_kvpress_presses_driven_directly_conform_up_to_ties():
    """Each of kvpress's own presses, run through its own compress() on the press trace, keeps the
    golden sets, or departs only where equal scores leave the choice open (torch.topk's order)."""
    kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
    trace = kvoracle.read_trace(str(PRESS_TRACE))
    kinds = {}
    for press in kvpress_presses(kvpress):
        decisions = kvoracle.conformance.drive_press(press, trace)
        verdict = kvoracle.conformance_check(str(PRESS_GOLDEN), decisions)
        (case,) = verdict["cases"]
        kinds[case["case"]] = "conforms" if case["conforms"] else case["first_departure"]["kind"]
        assert case["conforms"] or case["first_departure"]["kind"] == "tie", verdict.report.text
    assert set(kinds) == {c["policy"] + "@24" for c in json_cases(PRESS_GOLDEN)}
    print(kinds)


def json_cases(path):
    import json

    return json.loads(pathlib.Path(path).read_text())["cases"]


@pytest.mark.kvpress
def test_a_press_without_its_pooling_departs_at_the_cut():
    """SnapKV with kernel_size 1 (its scores unpooled) is a different press: the checker says
    "differs" at the prompt's last step, not "tie"."""
    kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
    trace = kvoracle.read_trace(str(PRESS_TRACE))
    press = kvpress.SnapKVPress(compression_ratio=0.25, window_size=4, kernel_size=1)
    verdict = kvoracle.conformance_check(str(PRESS_GOLDEN), kvoracle.conformance.drive_press(press, trace))
    first = verdict["cases"][0]["first_departure"]
    assert (first["step"], first["kind"]) == (trace.prompt_len - 1, "differs"), verdict.report.text


@pytest.mark.kvpress
def test_drive_press_refuses_a_trace_without_keys():
    trace = kvoracle.read_trace(str(ROOT / "conformance" / "golden" / "tie-trace.safetensors"))
    kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
    with pytest.raises(kvoracle.KvoError, match="needs q and k"):
        kvoracle.conformance.drive_press(kvpress.SnapKVPress(compression_ratio=0.25, window_size=4), trace)


@pytest.mark.kvpress
def test_conformance_md_press_example(monkeypatch, capsys):
    pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
    page = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    presses = re.findall(r"```python\n(.*?)```", page, flags=re.S)[2]
    monkeypatch.chdir(ROOT)
    exec(presses, {})  # noqa: S102
    out = capsys.readouterr().out
    for case in ("snapkv@24", "knorm@24", "adakv(snapkv)@24"):
        assert re.search(rf"^{re.escape(case)}: first departs at step 31, layer \d, KV head \d \(tie\)", out, re.M), out


def real_drop_h2o(heavy, recent, prompt_len, dtype):
    """The eviction rule of the original H2O code's real-drop cache (FMInference/H2O,
    h2o_hf/utils_real_drop), written here from its semantics: each head adds every query's
    attention over the tokens it holds to their scores, in the model's dtype; once it holds more
    than heavy + recent tokens (a prompt: all at once, after its last token) it keeps the last
    `recent` and, of the others, the `heavy` best by torch.topk (ties in torch.topk's order)."""
    import torch

    scores = {}

    def evict(unit, step, attention, cache):
        s = scores.setdefault(unit, {})
        for t, a in zip(cache, attention):
            s[t] = (torch.tensor(s.get(t, 0.0), dtype=dtype) + torch.tensor(a, dtype=dtype)).item()
        if step < prompt_len - 1 or len(cache) <= heavy + recent:
            return []
        older = cache[: len(cache) - recent]
        keep = torch.topk(torch.tensor([s[t] for t in older], dtype=torch.float64), heavy).indices.tolist()
        kept = {older[i] for i in keep}
        return [t for t in older if t not in kept]

    return evict


@pytest.mark.parametrize("golden_name", ["tie-trace", "tie-trace-prompt16"])
def test_the_original_h2o_real_drop_rule_conforms_up_to_ties(golden_name):
    """kvoracle's h2o case is the original code's decisions: in full precision its rule keeps the
    golden sets, or departs where equal scores leave torch.topk the choice."""
    golden = ROOT / "conformance" / "golden" / f"{golden_name}.json"
    trace = kvoracle.read_trace(str(golden.with_suffix(".safetensors")))
    import torch

    mine = kvoracle.conformance.drive(real_drop_h2o(4, 4, trace.prompt_len, torch.float64), trace, "h2o", 8)
    (case,) = kvoracle.conformance_check(str(golden), mine)["cases"]
    assert case["conforms"] or case["first_departure"]["kind"] == "tie", case


def test_the_original_h2o_rule_in_half_precision_departs(tmp_path):
    """Run in float16 (the original code adds the attention in the model's dtype), the same rule
    departs where fp16's order of the sums first breaks: the fp16 fixture above."""
    import torch

    trace = long_trace(tmp_path)
    golden = kvoracle.conformance_golden(trace, policies="h2o", budgets="64")
    exact = kvoracle.conformance.drive(real_drop_h2o(32, 32, 0, torch.float64), trace, "h2o", 64)
    assert kvoracle.conformance_check(golden, exact)["conforms"]
    half = kvoracle.conformance.drive(real_drop_h2o(32, 32, 0, torch.float16), trace, "h2o", 64)
    first = kvoracle.conformance_check(golden, half)["cases"][0]["first_departure"]
    assert (first["step"], first["kind"]) == (440, "differs"), first


def random_press_trace(like, seed):
    """Another prompt of the press trace's shape, seeded: a batch row beside the golden one."""
    rng = np.random.default_rng(seed)
    shape = lambda h: (h, like.n_tokens, like.head_dim)  # noqa: E731
    q = [rng.standard_normal(shape(like.n_heads)).astype(np.float32) for _ in range(like.n_layers)]
    k = [rng.standard_normal(shape(like.n_kv_heads)).astype(np.float32) for _ in range(like.n_layers)]
    v = [rng.standard_normal(shape(like.n_kv_heads)).astype(np.float32) for _ in range(like.n_layers)]
    return kvoracle.Trace.from_arrays(q, k, v, prompt_len=like.prompt_len)


@pytest.mark.kvpress
def test_batch_rows_reusing_row_0_depart_at_the_cut():
    """A SnapKV whose scores of every batch row are row 0's (the bug class of scorers that reuse the
    first row's decisions): with the golden trace in row 1 it departs at the cut, "differs"; the
    real SnapKVPress in the same batch keeps its golden row's sets up to ties."""
    kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
    trace = kvoracle.read_trace(str(PRESS_TRACE))
    other = random_press_trace(trace, 1)

    class RowZeroSnapKV(kvpress.SnapKVPress):
        def score(self, *args, **kwargs):
            s = super().score(*args, **kwargs)
            return s[:1].expand_as(s).clone()

    snap = dict(compression_ratio=0.25, window_size=4)
    good = kvoracle.conformance.drive_press(kvpress.SnapKVPress(**snap), trace, batch_with=[other])
    (case,) = kvoracle.conformance_check(str(PRESS_GOLDEN), good)["cases"]
    assert case["conforms"] or case["first_departure"]["kind"] == "tie", case
    bad = kvoracle.conformance.drive_press(RowZeroSnapKV(**snap), trace, batch_with=[other])
    assert bad[0]["policy"] == "snapkv"  # named by its kvpress base class
    (case,) = kvoracle.conformance_check(str(PRESS_GOLDEN), bad)["cases"]
    assert (case["first_departure"]["step"], case["first_departure"]["kind"]) == (31, "differs"), case
