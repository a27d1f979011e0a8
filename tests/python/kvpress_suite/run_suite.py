"""Runs kvpress 0.5.5's own tests against KvoraclePress (ctest kvpress_suite), offline, on the CPU,
through kvoracle_kvpress_plugin.py: once with every KvoraclePress configuration added to kvpress's
list of presses, then once per configuration of IN_PLACE with KvoraclePress in place of the press
kvpress's tests build by name. Usage: run_suite.py KVPRESS_SOURCE_DIR (the release's root, holding
tests/; scripts/setup-deps unpacks it under .venv/src)."""

import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

# kvpress's tests that take their presses from tests/default_presses.py. A KvoraclePress of a press
# is a ScorerPress and runs under every wrapper; one of a policy is a BasePress, for which the
# wrappers that need a ScorerPress (AdaKV, ChunkPress, DecodingPress, ...) return early in
# kvpress's own code. Under DecodingPress and CAMPress, the refusals (a press that reads every
# query, pyramidkv's own count) are strict xfails in the plugin (docs/presses.md).
ADDED = [
    "tests/presses/test_presses.py::test_presses_run",
    "tests/test_decoding_compression.py::test_all_presses_work_with_decoding_press",
]
# kvpress's tests that build one press by name (KnormPress, ExpectedAttentionPress), where it is
# used as a prefill press. Left out: test_pipeline and test_pipeline_single_or_no_question assert
# the unit-test model's own tokenizer counts (23 context tokens), which SmolLM2's tokenizer does
# not give (tests/python/test_kvoracle_press.py checks the pipeline's compressed length for every
# configuration instead); test_generate fails with kvpress's own KnormPress on the stand-in model
# (the pipeline compresses the context without its "\n" suffix, generate compresses both, and the
# random model's greedy answer follows the kept set). The masking code's H2O is not in place: test_press_call's 5-token prompt at
# ratio 0.2 is its refused corner k = P - 1 (core/policy_press.hpp).
IN_PLACE_TESTS = [
    "tests/presses/test_presses.py::test_composed_press",
    "tests/test_pipeline.py::test_pipeline_with_cache",
    "tests/test_press_call.py::test_context_manager_adds_and_removes_hook",
    "tests/test_press_call.py::test_context_manager_applies_compression",
]
# kvpress's DecodingPress, PrefillDecodingPress, CompressionRatioDecodingPress and CAMPress tests,
# whose base press is KnormPress: with kvoracle's knorm in place (a ScorerPress).
DECODING_TESTS = [
    f"tests/test_decoding_compression.py::{name}"
    for name in (
        "test_decoding_compression",
        "test_prefill_decoding_press_calls_both_phases",
        "test_decoding_press_without_prefill",
        "test_prefill_decoding_press_decoding_only",
        "test_decoding_press_equivalence",
        "test_sequence_ratio_decoding_press_uses_total_tokens_seen",
        "test_sequence_ratio_decoding_press_prefers_logical_positions_over_compressed_cache_position",
        "test_sequence_ratio_decoding_press_requires_logical_position_ids",
        "test_sequence_ratio_decoding_press_noops_if_cache_is_already_below_target",
        "test_decoding_press_reuse_across_sequences",
        "test_compression_actually_reduces_memory",
    )
]
# In place: kvpress's knorm (and its keep-highest-score test), kvpress's SnapKV, the registry's
# default policy, and both readings of every name a press and a policy share.
sys.path.insert(0, str(HERE.parent))
from kvoracle_press_configs import FIRST_POLICY, SHARED  # noqa: E402

IN_PLACE = {
    "knorm": ["tests/presses/test_presses.py::test_presses_keep_highest_score"] + DECODING_TESTS,
    "snapkv": [],
    FIRST_POLICY: [],
    **{f"{kind}:{name}": [] for name in SHARED for kind in ("policy", "press")},
}


def pytest(root, tests, env=None):
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "kvoracle_kvpress_plugin",
        "--rootdir",
        str(root),
        *[str(root / t) for t in tests],
    ]
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        **(env or {}),
    }
    print("+", " ".join(command[3:]), *(f"[{k}={v}]" for k, v in (env or {}).items()), flush=True)
    return subprocess.run(command, cwd=root, env=environment).returncode


def main():
    if len(sys.argv) != 2 or not (pathlib.Path(sys.argv[1]) / "tests" / "default_presses.py").is_file():
        print(
            "usage: run_suite.py KVPRESS_SOURCE_DIR (kvpress's release with its tests/: scripts/setup-deps "
            "unpacks it under .venv/src)",
            file=sys.stderr,
        )
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    failed = []
    if pytest(root, ADDED):
        failed.append("added")
    for configuration, extra in IN_PLACE.items():
        if pytest(root, IN_PLACE_TESTS + extra, {"KVO_KVPRESS_IN_PLACE": configuration}):
            failed.append(f"in place of the press: {configuration}")
    print("kvpress suite:", "all passed" if not failed else "failed: " + "; ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
