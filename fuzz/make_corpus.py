"""Writes the seed corpus of the fuzz targets into fuzz/corpus/<target>/: small valid inputs and
broken variants of each (truncated, bad lengths, bad types, overlapping or out-of-range offsets,
NaN values, implausible counts). Deterministic; run it again after changing it and commit the
result. Usage: .venv/bin/python fuzz/make_corpus.py"""

import json
import os
import struct
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- safetensors traces -------------------------------------------------------------------------
def safetensors(tensors, metadata=None, header_extra=None):
    header, blobs, off = {}, [], 0
    for name, arr, dtype in tensors:
        raw = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    if header_extra:
        header.update(header_extra)
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def trace_meta(**kw):
    m = {"format": "kvoracle-trace", "format_version": "1", "attn_scale": "0.5", "prompt_len": "0"}
    m.update(kw)
    return m


def seeds_safetensors():
    g = np.random.default_rng(1)
    q = g.standard_normal((2, 4, 2)).astype(np.float32)
    k = g.standard_normal((1, 4, 2)).astype(np.float32)
    toks = np.arange(4, dtype=np.int32)
    valid = safetensors([("layers.0.q", q, "F32"), ("layers.0.k", k, "F32"), ("tokens", toks, "I32")], trace_meta())
    put("safetensors", "valid-gqa", valid)
    put(
        "safetensors",
        "valid-f16",
        safetensors(
            [("layers.0.q", q.astype(np.float16), "F16"), ("layers.0.k", k.astype(np.float16), "F16")], trace_meta()
        ),
    )
    bf = (q.view(np.uint32) >> 16).astype(np.uint16)
    bk = (k.view(np.uint32) >> 16).astype(np.uint16)
    put(
        "safetensors", "valid-bf16", safetensors([("layers.0.q", bf, "BF16"), ("layers.0.k", bk, "BF16")], trace_meta())
    )
    a = np.tril(np.full((1, 3, 3), 1 / 3, dtype=np.float32))
    put("safetensors", "valid-dense-only", safetensors([("layers.0.attn", a, "F32")], trace_meta()))
    two = safetensors(
        [
            ("layers.0.q", q, "F32"),
            ("layers.0.k", k, "F32"),
            ("layers.1.q", q, "F32"),
            ("layers.1.k", k, "F32"),
            ("layers.0.v", k, "F32"),
            ("layers.1.v", k, "F32"),
        ],
        trace_meta(prompt_len="2"),
    )
    put("safetensors", "valid-two-layers-values", two)
    put("safetensors", "truncated", valid[: len(valid) - 7])
    put("safetensors", "header-too-long", struct.pack("<Q", 1 << 40) + valid[8:])
    put("safetensors", "short", b"\x05\x00")
    put("safetensors", "not-json", struct.pack("<Q", 5) + b"{abc]")
    put("safetensors", "json-array", struct.pack("<Q", 2) + b"[]")
    put("safetensors", "no-format", safetensors([("layers.0.q", q, "F32"), ("layers.0.k", k, "F32")], {}))
    put(
        "safetensors",
        "bad-version",
        safetensors([("layers.0.q", q, "F32"), ("layers.0.k", k, "F32")], trace_meta(format_version="9")),
    )
    put(
        "safetensors",
        "bad-scale",
        safetensors([("layers.0.q", q, "F32"), ("layers.0.k", k, "F32")], trace_meta(attn_scale="nan")),
    )
    put(
        "safetensors",
        "bad-prompt-len",
        safetensors([("layers.0.q", q, "F32"), ("layers.0.k", k, "F32")], trace_meta(prompt_len="99")),
    )
    nan_q = q.copy()
    nan_q[1, 2, 1] = np.nan
    put("safetensors", "nan-in-q", safetensors([("layers.0.q", nan_q, "F32"), ("layers.0.k", k, "F32")], trace_meta()))
    put("safetensors", "only-q", safetensors([("layers.0.q", q, "F32")], trace_meta()))
    put(
        "safetensors",
        "layer-gap",
        safetensors(
            [("layers.0.q", q, "F32"), ("layers.0.k", k, "F32"), ("layers.2.q", q, "F32"), ("layers.2.k", k, "F32")],
            trace_meta(),
        ),
    )
    put(
        "safetensors",
        "heads-not-multiple",
        safetensors(
            [
                ("layers.0.q", g.standard_normal((3, 4, 2)).astype(np.float32), "F32"),
                ("layers.0.k", k.repeat(2, 0), "F32"),
            ],
            trace_meta(),
        ),
    )
    put(
        "safetensors",
        "wrong-rank",
        safetensors([("layers.0.q", q.reshape(16), "F32"), ("layers.0.k", k, "F32")], trace_meta()),
    )
    put(
        "safetensors",
        "unknown-tensor",
        safetensors([("layers.0.q", q, "F32"), ("layers.0.k", k, "F32"), ("extra", toks, "I32")], trace_meta()),
    )
    put(
        "safetensors", "unknown-dtype", safetensors([("layers.0.q", q, "F64x"), ("layers.0.k", k, "F32")], trace_meta())
    )
    put(
        "safetensors",
        "i64-tokens",
        safetensors(
            [
                ("layers.0.q", q, "F32"),
                ("layers.0.k", k, "F32"),
                ("tokens", np.array([1, 2, 3, 1 << 40], dtype=np.int64), "I64"),
            ],
            trace_meta(),
        ),
    )
    hdr = {
        "layers.0.q": {"dtype": "F32", "shape": [2, 4, 2], "data_offsets": [0, 64]},
        "layers.0.k": {"dtype": "F32", "shape": [1, 4, 2], "data_offsets": [32, 64]},
        "__metadata__": trace_meta(),
    }
    h = json.dumps(hdr).encode()
    put("safetensors", "overlapping", struct.pack("<Q", len(h)) + h + bytes(64))
    hdr["layers.0.k"]["data_offsets"] = [64, 96 + (1 << 62)]
    h = json.dumps(hdr).encode()
    put("safetensors", "offsets-past-end", struct.pack("<Q", len(h)) + h + bytes(96))
    hdr["layers.0.k"] = {"dtype": "F32", "shape": [1 << 30, 1 << 30, 64], "data_offsets": [64, 96]}
    h = json.dumps(hdr).encode()
    put("safetensors", "huge-shape", struct.pack("<Q", len(h)) + h + bytes(96))
    hdr["layers.0.k"] = {"dtype": "F32", "shape": [1, -4, 2], "data_offsets": [64, 96]}
    h = json.dumps(hdr).encode()
    put("safetensors", "negative-dim", struct.pack("<Q", len(h)) + h + bytes(96))


