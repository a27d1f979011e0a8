"""The oracles' command modes are library calls that the CLI and the Python module share: the same
records from `kvoracle oracle static|prefill|allocation` and from `kvoracle.static_oracle` /
`kvoracle.prefill_oracle` / `kvoracle.allocation_oracle`, and the older one-command spellings give the same files."""

import json
import subprocess

import kvoracle as kvo
import numpy as np
import pytest


def same_records(a, b, rel=1e-12):
    """Equal keys, strings and integers; floats to `rel`. The CLI under test and the pip-built module
    may be compiled for different instruction sets (the sanitizer pass builds the CLI with
    -march=native, the module is portable), and fused multiply-adds move the last bits of a double."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_records(a[k], b[k], rel) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_records(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=rel, abs=1e-300)
    return a == b


def test_same_records_tells_a_last_bit_from_a_difference():
    r = [{"press": "knorm", "k": 16, "value": 6.405401407506152}]
    assert same_records(r, [{"press": "knorm", "k": 16, "value": 6.405401407506153}])
    assert not same_records(r, [{"press": "knorm", "k": 16, "value": 6.40540140}])
    assert not same_records(r, [{"press": "knorm", "k": 15, "value": 6.405401407506152}])
    assert not same_records(r, [{"press": "snapkv", "k": 16, "value": 6.405401407506152}])
    assert not same_records(r, r + r)


@pytest.fixture
def same_build(kvoracle):
    """Whether the CLI under test and the module target the same instruction set ("kvoracle 0.1.0
    (portable)"). The sanitizer pass builds its CLI with -march=native: fused multiply-adds move
    the last bits of float32 model activations, and a near tie in a ranking (a press's top-k) can
    then keep another token, so model results are compared exactly only between like builds."""
    out = subprocess.run([kvoracle, "--version"], check=True, capture_output=True, text=True).stdout
    return out.strip().endswith(f"({kvo.__build_isa__})")


def without(records, *keys):
    """Records without the given fields (of `detail` too): rounding-level measurements."""
    out = []
    for r in records:
        r = {k: v for k, v in r.items() if k not in keys}
        if isinstance(r.get("detail"), dict):
            r["detail"] = {k: v for k, v in r["detail"].items() if k not in keys}
        out.append(r)
    return out


def run(kvoracle, *args):
    subprocess.run([kvoracle, "-q", *map(str, args)], check=True, stdout=subprocess.DEVNULL)


def test_static_oracle_same_records_from_cli_and_python(kvoracle, trace_file, tmp_path):
    out = tmp_path / "static.jsonl"
    run(kvoracle, "oracle", "static", trace_file, "--budget", "6", "--every", "5", "--objective", "mass", "--out", out)
    cli = [json.loads(line) for line in open(out)]
    py = kvo.static_oracle(kvo.read_trace(str(trace_file)), every=5, budget="6", objective="mass")
    assert same_records(py, cli) and len(cli) == 2 * 4 * 11


def test_prefill_oracle_same_records_from_cli_and_python(kvoracle, trace_file, tmp_path):
    out = tmp_path / "prefill.json"
    run(kvoracle, "oracle", "prefill", trace_file, "--prompt-len", "32", "--presses", "knorm,streaming_llm",
        "--compression-ratio", "0.5", "--n-sink", "2", "--json", out)  # fmt: skip
    cli = json.load(open(out))
    py = kvo.prefill_oracle(
        kvo.read_trace(str(trace_file)), 32, presses="knorm,streaming_llm", compression_ratio=[0.5], n_sink=2
    )
    assert same_records(py["records"], cli["records"]) and len(cli["records"]) == 2 * 2 * 2
    assert [s["press"] for s in py["summary"]] == ["knorm", "streaming_llm"]
    assert all(0 < s["fraction_of_optimum"] <= 1 + 1e-12 for s in py["summary"])
    with pytest.raises(ValueError, match="'ratios' is now called 'compression_ratio'"):
        kvo.prefill_oracle(kvo.read_trace(str(trace_file)), 32, ratios=[0.5])


def test_allocation_oracle_same_rows_from_cli_and_python(kvoracle, trace_file, tmp_path):
    out = tmp_path / "allocation.json"
    run(kvoracle, "oracle", "allocation", trace_file, "--prompt-len", "32", "--compression-ratio", "0.5,0.9",
        "--floor", "20%", "--scopes", "head,layer,model", "--json", out)  # fmt: skip
    cli = json.load(open(out))
    t = kvo.read_trace(str(trace_file))
    py = kvo.allocation_oracle(
        t, prompt_len=32, compression_ratio=[0.5, 0.9], floor="20%", scopes=["head", "layer", "model"]
    )
    assert same_records(py["rows"], cli["rows"]) and len(cli["rows"]) == 2 * 3
    assert py["request"] == cli["request"]
    head, layer, model = py["rows"][:3]
    assert head["value"] <= layer["value"] + 1e-12 <= model["value"] + 2e-12
    assert all(abs(r["upper"] - r["value"]) <= 1e-9 for r in py["rows"])
    cli_dec = tmp_path / "decoding.json"
    run(kvoracle, "oracle", "allocation", trace_file, "--protocol", "decoding", "--budgets", "25%", "--recent", "2",
        "--scopes", "head,layer", "--page-sizes", "1,4", "--json", cli_dec)  # fmt: skip
    dec = kvo.allocation_oracle(
        t, protocol="decoding", budgets="25%", recent=2, scopes=["head", "layer"], page_sizes=[1, 4]
    )  # fmt: skip
    assert same_records(dec["rows"], json.load(open(cli_dec))["rows"]) and len(dec["rows"]) == 2 * 2
    assert dec["rows"][1]["value"] >= dec["rows"][0]["value"] * (1 - 1e-12)
    assert [r["page_size"] for r in dec["rows"]] == [1, 1, 4, 4]
    cg = kvo.allocation_oracle(
        t, protocol="decoding", budgets="25%", recent=2, scopes=["head", "layer"], page_sizes=[1, 4],
        solver="column-generation",
    )  # fmt: skip
    assert cg["request"]["solver"] == "column-generation"
    assert all(abs(a["value"] - b["value"]) <= 1e-9 * b["value"] for a, b in zip(cg["rows"], dec["rows"]))
    assert all(r["value"] <= r["token_value"] * (1 + 1e-12) for r in dec["rows"])
    cli_per = tmp_path / "periodic.json"
    run(kvoracle, "oracle", "allocation", trace_file, "--protocol", "decoding", "--interval", "1,16", "--target", "25%",
        "--prompt-len", "8", "--json", cli_per)  # fmt: skip
    per = kvo.allocation_oracle(t, protocol="decoding", interval=[1, 16], target="25%", prompt_len=8)
    assert same_records(per["rows"], json.load(open(cli_per))["rows"]) and len(per["rows"]) == 2 * 2
    assert all(r["value"] <= r["peak_value"] * (1 + 1e-12) for r in per["rows"])
    cli_methods = tmp_path / "methods.json"
    run(kvoracle, "oracle", "allocation", trace_file, "--prompt-len", "32", "--compression-ratio", "0.5",
        "--scopes", "head", "--presses", "snapkv,knorm", "--window-size", "4", "--alpha-safeguard", "0.2",
        "--layer-ratios", "0.25,0.75", "--json", cli_methods)  # fmt: skip
    methods = kvo.allocation_oracle(
        t, prompt_len=32, compression_ratio=0.5, scopes="head", presses="snapkv,knorm", window_size=4,
        alpha_safeguard=0.2, layer_ratios=[0.25, 0.75],
    )  # fmt: skip
    cli_m = json.load(open(cli_methods))
    assert same_records(methods["methods"], cli_m["methods"]) and len(methods["methods"]) == 2 * 2 + 2
    assert [m["slots"][0] for m in methods["methods"][-2:]] == [24, 24]  # 32 (1 - 0.25) in layer 0
    assert methods["request"] == cli_m["request"] and methods["request"]["press"]["window_size"] == 4
    with pytest.raises(ValueError, match="interval needs target"):
        kvo.allocation_oracle(t, protocol="decoding", interval=64)
    with pytest.raises(ValueError, match="the floors would exceed the total budget"):
        kvo.allocation_oracle(t, prompt_len=32, compression_ratio=0.9, floor=4)
    with pytest.raises(ValueError, match="allocation_oracle: unknown option 'flor'"):
        kvo.allocation_oracle(t, prompt_len=32, flor="20%")


def test_library_calls_refuse_bad_requests(trace_file):
    t = kvo.read_trace(str(trace_file))
    with pytest.raises(ValueError, match="objective is dense-acc"):
        kvo.static_oracle(t, objective="acc")
    with pytest.raises(ValueError, match=r"prompt_len must be in \[1, 47\]"):
        kvo.prefill_oracle(t, 48)
    with pytest.raises(ValueError, match="prefill_oracle: unknown option 'windowsize'"):
        kvo.prefill_oracle(t, 32, windowsize=3)


def test_verify_traces_same_report_as_the_cli(kvoracle, trace_file, tmp_path):
    small = ["--checks", "C1,C10,D1", "--sweep", "0.25", "--samples", "20", "--loss-random", "2", "--budget", "25%"]
    run(kvoracle, "verify", trace_file, *small, "--json", tmp_path / "cli.json", "--report", tmp_path / "cli")
    cli = json.load(open(tmp_path / "cli.json"))
    py = kvo.verify_traces([str(trace_file)], report=str(tmp_path / "py"), json=str(tmp_path / "py.json"),
                           checks=["C1", "C10", "D1"], sweep=[0.25], samples=20, loss_random=2, budget="25%")  # fmt: skip
    assert same_records(py["records"], cli["records"]) and py["meta"] == cli["meta"]
    assert (tmp_path / "py" / "report.md").exists() and json.load(open(tmp_path / "py.json"))["meta"] == cli["meta"]
    both = kvo.verify_traces([str(trace_file), str(trace_file)], checks=["C1"], sweep=[], budget="25%")
    assert [t["name"] for t in both["traces"]] == ["t", "t-2"] and len(both["reports"]) == 2
    with pytest.raises(ValueError, match="plot takes one trace"):
        kvo.verify_traces([str(trace_file), str(trace_file)], plot=str(tmp_path / "p.svg"))
    with pytest.raises(ValueError, match="verify_traces: unknown option 'histroy'"):
        kvo.verify_traces([str(trace_file)], histroy=3)
    # The check sizes come from the CLI's table: the loss checks on one key matrix and no random one.
    # C23's metric is a finite-difference error at rounding level: the same records apart from it.
    run(kvoracle, "verify", trace_file, "--checks", "C23", "--loss-heads", "1", "--loss-random", "0", "--sweep", "none", "--json", tmp_path / "l.json")  # fmt: skip
    py = kvo.verify_traces([str(trace_file)], checks=["C23"], loss_heads=1, loss_random=0, sweep=[])
    cli = json.load(open(tmp_path / "l.json"))["records"]
    assert same_records(without(py["records"], "metric", "relative_errors"), without(cli, "metric", "relative_errors"))
    assert len(py["records"]) == 1 and py["records"][0]["holds"]
    assert not kvo.verify_traces([str(trace_file)], checks=["C23"], loss_heads=0, loss_random=0, sweep=[])["records"]
    with pytest.raises(ValueError, match="ground: 'twelve' is not an integer"):
        kvo.verify(kvo.read_trace(str(trace_file)), ground="twelve")
    with pytest.raises(ValueError, match="loss_heads must be >= 0"):
        kvo.verify(kvo.read_trace(str(trace_file)), loss_heads=-1)


def test_offline_oracle_same_file_and_summary_as_the_cli(kvoracle, trace_file, tmp_path):
    run(kvoracle, "oracle", "offline", trace_file, "--budget", "8", "--policies", "h2o,tova", "--json", tmp_path / "c.json")  # fmt: skip
    py = kvo.offline_oracle(str(trace_file), policies="h2o,tova".split(","), budget="8")
    s = py.pop("summary")
    assert same_records(py, json.load(open(tmp_path / "c.json")))
    # A Trace object: the same heads, named "the trace".
    on_object = kvo.offline_oracle(kvo.read_trace(str(trace_file)), policies=["h2o", "tova"], budget="8")
    assert on_object["trace"] == "the trace" and on_object.pop("summary") == {**s, "trace": "the trace"}
    assert same_records({**py, "trace": "the trace"}, dict(on_object))
    with pytest.raises(ValueError, match="offline_oracle: unknown option 'json'"):
        kvo.offline_oracle(str(trace_file), json=str(tmp_path / "p.json"))
    assert [p["policy"] for p in s["policies"]] == ["h2o", "tova"] and s["violations"] == 0
    assert all(p["worst_ratio"] <= p["mean_ratio"] + 1e-12 <= 1 + 1e-9 for p in s["policies"] if p["ordering_checked"])
    with pytest.raises(ValueError, match="forced_window must be >= 0"):
        kvo.offline_oracle(str(trace_file), forced_window=-1)


def test_model_generates_what_the_cli_generates(kvoracle, tiny_model_path):
    prompt = "The capital of France is"
    cli = subprocess.run([kvoracle, "generate", prompt, "-n", "6", "--model", tiny_model_path], check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    m = kvo.Model(tiny_model_path)
    ids = m.tokenize(prompt)
    out = m.generate(prompt, max_tokens=6)
    assert cli == prompt + out["text"] + "\n"
    assert m.generate(ids, max_tokens=6) == out and m.detokenize(out["ids"]) == out["text"]
    assert 1 <= len(out["ids"]) <= 6 and m.path == tiny_model_path
    with pytest.raises(ValueError, match="max_tokens"):
        m.generate(ids, max_tokens=0)
    with pytest.raises(ValueError):
        kvo.Model(tiny_model_path + ".missing")


def test_model_calls_give_what_the_cli_gives(kvoracle, tiny_model_path, tmp_path, same_build):
    """eval, eval prefill, perplexity and record through kvoracle.Model equal the CLI's output, to
    float32 rounding when both are built alike; between a native CLI and the portable module, the
    same rows and the full-cache reference to 1e-4 (a press's top-k may break a near tie otherwise)."""
    text = "/usr/share/common-licenses/GPL-3"
    body = open(text, encoding="utf-8").read()
    m = kvo.Model(tiny_model_path)
    run(kvoracle, "eval", "--text", text, "--tokens", 24, "--policies", "h2o,window", "--budgets", "50%,6",
        "--history", 5, "--model", tiny_model_path, "--json", tmp_path / "eval.json")  # fmt: skip
    cli = json.load(open(tmp_path / "eval.json"))
    assert cli.pop("text") == text
    py = m.eval(body, policies=["h2o", "window"], budgets=["50%", 6], tokens=24, history=5)
    assert len(py["points"]) == 4
    if same_build:
        assert same_records(py, cli, rel=1e-4)
    else:  # an eviction near a tie may differ; the points and the full cache may not
        keep = ("policy", "budget", "k")
        assert [{k: p[k] for k in keep} for p in py["points"]] == [{k: p[k] for k in keep} for p in cli["points"]]
        assert same_records(without([py], "points"), without([cli], "points"), rel=1e-4)
    run(kvoracle, "eval", "prefill", "--text", text, "--tokens", 40, "--prompt-len", 28, "--presses",
        "knorm,streaming_llm", "--compression-ratio", 0.5, "--n-sink", 2, "--policies", "h2o", "--scopes",
        "head,model", "--alpha-safeguard", 0.2, "--model", tiny_model_path, "--json", tmp_path / "prefill.json")  # fmt: skip
    cli = json.load(open(tmp_path / "prefill.json"))
    assert cli.pop("text") == text
    py = m.eval_prefill(body, 28, tokens=40, presses="knorm,streaming_llm", compression_ratio=[0.5], policies=["h2o"],
                        n_sink=2, scopes="head,model", alpha_safeguard=[0.2])  # fmt: skip
    assert [r["set"] for r in py["rows"]] == [
        "knorm", "adakv(knorm, 0.2)", "streaming_llm", "adakv(streaming_llm, 0.2)", "h2o", "optimum",
        "optimum@model", "optimum_output_bound",
    ]  # fmt: skip
    if same_build:
        assert same_records(py, cli, rel=1e-4)
    else:
        keep = ("set", "compression_ratio", "kv_bytes")
        assert [{k: r[k] for k in keep} for r in py["rows"]] == [{k: r[k] for k in keep} for r in cli["rows"]]
        assert same_records(without([py], "rows"), without([cli], "rows"), rel=1e-4)
    out = subprocess.run([kvoracle, "perplexity", "--text", text, "--tokens", "32", "--model", tiny_model_path],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    ppl = m.perplexity(body, tokens=32)
    assert ppl["tokens"] == 32 and ppl["predictions"] == 31
    assert float(out.split()[1]) == pytest.approx(ppl["perplexity"], rel=1e-4)
    run(kvoracle, "record", "--text", text, "--tokens", 20, "--layers", "0,1", "--model", tiny_model_path, "--out",
        tmp_path / "t.safetensors")  # fmt: skip
    cli = kvo.read_trace(str(tmp_path / "t.safetensors"))
    py = m.record(body, tokens=20, layers=[0, 1])
    assert (py.n_layers, py.n_tokens) == (cli.n_layers, cli.n_tokens) == (2, 20)
    for layer in range(2):
        np.testing.assert_allclose(py.q(layer), cli.q(layer), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(py.k(layer), cli.k(layer), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="eval_prefill: unknown option 'nsink'"):
        m.eval_prefill(body, 28, tokens=40, nsink=2)
    with pytest.raises(ValueError, match="eval: unknown option 'histroy'"):
        m.eval(body, tokens=24, histroy=5)
    with pytest.raises(ValueError, match="continuation of 2 or more"):
        m.eval_prefill(body, 39, tokens=40)
    with pytest.raises(ValueError, match="unknown budget scope 'heads'"):
        m.eval_prefill(body, 28, tokens=40, scopes="heads")
    with pytest.raises(ValueError, match="alpha_safeguard 2"):
        m.eval_prefill(body, 28, tokens=40, presses="knorm", alpha_safeguard=[2.0])


def test_paper_experiments_from_python_are_the_clis(kvoracle, tiny_model_path, tmp_path, same_build):
    """eval --kv-bits with an offline policy, and eval diversity, through kvoracle.Model: the CLI's
    rows and the same findings (E5, E8, E10)."""
    text = "/usr/share/common-licenses/GPL-3"
    body = open(text, encoding="utf-8").read()
    m = kvo.Model(tiny_model_path)
    run(kvoracle, "eval", "--text", text, "--tokens", 24, "--policies", "h2o,lookahead", "--budgets", 8,
        "--kv-bits", 4, "--model", tiny_model_path, "--json", tmp_path / "eval.json")  # fmt: skip
    cli = json.load(open(tmp_path / "eval.json"))
    py = m.eval(body, policies=["h2o", "lookahead"], budgets=[8], tokens=24, kv_bits=4)
    labels = ["full+int4", "h2o", "h2o+int4", "lookahead", "lookahead+int4"]
    assert [p["policy"] for p in py["points"]] == [p["policy"] for p in cli["points"]] == labels
    assert [r["id"] for r in py["paper_experiments"]] == [r["id"] for r in cli["paper_experiments"]] == ["E5", "E8"]
    if same_build:
        assert same_records(py["points"], cli["points"], rel=1e-4)
    run(kvoracle, "eval", "diversity", "--text", text, "--prompts", 2, "--prompt-tokens", 24, "--new-tokens", 6,
        "--policies", "h2o", "--budgets", 0.5, "--model", tiny_model_path, "--json", tmp_path / "div.json")  # fmt: skip
    cli = json.load(open(tmp_path / "div.json"))
    py = m.diversity(body, policies=["h2o"], budgets=[0.5], prompts=2, prompt_tokens=24, new_tokens=6)
    assert [r["row"] for r in py["rows"]] == [r["row"] for r in cli["rows"]] == ["h2o"]
    assert [r["id"] for r in py["paper_experiments"]] == ["E10"]
    if same_build:
        assert py["full"]["continuations"] == cli["full"]["continuations"]
        assert py["rows"][0]["continuations"] == cli["rows"][0]["continuations"]
    with pytest.raises(ValueError, match="diversity: policy lookahead"):
        m.diversity(body, policies=["lookahead"], prompts=1, prompt_tokens=24, new_tokens=2)
    with pytest.raises(ValueError, match="bits must be 0"):
        m.eval(body, tokens=24, kv_bits=1)


def test_replay_and_score_same_sets_from_cli_and_python(kvoracle, trace_file, tmp_path):
    run(kvoracle, "replay", trace_file, "--policy", "tova", "--budget", "10", "--out", tmp_path / "r.jsonl")
    cli = [json.loads(line) for line in open(tmp_path / "r.jsonl")]
    py = kvo.replay(kvo.read_trace(str(trace_file)), "tova", budget="10")
    assert [r["kept"] for r in cli] == [list(k) for h in py for k in h["kept"]]
    run(kvoracle, "score", trace_file, "--budgets", "25%,6", "--out", tmp_path / "s.jsonl")
    cli = [json.loads(line) for line in open(tmp_path / "s.jsonl")]
    s = kvo.score(kvo.read_trace(str(trace_file)), budgets=["25%", "6"])
    n = 48
    for u, unit in enumerate(s["units"]):
        for i in range(n):
            mine = [j for j in range(i + 1) if unit["evict_step"][j] < 0 or unit["evict_step"][j] > i]
            assert cli[u * n + i]["kept"] == mine and cli[u * n + i]["budget"] == unit["budget"]
    # Without budgets, the run option budget alone, as the CLI's score without --budgets.
    assert {u["budget"] for u in kvo.score(kvo.read_trace(str(trace_file)), budget="6")["units"]} == {"6"}
    with pytest.raises(ValueError, match="score request: give budgets or budget, not both"):
        kvo.score(kvo.read_trace(str(trace_file)), budgets=["6"], budget="6")
    units = kvo.score(kvo.read_trace(str(trace_file)), budgets=["6"], budget=None)["units"]
    assert {u["budget"] for u in units} == {"6"}
    with pytest.raises(ValueError, match="the greedy scorer replays"):
        kvo.score(kvo.read_trace(str(trace_file)), "tova")


def test_shared_budget_replay_same_sets_from_cli_and_python(kvoracle, trace_file, tmp_path):
    """A budget shared by every cache unit of the model: the same sets from both, the units' counts
    differ and together they hold the sum of their budgets; the manager takes the same option."""
    args = ("--policy", kvo.policy.SCISSORHANDS, "--budget", "10", "--budget-scope", "model", "--prompt-len", "0")
    run(kvoracle, "replay", trace_file, *args, "--out", tmp_path / "r.jsonl")
    cli = [json.loads(line) for line in open(tmp_path / "r.jsonl")]
    trace = kvo.read_trace(str(trace_file))
    py = kvo.replay(trace, kvo.policy.SCISSORHANDS, budget="10", budget_scope="model", prompt_len=0)
    assert [r["kept"] for r in cli] == [list(k) for h in py for k in h["kept"]]
    assert {len(h["kept"][-1]) for h in py} != {10} and sum(len(h["kept"][-1]) for h in py) == 8 * 10
    m = kvo.KvEvictionManager(kvo.policy.H2O, "2", 1, 2, max_len=8, budget_scope="layer")
    assert (m.budget_scope, m.max_held(0, 0), m.budget(0, 1)) == ("layer", 4, 2)
    with pytest.raises(ValueError, match="refused here"):
        kvo.static_oracle(trace, budget="6", budget_scope="layer")


def test_synthesize_writes_what_the_cli_writes(kvoracle, tmp_path):
    run(kvoracle, "synth", "--out", tmp_path / "s.safetensors", "--tokens", 40, "--prompt-len", 8, "--kv-heads", 1, "--zipf", 0.8, "--seed", 3)  # fmt: skip
    cli = kvo.read_trace(str(tmp_path / "s.safetensors"))
    py = kvo.synthesize(tokens=40, prompt_len=8, kv_heads=1, zipf=0.8, seed=3)
    assert (py.n_layers, py.n_heads, py.n_kv_heads, py.n_tokens) == (cli.n_layers, cli.n_heads, 1, 40)
    for layer in range(py.n_layers):
        np.testing.assert_array_equal(py.q(layer), cli.q(layer))
        np.testing.assert_array_equal(py.k(layer), cli.k(layer))
    with pytest.raises(ValueError, match="synthesize: unknown option 'head-dim'"):
        kvo.synthesize(**{"head-dim": 16})
    with pytest.raises(ValueError, match="heads must be a multiple of kv_heads"):
        kvo.synthesize(heads=3, kv_heads=2)
    with pytest.raises(ValueError, match="heads: '2.5' is not an integer"):
        kvo.synthesize(heads=2.5)


def test_tasks_from_python_are_the_clis(kvoracle, tiny_model_path, tmp_path, same_build):
    """kvoracle tasks generate / run and Model.generate_tasks / run_tasks: the same instances, and
    the same outcomes (exactly between like builds; otherwise the same rows, instances and full-cache
    answers, since an eviction near a tie may differ)."""
    m = kvo.Model(tiny_model_path)
    run(kvoracle, "tasks", "generate", "--tasks", "passkey,niah", "--lengths", 256, "--depths", "0.25",
        "--per-cell", 1, "--task-seed", 3, "--model", tiny_model_path, "-o", tmp_path / "s.jsonl")  # fmt: skip
    cli = [json.loads(line) for line in open(tmp_path / "s.jsonl")]
    py = m.generate_tasks(tasks=["passkey", "niah"], lengths=[256], depths=[0.25], per_cell=1, task_seed=3)
    assert py == cli and [r["task"] for r in py] == ["passkey", "niah"]
    run(kvoracle, "tasks", "run", "-i", tmp_path / "s.jsonl", "--policies", "h2o", "--budgets", "0.4",
        "--history", 7, "--model", tiny_model_path, "--json", tmp_path / "r.json")  # fmt: skip
    cli = json.load(open(tmp_path / "r.json"))
    res = m.run_tasks(py, policies=["h2o"], budgets=[0.4], history=7)
    assert res["protocol"] == "dynamic" and len(res["outcomes"]) == 6  # full cache, h2o, top-k
    if same_build:
        assert same_records(res, cli, rel=1e-9)
    else:
        keep = ("instance", "row", "budget")
        assert [{k: o[k] for k in keep} for o in res["outcomes"]] == [{k: o[k] for k in keep} for o in cli["outcomes"]]
        assert [o["answer"] for o in res["outcomes"] if o["row"] == "full-cache"] == [
            o["answer"] for o in cli["outcomes"] if o["row"] == "full-cache"
        ]
    with pytest.raises(ValueError, match="unknown task 'needle'"):
        m.generate_tasks(tasks=["needle"])
    with pytest.raises(ValueError, match="budget 0 is outside"):
        m.run_tasks(py, budgets=[0])
    with pytest.raises(ValueError, match='instance 0: no "answer" column'):
        m.run_tasks([{"context": "a", "question": "b"}])
    with pytest.raises(ValueError, match="run_tasks: unknown option 'histroy'"):
        m.run_tasks(py, histroy=3)
    with pytest.raises(ValueError, match="generate_tasks: unknown option 'budgets'"):
        m.generate_tasks(budgets=[0.2])
    # the same suite from its options, generated inside the call
    same = m.run_tasks(tasks="passkey,niah", lengths=256, depths=[0.25], per_cell=1, task_seed=3, policies=["h2o"],
                       budgets=[0.4], history=7)  # fmt: skip
    assert same == res
    # tasks report: the cells again from the outcomes (of a dict, or of the CLI's JSON file), also
    # over two runs' outcomes put together
    assert kvo.task_report(res) == res
    assert kvo.task_report(str(tmp_path / "r.json")) == cli
    both = kvo.task_report({"protocol": "dynamic", "outcomes": res["outcomes"] + res["outcomes"]})
    assert [c["count"] for c in both["cells"]] == [2 * c["count"] for c in res["cells"]]
    with pytest.raises(ValueError, match='task_report outcome 1: no "task"'):
        kvo.task_report({"protocol": "dynamic", "outcomes": [{"instance": "a"}]})


def test_contract_oracle_same_rows_from_cli_and_python(kvoracle, trace_file, tmp_path):
    doc = {"engine": "openvino", "start_size": 4, "recent_size": 4, "max_cache_size": 16, "block_size": 4}
    contract = tmp_path / "openvino.json"
    contract.write_text(json.dumps(doc))
    out = tmp_path / "contract.json"
    run(kvoracle, "oracle", "contract", trace_file, "--contract", contract, "--budgets", "24,40",
        "--policies", "h2o,tova", "--json", out)  # fmt: skip
    cli = json.load(open(out))
    t = kvo.read_trace(str(trace_file))
    py = kvo.contract_oracle(t, contract=doc, budgets=["24", "40"], policies="h2o,tova")
    assert same_records(py["rows"], cli["rows"]) and len(py["rows"]) == 2
    assert py["documents"] == cli["documents"] == [doc]
    assert [r["engine"] for r in py["rows"]] == ["openvino", "openvino"]
    for row in py["rows"]:
        assert row["certified"] and row["price"] <= 1 + 1e-12
        assert row["contract"]["kept_sets"] == "layer" and row["contract"]["page_size"] == 4
        assert [p["policy"] for p in row["policies"]] == ["h2o", "tova"]
        assert all(p["share"] <= 1 + 1e-12 for p in row["policies"])
    assert "1. openvino: layer kept sets" in py.report.text
    both = kvo.contract_oracle(t, contract=[doc, {"engine": "llama.cpp", "n_ctx": 8}], budgets="24", policies="h2o")
    assert [r["engine"] for r in both["rows"]] == ["openvino", "llama.cpp"]
    assert both["rows"][0]["per_head"] == both["rows"][1]["per_head"]  # one reference per budget
    with pytest.raises(ValueError, match="unknown engine 'vllm'"):
        kvo.contract_oracle(t, contract={"engine": "vllm"})
    with pytest.raises(ValueError, match="contract_oracle: unknown option 'budget'"):
        kvo.contract_oracle(t, contract=doc, budget=8)


def test_searches_same_results_from_cli_and_python(kvoracle, tmp_path, same_build):
    """search attention and search hypotheses: the same request and, in like builds, the same search
    (a trajectory of accepted moves, which a last bit can turn at a near tie, so it is compared
    exactly only between builds for one instruction set)."""
    run(kvoracle, "search", "attention", "--tokens", 12, "--head-dim", 4, "--budget", 3, "--evaluations", 80,
        "--policies", "h2o,tova", "--json", tmp_path / "a.json")  # fmt: skip
    cli = json.load(open(tmp_path / "a.json"))
    py = kvo.search_attention(tokens=12, head_dim=4, budget="3", evaluations=80, policies=["h2o", "tova"])
    assert py["request"] == cli["request"] and [p["policy"] for p in py["policies"]] == ["h2o", "tova"]
    if same_build:
        assert same_records(py["policies"], cli["policies"])
    run(kvoracle, "search", "hypotheses", "--tokens", 12, "--logit-range", 12, "--evaluations", 400,
        "--policies", "greedy,h2o", "--json", tmp_path / "h.json")  # fmt: skip
    cli = json.load(open(tmp_path / "h.json"))
    py = kvo.search_hypotheses(tokens=12, logit_range=12.0, evaluations=400, policies=["greedy", "h2o"])
    assert py["request"] == cli["request"] and py["request"]["run"]["prompt_len"] == 8
    if same_build:
        assert same_records(py["policies"], cli["policies"])
    assert "search hypotheses" in kvo.search_hypotheses.__doc__ and "logit_range" in kvo.search_hypotheses.__doc__


def test_search_text_from_python_is_the_clis(kvoracle, tiny_model_path, tmp_path, same_build):
    """search text on the tiny model: the same request, and in like builds the same worst text."""
    run(kvoracle, "search", "text", "--model", tiny_model_path, "--evaluations", 4, "--restarts", 1,
        "--words", "sky,green", "--json", tmp_path / "t.json")  # fmt: skip
    cli = json.load(open(tmp_path / "t.json"))
    py = kvo.Model(tiny_model_path).search_text(evaluations=4, restarts=1, words=["sky", "green"])
    assert py["request"] == cli["request"] and py["pool_words"] == cli["pool_words"] == 2
    assert py["unaltered"]["tokens"] == cli["unaltered"]["tokens"]
    if same_build:
        assert same_records(py, cli)
    with pytest.raises(ValueError, match="target: 'x' is neither ratio nor task"):
        kvo.Model(tiny_model_path).search_text(target="x")
