"""The task suite of ``kvoracle tasks run`` on any transformers causal LM.

``run_tasks(model, tokenizer, instances, ...)`` answers each instance (a dict in kvpress's columns,
e.g. from ``kvoracle.Model.generate_tasks`` or a JSON Lines file) with the full cache and under
every row at every budget, greedily, in the model's own dtype and device, and returns the same
result as ``Model.run_tasks``: ``{protocol, outcomes, cells, cells_by_depth}`` with its report.
The instances' texts, the scoring, the cells, their Wilson intervals and the report are kvoracle's
library (``task_texts``, ``score_answer``, ``task_report``); this module drives the model.

- ``protocol="dynamic"``: streaming eviction. Each decoder-drivable policy evicts inside the
  model's forward passes (``EvictingCache``) from the first token, keeping
  k = floor(share x input tokens) per (layer, KV head).
- ``protocol="prefill"``: the context prefilled whole under a kvpress press (kvpress's own forward
  hooks, as its pipeline runs them) or a kvoracle policy as a press (``KvoraclePress``), compressed
  to int(share x context) keys per KV head; then the question at the context's positions and the
  answer on the compressed cache. ``optimum`` (default on): the exact query-aware prefill optimum
  of the full cache's trace, as a press.

Every row answers the same way: the context, then the question block, then greedy tokens until
the end-of-sequence token or the instance's ``max_new_tokens`` (the stopping token is not part of
the answer's text). ``token_ids``: a ``kvoracle.Model`` whose tokenizer gives the ids (for a model
loaded from kvoracle's GGUF, whose transformers tokenizer does not split digits); then the
instances' needles are known and ``needles_held`` is measured. The full cache's run is recorded once
(``record_trace``) and every row's ``mass_of_optimum`` measured on it by the library, which also
gives the prefill optimum's sets (``OptimumPress``): per-head budgets (``optimum``) and, with
``optimum_scopes``, budgets of the same total shared by a layer's or the model's units
(``optimum@layer``, ...; every key stays cached and the evicted ones are masked per unit). The
offline policies (``oracle``: the offline optimum OPT_dyn; ``lookahead``: heavy hitters with the
future queries) follow the schedule of the full cache's trace, as on kvoracle's engine. ``topk`` (dynamic, default on): the oracle top-k of sparse attention at each budget.
"""

import contextlib
import hashlib
import json
import math
import os
import tempfile

import numpy as np
import torch

from .. import _core
from .meter import Meter, available_bytes


def _eos_ids(model, tokenizer):
    eos = model.generation_config.eos_token_id
    if eos is None:
        eos = getattr(tokenizer, "eos_token_id", None)
    return set(eos if isinstance(eos, (list, tuple)) else [] if eos is None else [eos])


class _Instance:
    """One instance's token ids, as kvoracle's engine reads it."""

    def __init__(self, row, tokenizer, token_ids, question_first, chat):
        self.row = row
        texts = _core.task_texts(row, question_first)  # refuses missing columns in one line
        if token_ids is not None:
            t = token_ids.task_tokens(row, question_first=question_first, format="chat" if chat else "plain")
            self.context, self.question, shift = t["context"], t["question"], t["needle_shift"]
            self.needles = [(a + shift, b + shift) for a, b in row.get("needles", [])]
        else:
            encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
            opening, closing = _chat_frame(tokenizer) if chat else ("", "")
            self.context = encode(opening) if opening else []
            for piece in texts["context"]:
                self.context += encode(piece)
            if chat:  # the user's turn ends after the question; the answer prefix opens the assistant's
                self.question = encode("\n\n" + row["question"] + closing + row.get("answer_prefix", ""))
            else:
                self.question = encode(texts["question"])
            self.needles = []  # needle ranges are kvoracle token ids: unknown in another tokenizer's
        self.max_new = int(row.get("max_new_tokens", 16))

    @property
    def n(self):
        return len(self.context) + len(self.question)


