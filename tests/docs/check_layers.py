"""The layers point one way: every library's target_link_libraries (its CMakeLists.txt) links only
what docs/architecture.md's table allows it. Usage: check_layers.py REPO_ROOT"""

import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
doc = (root / "docs" / "architecture.md").read_text()
allowed = {}
for lib, deps in re.findall(r"^\| (\w+) \| ([^|]+) \|$", doc, re.M):
    if lib != "library":
        allowed[lib] = set() if deps.strip() == "(none)" else {d.strip() for d in deps.split(",")}
folders = {
    "core": "core",
    "report": "report",
    "oracle": "oracle",
    "proofs_check": "proofs-check",
    "conformance": "conformance",
    "model": "model",
    "gpu": "gpu",
    "scaleout": "scaleout",
    "studies": "studies",
    "kvoracle_cli": "apps/kvoracle",
    "python": "python",
    "llama_cpp": "engines/llama-cpp",
}
problems = [f"{lib}: docs/architecture.md's table has no row for it" for lib in folders if lib not in allowed]
for lib, folder in folders.items():
    text = (root / folder / "CMakeLists.txt").read_text()
    links = set()
    for block in re.findall(r"target_link_libraries\(([^)]*)\)", text):
        links |= set(re.findall(r"kvo::(\w+)", block))
    for dep in sorted(links - allowed.get(lib, set()) - {lib}):
        problems.append(f"{folder}/CMakeLists.txt: {lib} links kvo::{dep}, which docs/architecture.md does not allow")
for line in problems:
    print(line)
print(f"layers: {len(folders)} libraries checked against docs/architecture.md, {len(problems)} problems")
sys.exit(1 if problems else 0)
