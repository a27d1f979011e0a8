"""kvpress's presses against the exact prefill optimum on the real SmolLM2 (docs/findings.md,
"Prefill compression: kvpress's presses against the optimum"): for each text, the first
PROMPT tokens are compressed at prefill and the next CONT tokens teacher-forced
(kvoracle.hf.compare_presses); writes the records as JSON and an SVG plot of mass fraction and
KL against the compression ratio, averaged over the texts.

Usage: press_findings.py --kvoracle build/apps/kvoracle/kvoracle --out DIR
         [--texts GPL-3,Apache-2.0,MPL-2.0] [--prompt 512] [--cont 128] [--ratios 0.5,0.8,0.9,0.95]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import kvoracle as kvo
import numpy as np
import torch
import transformers
from kvoracle.hf import compare_presses

MODEL = os.path.join(
    os.environ.get("KVO_MODEL_DIR") or os.path.expanduser("~/.cache/kvoracle"), "SmolLM2-135M-Instruct.Q4_1.gguf"
)


def token_ids(kvoracle, text, n):
    """kvoracle's token ids of the text (transformers' GGUF tokenizer does not split digits)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ids.safetensors")
        subprocess.run(
            [kvoracle, "-q", "record", "--text", text, "--tokens", str(n), "--out", path, "--layers", "0"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return np.asarray(kvo.read_trace(path).tokens)


def plot(records, path):
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "kvoracle", "font.size": 9})
    names = list(dict.fromkeys(r["press"] for r in records))
    ratios = sorted({r["compression_ratio"] for r in records})
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for name in names:
        mass = [
            np.mean([r["mass_fraction"] for r in records if r["press"] == name and r["compression_ratio"] == x])
            for x in ratios
        ]
        kl = [
            np.mean([r["mean_kl"] for r in records if r["press"] == name and r["compression_ratio"] == x])
            for x in ratios
        ]
        style = {"linestyle": "--", "color": "black"} if name == "optimum" else {}
        a.plot(ratios, mass, marker="o", label=name, **style)
        b.plot(ratios, kl, marker="o", label=name, **style)
    a.set(
        xlabel="compression ratio (fraction of the prompt removed)",
        ylabel="retained mass / optimum",
        title="attention mass the continuation gives the kept keys",
    )
    b.set(
        xlabel="compression ratio",
        ylabel="mean KL(full || compressed)",
        yscale="log",
        title="closed loop: next-token KL to the full cache",
    )
    b.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    tmp = path + ".tmp"
    fig.savefig(tmp, format="svg")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvoracle", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--texts", default="GPL-3,Apache-2.0,MPL-2.0")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--cont", type=int, default=128)
    ap.add_argument("--ratios", default="0.5,0.8,0.9,0.95")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        os.path.dirname(MODEL), gguf_file=os.path.basename(MODEL), attn_implementation="eager", dtype=torch.float32
    ).eval()
    ratios = tuple(float(x) for x in a.ratios.split(","))
    os.makedirs(a.out, exist_ok=True)
    records, runs = [], []
    for text in a.texts.split(","):
        path = os.path.join("/usr/share/common-licenses", text)
        ids = token_ids(a.kvoracle, path, a.prompt + a.cont)
        start = time.time()
        r = compare_presses(
            model,
            ids,
            a.prompt,
            ratios=ratios,
            progress=lambda row, text=text: print(
                f"{text} {row['press']} {row['compression_ratio']}", file=sys.stderr, flush=True
            ),
        )
        runs.append({"text": text, "full_nll": r["full_nll"], "seconds": time.time() - start})
        records += [{"text": text, **row} for row in r["rows"]]
    out = {
        "model": os.path.basename(MODEL),
        "prompt": a.prompt,
        "continuation": a.cont,
        "runs": runs,
        "records": records,
    }
    tmp = os.path.join(a.out, "presses.json.tmp")
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, os.path.join(a.out, "presses.json"))
    plot(records, os.path.join(a.out, "presses.svg"))


if __name__ == "__main__":
    main()
