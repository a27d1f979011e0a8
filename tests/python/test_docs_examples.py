"""The runnable examples of docs/ outside C++ (those are tests/docs/check_snippets.py's), each run
on a small trace written where the example reads one. The Hugging Face examples show mechanics
(hooks, caches, rows), and run on the tiny test model loaded by transformers from its GGUF file
instead of the hub name or SmolLM2 they show (the same lines, SmolLM2's tokenizer, a fraction of
the time); the engine's tasks example, whose SmolLM2 answer is the point, runs on SmolLM2."""

import json
import os
import re
import subprocess

import kvoracle
import numpy as np
import pytest
from kvoracle import engine_fields
from task_outcomes import outcome

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def blocks(page, lang):
    text = open(os.path.join(ROOT, "docs", page), encoding="utf-8").read()
    return re.findall(r"```" + lang + r"\n(.*?)```", text, flags=re.S)


def small_trace(path, seed=3):
    g = np.random.default_rng(seed)
    q = [g.standard_normal((2, 40, 8), dtype=np.float32)]
    k = [g.standard_normal((1, 40, 8), dtype=np.float32)]
    v = [g.standard_normal((1, 40, 8), dtype=np.float32)]
    kvoracle.write_trace(path, kvoracle.Trace.from_arrays(q, k, v, attn_scale=0.5))


def test_python_md_module_example(tmp_path):
    block = blocks("python.md", "python")[0]
    path = str(tmp_path / "t.safetensors")
    small_trace(path)
    scope = {}
    exec(block.replace("build/traces/smollm2-gpl3-1024.safetensors", path), scope)  # noqa: S102
    assert scope["opt"]["value"] > 0
    assert len(scope["heads"]) == 2
    assert scope["report"]["format"] == "kvoracle-report"


def test_python_md_whole_commands_example(tmp_path, tiny_model_path):
    """The whole commands from Python, on the tiny model: the calls and the results' shape."""
    block = blocks("python.md", "python")[1]
    path = str(tmp_path / "t.safetensors")
    small_trace(path)
    block = block.replace("build/traces/smollm2-gpl3-1024.safetensors", path)
    block = block.replace("build/report-py", str(tmp_path / "report")).replace(
        "kvoracle.Model()", f"kvoracle.Model({tiny_model_path!r})"
    )
    scope = {}
    exec(block, scope)  # noqa: S102
    assert scope["rep"]["format"] == "kvoracle-report" and (tmp_path / "report" / "report.md").exists()
    assert [p["policy"] for p in scope["off"]["summary"]["policies"]] == ["h2o", "tova"]
    assert [p["policy"] for p in scope["ev"]["points"]] == ["h2o", "window"]
    assert [r["set"] for r in scope["pre"]["rows"]][:2] == ["knorm", "snapkv"]
    assert [r["row"] for r in scope["div"]["rows"]] == ["h2o"]
    assert [r["id"] for r in scope["div"]["paper_experiments"]] == ["E10"]
    ev = scope["ev"]
    assert scope["vs_full"] == [p["ppl"] / ev["full_ppl"] for p in ev["points"]]
    assert scope["svg"].startswith("<svg") and ev.report.text.startswith("kvoracle eval the text: 64 tokens")


def test_trace_format_reading_example(tmp_path):
    block = blocks("trace-format.md", "python")[0]
    assert "safe_open(" in block
    path = str(tmp_path / "t.safetensors")
    small_trace(path)
    scope = {}
    exec(block.replace('"gpl3.safetensors"', repr(path)), scope)  # noqa: S102
    assert scope["meta"]["format"] == "kvoracle-trace"
    assert scope["q"].shape == (2, 40, 8) and scope["k"].shape == (1, 40, 8)


def test_findings_md_analysis_script(tmp_path, kvoracle):
    """The script that reads the numbers of docs/findings.md off report.json, on a synthetic report."""
    script = blocks("findings.md", "sh")[1]
    assert script.startswith("python3 - build/report/report.json <<'PY'\n")
    body = script.split("<<'PY'\n", 1)[1].rsplit("PY\n", 1)[0]
    trace, report = tmp_path / "t.safetensors", tmp_path / "report"
    subprocess.run([kvoracle, "-q", "synth", "--out", str(trace), "--tokens", "96", "--layers", "1"], check=True)
    subprocess.run([kvoracle, "-q", "verify", str(trace), "--budget", "20%", "--report", str(report)], check=True)
    out = subprocess.run(
        ["python3", "-", str(report / "report.json")], input=body, text=True, capture_output=True, check=True
    ).stdout
    for line in ("C19 median ratio", "C15 h2o ", "C17 k0 median", "C4 fp16 drift", "C14 eps+", "E2 verdicts"):
        assert line in out, out
    assert json.load(open(report / "report.json"))["theorem_failures"] == 0


