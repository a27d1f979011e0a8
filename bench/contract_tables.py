"""The tables of docs/engines.md ("Measured") from a contract study's merged rows
(bench/contract-study's OUTDIR/contract.json), so that every number there comes from the JSON:
one table per budget, and the budgets side by side. `--check DOC` prints nothing and fails when a
row the study's JSON gives is not in DOC word for word.
Usage: contract_tables.py CONTRACT_JSON [--layout budgets|side-by-side] [--check DOC]"""

import argparse
import json
import pathlib
import sys

from doc_rows import check_rows

POLICIES = ("h2o", "tova", "scissorhands")


def label(document, detailed):
    """The row's name: the engine and its mode, with its sizes where `detailed`."""
    engine = document["engine"]
    if engine == "kvoracle":
        return "per-head sets (the reference)"
    if engine == "tensorrt-llm":
        name = f"TensorRT-LLM `{document['eviction_mode']}`"
        return f"{name}, every {document['beta']} steps" if detailed else name
    if engine == "openvino":
        sizes = (
            f", blocks of {document['block_size']}, start {document['start_size']}, recent {document['recent_size']}"
        )
        return "OpenVINO GenAI" + (sizes if detailed else "")
    if engine == "llama.cpp":
        sizes = f", {document['kv_evict_sink']} sinks, window {document['kv_evict_window']}"
        return "llama.cpp" + (sizes if detailed else "")
    if engine == "dms":
        if detailed:
            return f"DMS, window {document['window_size']}, admission only"
        return "DMS (first come, every policy alike)"
    if engine == "kvpress":
        adakv = " + AdaKV" if document.get("adakv") else ""
        every = f" every {document['compression_interval']} steps" if detailed else ""
        return f"kvpress `DecodingPress`{every}{adakv}"
    return engine


def shares(row):
    """Each policy's share of the row's optimum; under admission only, first-come's (as h2o's)."""
    found = {p["policy"]: p["share"] for p in row["policies"]}
    if "first_come" in row:
        found["first come"] = row["first_come"] / row["optimum"]
    return found


def budgets_and_n(study):
    """The study's budgets, ascending, and its n as the docs write it (8 192)."""
    return sorted({row["budget"] for row in study["rows"]}), f"{study['n']:,}".replace(",", " ")


def per_budget(study):
    lines = []
    budgets, n = budgets_and_n(study)
    for budget in budgets:
        rows = [row for row in study["rows"] if row["budget"] == budget]
        percent = round(100 * budget / study["n"])
        lines.append(
            f"| contract ({percent} %, n = {n}) | peak | optimum / all | price | "
            + " | ".join(POLICIES)
            + " | first come |"
        )
        lines.append("|---|---:|---:|---:|" + "---:|" * (len(POLICIES) + 1))
        for row in rows:
            found = shares(row)
            cells = [f"{found[p]:.3f}" if p in found else "-" for p in (*POLICIES, "first come")]
            name = label(study["documents"][row["document"]], detailed=True)
            lines.append(
                f"| {name} | {row['peak']} | {row['optimum'] / row['total']:.4f} | {row['price']:.4f} | "
                + " | ".join(cells)
                + " |"
            )
        lines.append("")
    return lines


def side_by_side(study):
    budgets, n = budgets_and_n(study)
    percents = [f"{round(100 * b / study['n'])} %" for b in budgets]
    lines = [
        f"| contract (n = {n}) | price at {percents[0]} | "
        + " | ".join(percents[1:])
        + f" | h2o / optimum ({' / '.join(p.rstrip(' %') for p in percents)} %) | tova | scissorhands |",
        "|---|" + "---:|" * (len(budgets) + len(POLICIES)),
    ]
    for document_index, document in enumerate(study["documents"]):
        rows = [
            row for b in budgets for row in study["rows"] if row["budget"] == b and row["document"] == document_index
        ]
        found_per_row = [shares(row) for row in rows]
        columns = []
        for policy in POLICIES:
            values = []
            for found in found_per_row:
                key = "first come" if policy == "h2o" and "first come" in found else policy
                if key in found:
                    values.append(f"{found[key]:.3f}")
            columns.append(" / ".join(values))
        prices = " | ".join(f"{row['price']:.4f}" for row in rows)
        cells = [label(document, detailed=False), prices, *columns]
        lines.append("|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=pathlib.Path, help="a contract study's contract.json")
    parser.add_argument("--layout", choices=("budgets", "side-by-side"), default="budgets")
    parser.add_argument("--check", type=pathlib.Path, help="fail when a row is not in this document")
    args = parser.parse_args()
    try:
        study = json.loads(args.study.read_text())
    except (OSError, ValueError) as error:
        sys.exit(f"contract_tables.py: cannot read {args.study}: {error}")
    lines = per_budget(study) if args.layout == "budgets" else side_by_side(study)
    if args.check is None:
        print("\n".join(lines))
        return
    sys.exit(check_rows([line for line in lines if line.startswith("| ")], args.check, args.study))


if __name__ == "__main__":
    main()
