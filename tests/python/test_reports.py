"""Every command's result carries what the CLI prints for it (`result.report`, a kvoracle.Report):
the same text, tables whose numbers are the exact values behind the printed ones, and the plots
the CLI writes. The result itself stays the dict or list it was."""

import subprocess

import kvoracle as kvo
import numpy as np
import pytest


def cli(kvoracle, *args):
    return subprocess.run([kvoracle, "-q", *map(str, args)], check=True, capture_output=True, text=True).stdout


def shown(stdout, path=None, name="the trace"):
    """The CLI's output without the lines naming files it wrote, the input's path as Python names it."""
    outputs = ("plot: ", "plots: ", "results: ", "per-step ")
    lines = [line for line in stdout.splitlines(keepends=True) if not line.startswith(outputs)]
    text = "".join(lines)
    return text.replace(str(path), name) if path else text


def test_allocation_report_is_the_clis_with_exact_numbers(kvoracle, trace_file, tmp_path):
    out = cli(kvoracle, "oracle", "allocation", trace_file, "--prompt-len", 30, "--compression-ratio", "0.25,0.5",
              "--scopes", "head,layer,model", "--plot", tmp_path / "a.svg")  # fmt: skip
    r = kvo.allocation_oracle(kvo.read_trace(str(trace_file)), prompt_len=30, compression_ratio=[0.25, 0.5],
                              scopes="head,layer,model")  # fmt: skip
    assert isinstance(r, dict) and "report" not in r and r["rows"]
    assert r.report.text == shown(out, trace_file)
    assert r.report.plots["allocation.svg"] == open(tmp_path / "a.svg").read()
    (table,) = r.report.tables
    assert table["columns"][:3] == ["scope", "page", "compression"]
    assert [row["gain"] for row in table["rows"]] == [x["gain"] for x in r["rows"]]  # not the printed 4 digits
    assert [row["k per unit"] for row in table["rows"]] == [x["k"] for x in r["rows"]]
    assert "| scope | page |" in r.report.markdown
    assert r.report.save_plots(str(tmp_path)) == [str(tmp_path / "allocation.svg")]


def test_list_results_carry_their_report(kvoracle, trace_file):
    trace = kvo.read_trace(str(trace_file))
    static = kvo.static_oracle(trace, budget="6", every=5)
    assert isinstance(static, list) and len(static) == 2 * 4 * 11  # steps 0, 5, ..., 45 and the last
    assert static.report.text == shown(
        cli(kvoracle, "oracle", "static", trace_file, "--budget", 6, "--every", 5), trace_file
    )
    heads = kvo.replay(trace, policy=kvo.policy.TOVA, budget="25%")
    assert isinstance(heads, list) and len(heads) == 8
    out = cli(kvoracle, "replay", trace_file, "--policy", "tova", "--budget", "25%")
    assert heads.report.text == shown(out, trace_file)
    mean = [row["mean retained mass"] for row in heads.report.tables[0]["rows"]]
    assert mean == pytest.approx(
        [np.mean([h["mean_retained_mass"] for h in heads if h["layer"] == layer]) for layer in (0, 1)], rel=1e-15
    )


def test_oracle_and_check_reports_are_the_clis(kvoracle, trace_file):
    trace = kvo.read_trace(str(trace_file))
    r = kvo.offline_oracle(str(trace_file), budget="8", prompt_len=0, threads=1)
    assert r.report.text == shown(cli(kvoracle, "oracle", "offline", trace_file, "--budget", 8, "--prompt-len", 0))
    p = kvo.prefill_oracle(trace, 30, presses="knorm,tova", compression_ratio=[0.5])
    out = cli(kvoracle, "oracle", "prefill", trace_file, "--prompt-len", 30, "--presses", "knorm,tova",
              "--compression-ratio", 0.5)  # fmt: skip
    assert p.report.text == shown(out, trace_file)
    s = kvo.score(trace, "h2o", budgets=["10%", "20%"], device="cpu", threads=1)
    out = cli(kvoracle, "-j", 1, "score", trace_file, "--policy", "h2o", "--budgets", "10%,20%", "--device", "cpu")
    assert s.report.text == shown("".join(out.splitlines(keepends=True)[:-1]), trace_file)  # less the timing line
    v = kvo.verify_traces([str(trace_file)], budget="25%", threads=1)
    out = cli(kvoracle, "-j", 1, "verify", trace_file, "--budget", "25%")
    assert "\n" + v.report.text == shown(out.split("\n", 1)[1])  # less the per-trace progress line
    one = kvo.verify(trace, budget="25%")
    assert "E3: not applicable" in one.report.text and one.report.text == v.report.text


def test_closed_loop_reports_are_the_clis(kvoracle, tiny_model_path, tmp_path):
    text = "/usr/share/common-licenses/GPL-3"
    out = cli(kvoracle, "eval", "--model", tiny_model_path, "--text", text, "--tokens", 32, "--policies",
              "h2o,window", "--budgets", "25%,50%", "--plot", tmp_path / "e.svg")  # fmt: skip
    m = kvo.Model(tiny_model_path)
    e = m.eval(open(text, encoding="utf-8").read(), tokens=32, policies=["h2o", "window"], budgets=["25%", "50%"])
    assert e.report.text == shown(out, text, "the text")
    assert e.report.plots["perplexity.svg"] == open(tmp_path / "e.svg").read()
    rows = e.report.tables[0]["rows"]
    assert [row["vs full"] for row in rows] == [p["ppl"] / e["full_ppl"] for p in e["points"]]
    cli(kvoracle, "tasks", "run", "--model", tiny_model_path, "--tasks", "passkey", "--lengths", 256, "--per-cell", 2,
        "--policies", "h2o", "--budgets", 0.5, "--json", tmp_path / "t.json", "--plots", tmp_path)  # fmt: skip
    out = cli(kvoracle, "tasks", "report", tmp_path / "t.json")
    t = kvo.task_report(str(tmp_path / "t.json"))
    assert t.report.text == shown(out.split("\n", 1)[1])  # less the heading naming the file
    assert sorted(t.report.plots) == ["accuracy-passkey-256.svg", "depth-passkey-full-cache-1.000.svg",
                                      "depth-passkey-h2o-0.500.svg", "depth-passkey-topk-0.500.svg"]  # fmt: skip
    for name, svg in t.report.plots.items():
        assert svg == open(tmp_path / name).read()
