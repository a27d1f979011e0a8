"""A GGUF file's tokenizer converted once per test run, for every test process that loads it.

transformers builds a GGUF file's tokenizer in Python each time it loads one (about 10 s of CPU for
SmolLM2's 49 152 entries and merges), and the Python tests load SmolLM2's several dozen times over
a dozen processes. install() wraps AutoTokenizer.from_pretrained: a call with gguf_file= is answered
from a pickle of the tokenizer transformers built for that file (the same class, vocabulary, merges
and chat template), kept in KVO_TOKENIZER_CACHE (a folder of the build tree, set by ctest) and
written there by the first process to build it. The key is the file's path, size and modification
time and transformers' version; a process without the variable loads as transformers does."""

import os
import pickle
import tempfile

import transformers

_real = transformers.AutoTokenizer.from_pretrained
_loaded = {}  # key -> pickled bytes, within this process


def _key(directory, gguf_file):
    path = os.path.realpath(os.path.join(directory, gguf_file))
    st = os.stat(path)
    return f"{os.path.basename(path)}@{st.st_size}-{st.st_mtime_ns}-{transformers.__version__}"


def load(directory, gguf_file):
    """AutoTokenizer.from_pretrained(directory, gguf_file=gguf_file), from the cache where there is one."""
    folder = os.environ.get("KVO_TOKENIZER_CACHE")
    if not folder:
        return _real(directory, gguf_file=gguf_file)
    key = _key(directory, gguf_file)
    if key not in _loaded:
        path = os.path.join(folder, key + ".pickle")
        try:
            with open(path, "rb") as f:
                _loaded[key] = f.read()
        except FileNotFoundError:
            _loaded[key] = pickle.dumps(_real(directory, gguf_file=gguf_file))
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=key, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(_loaded[key])
            os.replace(tmp, path)  # whole or absent for a process reading it beside this one
            for old in os.listdir(folder):  # the same file's entries from before it was rewritten
                if old.startswith(key.split("@", 1)[0] + "@") and old.endswith(".pickle") and old != key + ".pickle":
                    os.remove(os.path.join(folder, old))
    return pickle.loads(_loaded[key])  # noqa: S301 (written by this test run, in its build tree)


def _from_pretrained(name, *args, **kwargs):
    if args or set(kwargs) != {"gguf_file"}:
        return _real(name, *args, **kwargs)
    return load(name, kwargs["gguf_file"])


def install():
    """AutoTokenizer.from_pretrained(dir, gguf_file=...) through load(), other calls unchanged."""
    transformers.AutoTokenizer.from_pretrained = _from_pretrained
