"""record_trace: a kvoracle trace (docs/trace-format.md) of any transformers causal LM whose attention
goes through transformers' attention interface, written one layer at a time while the model runs.

Each layer's post-RoPE q, k (and v) are copied to the output file as the layer is computed, so
memory stays near one layer's q/k/v; the layer's output is computed by torch's SDPA (no n x n
tensor). Attention that is not softmax(scale * q.k) over causal keys is refused in one line.
"""

import json
import os

import numpy as np
import torch

from .._core import KvoError
from . import attention

_DTYPES = {"f32": (torch.float32, "F32"), "f16": (torch.float16, "F16"), "bf16": (torch.bfloat16, "BF16")}
_ENTRY_RESERVE = 192  # header bytes reserved per tensor (name, dtype, shape, offsets)


def _dtype(dtype):
    key = {
        torch.float32: "f32",
        torch.float16: "f16",
        torch.bfloat16: "bf16",
        np.float32: "f32",
        np.float16: "f16",
        "float32": "f32",
        "float16": "f16",
        "bfloat16": "bf16",
    }.get(dtype, dtype)
    if key not in _DTYPES:
        raise KvoError(f"record_trace: dtype {dtype!r} is not one of f32, f16, bf16")
    return _DTYPES[key]


class _StreamingSafetensors:
    """A safetensors file written tensor by tensor: the data goes after a reserved header, which is
    filled in (padded with spaces, as the format allows) at the end; written to PATH.tmp, renamed."""

    def __init__(self, path, n_tensors, metadata_budget):
        self.path, self.tmp = path, f"{path}.tmp{os.getpid()}"
        self.reserve = 8 + ((n_tensors * _ENTRY_RESERVE + metadata_budget + 7) // 8) * 8
        try:
            self.f = open(self.tmp, "wb")
        except OSError as e:
            raise KvoError(f"record_trace: cannot write '{path}': {e.strerror}") from None
        self.f.seek(self.reserve)
        self.entries, self.offset = {}, 0

    def add(self, name, tensor, tag, lead=0):
        """Appends `tensor`; with `lead`, a [h, t, d] tensor is written as [h, lead + t, d] whose
        first `lead` rows of each head are zeros (the queries a cache's positions did not record)."""
        data = tensor.detach().contiguous().cpu()
        raw = (data.view(torch.int16) if tag == "BF16" else data).numpy()
        shape = list(data.shape)
        if lead:
            zeros = bytes(lead * shape[2] * data.element_size())
            for head in raw:
                self.f.write(zeros)
                self.f.write(head.tobytes())
            shape[1] += lead
        else:
            self.f.write(raw.tobytes())
        size = int(np.prod(shape)) * data.element_size()
        self.entries[name] = {"dtype": tag, "shape": shape, "data_offsets": [self.offset, self.offset + size]}
        self.offset += size

    def close(self, metadata):
        header = json.dumps({"__metadata__": metadata, **self.entries}, separators=(",", ":")).encode()
        if len(header) > self.reserve - 8:
            raise KvoError(f"record_trace: header of {len(header)} bytes exceeds its reservation (a kvoracle bug)")
        header += b" " * (self.reserve - 8 - len(header))
        self.f.seek(0)
        self.f.write(len(header).to_bytes(8, "little") + header)
        self.f.close()
        os.replace(self.tmp, self.path)

    def abandon(self):
        self.f.close()
        if os.path.exists(self.tmp):
            os.remove(self.tmp)


class _Recorder:
    """Handler of the "kvoracle" attention function while record_trace runs."""

    def __init__(self, out, layers, torch_dtype, tag, values, lead=0):
        self.out, self.layers, self.torch_dtype, self.tag, self.values = out, layers, torch_dtype, tag, values
        self.lead = lead  # positions whose keys a cache already holds and whose queries are not recorded
        self.seen, self.scales, self.heads = [], {}, {}

    def attend(self, module, query, key, value, scale, kwargs):
        layer = module.layer_idx
        attention.refuse_unless_plain(module, kwargs, key.shape[2])
        if query.shape[2] + self.lead != key.shape[2]:
            raise KvoError(
                f"record_trace: layer {layer} saw {key.shape[2]} keys for {query.shape[2]} queries "
                + ("(the model must run without a cache)" if not self.lead else f"after a cache of {self.lead}")
            )
        self.seen.append(layer)
        if layer in self.layers:
            index = self.layers.index(layer)
            self.scales[index] = scale
            self.heads[index] = (query.shape[1], key.shape[1], query.shape[3])
            self.out.add(f"layers.{index}.q", query[0].to(self.torch_dtype), self.tag, lead=self.lead)
            self.out.add(f"layers.{index}.k", key[0].to(self.torch_dtype), self.tag)
            if self.values:
                self.out.add(f"layers.{index}.v", value[0].to(self.torch_dtype), self.tag)
        return attention.causal_sdpa(query, key, value, scale)


def _text_config(model):
    config = model.config
    return config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config


def record_trace(
    model, input_ids, path, layers=None, dtype="f32", values=True, prompt_len=0, text_source="", cache=None
):
    """Runs `model` once over `input_ids` ([n] or [1, n]) and writes a kvoracle trace to `path`.

    layers: model layers to record (default all; the trace numbers them 0..); dtype: f32, f16 or
    bf16 storage; values: also write v (the `fidelity` objective needs it). Returns the metadata.
    q and k are stored as transformers computes them (after RoPE, in its half-split dimension
    order; kvoracle record stores the GGUF's interleaved order: the dot products are the same).

    cache: a transformers cache that holds the first m < n tokens of `input_ids`, from this model
    (a prefill it has already run). Only the other n - m tokens run, attending the cache's keys, and
    the trace's queries of the first m positions are zeros (metadata `queries_from` = m): enough for
    what reads only the later queries (kvoracle.MassOfOptimum, the prefill optimum). The cache
    grows by those tokens; crop it to reuse it.
    """
    torch_dtype, tag = _dtype(dtype)
    ids = torch.as_tensor(np.asarray(input_ids) if not torch.is_tensor(input_ids) else input_ids)
    if ids.ndim == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.ndim != 1 or ids.numel() < 1 or ids.dtype.is_floating_point:
        raise KvoError(
            f"record_trace: input_ids must be one sequence of integer token ids ([n] or [1, n]), "
            f"got shape {tuple(ids.shape)} and dtype {ids.dtype}"
        )
    config = _text_config(model)
    n, vocab = int(ids.numel()), getattr(config, "vocab_size", None)
    if vocab is not None and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        bad = int(torch.nonzero((ids < 0) | (ids >= vocab))[0, 0])
        raise KvoError(
            f"record_trace: token id {int(ids[bad])} at position {bad} is outside the model's "
            f"vocabulary of {vocab} (ids from another tokenizer?)"
        )
    limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if limit is not None and n > limit:
        raise KvoError(f"record_trace: {n} tokens exceed the model's {limit} positions")
    n_layers = config.num_hidden_layers
    layers = list(range(n_layers)) if layers is None else [int(l) for l in layers]
    if not layers or len(set(layers)) != len(layers) or min(layers) < 0 or max(layers) >= n_layers:
        raise KvoError(f"record_trace: layers must be distinct model layers in 0..{n_layers - 1}, got {layers}")
    if os.path.isdir(path):
        raise KvoError(f"record_trace: output '{path}' is a directory")
    lead = 0 if cache is None else int(cache.get_seq_length())
    if cache is not None and not 1 <= lead < n:
        raise KvoError(f"record_trace: the cache holds {lead} tokens; it must hold 1 to {n - 1} of the {n} input ids")

    name = getattr(config, "_name_or_path", "") or getattr(model, "name_or_path", "") or type(model).__name__
    import transformers

    metadata = {
        "format": "kvoracle-trace",
        "format_version": "1",
        "model": str(name),
        "model_type": str(getattr(config, "model_type", "")),
        "model_layers": ",".join(map(str, layers)),
        "prompt_len": str(int(prompt_len)),
        "vocab_size": str(vocab or ""),
        "rope_layout": "half-split"
        if getattr(config, "rope_parameters", None) or getattr(config, "rope_theta", None)
        else "none",
        "text_source": text_source,
        "recorder": f"kvoracle.hf.record_trace (transformers {transformers.__version__}, "
        f"torch {torch.__version__}, {tag})",
    }
    theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta", getattr(config, "rope_theta", None))
    if theta is not None:
        metadata["rope_theta"] = str(theta)
    if lead:
        metadata["queries_from"] = str(lead)
    budget = len(json.dumps(metadata)) + 256  # + attn_scale, gqa_group
    out = _StreamingSafetensors(path, len(layers) * 3 + 1, budget)
    recorder = _Recorder(out, layers, torch_dtype, tag, values, lead)
    try:
        base = getattr(model, getattr(model, "base_model_prefix", ""), None) or model  # no n x vocab logits
        with attention.routed(model), attention.activate(recorder), torch.no_grad():
            if cache is None:
                base(input_ids=ids[None].to(model.device), use_cache=False)
            else:
                positions = torch.arange(lead, n, device=model.device)[None]
                base(input_ids=ids[None, lead:].to(model.device), past_key_values=cache, position_ids=positions)
        missing = [l for l in layers if l not in recorder.seen]
        if missing:
            raise KvoError(
                f"record_trace: layers {missing} of {type(model).__name__} never called transformers' "
                "attention interface (custom attention code, e.g. ALiBi): kvoracle cannot record them"
            )
        scales = {recorder.scales[i] for i in range(len(layers))}
        if len(scales) != 1:
            raise KvoError(
                f"record_trace: the recorded layers use different attention scales {sorted(scales)}; "
                "record them in separate traces"
            )
        h, h_kv, _ = recorder.heads[0]
        if any(recorder.heads[i][:2] != (h, h_kv) for i in range(len(layers))) or h % h_kv:
            raise KvoError("record_trace: the recorded layers have different head counts; record them separately")
        metadata["attn_scale"] = repr(scales.pop())
        metadata["gqa_group"] = str(h // h_kv)
        out.add("tokens", ids.to(torch.int32), "I32")
        out.close(metadata)
    except BaseException:
        out.abandon()
        raise
    return metadata
