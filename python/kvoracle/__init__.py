"""kvoracle: check greedy KV-cache eviction against exact oracles on attention traces.

The C++ library through pybind11 on numpy arrays: trace I/O (``read_trace``, ``write_trace``,
``Trace.from_arrays``, ``synthesize``), ``policies`` (``policy``: their names as constants), ``replay``, the oracles (``topk_optimum``,
``facility_location_optimum``, ``greedy_facility_location``, ``offline_optimum``, and over a whole
trace ``static_oracle``, ``offline_oracle``, ``prefill_oracle``, ``allocation_oracle`` (budgets
shared across heads and layers) and ``contract_oracle`` (under an engine's eviction contract), the calls behind ``kvoracle oracle static|offline|prefill|allocation|contract``),
the claim
checks (``verify`` on a Trace, ``verify_traces`` on files with the report of ``kvoracle verify``;
``fit_power_law``, the fit behind check E2), the greedy scorer's CPU twin (``score``), kvpress's presses (``run_press``,
``press_names``, ``adakv_kept`` for AdaKVPress around one) with the exact ``prefill_optimum`` and the attention-output error ``output_errors``, and the decoder-facing ``KvEvictionManager`` (with ``EvictingPools``, the engine's evicting attention for another implementation's layers); the real model in kvoracle's C++ (``Model``: tokenizer,
greedy ``generate``; ``score_answer``, ``task_texts``, ``task_request`` (its fields: ``task_request_fields``) and ``task_report``: the task
suite's scoring, texts, request rules, cells and paired comparisons; ``paired_power``: the instances a paired
comparison of two rows needs; ``ceiling_share``: presses as a share of the exact ceiling, paired by instance); the conformance kit
(``conformance_golden``, ``conformance_check``, ``conformance_kit_trace``: another scorer's decisions against golden ones, docs/conformance.md;
``kvoracle.conformance.drive`` runs a Python scorer over a golden trace, ``drive_press`` a kvpress press, ``decisions_from_kept`` reads kept masks). ``kvoracle.hf`` brings
Hugging Face transformers models in: ``record_trace`` and the ``EvictingCache`` of ``generate``
(docs/python.md), ``run_tasks``, the task suite on any transformers model, and
``kvoracle.hf.kvpress_eval``, kvpress's own evaluation with the ceiling (docs/tasks.md). A command's result is a dict or a list as before, carrying what the CLI shows as
``result.report`` (a ``Report``: ``text``, ``markdown``, ``tables`` with exact numbers, ``plots``).
"""

from ._core import (  # noqa: F401
    EvictingPools,
    KvEvictionManager,
    KvoError,
    MassOfOptimum,
    Model,
    Report,
    Trace,
    __build_isa__,
    __version__,
    adakv_kept,
    allocation_oracle,
    ceiling_share,
    conformance_check,
    conformance_golden,
    conformance_kit_trace,
    contract_oracle,
    default_model_path,
    engine_fields,
    facility_location_optimum,
    fit_power_law,
    greedy_facility_location,
    offline_optimum,
    offline_oracle,
    output_errors,
    paired_power,
    policies,
    policy,
    policy_prefill_kept,
    policy_prefill_scores,
    prefill_optimum,
    prefill_oracle,
    press_names,
    press_queries_read,
    read_trace,
    replay,
    run_press,
    score,
    score_answer,
    search_attention,
    search_hypotheses,
    static_oracle,
    synthesize,
    task_report,
    task_request,
    task_request_fields,
    task_texts,
    topk_optimum,
    verify,
    verify_traces,
    write_trace,
)


class Result(dict):
    """A command's result (a dict) with ``report``, the Report the CLI prints for it."""

    report: Report


class Results(list):
    """A command's records (a list) with ``report``, the Report the CLI prints for them."""

    report: Report


from . import conformance  # noqa: E402, F401  (numpy only: the kit's Python drivers)
