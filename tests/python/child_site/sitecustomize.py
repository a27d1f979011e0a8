"""Python runs this file at start-up in the child processes a test starts with the `python_child_env`
fixture (conftest.py), which puts this folder on PYTHONPATH: they then load a GGUF file's tokenizer
from the test run's cache (gguf_tokenizer_cache.py) as the test process does, instead of spending
10-20 s converting it again."""

import os
import sys

if os.environ.get("KVO_TOKENIZER_CACHE"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import gguf_tokenizer_cache

    gguf_tokenizer_cache.install()