@pytest.fixture
def as_written(monkeypatch, tmp_path, hf_tiny, tiny_model_path):
    """Runs the Hugging Face examples as the page shows them, in an empty working folder, on the tiny
    test model: their point is the mechanics (kvpress's hooks, the evicting cache, the task rows), and
    kvoracle.default_model_path() and kvoracle.Model() name the tiny model's file, so the page's own
    lines load it and its tokenizer (SmolLM2's, the same ids). Their from_pretrained(dir,
    gguf_file=...) of that file is answered by the session's copy of the model (loading it again
    takes longer than most examples), with the attention implementation the call asks for; a call
    for anything else fails the test. Yields run(page, *indices), then puts the model back as the
    other tests expect it: eager attention (an example may have switched it to SDPA, or
    EvictingCache to kvoracle's)."""
    import transformers

    monkeypatch.setenv("KVO_MODEL", tiny_model_path)
    where, gguf = os.path.split(tiny_model_path)

    def from_pretrained(name, *args, **kwargs):
        assert (name, kwargs.get("gguf_file")) == (where, gguf), "a docs example loads a model kvoracle does not ship"
        hf_tiny.set_attn_implementation(kwargs.get("attn_implementation", "sdpa"))
        return hf_tiny

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)
    monkeypatch.chdir(tmp_path)

    def run(page, *indices):
        scope = {}
        for index in indices:
            exec(blocks(page, "python")[index], scope)  # noqa: S102
        return scope

    yield run
    hf_tiny.set_attn_implementation("eager")


@pytest.mark.transformers
def test_python_md_transformers_example(as_written, tmp_path):
    """On the tiny model: 12 rows per KV head ([1, 3, 12, 64] on SmolLM2, as the page prints)."""
    scope = as_written("python.md", 2)
    assert scope["meta"]["model_type"] == "llama" and (tmp_path / "hf-trace.safetensors").exists()
    assert scope["report"]["theorem_failures"] == 0
    cfg = scope["model"].config
    assert tuple(scope["cache"].layers[0].keys.shape) == (1, cfg.num_key_value_heads, 12, cfg.head_dim)
    assert scope["out"].shape == (1, 96)


@pytest.mark.transformers
def test_python_md_hand_written_loop(as_written, hf_tiny):
    """The loop generates what EvictingCache generates with the same policy and budget (on the tiny
    model)."""
    import torch
    from kvoracle.hf import EvictingCache

    scope = as_written("python.md", 3)
    ids = scope["ids"]
    cache = EvictingCache(hf_tiny, "h2o", "6")
    out = hf_tiny.generate(
        ids, past_key_values=cache, max_new_tokens=24, do_sample=False, attention_mask=torch.ones_like(ids)
    )
    assert scope["out_ids"] == out[0, ids.shape[1] :].tolist()


@pytest.mark.transformers
def test_trace_format_md_transformers_example(as_written, tmp_path):
    scope = as_written("trace-format.md", 1)
    trace = kvoracle.read_trace(str(tmp_path / "hf-trace.safetensors"))
    assert (trace.n_layers, trace.n_tokens) == (scope["model"].config.num_hidden_layers, 10)
    assert scope["meta"]["rope_layout"] == "half-split"


