"""kvoracle.hf.run_tasks (the task suite on a transformers model) against kvoracle tasks run on
kvoracle's own engine: the tiny test model loaded into transformers from its GGUF file and fed
kvoracle's token ids answers every instance as Model.run_tasks does, under both protocols (the
same answer, score, kept count and needles held in every outcome), and the cells come from the
same library code. Bad requests are refused in one line before any work."""

import math
import os

import kvoracle as kvo
import pytest
from kvoracle.hf import run_tasks

pytestmark = pytest.mark.transformers

SUITE = dict(tasks=["passkey", "niah"], lengths=[256], depths=[0.5], per_cell=1, task_seed=5)
COMPARED = ("answer", "score", "kept", "needles_held", "input_tokens", "budget")
# mass_of_optimum reads each implementation's own trace of the full cache's run (fp32 forward passes
# in two libraries): equal to rounding.
MASS_TOLERANCE = 1e-5
# knorm scores a key by its norm, which RoPE keeps: in the first layer every repeat of a token ties
# with the others, and kvpress's torch.topk keeps other tied positions than kvoracle's earliest-first
# rule. The kept count, the answer and the score agree; the mass of the tied keys does not.
MASS_TIES = {"knorm"}


@pytest.fixture(scope="module")
def setup(tiny_model_path):
    from transformers import AutoTokenizer

    m = kvo.Model(tiny_model_path)
    where, name = os.path.split(tiny_model_path)
    tok = AutoTokenizer.from_pretrained(where, gguf_file=name)
    return m, tok, m.generate_tasks(**SUITE)


def by_key(result):
    return {(o["instance"], o["row"], o["budget"]): o for o in result["outcomes"]}


def same(ours, theirs):
    """Every compared field of every outcome (NaN and None both mean 'not measured')."""
    assert ours.keys() == theirs.keys()
    differ = []
    for key, o in ours.items():
        for field in COMPARED:
            a, b = o[field], theirs[key][field]
            a = None if isinstance(a, float) and math.isnan(a) else a
            b = None if isinstance(b, float) and math.isnan(b) else b
            if a != b:
                differ.append((key, field, a, b))
        a, b = o["mass_of_optimum"], theirs[key]["mass_of_optimum"]
        if (a is None) != (b is None) or (a is not None and key[1] not in MASS_TIES and abs(a - b) > MASS_TOLERANCE):
            differ.append((key, "mass_of_optimum", a, b))
    assert not differ, differ


def test_streaming_rows_are_the_engines(hf_tiny, setup):
    m, tok, instances = setup
    policies = ["h2o", "tova", "oracle", "lookahead"]
    ours = run_tasks(hf_tiny, tok, instances, policies=policies, budgets=[0.3, 0.6], token_ids=m)
    theirs = m.run_tasks(instances, policies=policies, budgets=[0.3, 0.6])
    same(by_key(ours), by_key(theirs))
    assert ours["protocol"] == "dynamic" and len(ours["outcomes"]) == 2 * (1 + 5 * 2)  # 4 policies, topk
    # the cells are the library's, computed from these outcomes
    assert ours["cells"] == kvo.task_report({"protocol": "dynamic", "outcomes": ours["outcomes"]})["cells"]
    assert "full-cache" in ours.report.text and "tova" in ours.report.text
    # the rows differ from one another (the comparison can fail): nonsense answers that change with the kept set
    assert len({o["answer"] for o in ours["outcomes"] if o["instance"] == instances[0]["id"]}) > 2


@pytest.mark.kvpress
def test_prefill_rows_are_the_engines(hf_tiny, setup):
    m, tok, instances = setup
    presses = ["snapkv", "knorm", "tova", "streaming_llm"]
    args = dict(protocol="prefill", presses=presses, policies=["h2o", "tova"], budgets=[0.5])
    ours = run_tasks(hf_tiny, tok, instances, token_ids=m, **args)
    theirs = m.run_tasks(instances, **args)
    same(by_key(ours), by_key(theirs))
    rows = {o["row"] for o in ours["outcomes"]}
    assert rows == {"full-cache", "snapkv", "knorm", "press:tova", "streaming_llm", "h2o", "policy:tova", "optimum"}
    # the exact prefill optimum holds the most mass a set of its size can; every other row less or as much
    assert all(o["mass_of_optimum"] == pytest.approx(1.0) for o in ours["outcomes"] if o["row"] == "optimum")
    assert all(o["mass_of_optimum"] <= 1 + 1e-9 for o in ours["outcomes"])


