"""Writes the tiny test model: a Llama GGUF with SmolLM2's tokenizer (every tokenizer.* entry of
the real model's file, so text becomes the same token ids) and seeded random weights, 2 layers,
4 query heads of 16 dimensions over 2 KV heads (GQA), a 128-wide feed-forward and tied
embeddings, stored as float32. The tests of closed-loop mechanics (decoders, evaluation rows,
task rows, teams, the CLI's model commands) run on it in a fraction of the real model's time;
the tests whose point is the real model keep SmolLM2 (ctest label `model`). The same seed gives
the same file, byte for byte.
Usage: make_tiny_model.py OUT_GGUF [--source GGUF] [--seed N]; the source defaults to the real model
where kvoracle looks for it (KVO_MODEL, else KVO_MODEL_DIR or ~/.cache/kvoracle, as
kvo::model::default_model_path)."""

import argparse
import os
import tempfile

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

LAYERS, D_MODEL, HEADS, KV_HEADS, D_FF, CONTEXT = 2, 64, 4, 2, 128, 8192


def copy_tokenizer(reader, writer):
    """Every tokenizer.* entry of the source file, with its type."""
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        kind = field.types[0]
        if kind == GGUFValueType.ARRAY:
            writer.add_array(key, field.contents())
        elif kind == GGUFValueType.STRING:
            writer.add_string(key, field.contents())
        elif kind == GGUFValueType.BOOL:
            writer.add_bool(key, bool(field.contents()))
        elif kind == GGUFValueType.UINT32:
            writer.add_uint32(key, int(field.contents()))
        elif kind == GGUFValueType.INT32:
            writer.add_int32(key, int(field.contents()))
        else:
            raise SystemExit(f"make_tiny_model: tokenizer entry {key} has a type this script does not copy ({kind})")


def default_model_path():
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    folder = os.environ.get("KVO_MODEL_DIR") or os.path.expanduser("~/.cache/kvoracle")
    return os.environ.get("KVO_MODEL") or os.path.join(folder, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--source", default=default_model_path())
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not os.path.exists(args.source):
        raise SystemExit(f"make_tiny_model: the real model {args.source} is missing (scripts/fetch-model fetches it)")
    reader = GGUFReader(args.source)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    head_dim, kv_dim = D_MODEL // HEADS, KV_HEADS * (D_MODEL // HEADS)
    g = np.random.default_rng(args.seed)

    def matrix(rows, cols, std):  # GGUF stores a [rows, cols] matrix with shape (cols, rows)
        return (g.standard_normal((rows, cols)) * std).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * g.standard_normal(n)).astype(np.float32)

    tensors = [("token_embd.weight", matrix(vocab, D_MODEL, 1.0)), ("output_norm.weight", norm(D_MODEL))]
    for layer in range(LAYERS):
        p = f"blk.{layer}."
        tensors += [
            (p + "attn_norm.weight", norm(D_MODEL)),
            (p + "ffn_norm.weight", norm(D_MODEL)),
            # Larger query and key weights give peaked attention: heavy hitters and recency, as in a model.
            (p + "attn_q.weight", matrix(D_MODEL, D_MODEL, 0.5)),
            (p + "attn_k.weight", matrix(kv_dim, D_MODEL, 0.5)),
            (p + "attn_v.weight", matrix(kv_dim, D_MODEL, D_MODEL**-0.5)),
            (p + "attn_output.weight", matrix(D_MODEL, D_MODEL, D_MODEL**-0.5)),
            (p + "ffn_gate.weight", matrix(D_FF, D_MODEL, D_MODEL**-0.5)),
            (p + "ffn_up.weight", matrix(D_FF, D_MODEL, D_MODEL**-0.5)),
            (p + "ffn_down.weight", matrix(D_MODEL, D_FF, D_FF**-0.5)),
        ]
    folder = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".gguf")  # written whole, then renamed: never half a file
    os.close(fd)
    try:
        w = GGUFWriter(tmp, "llama")
        w.add_name("kvoracle-tiny-llama")
        w.add_block_count(LAYERS)
        w.add_context_length(CONTEXT)
        w.add_embedding_length(D_MODEL)
        w.add_feed_forward_length(D_FF)
        w.add_head_count(HEADS)
        w.add_head_count_kv(KV_HEADS)
        w.add_rope_freq_base(100000.0)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_vocab_size(vocab)
        w.add_rope_dimension_count(head_dim)
        copy_tokenizer(reader, w)
        for name, value in tensors:
            w.add_tensor(name, value)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, args.out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


if __name__ == "__main__":
    main()