def _chat_frame(tokenizer):
    """The text the tokenizer's chat template puts before and after one user turn, with the
    assistant's turn opened (what kvoracle's engine writes for SmolLM2's ChatML template)."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise _core.KvoError(
            "tasks: format 'chat' needs the tokenizer's chat template, and this tokenizer has none "
            "(use format='plain', or set tokenizer.chat_template)"
        )
    mark = "\x00kvoracle-user-turn\x00"
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": mark}], add_generation_prompt=True, tokenize=False
    )
    if text.count(mark) != 1:
        raise _core.KvoError("tasks: the tokenizer's chat template does not hold the user's turn as written")
    return tuple(text.split(mark))


def _outcome(inst, row, budget):
    r = inst.row
    return {
        "instance": str(r.get("id", "")),
        "task": str(r.get("task", "custom")),
        "length": int(r.get("length", 0)),
        "depth": float(r.get("depth", -1.0)),
        "shots": int(r.get("shots", 0)),
        "input_tokens": inst.n,
        "row": row,
        "budget": float(budget),
        "mass_of_optimum": None,
    }


def _needles_held(inst, kept):
    """Share of (layer, KV head) units holding every needle token (None without needles)."""
    if not inst.needles:
        return None
    need = [p for a, b in inst.needles for p in range(a, b)]
    held = sum(all(p in s for p in need) for s in kept)
    return held / len(kept)


def _measured(inst, row, share, kept, mass, k):
    """An evicting row's outcome before its answer: the kept sets' size, needles and mass."""
    o = _outcome(inst, row, share)
    o["kept"] = float(np.mean([len(s) for s in kept]))
    o["needles_held"] = _needles_held(inst, kept)
    o["mass_of_optimum"] = float(mass([list(s) for s in kept], k))
    return o


class _FullRun:
    """What the rows read of the full cache's run: the context's keys of every layer (to find which
    positions a compressed cache holds), its trace of the whole instance (context, question, answer;
    the offline policies' schedules), and the reference built on it once (kvoracle.MassOfOptimum: the
    rows' mass_of_optimum and the prefill optimum's sets)."""

    def __init__(self, keys, trace, mass, context):
        self.keys, self.trace, self.mass, self.context = keys, trace, mass, context


_BIT_VIEWS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _mix(d, device):
    """The odd multipliers of key_positions' hash, one per key dimension (seeded: the same every run)."""
    return (torch.randint(1, 1 << 62, (d,), generator=torch.Generator().manual_seed(0)) | 1).to(device)


def key_positions(held, full):
    """Where each row of held [k, d] is in full [C, d], compared bit for bit (the earliest of equal
    rows), or None when a held row is not among them. O((C + k) (d + log C)) time and O(C + k) memory:
    rows are matched by an exact hash of their bits, then checked whole (a collision falls back to
    comparing that one row with every row)."""
    view, mix = _BIT_VIEWS[full.element_size()], _mix(full.shape[-1], full.device)
    digest = lambda x: (x.contiguous().view(view).long() * mix).sum(-1)  # noqa: E731  (wraps mod 2^64)
    ordered, order = torch.sort(digest(full), stable=True)
    wanted = digest(held)
    at = torch.searchsorted(ordered, wanted).clamp(max=len(ordered) - 1)
    where = order[at]
    found = (ordered[at] == wanted) & (full[where] == held).all(-1)
    for i in torch.nonzero(~found).flatten().tolist():  # a hash collision (or a key not in the context)
        same = torch.nonzero((full == held[i]).all(-1)).flatten()
        if len(same) == 0:
            return None
        where[i] = same[0]
    return where