def test_shared_budget_optima_are_the_engines(hf_tiny, setup):
    """The prefill optimum with budgets shared by a layer's or the model's units (counts differ per
    unit: every key stays cached and the evicted ones are masked) answers as the engine's."""
    m, tok, instances = setup
    args = dict(protocol="prefill", policies=[], budgets=[0.2, 0.5], optimum_scopes="head,layer,layerwise,model")
    ours = run_tasks(hf_tiny, tok, instances, token_ids=m, **args)
    theirs = m.run_tasks(instances, **args)
    same(by_key(ours), by_key(theirs))
    rows = {o["row"] for o in ours["outcomes"]}
    assert rows == {"full-cache", "optimum", "optimum@layer", "optimum@layerwise", "optimum@model"}
    shared = [o for o in ours["outcomes"] if o["row"].startswith("optimum@")]
    assert all(0 < o["mass_of_optimum"] <= 1 + 1e-9 for o in shared)


def test_the_models_own_tokenizer_runs_without_needles(hf_tiny, setup):
    _, tok, instances = setup
    r = run_tasks(hf_tiny, tok, instances[:1], policies=["h2o"], budgets=[0.5], topk=False)
    assert [o["row"] for o in r["outcomes"]] == ["full-cache", "h2o"]
    assert all(o["needles_held"] is None and 0 <= o["score"] <= 1 for o in r["outcomes"])
    assert 0 < r["outcomes"][1]["mass_of_optimum"] <= 1  # measured on the model's own trace
    texts = kvo.task_texts(instances[0])
    n = sum(len(tok.encode(p, add_special_tokens=False)) for p in texts["context"])
    assert r["outcomes"][0]["input_tokens"] == n + len(tok.encode(texts["question"], add_special_tokens=False))


@pytest.mark.parametrize(
    "args, message",
    [
        (dict(budgets=[0]), "budget 0 is outside"),
        (dict(presses=["snapkv"]), "presses run under the prefill protocol only"),
        (dict(protocol="prefill", presses=["snapkv", "snapkv"]), "press 'snapkv' listed twice"),
        (dict(policies=["h2o-mask"]), "policy h2o-mask cannot be driven by a decoder"),
        (dict(recent=4), "option 'recent' is not read by kvoracle.hf's driver yet"),
        (dict(protocol="streaming"), "unknown protocol 'streaming'"),
    ],
)
def test_bad_requests_are_refused_in_one_line(hf_tiny, setup, args, message):
    m, tok, instances = setup
    with pytest.raises(ValueError, match=message):
        run_tasks(hf_tiny, tok, instances, token_ids=m, **args)


def test_bad_instances_are_refused_before_any_work(hf_tiny, setup, tiny_model_path):
    m, tok, instances = setup
    with pytest.raises(ValueError, match='no "answer" column'):
        run_tasks(hf_tiny, tok, [{"context": "a b c", "question": "q"}], budgets=[0.5])
    long = dict(instances[0], context=instances[0]["context"] * 40)
    with pytest.raises(ValueError, match="positions with its answer; the model has 8192"):
        run_tasks(hf_tiny, tok, [long], budgets=[0.5], token_ids=m)


@pytest.mark.kvpress
def test_a_press_that_needs_eager_attention_is_refused_under_sdpa(hf_tiny, setup):
    m, tok, instances = setup
    hf_tiny.set_attn_implementation("sdpa")
    try:
        with pytest.raises(ValueError, match="press observed_attention reads the attention weights.*eager"):
            run_tasks(hf_tiny, tok, instances, protocol="prefill", presses=["observed_attention"], token_ids=m)
    finally:
        hf_tiny.set_attn_implementation("eager")


def test_running_out_of_memory_names_the_instance_and_row(hf_tiny, setup, monkeypatch):
    import torch
    from kvoracle.hf import tasks

    m, tok, instances = setup

    def no_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(tasks._Runner, "streaming", no_memory)
    with pytest.raises(
        ValueError,
        match=r"instance 'passkey-256-d50-0' \(\d+ input tokens\), row h2o at budget 0.5: "
        "the device ran out of memory \\(CUDA out of memory",
    ):
        run_tasks(hf_tiny, tok, instances, policies=["h2o"], budgets=[0.5], token_ids=m)


