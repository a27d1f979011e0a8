"""The KvoraclePress configurations every kvpress-facing test runs, read off kvoracle's registries:
each policy that can cut a prompt and each press kvoracle computes (names a press and a policy
share written qualified), at two compression ratios; also what the kvpress suite plugin adds to
kvpress's list of presses. Small windows, so that a prompt of a few dozen tokens serves every press."""

import kvoracle

_core = kvoracle._core
# Values for the press parameters that have them (kvpress's names); each press takes those it reads.
SMALL = {"window_size": 2, "n_sink": 2, "lag_size": 4, "local_window_size": 4, "chunk_size": 16, "seed": 5}
PRESS_NAMES = [name for name, _ in kvoracle.press_names()]
POLICY_NAMES = [p["name"] for p in kvoracle.policies()]
SHARED = [name for name in POLICY_NAMES if name in PRESS_NAMES]  # both a policy and a press
FIRST_POLICY = POLICY_NAMES[0]  # the registry's default

# label -> KvoraclePress options
POLICIES = {
    _core.prefill_set(f"policy:{p['name']}")["label"]: ({"seed": 3} if p["seeded"] else {})
    for p in kvoracle.policies()
    if not _core.policy_press_refusal(p["name"], 0.5)
}
PRESSES = {
    _core.prefill_set(f"press:{name}")["label"]: {k: v for k, v in SMALL.items() if k in _core.press_parameters(name)}
    for name in PRESS_NAMES
}
CONFIGS = {**POLICIES, **PRESSES}
RATIOS = (0.2, 0.8)


def small_llama(attn="eager"):
    """The random small GQA Llama the KvoraclePress tests run on (seeded; sharp, content-dependent
    attention; nothing downloaded)."""
    import torch
    import transformers

    torch.manual_seed(11)
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        initializer_range=0.2,
    )
    return transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attn).eval()