# --- GGUF files ---------------------------------------------------------------------------------
def gguf_file(build):
    import gguf

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f.gguf")
        w = gguf.GGUFWriter(path, "llama")
        build(w, gguf)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return open(path, "rb").read()


def tiny_model(w, gguf):
    tokens = ["a", "b", "ab", "Ġ", "1", "2", "<|im_start|>", "<|im_end|>"] + [chr(c) for c in range(0x21, 0x7F)]
    w.add_block_count(1)
    w.add_context_length(16)
    w.add_embedding_length(4)
    w.add_feed_forward_length(8)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_merges(["a b"])
    w.add_token_types([3 if t.startswith("<|") else 1 for t in tokens])
    w.add_bos_token_id(6)
    w.add_eos_token_id(7)
    g = np.random.default_rng(2)
    w.add_tensor("token_embd.weight", g.standard_normal((len(tokens), 4)).astype(np.float32))
    w.add_tensor("output_norm.weight", np.ones(4, dtype=np.float32))
    w.add_tensor("blk.0.attn_q.weight", g.standard_normal((4, 4)).astype(np.float16))
    q8 = gguf.quants.quantize(g.standard_normal((2, 32)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("blk.0.attn_k.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    q4 = gguf.quants.quantize(g.standard_normal((2, 32)).astype(np.float32), gguf.GGMLQuantizationType.Q4_0)
    w.add_tensor("blk.0.attn_v.weight", q4, raw_dtype=gguf.GGMLQuantizationType.Q4_0)
    q41 = gguf.quants.quantize(g.standard_normal((2, 32)).astype(np.float32), gguf.GGMLQuantizationType.Q4_1)
    w.add_tensor("blk.0.ffn_up.weight", q41, raw_dtype=gguf.GGMLQuantizationType.Q4_1)


def seeds_gguf():
    valid = gguf_file(tiny_model)
    put("gguf", "valid-tiny-llama", valid)
    put("gguf", "truncated", valid[: len(valid) // 2])
    put("gguf", "bad-magic", b"GGUX" + valid[4:])
    put("gguf", "version-2", valid[:4] + struct.pack("<I", 2) + valid[8:])
    put("gguf", "huge-tensor-count", valid[:8] + struct.pack("<Q", 1 << 60) + valid[16:])
    put("gguf", "huge-kv-count", valid[:16] + struct.pack("<Q", (1 << 20) - 1) + valid[24:])
    put("gguf", "short", valid[:23])
    # A string length past the end of the file, in the first metadata key.
    put("gguf", "key-length-past-end", valid[:24] + struct.pack("<Q", 1 << 40) + valid[32:])

    def no_merges(w, gguf):
        w.add_tokenizer_model("gpt2")
        w.add_token_list(["a", "b"])

    put("gguf", "tokenizer-without-merges", gguf_file(no_merges))

    def odd_types(w, gguf):
        w.add_tokenizer_model("gpt2")
        w.add_token_list(["a", "b"])
        w.add_array("tokenizer.ggml.merges", [1, 2])
        w.add_array("tokenizer.ggml.token_type", ["x", "y"])
        w.add_string("tokenizer.ggml.bos_token_id", "zero")
        w.add_uint32("general.alignment", 3)

    put("gguf", "tokenizer-wrong-types", gguf_file(odd_types))

    def nested(w, gguf):
        w.add_array("nested", [[1, 2], [3]])
        w.add_tensor("t", np.zeros((3, 5), dtype=np.float32))

    put("gguf", "nested-array-odd-shape", gguf_file(nested))


# --- tokenizer texts (first byte: bit 0 = parse special tokens) ----------------------------------
def seeds_tokenizer():
    texts = {
        "ascii": "Hello, world! The GNU General Public License is a free, copyleft license.",
        "digits": "In 2024, 1234567890 tokens cost $3.50 (or 3,50 EUR).",
        "whitespace": "a  b\t\tc\n\n\nd    \r\n e",
        "utf8": "Grüße, naïve café — 日本語のテキスト, emoji 🙂👍🏽, Ελληνικά.",
        "code": "for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }  // comment",
        "contractions": "It's, we're, they'll, I'd, you've, don't; IT'S",
        "specials": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
        "empty": "",
    }
    for name, t in texts.items():
        put("tokenizer", name, b"\x00" + t.encode())
    put("tokenizer", "specials-parsed", b"\x01" + texts["specials"].encode())
    put("tokenizer", "invalid-utf8", b"\x00abc\xff\xfe\xc3(\xe2\x82 tail \xf0\x9f\x99")
    put("tokenizer", "nul-and-controls", b"\x00a\x00b\x01\x02\x7f c")
    put("tokenizer", "long-run", b"\x00" + b"a" * 3000)


# --- command lines (arguments separated by NUL) --------------------------------------------------
def seeds_cli():
    from kvoracle import policy  # the registry's names (installed in .venv by scripts/run-tests)

    lines = {
        "replay": ["replay", "t.safetensors", "--policy", policy.H2O, "--budget", "20%", "--recent", "0.5"],
        "replay-device": ["replay", "t.safetensors", "--device", "auto", "--budgets", "5%,10%,0.2,64"],
        "overrides": ["replay", "t.safetensors", "--budget-override", "L3=0.1", "--budget-override", "L0H2=32"],
        "verify": ["verify", "t.safetensors", "--checks", "C1,C27,D5", "--sweep", "0.1,20%", "--report", "r"],
        "oracle": [
            "oracle",
            "t.safetensors",
            "--offline",
            "--policies",
            f"{policy.H2O},{policy.TOVA}",
            "--forced-window",
            "4",
        ],
        "synth": ["synth", "--out", "x.safetensors", "--tokens", "64", "--heads", "4", "--kv-heads", "3"],
        "objective": [
            "replay",
            "t.safetensors",
            "--policy",
            policy.GREEDY,
            "--objective",
            "fl",
            "--h",
            "sqrt",
            "--window",
            "0",
        ],
        "eval": ["eval", "--text", "f.txt", "--tokens", "-5", "--budgets", "5%,,x"],
        "global": ["--threads", "-3", "--quiet", "policies"],
        "version": ["--version"],
        "bad-numbers": ["synth", "--out", "x", "--tokens", "1e99", "--zipf", "nan", "--seed", "-1"],
        "budget-forms": ["replay", "t", "--budget", "1e-320", "--recent", "150%"],
    }
    for name, args in lines.items():
        put("cli", name, b"\x00".join(a.encode() for a in args))


if __name__ == "__main__":
    seeds_safetensors()
    seeds_gguf()
    seeds_tokenizer()
    seeds_cli()
    for t in sorted(os.listdir(OUT)):
        print(f"{t}: {len(os.listdir(os.path.join(OUT, t)))} seeds", file=sys.stderr)
