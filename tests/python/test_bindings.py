"""The Python module on numpy arrays, checked against independent numpy/itertools computations."""

import itertools
import os
import tempfile

import kvoracle  # installed by scripts/run-tests (pip install .)
import numpy as np
import pytest
from kvoracle.hf import EvictionAdapter


def random_trace(layers=2, heads=4, kv_heads=2, n=48, d=8, seed=0):
    g = np.random.default_rng(seed)
    q = [g.standard_normal((heads, n, d), dtype=np.float32) for _ in range(layers)]
    k = [g.standard_normal((kv_heads, n, d), dtype=np.float32) for _ in range(layers)]
    v = [g.standard_normal((kv_heads, n, d), dtype=np.float32) for _ in range(layers)]
    return kvoracle.Trace.from_arrays(q, k, v, attn_scale=0.5), q, k, v


def test_trace_round_trip():
    t, q, k, v = random_trace()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.safetensors")
        kvoracle.write_trace(path, t)
        r = kvoracle.read_trace(path)
    assert (r.n_layers, r.n_heads, r.n_kv_heads, r.n_tokens, r.head_dim) == (2, 4, 2, 48, 8)
    np.testing.assert_array_equal(r.q(1), q[1])
    np.testing.assert_array_equal(r.v(0), v[0])
    assert r.attn_scale == 0.5


def test_from_arrays_scales_logits_as_a_transformer_does():
    """Without attn_scale, a model's raw q and k give softmax(q.k / sqrt(d)), not unscaled logits."""
    _, q, k, v = random_trace(d=16)
    assert kvoracle.Trace.from_arrays(q, k, v).attn_scale == pytest.approx(0.25)
    assert kvoracle.Trace.from_arrays(q, k, v, attn_scale=1.0).attn_scale == 1.0


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="does not exist|cannot"):
        kvoracle.read_trace("/no/such/trace.safetensors")
    t, *_ = random_trace()
    with pytest.raises(ValueError, match="unknown policy"):
        kvoracle.replay(t, policy="nope")


def test_replay_respects_the_budget_and_nesting():
    t, *_ = random_trace()
    heads = kvoracle.replay(t, policy=kvoracle.policy.H2O, budget="25%")
    assert len(heads) == 2 * 4
    for h in heads:
        prev = set()
        for i, kept in enumerate(h["kept"]):
            assert len(kept) <= h["k"]
            assert set(kept) <= prev | {i}
            prev = set(kept)
    assert {p["name"] for p in kvoracle.policies()} >= {kvoracle.policy.H2O, kvoracle.policy.TOVA}


def test_policy_constants_spell_every_registry_name():
    names = [p["name"] for p in kvoracle.policies()]
    constants = {k: v for k, v in vars(kvoracle.policy).items() if k.isupper()}
    assert sorted(constants.values()) == sorted(names)
    assert kvoracle.policy.H2O == names[0]  # the recommended policy leads the table
    for name, value in constants.items():
        assert name == value.upper().replace("-", "_")


def test_static_oracles_equal_brute_force():
    g = np.random.default_rng(1)
    sim = g.exponential(size=(6, 10))
    best = max(sim[:, list(s)].max(axis=1).sum() for s in itertools.combinations(range(10), 3))
    r = kvoracle.facility_location_optimum(sim, 3)
    assert r["exact"] and abs(r["value"] - best) < 1e-12
    gr = kvoracle.greedy_facility_location(sim, 3)
    assert gr["value"] >= (1 - (2 / 3) ** 3) * best - 1e-12 and gr["upper_bound"] >= best - 1e-12
    w = g.exponential(size=12)
    assert abs(kvoracle.topk_optimum(w, 4)["value"] - np.sort(w)[-4:].sum()) < 1e-12


