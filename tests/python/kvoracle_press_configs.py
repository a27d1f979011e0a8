"""The KvoraclePress configurations every kvpress-facing test runs: each kvoracle policy that can
cut a prompt and each press kvoracle computes (shared names qualified), at two compression ratios;
also what the kvpress suite plugin adds to kvpress's list of presses. Small windows, so that a
prompt of a few dozen tokens serves every press."""
import kvoracle

# policy name -> KvoraclePress options
POLICIES = {
    "h2o": {}, "h2o-realdrop": {}, "h2o-mask": {}, "h2o-paper": {}, "greedy": {}, "streaming": {}, "window": {},
    "policy:tova": {}, "scissorhands": {}, "policy:random": {"seed": 3},
}
PRESSES = {
    "observed_attention": {}, "press:tova": {}, "snapkv": {"window_size": 2}, "pyramidkv": {"window_size": 2},
    "knorm": {}, "keydiff": {}, "streaming_llm": {"n_sink": 2}, "lagkv": {"n_sink": 2, "lag_size": 4},
    "cur": {"n_sink": 2, "local_window_size": 4}, "non_causal_attn": {"chunk_size": 16}, "press:random": {"seed": 5},
}
CONFIGS = {**POLICIES, **PRESSES}
RATIOS = (0.2, 0.8)


def every_configuration_is_listed():
    """The lists above cover every policy that can act as a press and every press (a new one must
    be added here, so that the suites see it)."""
    policies = {p["name"] for p in kvoracle.policies() if not kvoracle._core.policy_press_refusal(p["name"], 0.5)}
    presses = {name for name, _ in kvoracle.press_names()}
    named = {kvoracle._core.prefill_set(c)["name"] for c in POLICIES}
    pressed = {kvoracle._core.prefill_set(c)["name"] for c in PRESSES}
    return policies - named, presses - pressed
