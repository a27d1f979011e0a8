"""bench/paper_findings.py (the tables of docs/findings.md section 12) on a hand-made study whose
every figure is known: task runs split by budget are merged (an instance the full cache answered in
both runs counts once), each table's rows are those its claim's records measured, the few-shot runs
make one table ordered by shots (the runs' .txt tables beside them are not read), the claims' paired
sign tests follow their tables, every run's findings are listed, and a few-shot run's rows are
compared pair by pair with the same contexts without shots."""

import json
import os
import subprocess
import sys

import kvoracle as kvo

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "paper_findings.py")
# Two rows of the registry; the tables show the rows the findings' records measured.
H2O, OTHER = (p["name"] for p in kvo.policies()[:2])


def outcome(instance, row, budget, score, shots=0):
    return {"instance": instance, "row": row, "budget": budget, "score": score, "shots": shots}


def finding(claim, budget_label, holds, metric, rows=(), paired=()):
    detail = {"budget_label": budget_label, "budget": 0.5, "metric": "accuracy", "full": 1.0, "tolerance": 0.05}
    detail.update({row: 0.5 for row in rows})
    if paired:
        detail["paired"] = list(paired)
    return {"id": claim, "variant": "accuracy", "holds": holds, "metric": metric, "detail": detail}


def sign_test(row, against, instances, better, worse, p):
    return {"row": row, "against": against, "instances": instances, "better": better, "worse": worse, "p_value": p}


def write(path, outcomes, findings=()):
    path.write_text(json.dumps({"outcomes": outcomes, "paper_experiments": list(findings)}))


def test_tables_of_a_known_study(tmp_path):
    full = [outcome(f"i{x}", "full-cache", 1.0, 1.0) for x in range(4)]  # 4 of 4
    # Two runs, one budget each, both with the full cache's row: 4 instances, not 8.
    write(tmp_path / "tasks.json", full + [outcome(f"i{x}", H2O, 0.2, float(x == 0)) for x in range(4)])
    write(
        tmp_path / "tasks-50.json",
        full + [outcome(f"i{x}", H2O, 0.5, float(x < 3)) for x in range(4)],
        [finding("E5", "50%", False, 0.25, [H2O, OTHER], [sign_test(H2O, OTHER, 4, 0, 2, 0.5)])],
    )
    for shots, right in ((10, 2), (5, 1)):
        outs = [outcome(f"s{x}", "full-cache", 1.0, 1.0, shots) for x in range(2)]
        outs += [outcome(f"s{x}", H2O, b, float(x < right), shots) for x in range(2) for b in (0.2, 0.5)]
        write(
            tmp_path / f"tasks-shots{shots}.json",
            outs,
            [finding("E7", "20%", right == 2, 0.5 * (2 - right), [H2O])],
        )
        # The study keeps each run's table beside its JSON: not a run.
        (tmp_path / f"tasks-shots{shots}.txt").write_text("the run's own table\n")
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], check=True, capture_output=True, text=True).stdout
    assert "Accuracy: `kvoracle tasks run`, 4 instances, dynamic protocol, full cache 1.000." in out
    # E5's table has the two rows its record measured (the other one ran at no budget: dashes); the
    # tables of claims without records are left out.
    assert "(E5)" in out and "(E4)" not in out and "(E9)" not in out
    assert f"| `{H2O}` | 0.250 | 0.750 |" in out and f"| `{OTHER}` | – | – |" in out
    assert f"| shots | instances | full cache | `{H2O}` 20% | `{H2O}` 50% |" in out
    # Few shots: 5 before 10, each with its own instance count and h2o at both budgets.
    assert "| 5 | 2 | 1.000 | 0.500 | 0.500 |" in out and "| 10 | 2 | 1.000 | 1.000 | 1.000 |" in out
    assert out.index("| 5 | 2 |") < out.index("| 10 | 2 |")
    assert "| E5 | accuracy | 50% | no | 0.250 |" in out
    # The sign tests a record carries follow its claim's table.
    assert f"| `{H2O}` against `{OTHER}` | 50% | 4 | 0 | 2 | 0.5 |" in out
    assert out.index("(E5)") < out.index(f"| `{H2O}` against `{OTHER}`") < out.index("Table 4 (E7)")
    assert "| E7 | accuracy | 20% | yes | 0.000 |" in out and "| E7 | accuracy | 20% | no | 0.500 |" in out


def test_usage_without_a_directory():
    r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
    assert r.returncode == 2 and "usage: paper_findings.py OUTDIR" in r.stderr


