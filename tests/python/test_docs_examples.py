"""The runnable examples of docs/ outside C++ (those are tests/docs/check_snippets.py's), each run
on a small trace written where the example reads one; the Hugging Face examples run on SmolLM2
loaded by transformers from our GGUF file instead of the hub name they show."""

import json
import os
import re
import subprocess

import kvoracle
import numpy as np
import pytest

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


def test_python_md_whole_commands_example(tmp_path, model_path):
    block = blocks("python.md", "python")[1]
    path = str(tmp_path / "t.safetensors")
    small_trace(path)
    block = block.replace("build/traces/smollm2-gpl3-1024.safetensors", path)
    block = block.replace("build/report-py", str(tmp_path / "report")).replace(
        "kvoracle.Model()", f"kvoracle.Model({model_path!r})"
    )
    scope = {}
    exec(block, scope)  # noqa: S102
    assert scope["rep"]["format"] == "kvoracle-report" and (tmp_path / "report" / "report.md").exists()
    assert [p["policy"] for p in scope["off"]["summary"]["policies"]] == ["h2o", "tova"]
    assert [p["policy"] for p in scope["ev"]["points"]] == ["h2o", "window"]
    assert [r["set"] for r in scope["pre"]["rows"]][:2] == ["knorm", "snapkv"]
    assert [r["row"] for r in scope["div"]["rows"]] == ["h2o"]
    assert [r["id"] for r in scope["div"]["paper_experiments"]] == ["E10"]


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


def hf_block(page, index, model, tmp_path, model_path):
    """The example with every from_pretrained(...) of the hub name replaced by local objects."""
    block = blocks(page, "python")[index]
    block, n_models = re.subn(r"AutoModelForCausalLM\.from_pretrained\((?:[^()]|\n)*?\)", "__model__", block)
    assert n_models == 1, "an HF example loads the model once"
    block = block.replace(
        "AutoTokenizer.from_pretrained(name)",
        f"AutoTokenizer.from_pretrained({os.path.dirname(model_path)!r}, gguf_file={os.path.basename(model_path)!r})",
    )
    block = block.replace('open("text.txt")', 'open("/usr/share/common-licenses/Apache-2.0")')
    block = block.replace('"hf-trace.safetensors"', repr(str(tmp_path / "hf-trace.safetensors")))
    model.set_attn_implementation("eager")
    return block, {"__model__": model}


@pytest.mark.transformers
def test_python_md_transformers_example(tmp_path, hf_smollm2, model_path):
    block, scope = hf_block("python.md", 2, hf_smollm2, tmp_path, model_path)
    assert "record_trace(model, ids" in block and "EvictingCache(model" in block
    exec(block, scope)  # noqa: S102
    assert scope["meta"]["model_type"] == "llama"
    assert scope["report"]["theorem_failures"] == 0
    assert tuple(scope["cache"].layers[0].keys.shape) == (1, 3, 12, 64)
    assert scope["out"].shape == (1, 96)


@pytest.mark.transformers
def test_python_md_hand_written_loop(tmp_path, hf_smollm2, model_path):
    """The loop generates what EvictingCache generates with the same policy and budget."""
    import torch
    from kvoracle.hf import EvictingCache

    block, scope = hf_block("python.md", 3, hf_smollm2, tmp_path, model_path)
    exec(block, scope)  # noqa: S102
    ids = scope["ids"]
    cache = EvictingCache(hf_smollm2, "h2o", "6")
    out = hf_smollm2.generate(
        ids, past_key_values=cache, max_new_tokens=24, do_sample=False, attention_mask=torch.ones_like(ids)
    )
    assert scope["out_ids"] == out[0, ids.shape[1] :].tolist()


@pytest.mark.transformers
def test_trace_format_md_transformers_example(tmp_path, hf_smollm2, model_path):
    block, scope = hf_block("trace-format.md", 1, hf_smollm2, tmp_path, model_path)
    exec(block, scope)  # noqa: S102
    trace = kvoracle.read_trace(str(tmp_path / "hf-trace.safetensors"))
    assert (trace.n_layers, trace.n_tokens) == (30, 10)
    assert scope["meta"]["rope_layout"] == "half-split"


@pytest.mark.transformers
@pytest.mark.kvpress
def test_presses_md_kvpress_example(hf_smollm2, kvoracle, tmp_path):
    """KvoraclePress inside kvpress's hook and compare_presses, on 256 tokens of the Apache text."""
    import torch
    from kvoracle import policies as read_policies
    from kvoracle import read_trace
    from transformers import DynamicCache

    path = tmp_path / "ids.safetensors"
    subprocess.run(
        [
            kvoracle,
            "-q",
            "record",
            "--text",
            "/usr/share/common-licenses/Apache-2.0",
            "--tokens",
            "256",
            "--layers",
            "0",
            "--out",
            str(path),
        ],
        check=True,
    )
    ids = torch.tensor(np.asarray(read_trace(str(path)).tokens), dtype=torch.long)[None]
    scope = {"model": hf_smollm2, "input_ids": ids, "cache": DynamicCache()}
    exec(blocks("presses.md", "python")[0], scope)  # noqa: S102
    assert scope["cache"].layers[0].keys.shape[2] == 51  # int(256 * 0.2)
    rows = scope["result"]["rows"]
    assert {r["press"] for r in rows} >= {"snapkv", read_policies()[0]["name"], "optimum"}


@pytest.mark.transformers
@pytest.mark.kvpress
def test_presses_md_wrapper_example():
    """docs/presses.md's wrappers around a KvoraclePress of a press, on a random small GQA Llama: AdaKV
    masks half the prompt's keys over both KV heads; DecodingPress compresses to its target."""
    import torch
    import transformers
    from transformers import DynamicCache

    scope = {}
    exec(blocks("presses.md", "python")[1], scope)  # noqa: S102
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


def test_every_python_block_of_docs_is_run_here():
    """A new ```python block anywhere in docs/ must get a test above (and this count updated)."""
    pages = sorted(p for p in os.listdir(os.path.join(ROOT, "docs")) if p.endswith(".md"))
    counts = {p: len(blocks(p, "python")) for p in pages}
    assert {p: c for p, c in counts.items() if c} == {
        "allocation.md": 1,
        "python.md": 4,
        "trace-format.md": 2,
        "presses.md": 2,
        "tasks.md": 1,
    }
