"""The docs tests' --check of bench/'s table printers: does a document hold each row of a table?"""

import pathlib


def check_rows(rows, doc, source):
    """Print each of `rows` (table lines, "| ...") that no line of the document `doc` holds, indented
    or not, naming `source`; return the exit status (1 when one is missing)."""
    held = {line.strip() for line in pathlib.Path(doc).read_text().splitlines()}
    missing = [row for row in rows if row not in held]
    for row in missing:
        print(f"{doc}: the row is missing or differs from {source}: {row}")
    return 1 if missing else 0