def test_comparisons_between_policies_side_by_side_and_the_docs_check(tmp_path):
    full = [outcome(f"i{x}", "full-cache", 1.0, 1.0) for x in range(4)]
    rows = [outcome(f"i{x}", r, b, 0.5) for x in range(4) for r in (H2O, OTHER) for b in (0.2, 0.5)]
    e5 = [
        finding(
            "E5",
            label,
            False,
            0.5,
            [H2O, OTHER],
            [sign_test(H2O, OTHER, 4, 1, 3, p), sign_test(H2O, "full-cache", 4, 0, 4, 0.125)],
        )
        for label, p in (("20%", 0.625), ("50%", 0.0001234))
    ]
    write(tmp_path / "tasks.json", full + rows, e5)
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], check=True, capture_output=True, text=True).stdout
    # One line per comparison between two policies, every budget beside the others; the comparisons
    # against the full cache stay in the claim's own table only.
    line = f"| E5 | `{H2O}` against `{OTHER}` | 1 / 3 | 0.62 | 1 / 3 | 0.00012 |"
    assert "| claim | comparison | 20%: better / worse | p | 50%: better / worse | p |" in out and line in out
    assert "| E5 | `" + H2O + "` against `full-cache`" not in out
    # --check passes on a document that quotes the claim's table and that line, and names each
    # missing row otherwise.
    doc = tmp_path / "doc.md"
    doc.write_text(
        f"| full cache | 1.000 | 1.000 |\n  | `{H2O}` | 0.500 | 0.500 |\n| `{OTHER}` | 0.500 | 0.500 |\n{line}\n"
    )
    check = [sys.executable, SCRIPT, str(tmp_path), "--check", str(doc)]
    ok = subprocess.run(check, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout == "", ok.stdout
    doc.write_text(doc.read_text().replace("1 / 3 | 0.62", "1 / 3 | 0.63"))
    bad = subprocess.run(check, capture_output=True, text=True)
    assert (
        bad.returncode == 1
        and bad.stdout.strip() == f"{doc}: the row is missing or differs from the study {tmp_path}: {line}"
    )


def test_few_shot_rows_against_the_same_contexts_without_shots(tmp_path):
    # The ablation run answered i0..i3; the five-shot run answered the same contexts (i0-s5..i3-s5)
    # and one more (i4-s5), which pairs with nothing.
    plain = [outcome(f"i{x}", "full-cache", 1.0, float(x < 3)) for x in range(4)]
    plain += [outcome(f"i{x}", H2O, 0.2, float(x == 3)) for x in range(4)]
    write(tmp_path / "tasks.json", plain)
    shot = [outcome(f"i{x}-s5", "full-cache", 1.0, 1.0, 5) for x in range(5)]
    shot += [outcome(f"i{x}-s5", H2O, 0.2, float(x < 3), 5) for x in range(5)]
    write(tmp_path / "tasks-shots5.json", shot)
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], check=True, capture_output=True, text=True).stdout
    # Full cache: 3/4 without, 4/4 with (i3 better). h2o: i0..i2 better, i3 worse: 3 / 1, p = 0.625.
    assert "| 5 | full cache | – | 4 | 0.750 | 1.000 | 1 / 0 | 1 |" in out
    assert f"| 5 | `{H2O}` | 20% | 4 | 0.250 | 0.750 | 3 / 1 | 0.62 |" in out
    # Renamed contexts pair with nothing: no table.
    write(tmp_path / "tasks.json", [dict(o, instance="other-" + o["instance"]) for o in plain])
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], check=True, capture_output=True, text=True).stdout
    assert "without shots" not in out and "| 5 | 5 | 1.000 |" in out


def test_few_shot_rows_by_the_needles_depth(tmp_path):
    # Two depths, two instances each; h2o answers only at depth 1, holding the needle in every unit
    # there and in a quarter of them at depth 0.
    outs = []
    for x, depth in enumerate((0, 0, 1, 1)):
        outs.append(dict(outcome(f"i{x}-s5", "full-cache", 1.0, 1.0, 5), depth=depth, needles_held=1.0))
        outs.append(
            dict(outcome(f"i{x}-s5", H2O, 0.2, float(depth == 1), 5), depth=depth, needles_held=0.25 + 0.75 * depth)
        )
    write(tmp_path / "tasks-shots5.json", outs)
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], check=True, capture_output=True, text=True).stdout
    assert "| shots | row | budget | depth 0 | depth 1 |" in out
    assert "| 5 | full cache | – | 2 / 2, 1.000 | 2 / 2, 1.000 |" in out
    assert f"| 5 | `{H2O}` | 20% | 0 / 2, 0.250 | 2 / 2, 1.000 |" in out
    # Outcomes without depths (older runs): no such table.
    write(tmp_path / "tasks-shots5.json", [{k: v for k, v in o.items() if k != "depth"} for o in outs])
    out = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], check=True, capture_output=True, text=True).stdout
    assert "By the needle's depth" not in out and "| 5 | 4 | 1.000 |" in out