@pytest.mark.transformers
@pytest.mark.kvpress
def test_presses_md_kvpress_examples(as_written):
    """docs/presses.md's KvoraclePress inside kvpress's hook and compare_presses, then its wrappers
    around a KvoraclePress of a press: on the tiny model (under SDPA, as the page says) AdaKV masks
    half the prompt's keys over the layer's KV heads; on a random small GQA Llama it masks half over
    both KV heads, and DecodingPress compresses to its target."""
    import torch
    import transformers
    from kvoracle import policies as read_policies
    from transformers import DynamicCache

    scope = as_written("presses.md", 0, 1)
    assert scope["cache"].layers[0].keys.shape[2] == 51  # int(256 * 0.2)
    rows = scope["result"]["rows"]
    assert {r["press"] for r in rows} >= {"snapkv", read_policies()[0]["name"], "optimum"}
    masked = scope["model"].model.layers[0].self_attn.masked_key_indices
    kv_heads = scope["model"].config.num_key_value_heads
    assert masked is not None and len(masked[0]) == kv_heads * 128  # (1 - 0.5) of 256 keys, per KV head
    for layer in scope["model"].model.layers:
        layer.self_attn.masked_key_indices = None

    config = transformers.LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=1024,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").eval()
    ids = torch.randint(0, 128, (1, 64), generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), scope["ada"](model):
        model(ids, past_key_values=DynamicCache())
    masked = model.model.layers[0].self_attn.masked_key_indices
    assert len(masked[0]) == 2 * 32  # (1 - 0.5) of 64 keys, over 2 KV heads
    model.model.layers[0].self_attn.masked_key_indices = None
    model.model.layers[1].self_attn.masked_key_indices = None
    cache = DynamicCache()
    with torch.no_grad(), scope["every_64"](model):
        model(torch.randint(0, 128, (1, 500), generator=torch.Generator().manual_seed(2)), past_key_values=cache)
        for t in range(64):
            model(torch.tensor([[t]]), past_key_values=cache)
    assert cache.layers[0].keys.shape[2] == 512  # 564 tokens, compressed after the 64th decoding step


def test_tasks_md_example(model_path, capsys):
    """docs/tasks.md's Python example: a one-instance suite under h2o and window."""
    scope = {}
    exec(blocks("tasks.md", "python")[0].replace("kvoracle.Model()", f"kvoracle.Model({model_path!r})"), scope)  # noqa: S102
    rows = {(c["row"], c["budget"]) for c in scope["res"]["cells"]}
    assert rows == {("full-cache", 1.0), ("h2o", 0.3), ("window", 0.3), ("topk", 0.3)}
    assert "passkey full-cache 1.0" in capsys.readouterr().out


@pytest.mark.transformers
@pytest.mark.kvpress
def test_tasks_md_your_model_example(as_written):
    """docs/tasks.md's kvoracle.hf.run_tasks example in transformers, on the tiny model (the page's
    kvoracle.Model() and default_model_path() name its file): the rows of both protocols, scored
    and reported by the library."""
    scope = as_written("tasks.md", 1)
    assert [o["row"] for o in scope["res"]["outcomes"]] == ["full-cache", "h2o", "tova", "topk"]
    assert [o["row"] for o in scope["pre"]["outcomes"]] == ["full-cache", "snapkv", "knorm", "optimum"]
    assert scope["res"]["outcomes"][0]["needles_held"] == 1.0 and "tova" in scope["res"].report.text


def test_tasks_md_power_example(tmp_path, capsys):
    """docs/tasks.md's paired_power and comparisons example, on a saved run of 10 instances where
    h2o loses 6 and wins none; the table the page shows is the CLI's."""
    outcomes = []
    for i in range(10):
        outcomes.append(outcome(f"i{i}", "niah", "full-cache", 1.0, 1.0))
        outcomes.append(outcome(f"i{i}", "niah", "h2o", 0.2, float(i < 4)))
    (tmp_path / "streaming.json").write_text(json.dumps({"protocol": "dynamic", "outcomes": outcomes}))
    block = blocks("tasks.md", "python")[3]
    scope = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(block, scope)  # noqa: S102
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["0.1 101 1.0", "0.2 238 0.806", "0.3 361 0.567"]
    assert out[3].startswith("h2o 0.2 0 6 0.03125 ")
    text = open(os.path.join(ROOT, "docs", "tasks.md"), encoding="utf-8").read()
    table = text.split("kvoracle tasks power --difference 0.1 --alpha 0.01 --power 0.8 --instances 240")[1]
    for r in kvoracle.paired_power(instances=240)["rows"]:  # the defaults: every line of the page's table
        line = f"| {r['discordance']:.2f} | {r['instances']} | {r['power_reached']:.3f} | {r['power_at_size']:.3f} |"
        assert line in table, line