def test_facility_location_reads_every_array_layout_alike():
    """C-ordered (asymmetric: transposed in C++; symmetric: read in place), Fortran-ordered,
    strided and integer arrays give the same picks and value as the Fortran float64 array."""
    g = np.random.default_rng(5)
    asym = g.exponential(size=(90, 70))
    sym = g.exponential(size=(80, 80))
    sym = sym + sym.T
    for sim in (asym, sym):
        ref = kvoracle.greedy_facility_location(np.asfortranarray(sim), 7)
        for variant in (np.ascontiguousarray(sim), np.ascontiguousarray(sim.T).T, sim[:, :]):
            r = kvoracle.greedy_facility_location(variant, 7)
            assert list(r["picks"]) == list(ref["picks"]) and r["value"] == ref["value"]
    ints = (asym * 10).astype(np.int64)
    r = kvoracle.greedy_facility_location(ints, 5)
    assert r["value"] == kvoracle.greedy_facility_location(ints.astype(np.float64), 5)["value"]
    padded = np.zeros((90, 140))
    padded[:, ::2] = asym  # non-contiguous: numpy converts it first
    assert kvoracle.greedy_facility_location(padded[:, ::2], 7)["value"] == ref_value(asym, 7)
    with pytest.raises(ValueError, match="2-d"):
        kvoracle.greedy_facility_location(np.zeros(5), 2)


def ref_value(sim, k):
    return kvoracle.greedy_facility_location(np.asfortranarray(sim), k)["value"]


def brute_offline(w, k):
    """Every nested schedule: token j kept over steps [j, e_j], at most k tokens per step."""
    n = w.shape[0]
    best = 0.0
    for ends in itertools.product(*[range(j - 1, n) for j in range(n)]):
        if any(sum(1 for j in range(i + 1) if j <= i <= ends[j]) > k for i in range(n)):
            continue
        best = max(best, sum(w[i, j] for j in range(n) for i in range(j, ends[j] + 1)))
    return best


def test_offline_optimum_equals_enumeration():
    g = np.random.default_rng(2)
    for _ in range(3):
        w = np.tril(g.exponential(size=(6, 6)))
        r = kvoracle.offline_optimum(w, 2)
        assert abs(r["value"] - brute_offline(w, 2)) < 1e-9
        assert abs(r["certificate"] - r["value"]) < 1e-9
        assert all(len(s) <= 2 for s in r["schedule"])


def test_verify_reports_no_theorem_failure():
    t, *_ = random_trace(layers=1, heads=2, kv_heads=1, n=40)
    rep = kvoracle.verify(t, budget="25%", checks=["C1", "C10", "C19", "D1"])
    assert rep["format"] == "kvoracle-report" and rep["theorem_failures"] == 0
    assert {r["id"] for r in rep["records"]} == {"C1", "C10", "C19", "D1"}


def test_search_attention_is_the_cli_search():
    rep = kvoracle.search_attention(tokens=16, head_dim=8, budget="4", evaluations=60, policies=["h2o"])
    (p,) = rep["policies"]
    assert p["policy"] == "h2o" and p["worst"] <= p["random_worst"] and p["curve"][-1]["evaluation"] == 60
    assert (
        p["worst"]
        == kvoracle.search_attention(tokens=16, head_dim=8, budget="4", evaluations=60, policies=["h2o"])["policies"][
            0
        ]["worst"]
    )
    with pytest.raises(ValueError, match="against: 'x' is neither opt_dyn nor per_step"):
        kvoracle.search_attention(against="x")


def test_search_hypotheses_is_the_cli_search():
    args = dict(
        tokens=12, logit_range=12.0, budget="4", prompt_len=8, evaluations=400, restarts=2, policies=["h2o-paper"]
    )
    rep = kvoracle.search_hypotheses(**args)
    (p,) = rep["policies"]
    assert p["policy"] == "h2o-paper" and p["found"] and p["curve"][-1]["evaluation"] == 400
    assert p["alpha"] < 1 and p["worst"] == kvoracle.search_hypotheses(**args)["policies"][0]["worst"]
    assert rep["request"]["run"]["objective"] == "dense-acc"
    with pytest.raises(ValueError, match="logit_range: -1 is not a positive number"):
        kvoracle.search_hypotheses(logit_range=-1.0)