class _Runner:
    def __init__(self, model, tokenizer, token_ids):
        self.model, self.tokenizer, self.token_ids = model, tokenizer, token_ids
        self.eos = _eos_ids(model, tokenizer)
        self.device = next(model.parameters()).device
        config = model.config.get_text_config(decoder=True)
        self.layers, self.kv_heads = config.num_hidden_layers, config.num_key_value_heads
        self.positions = getattr(config, "max_position_embeddings", None)

    def _ids(self, ids):
        return torch.tensor([ids], dtype=torch.long, device=self.device)

    def _forward(self, ids, cache, start):
        pos = torch.arange(start, start + len(ids), device=self.device)[None]
        with torch.no_grad():
            return self.model(input_ids=self._ids(ids), past_key_values=cache, position_ids=pos, logits_to_keep=1)

    def answer(self, inst, cache, outcome):
        """The question at the context's positions, then greedy tokens; scores the answer into
        `outcome` and returns the answer's token ids (the stopping token included)."""
        start = len(inst.context)
        logits = self._forward(inst.question, cache, start).logits[0, -1]
        start += len(inst.question)
        ids = []
        for t in range(inst.max_new):
            tok = int(torch.argmax(logits))
            ids.append(tok)
            if tok in self.eos or t + 1 == inst.max_new:
                break
            logits = self._forward([tok], cache, start).logits[0, -1]
            start += 1
        text_ids = ids[:-1] if ids and ids[-1] in self.eos else ids
        if self.token_ids is not None:
            text = self.token_ids.detokenize(text_ids)
        else:
            text = self.tokenizer.decode(text_ids, skip_special_tokens=False)
        outcome["answer"] = text
        outcome["score"] = float(_core.score_answer(inst.row, text))
        return ids

    def prefill(self, inst, cache, press=None):
        with press(self.model) if press is not None else contextlib.nullcontext(), torch.no_grad():
            self.model.model(input_ids=self._ids(inst.context), past_key_values=cache)

    def full_cache(self, inst, folder, profile, all_queries=False):
        """The full cache's row, and its run (_FullRun); profiled in three parts: the row itself, the
        recording of its trace and the reference built on it. The recording runs only the question
        and the answer, on the row's own cache of the context: the reference reads only their
        queries. `all_queries` (an offline schedule's rows read every query) records the whole
        instance in one more forward pass instead."""
        from transformers import DynamicCache

        from .record import record_trace

        with profile.measure("full-cache", 1.0):
            cache = DynamicCache()
            self.prefill(inst, cache)
            keys = [cache.layers[layer].keys[0].clone() for layer in range(self.layers)]
            o = _outcome(inst, "full-cache", 1.0)
            o["kept"] = float(len(inst.context))
            o["needles_held"] = 1.0 if inst.needles else None
            o["mass_of_optimum"] = 1.0
            answer = self.answer(inst, cache, o)
        with profile.measure("full-cache/record", 1.0):
            path = os.path.join(folder, "full.safetensors")
            if all_queries:
                cache = None  # freed before the whole instance runs again
            else:
                cache.crop(len(inst.context))
            ids = self._ids(inst.context + inst.question + answer)
            record_trace(self.model, ids, path, values=False, cache=cache)
            del cache
            trace = _core.read_trace(path)
        with profile.measure("full-cache/reference", 1.0):
            mass = _core.MassOfOptimum(trace, len(inst.context))
        return o, _FullRun(keys, trace, mass, len(inst.context))

    def streaming(self, inst, row, policy, share, options, mass):
        from .cache import EvictingCache

        k = max(1, math.floor(share * inst.n + 1e-9))
        implementation = self.model.config._attn_implementation
        try:
            cache = EvictingCache(self.model, policy, str(k), **options)
            self.prefill(inst, cache)
            kept = [
                {int(p) for p in cache.held(layer)[0, kv].tolist() if p >= 0}
                for layer in range(self.layers)
                for kv in range(self.kv_heads)
            ]
            o = _measured(inst, row, share, kept, mass, k)
            self.answer(inst, cache, o)
            return o
        finally:
            self.model.set_attn_implementation(implementation)  # EvictingCache routed it through kvoracle's

    def topk(self, inst, share):
        """The oracle top-k at the budget's k: nothing evicted, so every needle is still cached."""
        from transformers import DynamicCache

        from . import attention

        k = max(1, math.floor(share * inst.n + 1e-9))
        o = _outcome(inst, "topk", share)
        o["kept"] = float(k)
        o["needles_held"] = 1.0 if inst.needles else None
        cache = DynamicCache()
        with attention.routed(self.model), attention.activate(_TopK(k)):
            self.prefill(inst, cache)
            self.answer(inst, cache, o)
        return o

    def _kept_by_keys(self, cache, full_keys, row):
        """The context positions a compressed cache holds per (layer, KV head), layer-major: each held
        key is one of the full cache's context keys (the same forward pass)."""
        kept = []
        for layer in range(self.layers):
            held = cache.layers[layer].keys[0]
            for kv in range(self.kv_heads):
                where = key_positions(held[kv], full_keys[layer][kv])
                if where is None:
                    raise _core.KvoError(
                        f"tasks: press {row} holds keys that are not the context's (layer {layer}): "
                        "a press that changes keys cannot be measured here"
                    )
                kept.append(set(where.tolist()))
        return kept

    def compressed(self, inst, row, share, press, full_keys, mass, cache=None):
        """A press's row: its own prefill of the context, or `cache`, what a shared prefill left it."""
        from transformers import DynamicCache

        if cache is None:
            cache = DynamicCache()
            self.prefill(inst, cache, press)
        kept = getattr(press, "kept_units", None) or self._kept_by_keys(cache, full_keys, row)
        k = max(1, int(len(inst.context) * (1 - (1.0 - share))))  # the press's n_kept at ratio 1 - share
        o = _measured(inst, row, share, kept, mass, k)
        if getattr(press, "masks", False):  # OptimumPress kept every key and masks the evicted ones
            from . import attention
            from .optimum_press import MaskedAttention

            try:
                with attention.routed(self.model), attention.activate(MaskedAttention()):
                    self.answer(inst, cache, o)
            finally:
                for module in self.model.modules():
                    module.__dict__.pop("kvoracle_evicted", None)
        else:
            self.answer(inst, cache, o)
        return o

    def compressed_rows(self, inst, rows, budgets, run, profile, bar):
        """Every press row at every budget from one prefill of the context (shared_prefill=True;
        kvoracle.hf.shared_prefill): the same outcomes as a prefill per row. A press that cannot share
        the pass runs its own prefill."""
        from .shared_prefill import prefill_with_presses

        jobs = [(label, b, how, how(1.0 - b, run)) for label, how in rows for b in budgets]
        with _out_of_memory(inst, "shared-prefill", 1.0), profile.measure("shared-prefill", 1.0):
            caches = prefill_with_presses(self.model, self._ids(inst.context), [job[3] for job in jobs])
        outcomes = []
        for (label, b, how, press), cache in zip(jobs, caches):
            with _out_of_memory(inst, label, b), profile.measure(label, b):
                if cache is None:  # its own prefill, with a fresh press
                    press = how(1.0 - b, run)
                outcomes.append(self.compressed(inst, label, b, press, run.keys, run.mass, cache))
            bar.update()
        return outcomes


