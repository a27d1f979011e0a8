"""kvoracle for Hugging Face transformers models.

- ``record_trace(model, input_ids, path)``: a kvoracle trace of any causal LM whose attention goes
  through transformers' attention interface (compact q/k/v, one layer at a time).
- ``EvictingCache(model, policy, budget)``: a transformers Cache that evicts with a kvoracle policy
  inside ``model.generate``.
- ``EvictionAdapter``: the numpy adapter for a hand-written generation loop (no torch needed; its
  older name ``EvictionPress`` still works, with a DeprecationWarning: it is not a kvpress press).
- ``KvoraclePress``: any kvoracle policy, press or the prefill optimum as a kvpress press; a press
  (a score) is a ``KvoracleScorerPress``, which kvpress's ScorerPress wrappers take.
- ``compare_presses``: presses against the prefill optimum: retained mass and continuation NLL/KL.
- ``run_tasks``: the task suite of ``kvoracle tasks run`` on any transformers model, scored and
  reported by kvoracle's library.
- ``OptimumPress``: the exact query-aware prefill optimum (per-head or shared budgets) as a kvpress
  press, the ceiling; ``kvoracle.hf.kvpress_eval`` runs kvpress's own evaluate.py with it.

``record_trace``, ``EvictingCache``, ``compare_presses`` and ``run_tasks`` import torch and transformers when first
used; ``KvoraclePress`` imports kvpress.
"""

from .loop_adapter import EvictionAdapter  # noqa: F401

_LAZY = {
    "record_trace": ".record",
    "EvictingCache": ".cache",
    "route": ".attention",
    "KvoraclePress": ".kvpress_press",
    "KvoracleScorerPress": ".kvpress_press",
    "compare_presses": ".press_compare",
    "run_tasks": ".tasks",
    "OptimumPress": ".optimum_press",
}


def __getattr__(name):
    if name == "EvictionPress":
        import warnings

        warnings.warn(
            "kvoracle.hf.EvictionPress is now EvictionAdapter (it is not a kvpress press)",
            DeprecationWarning,
            stacklevel=2,
        )
        return EvictionAdapter
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'kvoracle.hf' has no attribute '{name}'")
