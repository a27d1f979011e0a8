"""Every kvoracle command written in a ```sh block of docs/ and README.md names a command that
exists and only flags that command takes: each command line (continuations joined; `[...]`
optional parts read as written) is matched against `kvoracle <command> --help`. The blocks whose
commands run in full are run by their own tests (tests/python/test_docs_examples.py, the CLI
scripts, scripts/run-main); this keeps the rest, the usage lines of docs/cli.md among them, from
naming a flag that was renamed or removed. Usage: check_sh_commands.py REPO_ROOT KVORACLE"""

import pathlib
import re
import subprocess
import sys

root, exe = pathlib.Path(sys.argv[1]), sys.argv[2]
pages = sorted((root / "docs").glob("*.md")) + [root / "README.md"]
program = re.compile(r"(^|/|\$)(kvoracle|KVORACLE|\{?KVORACLE\}?)$")
helps = {}


def help_of(words):
    key = tuple(words)
    if key not in helps:
        run = subprocess.run([exe, *words, "--help"], capture_output=True, text=True)
        helps[key] = run.stdout if run.returncode == 0 else None
    return helps[key]


def subcommand_of(words):
    """The longest run of leading words that --help accepts as a command path."""
    path = []
    for w in words:
        if w.startswith("-") or not re.fullmatch(r"[a-z][a-z-]*", w):
            break
        text = help_of(path + [w])
        if text is None or f"Usage: {exe} {' '.join(path + [w])}" not in text.replace("\n", " "):
            break
        path.append(w)
    return path


problems, commands = [], 0
global_help = help_of([])
for page in pages:
    for block in re.findall(r"```sh\n(.*?)```", page.read_text(), re.S):
        text = re.sub(r"\\\n\s*", " ", block)
        for line in text.splitlines():
            line = line.split(" #", 1)[0]
            for part in re.split(r"\||&&|;|\$\(|\)", line):
                words = part.replace("[", " ").replace("]", " ").split()
                at = next((i for i, w in enumerate(words) if "=" not in w and program.search(w.strip('"'))), None)
                if at is None:
                    continue
                rest = words[at + 1 :]
                while rest and rest[0] in ("-q", "--quiet") or (rest and rest[0] in ("-j", "--threads")):
                    rest = rest[2:] if rest[0] in ("-j", "--threads") else rest[1:]
                path = subcommand_of(rest)
                if not path:
                    if rest and not rest[0].startswith("-"):
                        problems.append(f"{page.relative_to(root)}: `kvoracle {' '.join(rest[:2])}` is not a command")
                    continue
                commands += 1
                help_text = help_of(path) + global_help
                for w in rest[len(path) :]:
                    flag = w.split("=", 1)[0].strip('",')
                    if re.fullmatch(r"--[a-z][a-z0-9-]*|-[a-zA-Z]", flag) and not re.search(
                        r"(^|[ ,])" + re.escape(flag) + r"\b", help_text, re.M
                    ):
                        problems.append(f"{page.relative_to(root)}: `kvoracle {' '.join(path)}` has no flag {flag}")
for line in problems:
    print(line)
print(f"sh blocks: {commands} kvoracle commands checked against --help, {len(problems)} problems")
sys.exit(1 if problems else 0)