class _Profile:
    """Seconds and peak memory per (row, budget), summed (seconds) or maxed (bytes) over instances."""

    def __init__(self, device):
        self.device, self.entries = device, {}

    @contextlib.contextmanager
    def measure(self, row, budget):
        with Meter(self.device) as m:
            yield
        e = self.entries.setdefault(
            (row, float(budget)),
            {"row": row, "budget": float(budget), "instances": 0, "seconds": 0.0, "peak_bytes": 0, "extra_bytes": 0},
        )
        e["instances"] += 1
        e["seconds"] += m.seconds
        e["peak_bytes"] = max(e["peak_bytes"], m.peak_bytes)
        e["extra_bytes"] = max(e["extra_bytes"], m.extra_bytes)

    def rows(self):
        return list(self.entries.values())


class _out_of_memory:
    """Context: the device running out of memory becomes one line naming the instance, row and size."""

    def __init__(self, inst, row, budget):
        self.inst, self.row, self.budget = inst, row, budget

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if kind is not None and issubclass(kind, torch.OutOfMemoryError):
            raise _core.KvoError(
                f"tasks: instance '{self.inst.row.get('id', '')}' ({self.inst.n} input tokens), row {self.row} at "
                f"budget {self.budget}: the device ran out of memory ({str(error).splitlines()[0]})"
            ) from None
        return False


# The most elements one chunk of the oracle top-k's attention holds per tensor ([heads, queries, keys]):
# its queries are taken in chunks so that memory stays O(heads x chunk x keys), never heads x n x n.
TOPK_CHUNK_ELEMENTS = 1 << 24


