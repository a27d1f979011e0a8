"""Many kvpress presses from one prefill of a context.

A press compresses a layer's cache after the layer has run (kvpress's forward hook on each attention
module), so the hidden states of a prefill do not depend on what any press evicts: every press sees
the same hidden states, keys, values and attention weights at each layer. ``prefill_with_presses``
runs the context once and hands each layer's call to every press's own hooks, each press on its own
cache, which then holds what that press's own prefill would have left, bit for bit. A press whose
hooks do anything else (hooks on other modules or before a module runs, a changed layer output, an
attribute set on the module) gets None: it must run its own prefill.
"""

import torch
from transformers import DynamicCache


def _attention_modules(model):
    """The decoder's attention modules, by layer: the modules kvpress's BasePress hooks (it looks up the
    decoder the same way, so a press's hooks are found on exactly these)."""
    inner = model.model.language_model if hasattr(model.model, "language_model") else model.model
    return [layer.self_attn for layer in inner.layers]


def _hooks(model):
    """Every registered hook: {(module name, kind, id): (module, hook)}."""
    out = {}
    for name, module in model.named_modules():
        for kind in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
            for hid, hook in getattr(module, kind, {}).items():
                out[(name, kind, hid)] = (module, hook)
    return out


def _restore(module, before):
    """Puts back the module's attributes as they were (`before`: a copy of its __dict__); whether any
    had changed. Hooks' own dicts are mutated in place, so they compare equal by identity."""
    now = module.__dict__
    if now.keys() == before.keys() and all(now[key] is value for key, value in before.items()):
        return False
    for key in [key for key in now if key not in before]:
        del now[key]
    now.update(before)
    return True


def prefill_with_presses(model, input_ids, presses):
    """One prefill of `input_ids` ([1, C]) with every press of `presses` applied, each to its own cache.

    Returns, per press, its DynamicCache after the prefill, or None where the press must run its own
    prefill (see the module docstring). The model's own cache of the pass is discarded."""
    attention = _attention_modules(model)
    by_module = {id(m): layer for layer, m in enumerate(attention)}
    entered, own_hooks = [], []  # per press: its context, and its hooks by layer (None: not shareable)
    try:
        for press in presses:
            before = _hooks(model)
            context = press(model)
            context.__enter__()
            entered.append(context)
            added = {key: value for key, value in _hooks(model).items() if key not in before}
            layers = [[] for _ in attention]
            shareable = True
            for (_, kind, hid), (module, hook) in added.items():
                kwargs = hid in getattr(module, "_forward_hooks_with_kwargs", {})
                if kind != "_forward_hooks" or id(module) not in by_module or not kwargs:
                    shareable = False
                    continue
                layers[by_module[id(module)]].append(hook)
            for (_, kind, hid), (module, _) in added.items():  # the press's hooks fire through the one below
                getattr(module, kind).pop(hid, None)
            own_hooks.append(layers if shareable else None)
        caches = [DynamicCache() if layers is not None else None for layers in own_hooks]
        broken = [False] * len(presses)

        def every_press(module, args, kwargs, output):
            layer = module.layer_idx
            full = kwargs["past_key_values"].layers[layer]
            for x, layers in enumerate(own_hooks):
                if layers is None or broken[x]:
                    continue
                caches[x].update(full.keys, full.values, layer)
                mine = dict(kwargs, past_key_values=caches[x])
                before = dict(module.__dict__)
                for hook in layers[layer]:
                    changed = hook(module, args, mine, output)
                    if changed is not None and changed is not output:
                        broken[x] = True  # it changes what the next layer reads: not the same prefill
                if _restore(module, before):
                    broken[x] = True  # state on the module, which the other presses' runs would see
            return None

        handles = [m.register_forward_hook(every_press, with_kwargs=True) for m in attention]
        try:
            with torch.no_grad():
                model.model(input_ids=input_ids, past_key_values=DynamicCache())
        finally:
            for handle in handles:
                handle.remove()
    finally:
        for context in reversed(entered):
            context.__exit__(None, None, None)
    return [None if cache is None or broken[x] else cache for x, cache in enumerate(caches)]
