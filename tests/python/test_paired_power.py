"""The task suite's paired statistics against scipy: the sign test's p-values are scipy's exact
binomial test, the power of a design is scipy's binomial distributions summed over every outcome,
`kvoracle.paired_power` gives what `kvoracle tasks power` gives, and a run's comparisons count what
its outcomes say."""

import json
import subprocess

import kvoracle as kvo
import pytest
from scipy import stats
from task_outcomes import outcome


def scipy_power(n, discordance, difference, alpha):
    """Every number of discordant instances d, then every split of them, tested by scipy."""
    q = (discordance + difference) / (2 * discordance)
    power = 0.0
    for d in range(1, n + 1):  # no discordant instance: nothing to reject on
        pd = stats.binom.pmf(d, n, discordance)
        if pd < 1e-18:
            continue
        for b in range(d + 1):
            if stats.binomtest(b, d, 0.5).pvalue < alpha:
                power += pd * stats.binom.pmf(b, d, q)
    return power


@pytest.mark.parametrize("n,discordance", [(40, 0.2), (60, 0.5), (25, 1.0)])
def test_power_is_scipys(n, discordance):
    r = kvo.paired_power(discordance=[discordance], instances=n, difference=0.1, alpha=0.01, power=0.8)
    assert r["rows"][0]["power_at_size"] == pytest.approx(scipy_power(n, discordance, 0.1, 0.01), abs=1e-9)


def test_python_and_cli_give_one_table(kvoracle, tmp_path):
    out = tmp_path / "power.json"
    subprocess.run(
        [kvoracle, "-q", "tasks", "power", "--instances", "240", "--json", str(out)], check=True, capture_output=True
    )
    r = kvo.paired_power(instances=240)
    assert json.loads(out.read_text()) == json.loads(json.dumps({k: r[k] for k in ("request", "rows")}))
    assert "power at 240" in r.report.text
    with pytest.raises(kvo.KvoError, match="discordance: 0.0500"):
        kvo.paired_power(discordance=[0.05])
    with pytest.raises(kvo.KvoError, match="alpha"):
        kvo.paired_power(alpha=0.9)


def test_comparisons_of_a_run_are_scipys_sign_tests():
    outcomes = []
    for i in range(30):
        task = "niah" if i % 2 else "passkey"
        outcomes.append(outcome(f"i{i}", task, "full-cache", 1.0, float(i < 27)))
        outcomes.append(outcome(f"i{i}", task, "h2o", 0.2, float(i < 5 or i == 29)))
    r = kvo.task_report({"protocol": "dynamic", "outcomes": outcomes})
    c = next(c for c in r["comparisons"] if c["task"] == "" and c["row"] == "h2o")
    assert (c["better"], c["worse"], c["instances"]) == (1, 22, 30)
    assert c["p_value"] == pytest.approx(stats.binomtest(1, 23, 0.5).pvalue, rel=1e-12)
    assert c["difference"] == pytest.approx(6 / 30 - 27 / 30)
    niah = next(c for c in r["comparisons"] if c["task"] == "niah" and c["row"] == "h2o")
    assert niah["instances"] == 15
