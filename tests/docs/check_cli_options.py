"""The option tables of docs/cli.md are what the CLI registers: each block between
`<!-- options: WORDS -->` and `<!-- /options -->` must equal `kvoracle options-markdown WORDS`, the
table drawn from the command's own flags (which the request schemas generate). With --fix the
blocks are rewritten. Usage: check_cli_options.py REPO_ROOT KVORACLE [--fix]"""

import os
import pathlib
import re
import shlex
import subprocess
import sys

root, kvoracle = pathlib.Path(sys.argv[1]), sys.argv[2]
fix = "--fix" in sys.argv[3:]
page = root / "docs" / "cli.md"
text = page.read_text()
block = re.compile(r"(<!-- options: ([^>]*?) -->\n)(.*?)(<!-- /options -->)", re.S)
# The defaults a table shows must not depend on who runs it: the model path is the one found without
# KVO_MODEL, under a home the generator writes as ~.
env = {k: v for k, v in os.environ.items() if k not in ("KVO_MODEL", "KVO_MODEL_DIR")}
problems, blocks = [], 0


def generated(words):
    out = subprocess.run([kvoracle, "options-markdown", *shlex.split(words)], env=env, check=True, capture_output=True)
    return out.stdout.decode()


def replace(m):
    global blocks
    blocks += 1
    want = generated(m.group(2))
    if m.group(3) != want:
        problems.append(
            f"docs/cli.md: the options of `{m.group(2)}` differ from `kvoracle options-markdown {m.group(2)}`"
        )
    return m.group(1) + want + m.group(4)


new = block.sub(replace, text)
if fix and new != text:
    page.write_text(new)
    print(f"docs/cli.md: {len(problems)} tables rewritten")
    sys.exit(0)
for line in problems:
    print(line)
print(f"docs/cli.md: {blocks} option tables, {len(problems)} differ (fix: {sys.argv[0]} {root} {kvoracle} --fix)")
sys.exit(1 if problems or blocks == 0 else 0)
