"""docs/README.md is the manual's index: every page of docs/ is linked from it, and every page it
links exists. Usage: check_index.py REPO_ROOT"""

import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
index = root / "docs" / "README.md"
links = set(re.findall(r"\]\(([^)#\s]+)\)", index.read_text()))
pages = {p.name for p in (root / "docs").glob("*.md") if p.name != "README.md"}
problems = [f"docs/{p} is not linked from docs/README.md" for p in sorted(pages - links)]
problems += [
    f"docs/README.md links {t}, which does not exist" for t in sorted(links) if not (index.parent / t).exists()
]
for line in problems:
    print(line)
print(f"docs/README.md: {len(pages)} pages, {len(links)} links, {len(problems)} problems")
sys.exit(1 if problems else 0)
