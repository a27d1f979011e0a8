"""The reference rows of kvoracle.hf.run_tasks at scale: random GQA Llama models shaped like a 1B and
an 8B model (fewer layers), at 8 192 and 32 768 tokens, against kvpress's pipeline running one press
on the same instance, model and threads, in one run (docs/tasks.md, "At scale"; docs/benchmarks.md).

Shapes (Llama-3.2-1B's and Llama-3.1-8B's attention and MLP, random weights, seed 0, fp32,
vocabulary 49 152 so that kvoracle's ids of SmolLM2's tokenizer feed it, embeddings tied):
  1b: hidden 2 048, MLP 8 192, 32 query heads, 8 KV heads, head_dim 64
  8b: hidden 4 096, MLP 14 336, 32 query heads, 8 KV heads, head_dim 128
The instance is the GPL-3 text repeated to the length, with a question; the model's answers are
nonsense (random weights), which changes nothing in what is timed. Attention runs under SDPA: the
model's own attention then holds no n x n weights, and nor may the rows measured against it.

Measured, each with its wall time and peak resident memory (kvoracle.hf.meter.Meter):
  - kvpress alone: its pipeline (KVPressTextGenerationPipeline._forward) with the press, and with
    the full cache; one plain prefill of the context (the unit the ceiling is priced in);
  - kvoracle.hf.run_tasks under the prefill protocol with that press and the exact prefill optimum:
    every row of its profile (the full cache's row, the recording of its trace, the reference built
    on it, the press's row, the optimum's row);
  - with --dynamic, the streaming rows too: h2o inside the model's forward passes, the oracle top-k
    (left out by --no-topk), and the offline rows of --offline: the offline optimum (oracle, OPT_dyn)
    and lookahead, where its dense n x n schedule fits in half the available memory;
  - with --streaming-only, the streaming run alone (kvpress and the prefill protocol left out).
Ratios: each press row against kvpress alone with the same press (target <= 1.2); the ceiling's
extra cost (its recording, reference and row, less kvpress's press alone) in prefills (target <= 1);
h2o's streaming row against the full cache's row of the same streaming run (EvictingCache's
target <= 1.5). With --streaming-only that full-cache row is the baseline of every ratio.

Usage: hf_scale.py [--shape 1b|8b] [--layers 2] [--length 8192] [--budget 0.2] [--press snapkv]
         [--threads N] [--device cpu|cuda] [--dtype float32|bfloat16] [--reps 3] [--dynamic]
         [--offline oracle,lookahead|none] [--no-topk] [--streaming-only] [--json FILE]
         [--smoke]   (--smoke: a tiny shape at 512 tokens: CI)
       hf_scale.py --tables RUN.json... [--check DOC]   (the docs' tables, from several runs' --json
         files; --check prints nothing and fails when a row of them is not in DOC)
"""

import argparse
import json
import os
import statistics
import sys

from doc_rows import check_rows

SHAPES = {
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_attention_heads=32, num_key_value_heads=8, head_dim=64),
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8, head_dim=128),
    "smoke": dict(hidden_size=128, intermediate_size=256, num_attention_heads=8, num_key_value_heads=2, head_dim=16),
}
VOCAB = 49152  # SmolLM2's tokenizer: kvoracle's ids
TEXT = "/usr/share/common-licenses/GPL-3"


def random_llama(shape, layers, positions, device, dtype):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB,
        num_hidden_layers=layers,
        max_position_embeddings=positions,
        rope_theta=500000.0,
        tie_word_embeddings=True,
        attn_implementation="sdpa",
        **SHAPES[shape],
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval().to(device=device, dtype=getattr(torch, dtype))


