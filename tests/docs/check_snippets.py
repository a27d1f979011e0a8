"""Every C++ example of docs/ is run by a test: each ```cpp block of a page must appear, line for
line (blank runs and clang-format's empty `//` guards aside), between `--8<-- [start:NAME]` and `--8<-- [end:NAME]` in a test
source under tests/. Usage: check_snippets.py REPO_ROOT"""

import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])


def norm(line):
    line = re.sub(r"\s*//\s*$", "", line.strip())
    return re.sub(r"\s+", " ", line)


regions = []
for src in sorted((root / "tests").rglob("*.cpp")):
    text = src.read_text()
    for m in re.finditer(r"--8<-- \[start:([\w-]+)\]\n(.*?)\n[^\n]*--8<-- \[end:\1\]", text, re.S):
        regions.append((f"{src.relative_to(root)}:{m.group(1)}", [norm(l) for l in m.group(2).splitlines()]))

missing = []
blocks = 0
for page in sorted((root / "docs").glob("*.md")):
    for m in re.finditer(r"```cpp\n(.*?)```", page.read_text(), re.S):
        blocks += 1
        want = [norm(l) for l in m.group(1).splitlines()]
        if not any(lines == want for _, lines in regions):
            missing.append(f"{page.relative_to(root)}: a cpp example starting '{want[0]}' is run by no test")
for line in missing:
    print(line)
print(f"{blocks} cpp examples in docs/, {len(regions)} test regions, {len(missing)} not run")
sys.exit(1 if missing else 0)