def heaviest_mask(weights, k, valid):
    """The k heaviest entries of each row of `weights` [..., n] among `valid` ones, as a mask; equal
    weights keep the earlier position (a stable descending sort's first k), in O(n log k) per row:
    the k-th largest weight is the threshold, everything above it is kept, then the earliest of the
    entries equal to it until k are held. A row with fewer than k valid entries keeps them all."""
    w = weights.masked_fill(~valid, -math.inf)
    k = min(k, w.shape[-1])
    threshold = torch.topk(w, k, dim=-1).values[..., -1:]
    above = w > threshold
    tied = (w == threshold) & valid
    room = k - above.sum(-1, keepdim=True)
    return above | (tied & (tied.cumsum(-1) <= room))


class _TopK:
    """The oracle top-k of sparse attention (kvoracle's TopKDecoder): nothing is evicted, and each
    query of every layer attends only the k keys its KV head's group weighs most (the group's mean
    attention over every key so far; ties keep the earlier position), renormalised. Queries run in
    chunks of at most TOPK_CHUNK_ELEMENTS / (heads x keys), so no layer holds n x n weights at once."""

    def __init__(self, k):
        self.k = k

    def attend(self, module, query, key, value, scale, kwargs):
        from . import attention

        attention.refuse_unless_plain(module, kwargs, key.shape[2])
        b, h, q, d = query.shape
        h_kv, n = key.shape[1], key.shape[2]
        group = h // h_kv
        # A KV head's group of query heads is folded into the query rows ([b, h_kv, group * c, d]), so
        # that each product is one batched matmul over KV heads: no copy of the keys or values per group.
        keys, values = key.float(), value.float()
        chunk = max(1, TOPK_CHUNK_ELEMENTS // max(1, h * n))
        out = []
        for first in range(0, q, chunk):
            c = min(chunk, q - first)
            rows = torch.arange(n - q + first, n - q + first + c, device=query.device)
            causal = torch.arange(n, device=query.device)[None] <= rows[:, None]  # [c, n]
            qs = query[:, :, first : first + c].float().reshape(b, h_kv, group * c, d)
            logits = torch.matmul(qs, keys.transpose(-1, -2)).view(b, h_kv, group, c, n)
            logits.mul_(scale).masked_fill_(~causal, -math.inf)
            mean = torch.softmax(logits, -1).mean(2)  # [b, h_kv, c, n]: the group's mean attention
            chosen = heaviest_mask(mean, self.k, causal.expand_as(mean))
            del mean
            weights = torch.softmax(logits.masked_fill_(~chosen[:, :, None], -math.inf), -1)
            del logits
            out.append(torch.matmul(weights.view(b, h_kv, group * c, n), values).view(b, h, c, d))
        return torch.cat(out, 2).transpose(1, 2).contiguous().to(query.dtype)


def _press_factory(name, press_seed):
    import kvpress

    cls = getattr(kvpress, dict(_core.press_names())[name])
    seeded = "seed" in cls.__dataclass_fields__  # RandomPress: kvoracle's --press-seed

    def make(ratio):
        return cls(compression_ratio=ratio, **({"seed": press_seed} if seeded else {}))

    return lambda ratio, run: make(ratio)


# kvpress presses that read the attention weights, which only eager attention returns.
EAGER_PRESSES = {"observed_attention"}

# The options of `kvoracle tasks run` this driver reads; the library validates them as tasks run does.
OPTIONS = (
    "protocol",
    "policies",
    "presses",
    "budgets",
    "question_first",
    "format",
    "press_seed",
    "optimum",
    "optimum_scopes",
    "topk",
)


class _Checkpoint:
    """One file per answered instance in a folder, named by a digest of everything its outcomes
    depend on (the instance, the validated request, the streaming rows' options, the model's name,
    dtype and attention, whether kvoracle's ids were fed): a rerun with the same arguments takes
    them instead of answering again, so a run stopped (out of memory, a lost machine) resumes."""

    def __init__(self, folder, model, req, policy_options, kvoracle_ids):
        os.makedirs(folder, exist_ok=True)
        self.folder = folder
        self.common = json.dumps(
            {
                "request": req,
                "policy_options": {k: str(v) for k, v in (policy_options or {}).items()},
                "model": str(getattr(model.config, "_name_or_path", "")),
                "dtype": str(next(model.parameters()).dtype),
                "attention": str(model.config._attn_implementation),
                "kvoracle_ids": kvoracle_ids,
                "version": _core.__version__,
            },
            sort_keys=True,
        )

    def _path(self, inst):
        key = hashlib.sha256((self.common + json.dumps(inst.row, sort_keys=True)).encode()).hexdigest()[:32]
        return os.path.join(self.folder, f"instance-{key}.json")

    def load(self, inst):
        try:
            with open(self._path(inst)) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def save(self, inst, outcomes):
        path = self._path(inst)
        with open(path + ".tmp", "w") as f:
            json.dump(outcomes, f)
        os.replace(path + ".tmp", path)


def run_tasks(
    model,
    tokenizer,
    instances,
    *,
    token_ids=None,
    policy_options=None,
    progress=False,
    checkpoint=None,
    shared_prefill=False,
    **options,
):
    """Answers every instance with the full cache and under every row at every budget.

    model: a transformers causal LM (any dtype and device; eager attention for kvpress's
    attention-scored presses). tokenizer: its tokenizer. instances: dicts in kvpress's columns.
    options: tasks run's (protocol "dynamic" or "prefill", policies, presses, budgets as shares kept,
    question_first, press_seed, optimum, optimum_scopes, topk), validated by kvoracle's library, with tasks run's
    defaults (its policies; under the prefill protocol those that can be presses). policy_options: EvictingCache's options for the
    streaming rows. checkpoint: a folder keeping each answered instance's outcomes; a rerun with the
    same arguments resumes from it. shared_prefill: under the prefill protocol, every press row of an
    instance from one prefill of its context instead of one each (kvoracle.hf.shared_prefill): the
    same outcomes, bit for bit, and the checkpoint's, in a fraction of the time; the profile then
    times that pass as "shared-prefill" and each row without it. Returns ``kvoracle.task_report``'s result: outcomes, cells with
    Wilson intervals, and the report; ``notes``: a line (also a warning) per press and budget whose
    kept count falls below the press's window (SnapKV, PyramidKV at small budgets); ``profile``: per
    row and budget, the seconds summed over the instances answered here and the peak memory
    (kvoracle.hf.meter.Meter), the full cache's run in three parts ("full-cache", its
    "full-cache/record" and "full-cache/reference"). lookahead is refused in one line before any
    work where one unit's dense attention (lookahead_schedule_bytes) exceeds the host's available
    memory; the oracle's schedule needs no such matrix.
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise _core.KvoError(
            f"run_tasks: option '{unknown[0]}' is not read by kvoracle.hf's driver yet (options: {', '.join(OPTIONS)})"
        )
    req = _core.task_request(**options)  # every rule of tasks run, in one line
    protocol, budgets, press_seed = req["protocol"], req["budgets"], int(options.get("press_seed", 0))
    rows = []  # (row name, how it runs)
    if protocol == "dynamic":
        rows = list(zip(req["rows"], req["policies"] + (["topk"] if req["topk"] else [])))
    else:
        from .kvpress_press import KvoraclePress

        makers = [_press_factory(name, press_seed) for name in req["presses"]]
        makers += [
            lambda ratio, run, p=p: KvoraclePress(compression_ratio=ratio, policy="policy:" + p)
            for p in req["policies"]
        ]
        if req["optimum"]:  # the exact query-aware prefill optimum of the full cache's run, per budget scope
            from .optimum_press import OptimumPress

            makers += [
                lambda ratio, run, scope=scope: OptimumPress(compression_ratio=ratio, scope=scope, mask="kvoracle").use(
                    run.mass, run.context
                )
                for scope in req["optimum_scopes"]
            ]
        rows = list(zip(req["rows"], makers))
    implementation = model.config._attn_implementation
    for name in req["presses"]:
        if name in EAGER_PRESSES and implementation != "eager":
            raise _core.KvoError(
                f"run_tasks: press {name} reads the attention weights, which attn_implementation='{implementation}' "
                "does not return: load the model with attn_implementation='eager' (or "
                "model.set_attn_implementation('eager'))"
            )
    runner = _Runner(model, tokenizer, token_ids)
    prepared = []
    for x, row in enumerate(instances):
        inst = _Instance(dict(row), tokenizer, token_ids, req["question_first"], req["format"] == "chat")
        where = f"instance '{row.get('id', x)}'"
        if not inst.context:
            raise _core.KvoError(f"tasks: {where} has an empty context")
        if runner.positions and inst.n + inst.max_new > runner.positions:
            raise _core.KvoError(
                f"tasks: {where} needs {inst.n + inst.max_new} positions with its answer; "
                f"the model has {runner.positions}"
            )
        prepared.append(inst)
    from tqdm.auto import tqdm

    if protocol == "dynamic":
        _refuse_lookahead_beyond_memory(req, prepared)
    bar = tqdm(total=len(prepared) * (1 + len(rows) * len(budgets)), desc="tasks", disable=not progress)
    outcomes, profile = [], _Profile(runner.device)
    offline_rows = protocol == "dynamic" and any(how in req["offline"] for _, how in rows)
    store = _Checkpoint(checkpoint, model, req, policy_options, token_ids is not None) if checkpoint else None
    for inst in prepared:
        done = store.load(inst) if store else None
        if done is not None:  # answered by an earlier run with the same arguments
            outcomes += done
            bar.update(1 + len(rows) * len(budgets))
            continue
        first = len(outcomes)
        with tempfile.TemporaryDirectory(prefix="kvoracle-tasks-") as folder:
            with _out_of_memory(inst, "full-cache", 1.0):
                full, run = runner.full_cache(inst, folder, profile, all_queries=offline_rows)
            outcomes.append(full)
            bar.update()
            if protocol == "prefill" and shared_prefill:
                outcomes += runner.compressed_rows(inst, rows, budgets, run, profile, bar)
            else:
                for label, how in rows:
                    for b in budgets:
                        with _out_of_memory(inst, label, b), profile.measure(label, b):
                            if protocol == "dynamic" and label == "topk":
                                outcomes.append(runner.topk(inst, b))
                            elif protocol == "dynamic":
                                options = dict(policy_options or {})
                                if how in req["offline"]:  # oracle, lookahead: the schedule of the full cache's trace
                                    options["schedule_trace"] = run.trace
                                outcomes.append(runner.streaming(inst, label, how, b, options, run.mass))
                            else:
                                outcomes.append(
                                    runner.compressed(inst, label, b, how(1.0 - b, run), run.keys, run.mass)
                                )
                        bar.update()
        if store:
            store.save(inst, outcomes[first:])
    bar.close()
    result = _core.task_report({"protocol": protocol, "outcomes": outcomes})
    result["notes"] = _window_notes(req, prepared) if protocol == "prefill" else []
    result["profile"] = profile.rows()
    for note in result["notes"]:
        import warnings

        warnings.warn(note, stacklevel=2)
    return result


def lookahead_schedule_bytes(n):
    """Host memory lookahead's schedule takes for an instance of n tokens (the full cache's run, its
    answer included): its rule reads one (layer, KV head)'s dense attention, n x n in fp64. The
    oracle's schedule is solved without that matrix (kvoracle's streaming offline solver)."""
    return 8 * n * n


def _refuse_lookahead_beyond_memory(req, prepared):
    """lookahead reads one unit's dense n x n attention at a time: refused in one line, before any
    work, for an instance whose dense matrix would not fit in the host's available memory."""
    free = available_bytes()
    if "lookahead" not in req["policies"] or free is None:
        return
    inst = max(prepared, key=lambda i: i.n)
    n = inst.n + inst.max_new
    need = lookahead_schedule_bytes(n)
    if need > free:
        raise _core.KvoError(
            f"tasks: row lookahead on instance '{inst.row.get('id', '')}' ({n} tokens with its answer) needs "
            f"{need / 2**30:.1f} GiB of host memory for its schedule (one (layer, KV head)'s dense attention "
            f"in fp64), and {free / 2**30:.1f} GiB are available: leave out lookahead or shorten the instance"
        )


