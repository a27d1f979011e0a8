"""Every link to a section of a page (`#anchor` or `page.md#anchor`, in docs/, README.md and
CONTRIBUTING.md) names a heading of that page, as GitHub makes its id, or an explicit
`<a id="...">`. Usage: check_anchors.py REPO_ROOT"""

import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
pages = sorted((root / "docs").glob("*.md")) + [root / "README.md", root / "CONTRIBUTING.md"]


def slug(heading):
    """GitHub's heading id: lower case, characters other than letters, digits, '-', '_' and spaces
    dropped, each space a hyphen."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page):
    text = page.read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # headings inside code blocks are not headings
    ids, seen = set(re.findall(r'<a id="([^"]+)"', text)), {}
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else f"{base}-{n}")
    return ids


problems, links = [], 0
for page in pages:
    for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", page.read_text()):
        if target.startswith("http"):
            continue
        dest = (page.parent / target) if target else page
        if dest.suffix != ".md" or not dest.exists():
            continue  # a missing file is check_paths.py's
        links += 1
        if anchor not in anchors(dest):
            problems.append(f"{page.relative_to(root)}: #{anchor} is not a section of {dest.relative_to(root)}")
for line in problems:
    print(line)
print(f"anchors: {links} links to sections checked, {len(problems)} problems")
sys.exit(1 if problems else 0)
