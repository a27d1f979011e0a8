"""kvoracle's power-law fit (check E2) against the powerlaw package (Alstott, Bullmore and Plenz),
which implements the same method of Clauset, Shalizi and Newman: exponent, Kolmogorov-Smirnov
distance and likelihood ratios at a given x_min, and the x_min search, on samples of known law and
on the accumulated attention of real SmolLM2 heads (the golden trace)."""

import pathlib
import warnings

import kvoracle
import numpy as np
import powerlaw
import pytest
from causal_attention import causal_probs

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "golden-gpl3-128.safetensors"


def reference(values, xmin):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return powerlaw.Fit(values, xmin=xmin, parameter_ranges={"alpha": [1.0, 100.0]}, verbose=False)


def compare(values, xmin):
    """Our fit at x_min against the package's: exponent, distance, both likelihood-ratio tests."""
    ours = kvoracle.fit_power_law(list(values), xmin=float(xmin))
    ref = reference(values, xmin)
    assert ours["n_tail"] == ref.n_tail
    assert ours["alpha"] == pytest.approx(ref.power_law.alpha, rel=1e-6)
    assert ours["ks"] == pytest.approx(ref.power_law.D, rel=1e-6, abs=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r_exp, p_exp = ref.distribution_compare("power_law", "exponential")
        r_ln, p_ln = ref.distribution_compare("power_law", "lognormal")
    assert ours["exponential"]["R"] == pytest.approx(r_exp, rel=1e-4, abs=1e-6)
    assert ours["exponential"]["p"] == pytest.approx(p_exp, rel=1e-3, abs=1e-6)
    # The package stops its log-normal search at scipy's default tolerance: ours reaches at least
    # its likelihood (R no larger) and the same test to that tolerance.
    assert ours["lognormal"]["R"] <= r_ln + 1e-6
    assert ours["lognormal"]["R"] == pytest.approx(r_ln, rel=1e-3, abs=1e-3)
    assert ours["lognormal"]["p"] == pytest.approx(p_ln, abs=1e-2)
    return ours


def sample(kind, n, seed):
    g = np.random.default_rng(seed)
    if kind == "pareto":
        return (1.0 - g.random(n)) ** (-1.0 / 1.3)  # alpha = 2.3
    if kind == "lognormal":
        return g.lognormal(0.3, 0.9, n)
    return 1.0 + g.exponential(1.0, n)


@pytest.mark.parametrize("kind", ["pareto", "lognormal", "exponential"])
def test_the_tail_at_a_given_xmin_is_the_packages(kind):
    x = sample(kind, 1500, 7)
    compare(x, np.quantile(x, 0.4, method="lower"))


def test_the_xmin_search_minimises_the_packages_distance():
    x = sample("pareto", 150, 11)
    ours = kvoracle.fit_power_law(list(x), bootstrap=0, max_candidates=10_000, min_tail=10)
    xs = np.sort(np.unique(x))
    candidates = [c for c in xs[:-1] if np.sum(x >= c) >= 10]
    distances = [reference(x, c).power_law.D for c in candidates]
    assert ours["xmin"] == candidates[int(np.argmin(distances))]
    assert ours["ks"] == pytest.approx(min(distances), rel=1e-6)


def test_real_heads_accumulated_attention():
    trace = kvoracle.read_trace(str(GOLDEN))
    probs = causal_probs(trace.q(0), trace.k(0), trace.attn_scale)
    for head in range(probs.shape[0]):
        acc = probs[head].sum(axis=0)  # A_{n-1}(j): what every query gave token j
        ours = kvoracle.fit_power_law(list(acc), bootstrap=0, min_tail=10)
        compare(acc, ours["xmin"])


def test_bad_input_is_one_clear_error():
    with pytest.raises(kvoracle.KvoError, match="every value must be finite and positive"):
        kvoracle.fit_power_law([1.0, 2.0, 0.0] + [3.0] * 20)