def _window_notes(req, prepared):
    """One line per (press, budget) whose kept count falls below the window of last queries the press
    keeps whole (SnapKV, PyramidKV): there it keeps part of its window only, a degenerate press."""
    notes = []
    for name in req["presses"]:
        for b in req["budgets"]:
            short = []
            for inst in prepared:
                C = len(inst.context)
                window, k = _core.press_queries_read(name, C), max(1, int(C * b))
                if 1 < window < C and k < window:
                    short.append((C, k, window))
            if short:
                C, k, window = min(short)
                notes.append(
                    f"tasks: press {name} at budget {b:g} keeps {k} keys of a {C}-token context, fewer than its window "
                    f"of the last {window} (on {len(short)} of {len(prepared)} instances): it then keeps part of its "
                    "window only"
                )
    return notes


def _load(model, device, dtype, attn_implementation):
    """A transformers model and tokenizer from a folder, a hub name or a GGUF file; with a GGUF file
    also kvoracle's Model, whose tokenizer gives the ids (transformers' GGUF tokenizer does not split
    digits as the model was trained to)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"dtype": dtype}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if model.endswith(".gguf"):
        if not os.path.isfile(model):
            raise _core.KvoError(f"tasks: model file '{model}' does not exist")
        where, name = os.path.split(os.path.abspath(model))
        kwargs["gguf_file"] = name
        loaded = AutoModelForCausalLM.from_pretrained(where, **kwargs)
        return loaded.to(device), AutoTokenizer.from_pretrained(where, gguf_file=name), _core.Model(model)
    loaded = AutoModelForCausalLM.from_pretrained(model, **kwargs)
    return loaded.to(device), AutoTokenizer.from_pretrained(model), None


def main(argv=None):
    """python -m kvoracle.hf.tasks: run_tasks from a shell on a local model (a folder, a hub name or a
    GGUF file) and a JSON Lines file of instances; its options are the library's tasks run fields
    that run_tasks reads (kvoracle.task_request_fields), so the shell, Python and the C++ CLI take
    the same names and values."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m kvoracle.hf.tasks", description=main.__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a transformers folder, a hub name or a .gguf file")
    parser.add_argument("--instances", required=True, help="JSON Lines in kvpress's columns (kvoracle tasks generate)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="auto", help="the model's dtype: auto (its own), float32, bfloat16, ...")
    parser.add_argument("--attn-implementation", default="eager", help="eager (default), sdpa, ...")
    parser.add_argument("--json", help="write the result (outcomes, cells) to this file")
    parser.add_argument("--plots", help="write the report's SVG plots into this folder")
    parser.add_argument("--checkpoint", help="keep each answered instance in this folder; a rerun resumes from it")
    parser.add_argument(
        "--shared-prefill",
        action="store_true",
        help="prefill protocol: every press row of an instance from one prefill of its context (the same outcomes)",
    )
    fields = [f for f in _core.task_request_fields() if f["name"] in OPTIONS]
    for f in fields:  # the C++ CLI's flags: a switch (--no-optimum) sets its text, the rest take a value
        shown = f" (default: {f['default']})" if f["default"] and not f["switch"] else ""
        if f["switch"]:
            parser.add_argument(f["flag"], dest=f["name"], action="store_const", const=f["switch"], help=f["help"])
        else:
            parser.add_argument(f["flag"], dest=f["name"], help=f["help"] + shown)
    args = parser.parse_args(argv)
    options = {f["name"]: getattr(args, f["name"]) for f in fields if getattr(args, f["name"]) is not None}
    try:
        _core.task_request(**options)  # refused in one line before the model loads
        instances = []
        try:
            with open(args.instances, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            instances.append(json.loads(line))
                        except ValueError:
                            raise _core.KvoError(f"tasks: {args.instances}:{number} is not a JSON object") from None
        except OSError as e:
            raise _core.KvoError(f"tasks: cannot read '{args.instances}': {e.strerror}") from None
        model, tokenizer, token_ids = _load(args.model, args.device, args.dtype, args.attn_implementation)
        result = run_tasks(
            model,
            tokenizer,
            instances,
            token_ids=token_ids,
            progress=True,
            checkpoint=args.checkpoint,
            shared_prefill=args.shared_prefill,
            **options,
        )
    except _core.KvoError as e:
        print(str(e), file=sys.stderr)
        return 1
    print(result.report)
    if args.plots:
        os.makedirs(args.plots, exist_ok=True)
        result.report.save_plots(args.plots)
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump(dict(result), f, indent=1)
        os.replace(args.json + ".tmp", args.json)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