def instance(engine, length):
    """The GPL-3 text repeated and cut so that context and question hold about `length` tokens."""
    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    row = {
        "id": f"scale-{length}",
        "question": "What is the magic number?",
        "answer_prefix": " The magic number is",
        "answer": "1234567",
        "max_new_tokens": 8,
    }
    per_char = len(engine.tokenize(text)) / len(text)
    chars = int(length / per_char)
    for _ in range(6):  # a few corrections of the cut
        row["context"] = (text * (chars // len(text) + 1))[:chars]
        t = engine.task_tokens(row)
        n = len(t["context"]) + len(t["question"])
        if abs(n - length) <= 8:
            break
        chars += int((length - n) / per_char)
    return row, t


ROWS = [  # (measurement, what the docs' table calls it)
    ("prefill", "one prefill of the context"),
    ("kvpress:full-cache", "kvpress pipeline, full cache"),
    ("kvpress:{press}", "kvpress pipeline with {press} (the baseline)"),
    ("prefill row full-cache", "run_tasks: full cache (prefill, answer)"),
    ("prefill row full-cache/record", "run_tasks: its recording"),
    ("prefill row full-cache/reference", "run_tasks: the reference on it"),
    ("prefill row {press}", "run_tasks: {press} row"),
    ("prefill row optimum", "run_tasks: optimum row"),
    ("dynamic row full-cache", "run_tasks: full cache, streaming"),
    ("dynamic row full-cache/record", "run_tasks: its recording, streaming"),
    ("dynamic row full-cache/reference", "run_tasks: the reference on it, streaming"),
    ("dynamic row h2o", "run_tasks: h2o, streaming"),
    ("dynamic row oracle", "run_tasks: oracle (OPT_dyn), streaming"),
    ("dynamic row lookahead", "run_tasks: lookahead, streaming"),
    ("dynamic row topk", "run_tasks: oracle top-k"),
]


def baseline_of(streaming_only, press):
    """The row a run's ratios divide by: kvpress with the press, or in a --streaming-only run the
    full cache's row of the streaming run."""
    return "dynamic row full-cache" if streaming_only else f"kvpress:{press}"


def plural(count, noun):
    return f"{count} {noun}" + ("" if count == 1 else "s")


def tables(paths):
    """docs' tables from several runs' --json files: seconds with the ratio to kvpress with the press
    (to the streaming full cache's row in a --streaming-only run), then peak and added memory, one
    column per run."""
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f))
    press = runs[0]["press"]
    head = [
        f"{r['shape'].upper()}, {plural(r['layers'], 'layer')}, {r['input_tokens']} tokens, "
        f"{plural(r['threads'], 'thread')}"
        for r in runs
    ]
    out = ["| work | " + " | ".join(head) + " |", "|---|" + "---:|" * len(runs)]
    memory = ["| work | " + " | ".join(head) + " |", "|---|" + "---:|" * len(runs)]
    for key, label in ROWS:
        key, label = key.format(press=press), label.format(press=press)
        cells, mem = [], []
        for r in runs:
            m, base = r["measured"].get(key), r["measured"][baseline_of(r.get("streaming_only"), r["press"])]["seconds"]
            cells.append(f"{m['seconds']:.1f} s ({m['seconds'] / base:.2f}×)" if m else "–")
            mem.append(f"{m['peak_bytes'] / 2**30:.2f} / {m['extra_bytes'] / 2**30:.2f}" if m else "–")
        if any(c != "–" for c in cells):
            out.append(f"| {label} | " + " | ".join(cells) + " |")
            memory.append(f"| {label} | " + " | ".join(mem) + " |")
    reps = ", ".join(str(r["repetitions"]) for r in runs)
    note = f"Seconds: medians of the repetitions of each column ({reps}), with the ratio to kvpress with {press}"
    if any(r.get("streaming_only") for r in runs):
        note += " (in a streaming-only column, to the streaming full cache's row)"
    note += "."
    return "\n".join(out) + f"\n\n{note} Memory: peak resident GiB / GiB added by the work.\n\n" + "\n".join(memory)