def test_verify_checks_other_papers_claims_by_paper():
    t, *_ = random_trace(layers=1, heads=2, kv_heads=1, n=40)
    rep = kvoracle.verify(t, budget="25%", claims=["adakv", "tova"])
    assert {r["id"] for r in rep["records"]} == {"ADA1", "ADA2", "ADA3", "TOVA1"}
    quoted = {c["id"]: c for c in rep["claims"] if "statement" in c}
    assert quoted["TOVA1"]["paper"] == "TOVA" and "outperforms" in quoted["TOVA1"]["statement"]
    with pytest.raises(ValueError, match="unknown paper 'ada'"):
        kvoracle.verify(t, claims=["ada"])


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_adapter_drives_the_manager_like_a_decoder():
    """A numpy decoder (no torch): per layer a dense K tensor [batch, kv, held, d] gathered with the
    adapter's keep indices; the held positions equal the manager's and every head keeps k rows."""
    batch, layers, heads, kv_heads, d, n, k = 2, 2, 4, 2, 8, 30, 6
    adapter = EvictionAdapter(kvoracle.policy.H2O, str(k), layers, heads, kv_heads, max_len=n, batch=batch)
    g = np.random.default_rng(3)
    keys = [np.zeros((batch, kv_heads, 0, d)) for _ in range(layers)]
    for _pos in range(n):
        for layer in range(layers):
            new_k = g.standard_normal((batch, kv_heads, 1, d))
            K = np.concatenate([keys[layer], new_k], axis=2)
            q = g.standard_normal((batch, heads, d))
            attn = np.stack([[softmax(K[b, h // 2] @ q[b, h]) for h in range(heads)] for b in range(batch)])
            keep = adapter.step(layer, attn)
            keys[layer] = np.stack([np.stack([K[b, kv, keep[b][kv]] for kv in range(kv_heads)]) for b in range(batch)])
    for layer in range(layers):
        assert keys[layer].shape == (batch, kv_heads, k, d)
        for b in range(batch):
            for kv in range(kv_heads):
                np.testing.assert_array_equal(adapter.positions[b][layer][kv], adapter.manager.held(b, layer, kv))


def test_scorer_twin_equals_replay():
    t, *_ = random_trace()
    s = kvoracle.score(t, kvoracle.policy.H2O, budgets=["25%", "6"])
    assert s["device"].startswith("cpu twin") and len(s["units"]) == 2 * 2 * 4
    for budget in ("25%", "6"):
        units = [u for u in s["units"] if u["budget"] == budget]
        heads = kvoracle.replay(t, policy=kvoracle.policy.H2O, budget=budget)
        for u, h in zip(units, heads):
            assert (u["layer"], u["head"]) == (h["layer"], h["head"])
            ev = u["evict_step"]
            for i, kept in enumerate(h["kept"]):
                mine = [j for j in range(i + 1) if ev[j] < 0 or ev[j] > i]
                assert mine == list(kept)


def test_output_errors_and_bound_equal_numpy():
    """E(S) renormalises the kept keys as a decoder does; the bound weights give E(S) <= B(S)."""
    t, q, k, v = random_trace(layers=1, n=24, seed=3)
    P, kv, layer = 10, 1, 0
    heads = [2, 3]  # the group of KV head 1
    sets = [[], [0, 4, 9], list(range(P))]
    errs = kvoracle.output_errors(t, layer, kv, P, sets)
    u = kvoracle.prefill_optimum(t, layer, kv, P, 3)
    for S, e in zip(sets, errs):
        want = 0.0
        for h in heads:
            for i in range(P, 24):
                logits = (q[layer][h, i].astype(np.float64) @ k[layer][kv, : i + 1].T.astype(np.float64)) * 0.5
                p = np.exp(logits - logits.max())
                full = (p / p.sum()) @ v[layer][kv, : i + 1].astype(np.float64)
                keep = list(S) + list(range(P, i + 1))
                pk = np.exp(logits[keep] - logits[keep].max())
                want += np.linalg.norm((pk / pk.sum()) @ v[layer][kv, keep].astype(np.float64) - full) / 2
        assert e == pytest.approx(want, rel=1e-9, abs=1e-12)
        bound = u["bound_total"] - sum(u["bound_weights"][j] for j in S)
        assert e <= bound * (1 + 1e-12) + 1e-12
    assert errs[2] == pytest.approx(0, abs=1e-12)


def test_the_older_adapter_name_still_works_with_a_warning():
    import kvoracle.hf as hf

    with pytest.warns(DeprecationWarning, match="EvictionAdapter"):
        assert hf.EvictionPress is EvictionAdapter
