"""docs/benchmarks.md shows one run of each benchmark of bench/: the generated part, which names
its commit. The hand-written part below it may describe and link, and may tabulate what
`scripts/bench` does not measure, but no table row there names a Google Benchmark of bench/
(those numbers come from the latest run alone; past runs live in docs/benchmark-history.md,
each at its commit). Usage: check_benchmarks.py REPO_ROOT"""

import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
names = set()
for source in (root / "bench").glob("*.cpp"):
    names |= set(re.findall(r'Name\("([^"]+)"', source.read_text()))
text = (root / "docs" / "benchmarks.md").read_text()
mark = "<!-- end of the generated part: everything below is written by hand -->"
problems = []
if mark not in text:
    problems.append("docs/benchmarks.md: the end mark of the generated part is missing")
generated, _, hand = text.partition(mark)
if not re.search(r"at commit [0-9a-f]{7,}", generated):
    problems.append("docs/benchmarks.md: the generated part does not name the commit it measured")
section = "(top)"
for line in hand.splitlines():
    if line.startswith("#"):
        section = line.lstrip("# ")
    elif line.startswith("|"):
        for name in sorted(names):
            if re.search("`" + re.escape(name) + "(/|`)", line):
                problems.append(f'docs/benchmarks.md, "{section}": a written table names `{name}` (generated only)')
for line in problems:
    print(line)
print(f"benchmarks.md: {len(names)} benchmark names, {len(problems)} problems")
sys.exit(1 if problems else 0)