def test_tasks_md_full_cache_recipe(tmp_path, kvoracle, tiny_model_path):
    """docs/tasks.md's full-cache recipe, its flags as written on a one-instance suite and the tiny
    model: the full cache is the only row (no oracle top-k at the default budgets)."""
    recipe = [c for c in blocks("tasks.md", "sh") if "--policies none" in c]
    assert len(recipe) == 1
    lines = recipe[0].strip().splitlines()
    assert lines[0].startswith("kvoracle tasks generate ") and "--lengths 512,1024,2048" in lines[0]
    generate = lines[0].replace("--tasks all", "--tasks passkey").replace("--lengths 512,1024,2048", "--lengths 256")
    generate = generate.replace("--depths 0,0.5,1", "--depths 0.5").replace("--per-cell 2", "--per-cell 1")
    for command in [generate, *lines[1:]]:
        command = re.sub(r"^kvoracle (tasks \w+) ", rf"{kvoracle} -q \1 --model {tiny_model_path} ", command)
        subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    for name in ("plain.json", "chat.json"):
        outcomes = json.load(open(tmp_path / name))["outcomes"]
        assert [o["row"] for o in outcomes] == ["full-cache"], name


def test_allocation_md_examples(tmp_path, kvoracle):
    """The command line and the Python example of docs/allocation.md, on a 40-token trace (prompt 32)."""
    path = str(tmp_path / "t.safetensors")
    small_trace(path)
    real = "build/traces/smollm2-gpl3-1024.safetensors"
    commands = blocks("allocation.md", "sh")
    assert len(commands) == 4 and all(c.startswith("kvoracle oracle allocation ") for c in commands)
    for command in commands:
        command = command.replace(real, path).replace("--prompt-len 768", "--prompt-len 32")
        command = command.replace("--prompt-len 256", "--prompt-len 8")
        subprocess.run(["bash", "-c", command.replace("kvoracle ", f"{kvoracle} -q ", 1)], cwd=tmp_path, check=True)
    rows = json.load(open(tmp_path / "allocation.json"))["rows"]
    assert len(rows) == 4 * 4 and (tmp_path / "allocation.svg").exists()
    decoding = json.load(open(tmp_path / "allocation-decoding.json"))["rows"]
    assert [r["scope"] for r in decoding] == ["head", "layer"] * 3
    methods = json.load(open(tmp_path / "allocation-presses.json"))["methods"]
    assert len(methods) == 4 * 3 * 2 and (tmp_path / "allocation-presses.svg").exists()
    periodic = json.load(open(tmp_path / "allocation-periodic.json"))["rows"]
    assert [r["interval"] for r in periodic] == [1, 16, 64, 256]
    assert all(r["value"] <= r["peak_value"] * (1 + 1e-12) for r in periodic)
    scope = {}
    exec(blocks("allocation.md", "python")[0].replace(real, path).replace("prompt_len=768", "prompt_len=32"), scope)  # noqa: S102
    assert [r["scope"] for r in scope["res"]["rows"]][:4] == ["head", "layer", "layerwise", "model"]


def contract_trace(path):
    """2 layers of 2 query heads over 1 KV head, 512 tokens, a 64-token prompt."""
    g = np.random.default_rng(9)
    q = [g.standard_normal((2, 512, 8), dtype=np.float32) for _ in range(2)]
    k = [g.standard_normal((1, 512, 8), dtype=np.float32) for _ in range(2)]
    v = [g.standard_normal((1, 512, 8), dtype=np.float32) for _ in range(2)]
    kvoracle.write_trace(path, kvoracle.Trace.from_arrays(q, k, v, attn_scale=0.5, prompt_len=64))


def contract_rows(path, doc):
    return kvoracle.contract_oracle(kvoracle.read_trace(path), contract=doc, budgets="300", threads=1)["rows"]


