"""kvpress's own evaluation (evaluation/evaluate.py of its 0.5.5 source release, unchanged) with
kvoracle's ceiling registered, on the tiny test model saved as a transformers folder: every press
and ratio answers kvoracle's suite and a data set in kvpress's RULER columns (scored by kvpress's
own scorer), the summary pairs each press with the ceiling, a second call resumes from the files,
the ceiling press keeps exactly the optimum of the full cache's run, and bad requests fail in one
line."""

import hashlib
import json
import os

import kvoracle as kvo
import numpy as np
import pytest

pytestmark = [pytest.mark.transformers, pytest.mark.kvpress]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVALUATION = os.environ.get("KVO_KVPRESS_EVALUATION") or os.path.join(ROOT, ".venv/src/kvpress-0.5.5/evaluation")


def _digest(folder):
    h = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            h.update(name.encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


@pytest.fixture(scope="module")
def tiny_folder(tiny_model_path, tmp_path_factory):
    """The tiny model and its tokenizer saved as a transformers folder, as evaluate.py loads a model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where, name = os.path.split(tiny_model_path)
    folder = str(tmp_path_factory.mktemp("tiny-hf"))
    AutoModelForCausalLM.from_pretrained(where, gguf_file=name).save_pretrained(folder)
    AutoTokenizer.from_pretrained(where, gguf_file=name).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def data(tiny_model_path, tmp_path_factory):
    """kvoracle's suite (two instances) and the same in kvpress's RULER columns (answer: a list)."""
    instances = kvo.Model(tiny_model_path).generate_tasks(
        tasks=["passkey", "niah"], lengths=[256], depths=[0.5], per_cell=1, task_seed=5
    )
    root = tmp_path_factory.mktemp("data")
    suite, ruler = root / "suite", root / "ruler"
    suite.mkdir()
    ruler.mkdir()
    with open(suite / "test.jsonl", "w") as f:
        for r in instances:
            f.write(json.dumps(r) + "\n")
    with open(ruler / "test.jsonl", "w") as f:
        for r in instances:
            row = {k: r[k] for k in ("context", "question", "answer_prefix", "max_new_tokens")}
            f.write(
                json.dumps(
                    {
                        **row,
                        "task": "niah_single_1",
                        "answer": list(r["answer"]) if isinstance(r["answer"], list) else [r["answer"]],
                    }
                )
                + "\n"
            )
    return {"kvoracle": str(suite), "ruler": str(ruler)}


def test_evaluate_py_runs_unchanged_with_the_ceiling(tiny_folder, data, tmp_path):
    from kvoracle.hf.kvpress_eval import evaluate_ceiling

    before = _digest(EVALUATION)
    out = str(tmp_path / "results")
    args = (EVALUATION, tiny_folder, "kvoracle", ["knorm", "kvoracle_h2o", "no_press"], [0.5, "16:1"])
    r = evaluate_ceiling(*args, data=data, output_dir=out, device="cpu")
    assert [(row["press"], row["compression_ratio"]) for row in r["rows"]] == [
        (p, ratio) for ratio in (0.5, 0.9375) for p in ("kvoracle_optimum", "knorm", "kvoracle_h2o", "no_press")
    ]
    full = [run["folder"] for run in r["runs"] if run["press"] == "no_press"]
    assert len(set(full)) == 1 and full[0].endswith("__no_press__0.00")  # evaluate.py runs the full cache at 0
    assert all(row["instances"] == 2 for row in r["rows"])
    assert all(row["share"] == 1.0 for row in r["rows"] if row["press"] == "kvoracle_optimum")
    for run in r["runs"]:  # kvpress's own files, beside kvoracle's per-instance scores
        for name in ("predictions.csv", "metrics.json", "config.yaml", "kvoracle_scores.json"):
            assert os.path.exists(os.path.join(run["folder"], name)), (run["folder"], name)
    assert "16:1" in str(r.report) and "ceiling-share.svg" in r.report.plots
    assert _digest(EVALUATION) == before  # nothing of kvpress's evaluation was changed
    # A second call finds every run's files and recomputes nothing.
    stamps = {run["folder"]: os.path.getmtime(os.path.join(run["folder"], "predictions.csv")) for run in r["runs"]}
    again = evaluate_ceiling(*args, data=data, output_dir=out, device="cpu")
    assert again["rows"] == r["rows"]
    assert stamps == {f: os.path.getmtime(os.path.join(f, "predictions.csv")) for f in stamps}


def test_kvpress_data_sets_keep_kvpress_scorer(tiny_folder, data, tmp_path):
    """A local copy of a data set kvpress knows (here: RULER's columns) is scored by kvpress's
    calculate_metrics; the per-instance scores average to its metrics.json."""
    from kvoracle.hf.kvpress_eval import evaluate_ceiling

    r = evaluate_ceiling(
        EVALUATION, tiny_folder, "ruler", ["streaming_llm"], [0.75], data=data, output_dir=str(tmp_path), device="cpu"
    )
    for run, row in zip(r["runs"], r["rows"]):
        assert list(run["metrics"]) == ["niah_single_1"]
        assert run["metrics"]["niah_single_1"]["string_match"] == pytest.approx(row["score"])


def test_the_ceiling_press_keeps_the_optimum_of_the_full_cache(tiny_folder, tmp_path):
    """In kvoracle's pipeline, OptimumPress keeps per (layer, KV head) the top-k of the prefill
    optimum computed independently on a recording of the full cache's run, and answers as
    KvoraclePress(policy="optimum") given that recording."""
    import torch
    from kvoracle.hf import KvoraclePress, record_trace
    from kvoracle.hf.kvpress_eval import register
    from kvoracle.hf.optimum_press import OptimumPress, greedy_answer
    from kvpress.utils import compute_n_kept
    from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, pipeline

    register(EVALUATION)
    model = AutoModelForCausalLM.from_pretrained(tiny_folder)
    tok = AutoTokenizer.from_pretrained(tiny_folder)
    pipe = pipeline("kv-press-text-generation", model=model, tokenizer=tok, device="cpu")
    context = "The code is 4812. " + "Grass is green and the sky is blue. " * 12
    question = "What is the code?"
    full = pipe(context, question=question, max_new_tokens=6)["answer"]
    inputs = pipe.preprocess(context, [question], "", 10**9)
    press = OptimumPress(compression_ratio=0.5)
    ceiling = pipe(context, question=question, press=press, max_new_tokens=6)["answer"]
    # the reference recorded independently: the context, the question and the full cache's answer
    cache = DynamicCache()
    with torch.no_grad():
        model.model(input_ids=inputs["context_ids"], past_key_values=cache)
    P = inputs["context_ids"].shape[1]
    answer = greedy_answer(model, cache, inputs["questions_ids"][0], P, 6)
    assert tok.decode(answer, skip_special_tokens=True) == full  # the pipeline's own answer
    path = str(tmp_path / "full.safetensors")
    ids = torch.cat([inputs["context_ids"], inputs["questions_ids"][0], torch.tensor([answer])], dim=1)
    record_trace(model, ids, path, values=False)
    trace = kvo.read_trace(path)
    k = compute_n_kept(P, 0.5)
    want = [
        set(kvo.prefill_optimum(trace, layer, kv, P, k)["set"].tolist())
        for layer in range(trace.n_layers)
        for kv in range(trace.n_kv_heads)
    ]
    assert press.kept_units == want
    by_trace = pipe(context, question=question, press=KvoraclePress(0.5, "optimum", path), max_new_tokens=6)
    assert by_trace["answer"] == ceiling


@pytest.mark.parametrize(
    "call, message",
    [
        (dict(evaluation="/nonexistent"), "is not kvpress's evaluation folder"),
        (dict(presses=["no_such_press"]), "press 'no_such_press' is not in kvpress's PRESS_REGISTRY"),
        (dict(dataset="mine"), "data set 'mine' is neither kvpress's nor given in data="),
        (dict(ratios=["3:0"]), "compression ratio '3:0' is outside [0, 1)"),
        (dict(ratios=["half"]), "compression ratio 'half' is not a number or N:1"),
        (dict(data={"kvoracle": "/tmp"}), "holds no test.jsonl or test.parquet"),
        (dict(colour="red"), "'colour' is not a field of kvpress's EvaluationConfig"),
    ],
)
def test_bad_requests_fail_in_one_line(tiny_folder, data, tmp_path, call, message):
    from kvoracle.hf.kvpress_eval import evaluate_ceiling

    args = dict(evaluation=EVALUATION, model=tiny_folder, dataset="kvoracle", presses=["knorm"], ratios=[0.5])
    args.update(data=data, output_dir=str(tmp_path))
    args.update(call)
    with pytest.raises(kvo.KvoError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        evaluate_ceiling(**args)
    assert not os.listdir(tmp_path)  # refused before any run


def test_the_ceiling_press_needs_its_reference():
    from kvoracle.hf.kvpress_eval import parse_ratio
    from kvoracle.hf.optimum_press import OptimumPress

    with pytest.raises(kvo.KvoError, match="scope 'heads' is not one of head, layer, layerwise, model"):
        OptimumPress(0.5, scope="heads")
    press = OptimumPress(0.5)
    with pytest.raises(kvo.KvoError, match="no reference for this context"):
        press._layer_sets(0, 2, 1, 16)
    assert np.isclose(parse_ratio("32:1"), 1 - 1 / 32)


def _docs_blocks(lang):
    import re

    text = open(os.path.join(ROOT, "docs", "tasks.md"), encoding="utf-8").read()
    section = text.split("## Inside kvpress's evaluation", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```" + lang + r"\n(.*?)```", section, flags=re.S)


def test_tasks_md_kvpress_evaluation_examples(tiny_model_path, tiny_folder, data, tmp_path, monkeypatch):
    """docs/tasks.md's command and Python call, as written, on the tiny model and a two-instance suite."""
    import subprocess
    import sys

    (command,) = _docs_blocks("sh")
    command = command.replace("~/.cache/kvoracle/SmolLM2-135M-Instruct.Q4_1.gguf", tiny_model_path)
    command = command.replace("build/studies/suite", data["kvoracle"]).replace(
        "build/studies/ceiling", str(tmp_path / "c")
    )
    command = command.replace("python -m", f"{sys.executable} -m", 1)
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "share of ceiling" in done.stdout and "16:1" in done.stdout
    summary = json.load(open(tmp_path / "c" / "ceiling-share.json"))
    assert {r["press"] for r in summary["rows"]} == {"kvoracle_optimum", "knorm", "snapkv", "streaming_llm"}
    assert (tmp_path / "c" / "ceiling-share.svg").exists()
    (block,) = _docs_blocks("python")
    monkeypatch.chdir(ROOT)
    scope = {"model_folder": tiny_folder, "suite_folder": data["kvoracle"], "results": str(tmp_path / "p")}
    exec(block.replace("print(res.report)", ""), scope)  # noqa: S102
    assert [r["press"] for r in scope["res"]["rows"]] == ["kvoracle_optimum", "knorm", "snapkv"] * 2