def test_the_shell_command_is_run_tasks(tiny_model_path, hf_tiny, setup, tmp_path, python_child_env):
    """python -m kvoracle.hf.tasks on the GGUF file (kvoracle's ids, as token_ids=Model does) gives
    run_tasks' outcomes; its flags are the C++ CLI's (--no-optimum), and bad input is one line with
    nothing written."""
    import json
    import subprocess
    import sys

    m, tok, instances = setup
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in instances))
    out = tmp_path / "out.json"
    command = [sys.executable, "-m", "kvoracle.hf.tasks", "--model", tiny_model_path, "--instances", str(path)]
    flags = ["--protocol", "prefill", "--policies", "h2o", "--budgets", "0.5", "--no-optimum", "--dtype", "float32"]
    done = subprocess.run([*command, *flags, "--json", str(out)], capture_output=True, text=True, env=python_child_env)
    assert done.returncode == 0, done.stderr[-2000:]
    ours = run_tasks(
        hf_tiny, tok, instances, token_ids=m, protocol="prefill", policies=["h2o"], budgets=[0.5], optimum=False
    )
    assert json.load(open(out))["outcomes"] == json.loads(json.dumps(ours["outcomes"]))
    assert [o["row"] for o in ours["outcomes"]][:2] == ["full-cache", "h2o"]
    for bad, message in [
        (["--budgets", "0"], "budget 0 is outside"),
        (["--instances", str(tmp_path / "none.jsonl")], "cannot read"),
    ]:
        args = [*command, *bad, "--json", str(tmp_path / "bad.json")]
        done = subprocess.run(args, capture_output=True, text=True, env=python_child_env)
        assert done.returncode == 1 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "bad.json").exists()


def test_tasks_md_shell_example(tiny_model_path, kvoracle, tmp_path, python_child_env):
    """docs/tasks.md's shell commands for a transformers model, as written, on the tiny model."""
    import re
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "docs", "tasks.md"), encoding="utf-8").read()
    (block,) = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S) if "kvoracle.hf.tasks" in b]
    block = block.replace("~/.cache/kvoracle/SmolLM2-135M-Instruct.Q4_1.gguf", tiny_model_path)
    block = block.replace("kvoracle tasks generate", f"{kvoracle} -q tasks generate -m {tiny_model_path}", 1)
    block = block.replace("python -m", f"{sys.executable} -m", 1)
    done = subprocess.run(["bash", "-c", block], cwd=tmp_path, capture_output=True, text=True, env=python_child_env)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    rows = [o["row"] for o in json.load(open(tmp_path / "hf.json"))["outcomes"]]
    assert rows == ["full-cache", "h2o"]