def test_engines_md_examples(tmp_path, kvoracle):
    """Every contract document of docs/engines.md, its command line and its Python example, on a
    512-token trace with a 64-token prompt (the documents' own budgets replaced by one that fits)."""
    path = str(tmp_path / "t.safetensors")
    contract_trace(path)
    documents = [json.loads(b) for b in blocks("engines.md", "json")]
    fields = {e: set() for e in ("tensorrt-llm", "openvino", "llama.cpp", "dms", "kvpress", "kvoracle")}
    for doc in documents:
        fields[doc["engine"]] |= set(doc) - {"engine"}
        doc = {key: 256 if value == 2048 else value for key, value in doc.items()}  # kvoracle's prompt_len
        assert all(r["engine"] == doc["engine"] and r["certified"] for r in contract_rows(path, doc)), doc
    assert sorted(d["engine"] for d in documents) == sorted(fields), "one document per engine"
    text = open(os.path.join(ROOT, "docs", "engines.md"), encoding="utf-8").read()
    for engine in fields:  # every field an engine reads is explained on the page
        for name in engine_fields(engine):
            assert f"`{name}`" in text, f"{engine}'s field {name} is not in docs/engines.md"
    (tmp_path / "llama.json").write_text(json.dumps(documents[2] | {"n_ctx": 50, "kv_evict_window": 8}))
    real = "build/traces/smollm2-gpl3-1024.safetensors"
    (command,) = blocks("engines.md", "sh")
    subprocess.run(["bash", "-c", command.replace(real, path).replace("kvoracle ", f"{kvoracle} -q ", 1)],
                   cwd=tmp_path, check=True)  # fmt: skip
    rows = json.load(open(tmp_path / "contract.json"))["rows"]
    assert [r["budget"] for r in rows] == [25, 51, 102] and (tmp_path / "contract.svg").exists()
    scope = {}
    exec(blocks("engines.md", "python")[0].replace(real, path), scope)  # noqa: S102
    assert [r["budget"] for r in scope["res"]["rows"]] == [25, 51]


def test_worst_cases_md_examples(tmp_path, kvoracle, tiny_model_path):
    """The three searches' command lines of docs/worst-cases.md as written (the text search on the tiny
    model instead of SmolLM2), and the Python calls its text names: each saved instance is read back."""
    commands = blocks("worst-cases.md", "sh")
    assert len(commands) == 3
    for command in commands:
        for out in ("build/worst-cases", "build/hypotheses", "build/text-search"):
            command = command.replace(out, f"{tmp_path}/{out[len('build/') :]}")
        command = command.replace("build/apps/kvoracle/kvoracle ", f"{kvoracle} -q ")
        command = re.sub(r"(search text|tasks run) ", rf"\1 --model {tiny_model_path} ", command)
        subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, stdout=subprocess.DEVNULL)
    attention = json.load(open(tmp_path / "worst-cases" / "search.json"))["policies"]
    assert [p["policy"] for p in attention] == ["h2o", "tova", "scissorhands", "streaming"]
    assert all(p["verified"] == p["worst"] and p["theorem_failures"] == 0 for p in attention)
    hypotheses = json.load(open(tmp_path / "hypotheses" / "search.json"))["policies"]
    assert [p["policy"] for p in hypotheses] == ["greedy", "h2o-paper", "h2o"]
    assert all(p["found"] and p["alpha"] < 1 and p["verified"] == p["worst"] for p in hypotheses)
    text = json.load(open(tmp_path / "text-search" / "search.json"))
    assert text["verified"] == text["worst_value"] <= text["unaltered_value"] and text["theorem_failures"] == 0
    page = open(os.path.join(ROOT, "docs", "worst-cases.md"), encoding="utf-8").read()
    calls = re.findall(r"`(kvoracle\.search_\w+\(.*?\))`", page)
    assert len(calls) == 2
    for call in calls:
        rep = eval(call, {"kvoracle": __import__("kvoracle")})  # noqa: S307 (the module; the fixture is the CLI)
        assert rep["policies"] and "worst" in rep["policies"][0]
    (call,) = re.findall(r"`kvoracle\.Model\(path\)\.(search_text\(.*?\))`", page)
    rep = eval("model." + call, {"model": __import__("kvoracle").Model(tiny_model_path)})  # noqa: S307
    assert rep["worst_value"] <= rep["unaltered_value"] and rep["found_at"] >= 1


def test_every_python_block_of_docs_is_run_here():
    """A new ```python block anywhere in docs/ must get a test above (and this count updated)."""
    pages = sorted(p for p in os.listdir(os.path.join(ROOT, "docs")) if p.endswith(".md"))
    counts = {p: len(blocks(p, "python")) for p in pages}
    assert {p: c for p, c in counts.items() if c} == {
        "allocation.md": 1,
        # run by tests/python/test_conformance.py::test_conformance_md_python_examples
        "conformance.md": 3,
        "engines.md": 1,
        "python.md": 4,
        "trace-format.md": 2,
        "presses.md": 2,
        # the third, "Inside kvpress's evaluation": tests/python/test_kvpress_eval.py
        "tasks.md": 4,
    }