def tables_command(args):
    """--tables RUN.json... [--check DOC]: print the tables, or check that DOC holds each of their rows."""
    ap = argparse.ArgumentParser(prog="hf_scale.py --tables", description="the docs' tables from runs' --json files")
    ap.add_argument("runs", nargs="+", help="the runs' --json files, one column each")
    ap.add_argument("--check", metavar="DOC", help="print nothing; fail when a row of the tables is not in DOC")
    a = ap.parse_args(args)
    try:
        text = tables(a.runs)
        if a.check is None:
            print(text)
            return 0
        # Every row but the header, which the document may label in its own words.
        rows = [row for row in text.splitlines() if row.startswith("| ") and not row.startswith("| work |")]
        return check_rows(rows, a.check, "the runs")
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"hf_scale.py: cannot make the tables: {error}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--tables":
        return tables_command(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="1b", choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--length", type=int, default=8192)
    ap.add_argument("--budget", type=float, default=0.2)
    ap.add_argument("--press", default="snapkv")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--device", default="cpu", help="cpu or cuda (peak memory: the device's)")
    ap.add_argument("--dtype", default="float32", help="the model's dtype: float32, bfloat16, ...")
    ap.add_argument("--reps", type=int, default=3, help="repetitions, interleaved; medians are reported")
    ap.add_argument("--dynamic", action="store_true", help="the streaming rows too (h2o, topk, oracle, lookahead)")
    ap.add_argument(
        "--offline",
        default="oracle,lookahead",
        help="the offline rows under --dynamic: oracle, lookahead (left out where its dense schedule does not "
        "fit in half the available memory), both, or none",
    )
    ap.add_argument("--no-topk", action="store_true", help="leave the oracle top-k's streaming row out")
    ap.add_argument(
        "--streaming-only",
        action="store_true",
        help="only the streaming run (implies --dynamic): its rows against its full cache's row",
    )
    ap.add_argument("--json", help="write every measurement to this file")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.shape, a.layers, a.length, a.dynamic, a.reps = "smoke", 2, 512, True, 1
    a.dynamic = a.dynamic or a.streaming_only

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import kvoracle as kvo
    import kvpress
    import torch
    import transformers
    from kvoracle.hf import run_tasks
    from kvoracle.hf.meter import Meter, available_bytes
    from kvoracle.hf.tasks import lookahead_schedule_bytes
    from transformers import AutoTokenizer, DynamicCache, pipeline

    torch.set_num_threads(a.threads)
    transformers.logging.set_verbosity_error()
    model_path = kvo.default_model_path()
    engine = kvo.Model(model_path)
    row, t = instance(engine, a.length)
    n = len(t["context"]) + len(t["question"])
    model = random_llama(a.shape, a.layers, n + 64, a.device, a.dtype)
    tok = AutoTokenizer.from_pretrained(os.path.dirname(model_path), gguf_file=os.path.basename(model_path))
    pipe = pipeline("kv-press-text-generation", model=model, tokenizer=tok, device=a.device)
    press_class = getattr(kvpress, dict(kvo.press_names())[a.press])
    ids = {
        "context_ids": torch.tensor([t["context"]], device=a.device),
        "questions_ids": [torch.tensor([t["question"]], device=a.device)],
    }
    samples = {}  # name -> one {seconds, peak_bytes, extra_bytes} per repetition
    res = {}

    def keep(name, seconds, peak, extra):
        samples.setdefault(name, []).append({"seconds": seconds, "peak_bytes": peak, "extra_bytes": extra})

    def measure(name, work):
        with Meter(a.device) as m:
            work()
        keep(name, m.seconds, m.peak_bytes, m.extra_bytes)
        print(f"{name}: {m.seconds:.2f} s, peak {m.peak_bytes / 2**30:.2f} GiB", file=sys.stderr)

    def prefill():
        with torch.no_grad():
            model.model(input_ids=ids["context_ids"], past_key_values=DynamicCache())

    def kvpress_alone(press):
        with torch.no_grad():
            pipe._forward(ids, max_new_tokens=row["max_new_tokens"], press=press)

    def ours(protocol, **options):
        res[protocol] = run_tasks(model, tok, [row], token_ids=engine, protocol=protocol, budgets=[a.budget], **options)
        for p in res[protocol]["profile"]:
            keep(f"{protocol} row {p['row']}", p["seconds"], p["peak_bytes"], p["extra_bytes"])

    offline = [] if a.offline == "none" else a.offline.split(",")
    free = available_bytes()
    if "lookahead" in offline and free is not None and lookahead_schedule_bytes(n + row["max_new_tokens"]) > 0.5 * free:
        offline.remove("lookahead")  # room for the rest
    for _ in range(a.reps):  # repetitions interleaved, so that a slow spell of the machine hits every row
        if not a.streaming_only:
            measure("prefill", prefill)
            measure("kvpress:" + a.press, lambda: kvpress_alone(press_class(compression_ratio=1.0 - a.budget)))
            measure("kvpress:full-cache", lambda: kvpress_alone(None))
            measure("run_tasks:prefill", lambda: ours("prefill", presses=[a.press], policies=[]))
        if a.dynamic:
            measure("run_tasks:dynamic", lambda: ours("dynamic", policies=["h2o"] + offline, topk=not a.no_topk))
    measured = {
        name: {
            "seconds": statistics.median(x["seconds"] for x in runs),
            "peak_bytes": max(x["peak_bytes"] for x in runs),
            "extra_bytes": max(x["extra_bytes"] for x in runs),
            "repetitions": len(runs),
        }
        for name, runs in samples.items()
    }

    alone = measured[baseline_of(a.streaming_only, a.press)]["seconds"]
    print(
        f"{a.shape} shape, {a.layers} layers, {n} input tokens, budget {a.budget}, {a.device}, {a.dtype}, "
        f"{a.threads} threads, medians of {a.reps}"
    )
    print()
    memory = "peak device GiB" if a.device.startswith("cuda") else "peak RSS GiB"
    over = "/ the streaming full cache" if a.streaming_only else "/ kvpress with the press"
    print(f"| work | seconds | {memory} | added GiB | {over} |")
    print("|---|---:|---:|---:|---:|")
    for name, m in measured.items():
        print(
            f"| {name} | {m['seconds']:.2f} | {m['peak_bytes'] / 2**30:.2f} | {m['extra_bytes'] / 2**30:.2f} "
            f"| {m['seconds'] / alone:.2f} |"
        )
    summary = {"offline_rows": offline}
    print()
    if not a.streaming_only:
        press_row = measured[f"prefill row {a.press}"]["seconds"]
        ceiling = sum(
            measured[f"prefill row {r}"]["seconds"] for r in ("full-cache/record", "full-cache/reference", "optimum")
        )
        summary["press_row_over_kvpress"] = press_row / alone
        summary["ceiling_extra_prefills"] = (ceiling - alone) / measured["prefill"]["seconds"]
        print(f"press row / kvpress alone: {summary['press_row_over_kvpress']:.2f} (target <= 1.2)")
        print(
            f"ceiling (record + reference + optimum row) - kvpress alone: {summary['ceiling_extra_prefills']:.2f} prefills (target <= 1)"
        )
    if a.dynamic:
        summary["h2o_over_streaming_full_cache"] = (
            measured["dynamic row h2o"]["seconds"] / measured["dynamic row full-cache"]["seconds"]
        )
        print(
            f"h2o streaming row / the streaming full cache's row: {summary['h2o_over_streaming_full_cache']:.2f} (target <= 1.5)"
        )
    if a.dynamic and "lookahead" in a.offline and "lookahead" not in offline:
        print(f"lookahead left out: its schedule needs {lookahead_schedule_bytes(n + 8) / 2**30:.1f} GiB")
    record = {
        "shape": a.shape,
        "layers": a.layers,
        "input_tokens": n,
        "budget": a.budget,
        "press": a.press,
        "threads": a.threads,
        "device": a.device,
        "dtype": a.dtype,
        "repetitions": a.reps,
        "streaming_only": a.streaming_only,
        "measured": measured,
        "summary": summary,
    }
    if a.json:
        with open(a.json, "w") as f:
            json.dump(record, f, indent=1)
    if a.smoke:  # the docs' tables from this run's record too
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(record, f)
            f.flush()
            print()
            print(tables([f.name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
