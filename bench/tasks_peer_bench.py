"""One long task instance under prefill compression, kvoracle against transformers + kvpress on the
same machine and threads, in one run (docs/tasks.md, "Measured").

kvoracle: `kvoracle tasks run` (the CLI of --cli, by default the -march=native build that
bench/tasks-study uses: torch picks the machine's vector instructions at run time, so both sides
use them) on one generated niah instance, protocol prefill, one press at one budget, its model
load included. That is the full cache's run (a chunked prefill of the context that also records the
attention trace, the question, the answer) and then the press's row (the cache cut to the press's
choice, the question, the answer). kvpress 0.5.5: its own pipeline (KVPressTextGenerationPipeline._forward,
fed kvoracle's token ids) on SmolLM2 in transformers (eager attention, fp32), once with the press
and once with the full cache: the same two answers kvoracle gives. Both answers are compared.

Usage: tasks_peer_bench.py [--length 4096] [--press snapkv] [--budget 0.2] [--reps 3] [--threads 2]
       [--cli build-native/apps/kvoracle/kvoracle] [--model GGUF] [--smoke]
--smoke: a 256-token instance, one repetition (what CI runs, on the tiny test model: the same two
answers on both sides is a check of the mechanics). --model: SmolLM2 where kvoracle looks for it by
default.
Prints a Markdown table of medians, and the ratios kvoracle / kvpress."""

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.environ.get("KVO_MODEL") or os.path.join(
    os.environ.get("KVO_MODEL_DIR") or os.path.expanduser("~/.cache/kvoracle"), "SmolLM2-135M-Instruct.Q4_1.gguf"
)


def timed(fn, reps):
    seconds, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        seconds.append(time.perf_counter() - t)
    return statistics.median(seconds), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=4096)
    ap.add_argument("--press", default="snapkv")
    ap.add_argument("--budget", type=float, default=0.2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cli", default=os.path.join(ROOT, "build-native", "apps", "kvoracle", "kvoracle"))
    ap.add_argument("--model", default=MODEL, help="a Llama GGUF file (default: SmolLM2)")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        # Half the context: at 20% of 210 context tokens snapkv keeps 42 of its 64 window tokens,
        # all of one score, and the tie rules (kvoracle: the earliest; torch.topk: unspecified)
        # gave different answers.
        a.length, a.reps, a.budget = 256, 1, 0.5

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import kvoracle as kvo
    import kvpress
    import torch
    import transformers
    from transformers import AutoTokenizer, pipeline

    torch.set_num_threads(a.threads)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    where, name = os.path.split(os.path.abspath(a.model))
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        where, gguf_file=name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    tok = AutoTokenizer.from_pretrained(where, gguf_file=name)
    pipe = pipeline("kv-press-text-generation", model=hf, tokenizer=tok)
    press_class = dict(kvo.press_names())[a.press]

    m = kvo.Model(a.model)
    inst = m.generate_tasks(tasks=["niah"], lengths=[a.length], depths=[0.5], per_cell=1)[0]
    t = m.task_tokens(inst)
    ids = {"context_ids": torch.tensor([t["context"]]), "questions_ids": [torch.tensor([t["question"]])]}

    work = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, work, True)
    suite, result = os.path.join(work, "suite.jsonl"), os.path.join(work, "r.json")
    with open(suite, "w") as f:
        f.write(json.dumps(inst) + "\n")
    command = [a.cli, "-q", "tasks", "run", "-m", a.model, "-i", suite, "--protocol", "prefill", "--policies", "none"]
    command += ["--presses", a.press, "--budgets", str(a.budget), "--no-optimum", "--json", result]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))

    def ours():
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
        with open(result) as f:
            return json.load(f)

    def theirs(press):
        with torch.no_grad():
            return pipe._forward(ids, max_new_tokens=inst["max_new_tokens"], press=press)[0]

    ratio = 1.0 - a.budget
    ko_s, res = timed(ours, a.reps)
    kp_s, kp_answer = timed(lambda: theirs(getattr(kvpress, press_class)(compression_ratio=ratio)), a.reps)
    kf_s, kf_answer = timed(lambda: theirs(None), a.reps)
    answers = {o["row"]: o["answer"] for o in res["outcomes"]}
    same = answers[a.press] == kp_answer and answers["full-cache"] == kf_answer

    n = len(t["context"]) + len(t["question"])
    print(f"niah, {n} input tokens, {a.press} at budget {a.budget}, {a.threads} threads, medians of {a.reps}")
    print()
    print("| run | seconds | kvoracle / this |")
    print("|---|---:|---:|")
    print(f"| kvoracle `tasks run` (full cache with its trace, then the {a.press} row) | {ko_s:.2f} | 1.00 |")
    print(f"| kvpress pipeline with {press_class} | {kp_s:.2f} | {ko_s / kp_s:.2f} |")
    print(f"| kvpress pipeline, full cache | {kf_s:.2f} | {ko_s / kf_s:.2f} |")
    print(f"| kvpress: both (the same two answers) | {kp_s + kf_s:.2f} | {ko_s / (kp_s + kf_s):.2f} |")
    print()
    print(f"answers identical: {same} (kvoracle {answers[a.press]!r}, kvpress {kp_answer!r})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
