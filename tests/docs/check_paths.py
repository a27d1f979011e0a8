"""Every repository path a doc or a source comment names must exist: README.md, docs/*.md, and the
tracked C++, Python, CMake and shell sources are scanned for words that start with one of the
repository's top-level directories and name a file (core/include/kvo/core/greedy.hpp,
tests/python/test_bindings.py, docs/oracle.md, scripts/bench), and for Markdown link targets. Each
is looked up relative to the repository root, the page's own folder, or, for a component's header
written short (core/press.hpp, scaleout/unit_runner.hpp), that component's include folder. The
kvpress suite's files name kvpress's own tests, looked up in its unpacked source release.
Globs, placeholders and paths a .gitignore names (outputs a study writes) are skipped; words without a file extension (benchmark names such as
model/prefill/640) are not paths, except under scripts/ and .ci/.
User docs (README.md, docs/*.md, */README.md) cite no "issue N" of a tracker their reader lacks.
Usage: check_paths.py REPO_ROOT"""

import pathlib
import re
import subprocess
import sys

root = pathlib.Path(sys.argv[1]).resolve()
tops = sorted(
    p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and not p.name.startswith("build")
)
tops += [".ci"]
word = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in tops) + r")/[\w./+-]*[\w+])")
link = re.compile(r"\]\(([^)#\s]+)")
files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
scan = [
    f
    for f in files
    if re.search(r"\.(md|hpp|cpp|cu|py|txt|sh|toml|yaml)$|^scripts/|^\.ci/", f) and not f.startswith("fuzz/corpus/")
]


# A component's headers, written short: core/press.hpp is core/include/kvo/core/press.hpp.
INCLUDES = {"proofs-check": "proofs-check/include/kvo/proofs_check"}
for top in tops:
    if (root / top / "include" / "kvo" / top).is_dir():
        INCLUDES[top] = f"{top}/include/kvo/{top}"
EXTERNAL = {"tests/python/kvpress_suite/": root / ".venv" / "src" / "kvpress-0.5.5"}


def is_path(word):
    return bool(re.search(r"\.\w+$", word)) or word.startswith(("scripts/", ".ci/"))


def exists(path, f, base):
    path = path.rstrip(".,:;")
    if any(c in path for c in "*<>{}$") or path.endswith("/..."):
        return True
    bases = [root, base]
    top, _, rest = path.partition("/")
    if top in INCLUDES:
        bases.append(root / INCLUDES[top] / ".." / ".." / "..")
        if (root / INCLUDES[top] / rest).exists():
            return True
    for prefix, tree in EXTERNAL.items():
        if f.startswith(prefix):
            if not tree.is_dir():
                return True  # the unpacked release is absent (scripts/setup-deps brings it)
            bases.append(tree)
    return any((b / path).exists() for b in bases) or ignored(path)


def ignored(path):
    """A path a .gitignore of the repository names: a study's output written where it ran (the text
    search's traces, which the instances beside them regenerate), not a shipped file."""
    return subprocess.run(["git", "check-ignore", "-q", path], cwd=root).returncode == 0


missing = []
for f in scan:
    text = (root / f).read_text(errors="replace")
    base = (root / f).parent
    found = {w for w in word.findall(text) if is_path(w)}
    if f.endswith(".md"):
        found |= {m for m in link.findall(text) if not re.match(r"[a-z]+:", m)}
    for path in sorted(found):
        if not exists(path, f, base):
            missing.append(f"{f}: names '{path}', which is not in the repository")
    if f.endswith(".md"):
        for m in re.finditer(r"\bissues? #?\d+", text, re.I):
            missing.append(f"{f}: cites '{m.group(0)}' of a tracker its reader does not have")
for line in missing:
    print(line)
print(f"{len(scan)} files scanned, {len(missing)} paths that do not exist")
sys.exit(1 if missing else 0)