def test_chat_format_is_the_engines(hf_tiny, setup):
    """format="chat": with kvoracle's ids the engine's ChatML input, outcome for outcome; with the
    model's own tokenizer its chat template frames the same pieces (SmolLM2's gives the engine's
    text); a tokenizer without a template is refused in one line."""
    import copy

    m, tok, instances = setup
    args = dict(policies=["h2o"], budgets=[0.5], topk=False, format="chat", question_first=True)
    same(by_key(run_tasks(hf_tiny, tok, instances, token_ids=m, **args)), by_key(m.run_tasks(instances, **args)))
    chatml = (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    own = copy.deepcopy(tok)
    own.chat_template = chatml
    r = run_tasks(hf_tiny, own, instances[:1], policies=[], topk=False, format="chat")
    texts = kvo.task_texts(instances[0])
    opening = own.encode("<|im_start|>user\n", add_special_tokens=False)
    assert r["outcomes"][0]["input_tokens"] == len(opening) + sum(
        len(own.encode(p, add_special_tokens=False)) for p in texts["context"]
    ) + len(
        own.encode(
            "\n\n" + instances[0]["question"] + "<|im_end|>\n<|im_start|>assistant\n" + instances[0]["answer_prefix"],
            add_special_tokens=False,
        )
    )
    own.chat_template = None
    with pytest.raises(kvo.KvoError, match="format 'chat' needs the tokenizer's chat template"):
        run_tasks(hf_tiny, own, instances, format="chat")


def test_a_checkpoint_resumes_without_answering_again(hf_tiny, setup, tmp_path, monkeypatch):
    """checkpoint=: each instance's outcomes are kept once answered; a rerun with the same arguments
    answers nothing again (its first instance's file present), and other arguments do not reuse them."""
    from kvoracle.hf import tasks

    m, tok, instances = setup
    args = dict(policies=["h2o"], budgets=[0.5], topk=False, token_ids=m, checkpoint=str(tmp_path))
    first = run_tasks(hf_tiny, tok, instances, **args)
    assert len(os.listdir(tmp_path)) == len(instances)
    real = tasks._Runner.full_cache

    def refuse(*a, **k):
        raise AssertionError("answered again")

    monkeypatch.setattr(tasks._Runner, "full_cache", refuse)
    again = run_tasks(hf_tiny, tok, instances, **args)
    assert again["outcomes"] == first["outcomes"] and again["cells"] == first["cells"]
    with pytest.raises(AssertionError, match="answered again"):
        run_tasks(hf_tiny, tok, instances, **{**args, "budgets": [0.4]})
    monkeypatch.setattr(tasks._Runner, "full_cache", real)


def test_a_press_below_its_window_is_noted(hf_tiny, setup):
    """SnapKV keeps its window of the last 64 queries whole; at a budget below it (10% of ~250 tokens)
    the row is noted, once per budget, as a warning too; knorm has no window."""
    m, tok, instances = setup
    args = dict(protocol="prefill", presses=["snapkv", "knorm"], policies=[], budgets=[0.1, 0.5], optimum=False)
    with pytest.warns(UserWarning, match="press snapkv at budget 0.1 keeps"):
        r = run_tasks(hf_tiny, tok, instances, token_ids=m, **args)
    assert len(r["notes"]) == 1 and "fewer than its window of the last 64" in r["notes"][0]


def test_the_oracle_top_k_in_chunks_of_queries_is_the_engines(hf_tiny, setup, monkeypatch):
    """The top-k row takes its queries in chunks (memory O(heads x chunk x keys)): chunks of a few
    queries answer as the engine's TopKDecoder, as one chunk does."""
    from kvoracle.hf import tasks

    m, tok, instances = setup
    heads = hf_tiny.config.num_attention_heads
    monkeypatch.setattr(tasks, "TOPK_CHUNK_ELEMENTS", heads * 256 * 3)  # 3 queries a chunk at 256 keys
    args = dict(policies=[], budgets=[0.3, 0.6])
    ours = run_tasks(hf_tiny, tok, instances, token_ids=m, **args)
    theirs = m.run_tasks(instances, **args)
    same(by_key(ours), by_key(theirs))
    assert {o["row"] for o in ours["outcomes"]} == {"full-cache", "topk"}


def test_the_profile_times_every_row(hf_tiny, setup):
    m, tok, instances = setup
    r = run_tasks(
        hf_tiny, tok, instances, protocol="prefill", presses=["knorm"], policies=[], budgets=[0.5], token_ids=m
    )
    rows = {(p["row"], p["budget"]): p for p in r["profile"]}
    assert set(rows) == {
        ("full-cache", 1.0),
        ("full-cache/record", 1.0),
        ("full-cache/reference", 1.0),
        ("knorm", 0.5),
        ("optimum", 0.5),
    }
    for p in rows.values():
        assert p["instances"] == 2 and p["seconds"] > 0 and p["peak_bytes"] >= p["extra_bytes"] >= 0


def test_lookahead_beyond_the_hosts_memory_is_refused(hf_tiny, setup, monkeypatch):
    from kvoracle.hf import tasks

    m, tok, instances = setup
    monkeypatch.setattr(tasks, "available_bytes", lambda: 10**5)
    with pytest.raises(ValueError, match=r"row lookahead on instance '.*' \(\d+ tokens with its answer\) needs .* GiB"):
        run_tasks(hf_tiny, tok, instances, policies=["h2o", "lookahead"], budgets=[0.5], token_ids=m)
    # the oracle's schedule needs no dense matrix: it runs
    r = run_tasks(hf_tiny, tok, instances[:1], policies=["oracle"], budgets=[0.5], topk=False, token_ids=m)
    assert [o["row"] for o in r["outcomes"]] == ["full-cache", "oracle"]
