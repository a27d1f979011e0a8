"""The attention function kvoracle registers with transformers ("kvoracle"), and the checks that a
layer's attention is plain softmax(scale * q.k) over causal keys, the only kind a trace holds.

While a trace recorder or an EvictingCache is active, each layer's q, k, v go to it; otherwise the
function computes ordinary causal attention with torch's SDPA. No mask tensor is built: the mask
function registered with it only refuses padded batches.
"""

import threading

import torch

from .._core import KvoError

NAME = "kvoracle"

_active = threading.local()


def active():
    return getattr(_active, "handler", None)


class activate:
    """Context: route the "kvoracle" attention function of every model to handler.attend."""

    def __init__(self, handler):
        self.handler = handler

    def __enter__(self):
        self.saved = active()
        _active.handler = self.handler
        return self.handler

    def __exit__(self, *exc):
        _active.handler = self.saved


def attention_scale(module, scaling, head_dim):
    """The logit scale the module applies: the `scaling` it passes, else GPT-2's rules."""
    if scaling is not None:
        return float(scaling)
    scale = head_dim**-0.5 if getattr(module, "scale_attn_weights", True) else 1.0
    if getattr(module, "scale_attn_by_inverse_layer_idx", False):
        scale /= float(module.layer_idx + 1)
    return scale


def refuse_unless_plain(module, kwargs, n_keys):
    """One clear line for every way a layer's attention differs from softmax(scale * q.k)."""
    where = f"layer {getattr(module, 'layer_idx', '?')} ({type(module).__name__})"
    if kwargs.get("softcap") is not None:
        raise KvoError(
            f"{where} caps its attention logits (softcap = {kwargs['softcap']}): "
            "a kvoracle trace holds softmax(scale * q.k) only; this model cannot be represented"
        )
    if kwargs.get("s_aux") is not None or getattr(module, "sinks", None) is not None:
        raise KvoError(
            f"{where} has learned attention sinks: a kvoracle trace holds softmax(scale * q.k) "
            "only; this model cannot be represented"
        )
    window = kwargs.get("sliding_window")
    if window is not None and n_keys > window:
        raise KvoError(
            f"{where} attends a sliding window of {window} tokens and the sequence has {n_keys}: "
            f"a kvoracle trace holds full causal attention; use at most {window} tokens"
        )
    if getattr(module, "is_cross_attention", False):
        raise KvoError(f"{where} is cross-attention: kvoracle handles causal self-attention only")
    if module.training and kwargs.get("dropout", 0.0):
        raise KvoError(f"{where} is in training mode with attention dropout: call model.eval() first")


def causal_sdpa(query, key, value, scale):
    """Causal attention of the last q_len keys' queries; GQA by repeating KV heads. [B, q, H, d]."""
    group = query.shape[1] // key.shape[1]
    if group > 1:
        key = key.repeat_interleave(group, dim=1)
        value = value.repeat_interleave(group, dim=1)
    q_len, kv_len = query.shape[2], key.shape[2]
    if q_len == kv_len:
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=q_len > 1, scale=scale)
    else:  # queries are the last q_len positions (bottom-right causal)
        keep = torch.ones(q_len, kv_len, dtype=torch.bool, device=query.device).tril(kv_len - q_len)
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=keep, scale=scale)
    return out.transpose(1, 2).contiguous()


def kvoracle_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    # SDPA's parameter order: kvpress wraps every registered attention function (AdaKV's key
    # masking) and passes `dropout` sixth, by position, with `scaling` among the keywords.
    scale = attention_scale(module, scaling, query.shape[-1])
    handler = active()
    if handler is None:
        return causal_sdpa(query, key, value, scale), None
    kwargs["dropout"] = dropout
    return handler.attend(module, query, key, value, scale, kwargs), None


def refuse_padding(
    batch_size=None, cache_position=None, kv_length=None, kv_offset=0, mask_function=None, attention_mask=None, **kwargs
):
    """Mask function for "kvoracle": no mask; padded or masked positions are refused."""
    if attention_mask is not None and not bool(attention_mask.all()):
        raise KvoError(
            "kvoracle.hf: the attention mask hides some positions (padding?): kvoracle's attention "
            "takes unpadded sequences only; run them one at a time"
        )
    return None


_registered = False


def register():
    """Registers "kvoracle" with transformers' attention and mask interfaces (once)."""
    global _registered
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface

        AttentionInterface.register(NAME, kvoracle_attention)
        AttentionMaskInterface.register(NAME, refuse_padding)
        _registered = True


class routed:
    """Context: the model's attention implementation is "kvoracle", then what it was before."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        register()
        self.saved = self.model.config._attn_implementation
        if self.saved != NAME:
            route(self.model)
        return self.model

    def __exit__(self, *exc):
        if self.saved != NAME:
            self.model.set_attn_implementation(self.saved)


def route(model):
    """Switches the model's attention to "kvoracle" (restore with model.set_attn_implementation)."""
    register()
    if not getattr(model, "_can_set_attn_implementation", lambda: True)():
        raise KvoError(
            f"{type(model).__name__} does not route its attention through transformers' attention "
            "interface: kvoracle cannot see its q, k and v"
        )
    model.set_attn_implementation(NAME)
    if model.config._attn_implementation != NAME:
        raise KvoError(f"{type(model).__name__} did not accept attn_implementation='{NAME}'")
