"""Shared fixtures: paths handed over by ctest through the environment."""

import os
import pathlib
import subprocess

import pytest


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run the Python tests through ctest (scripts/run-tests)")
    return value


@pytest.fixture(scope="session")
def model_path():
    # Same rule as kvo::model::default_model_path().
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    path = os.environ.get("KVO_MODEL") or os.path.join(
        os.environ.get("KVO_MODEL_DIR") or os.path.expanduser("~/.cache/kvoracle"), name
    )
    if not pathlib.Path(path).exists():
        pytest.fail(f"model {path} is missing: scripts/fetch-model installs it")
    return path


@pytest.fixture
def trace_file(tmp_path):
    """A small random trace file: 2 layers, 4 query heads over 2 KV heads, 48 tokens, head size 8."""
    import kvoracle
    import numpy as np

    g = np.random.default_rng(5)
    q = [g.standard_normal((4, 48, 8), dtype=np.float32) for _ in range(2)]
    k = [g.standard_normal((2, 48, 8), dtype=np.float32) for _ in range(2)]
    v = [g.standard_normal((2, 48, 8), dtype=np.float32) for _ in range(2)]
    path = tmp_path / "t.safetensors"
    kvoracle.write_trace(str(path), kvoracle.Trace.from_arrays(q, k, v, attn_scale=0.5))
    return path


@pytest.fixture(scope="session")
def tiny_model_path():
    """The tiny test model (tests/support/make_tiny_model.py), written by ctest's tiny_model fixture:
    the closed loops' mechanics without the real model's cost."""
    return _env("KVO_TINY_MODEL")


@pytest.fixture(scope="session")
def python_child_env():
    """The environment for a Python process a test starts: the same, and its GGUF tokenizers from the
    test run's cache (child_site/sitecustomize.py)."""
    site = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_site")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")]))}


@pytest.fixture(scope="session")
def probe():
    exe = _env("KVO_PROBE")

    def run(*args):
        subprocess.run([exe, *map(str, args)], check=True)

    return run


@pytest.fixture(scope="session")
def kvoracle():
    return _env("KVO_CLI")


@pytest.fixture(scope="session")
def text_path():
    return "/usr/share/common-licenses/GPL-3"


def load_hf_from_gguf(path):
    """A GGUF model loaded by transformers (eager attention, fp32, no hub)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        os.path.dirname(path),
        gguf_file=os.path.basename(path),
        attn_implementation="eager",
        dtype=torch.float32,
    )
    return model.eval()


@pytest.fixture(scope="session")
def hf_smollm2(model_path):
    """SmolLM2 loaded by transformers from our GGUF file: for the tests whose point is the real model."""
    return load_hf_from_gguf(model_path)


@pytest.fixture(scope="session")
def hf_tiny(tiny_model_path):
    """The tiny test model loaded by transformers from its GGUF file: for mechanics (kvpress's presses,
    its pipeline, the evicting cache) at a fraction of the real model's time."""
    return load_hf_from_gguf(tiny_model_path)


def pytest_configure(config):
    # A GGUF file's tokenizer is converted once per test run, not once per load (gguf_tokenizer_cache.py).
    import gguf_tokenizer_cache

    gguf_tokenizer_cache.install()
    # ctest runs two tests at a time on CI's two cores: each Python test then keeps torch to the
    # threads ctest gives it (KVO_TORCH_THREADS), instead of two busy pools fighting over two cores.
    threads = os.environ.get("KVO_TORCH_THREADS")
    if threads:
        import torch

        torch.set_num_threads(int(threads))
    config.addinivalue_line("markers", "transformers: runs a Hugging Face transformers model (kvoracle.hf)")
    config.addinivalue_line("markers", "kvpress: runs kvpress (ctest python_kvpress)")
