"""What kvoracle.hf costs on SmolLM2-135M through transformers, against baselines of the same run:
(1) record_trace against the model's plain forward pass (SDPA) and against the dense export of
output_attentions (eager), in time and peak memory above the loaded model (each in its own
process; the peak is reset after loading through /proc/self/clear_refs);
(2) generate through EvictingCache against plain generate, in tokens per second, at each prompt
length (EvictingCache's prompt runs through kvoracle's pools at the cost of about one prefill).
Usage: hf_bench.py [--smoke] [--tokens 512,1024,2048] [--prompts 64,256] [--reps 3] [--generation-only]
(prints Markdown tables)
--smoke: a small random Llama instead of SmolLM2, one repetition (what CI runs)."""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODEL = os.environ.get("KVO_MODEL") or os.path.join(
    os.environ.get("KVO_MODEL_DIR") or os.path.expanduser("~/.cache/kvoracle"), "SmolLM2-135M-Instruct.Q4_1.gguf"
)
TEXT = "/usr/share/common-licenses/GPL-3"


def load(smoke):
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    if smoke:
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            vocab_size=96,
            hidden_size=64,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
        return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    return transformers.AutoModelForCausalLM.from_pretrained(
        os.path.dirname(MODEL), gguf_file=os.path.basename(MODEL), attn_implementation="eager", dtype=torch.float32
    ).eval()


def token_ids(n, smoke):
    """kvoracle's ids of the GPL-3 text (the random model: ids below its vocabulary)."""
    import torch

    if smoke:
        return torch.arange(n) % 90 + 1
    import kvoracle

    with tempfile.TemporaryDirectory() as d:
        cli = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "apps", "kvoracle", "kvoracle")
        path = os.path.join(d, "t.safetensors")
        subprocess.run(
            [cli, "-q", "record", "--text", TEXT, "--tokens", str(n), "--layers", "0", "--out", path],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return torch.tensor(list(kvoracle.read_trace(path).tokens))


def one(mode, n, reps, smoke):
    """Child process: median seconds of `mode` at n tokens and the peak RSS above the loaded model."""
    import torch
    from kvoracle.hf import record_trace

    model, ids = load(smoke), token_ids(n, smoke)
    base = getattr(model, model.base_model_prefix)
    with tempfile.TemporaryDirectory() as d:

        def run():
            with torch.no_grad():
                if mode == "forward":
                    base(input_ids=ids[None], use_cache=False)
                elif mode == "record":
                    record_trace(model, ids, os.path.join(d, "t.safetensors"))
                else:  # the dense export docs/trace-format.md used to show
                    att = base(input_ids=ids[None], use_cache=False, output_attentions=True).attentions
                    [a[0].numpy() for a in att]

        if mode == "forward":
            model.set_attn_implementation("sdpa")  # the cheapest plain forward: no n x n tensor either
        gc.collect()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the peak RSS (VmHWM) to the current RSS: the model's load peak is gone
        before = status_kib("VmRSS")
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        peak = status_kib("VmHWM")
    print(json.dumps({"seconds": statistics.median(times), "extra_mib": (peak - before) / 1024}))


def status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def measure(mode, n, reps, smoke):
    args = [sys.executable, os.path.abspath(__file__), "--child", mode, "--tokens", str(n), "--reps", str(reps)]
    out = subprocess.run(args + (["--smoke"] if smoke else []), check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def generation(reps, smoke, prompt_len=64, new=64):
    import torch
    from kvoracle import policy
    from kvoracle.hf import EvictingCache

    model = load(smoke)
    ids = token_ids(prompt_len, smoke)[None]
    mask = torch.ones_like(ids)
    rows = []
    for label, make in [
        ("plain generate (DynamicCache)", lambda: None),
        ("EvictingCache, h2o, full budget", lambda: EvictingCache(model, policy.H2O, "100%", max_len=prompt_len + new)),
        (f"EvictingCache, h2o, 20% (k = {int(0.2 * prompt_len)})", lambda: EvictingCache(model, policy.H2O, "20%")),
    ]:
        times = []
        for _ in range(reps):
            cache = make()
            if cache is None:
                model.set_attn_implementation("eager")
            t0 = time.perf_counter()
            model.generate(
                ids,
                past_key_values=cache,
                attention_mask=mask,
                max_new_tokens=new,
                do_sample=False,
                min_new_tokens=new,
                pad_token_id=0,
            )
            times.append(time.perf_counter() - t0)
        rows.append((label, statistics.median(times)))
    base = rows[0][1]
    print(f"\n{prompt_len}-token prompt, {new} new tokens, medians of {reps}:\n")
    print("| generate | seconds | tokens/s | time / plain |\n|---|---:|---:|---:|")
    for label, s in rows:
        print(f"| {label} | {s:.2f} | {new / s:.1f} | {s / base:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--tokens", default=None)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--child", default=None)
    ap.add_argument("--prompts", default=None)
    ap.add_argument("--generation-only", action="store_true")
    a = ap.parse_args()
    reps = a.reps or (1 if a.smoke else 3)
    if a.child:
        return one(a.child, int(a.tokens), reps, a.smoke)
    prompts = [int(t) for t in (a.prompts or ("16,32" if a.smoke else "64,256")).split(",")]
    if a.generation_only:
        for prompt_len in prompts:
            generation(reps, a.smoke, prompt_len)
        return None
    sizes = [int(t) for t in (a.tokens or ("32,64" if a.smoke else "512,1024,2048")).split(",")]
    print(f"record_trace, medians of {reps}; memory: peak RSS above the loaded model, own process each:\n")
    print(
        "| n | forward (SDPA) s | record_trace s | record / forward | dense export s | forward MiB | "
        "record MiB | dense MiB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        f, r, dense = (measure(mode, n, reps, a.smoke) for mode in ("forward", "record", "dense"))
        print(
            f"| {n} | {f['seconds']:.2f} | {r['seconds']:.2f} | {r['seconds'] / f['seconds']:.2f} | "
            f"{dense['seconds']:.2f} | {f['extra_mib']:.0f} | {r['extra_mib']:.0f} | {dense['extra_mib']:.0f} |"
        )
    for prompt_len in prompts:
        generation(reps, a.smoke, prompt_len)


if __name__ == "__main__":
    main()
