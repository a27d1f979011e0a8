"""kvoracle tasks run against code nobody here wrote: the same instances answered by kvpress's own
pipeline (KVPressTextGenerationPipeline._forward on kvoracle's token ids: the context prefilled,
the question at the context's positions, a greedy answer) on the tiny test model in transformers,
with kvoracle.hf's EvictingCache for streaming eviction and with kvpress's own presses for prefill
compression. Every answer is the same text (4 of 4 streaming, 20 of 20 presses). The tiny model's
random weights make its answers nonsense but sensitive: nearly every press gives a different text
for the same instance, so a kept set that differs shows in the answer."""

import math
import os

import kvoracle as kvo
import pytest
import torch
from kvoracle.hf import EvictingCache

pytestmark = pytest.mark.transformers

SUITE = dict(tasks=["passkey", "niah"], lengths=[256], depths=[0.5], per_cell=1, task_seed=5)
# kvpress 0.5.5's pipeline cannot answer after PyramidKVPress under eager attention (its layers keep
# different counts, and the question's mask is sized for one count): "The size of tensor a (185)
# must match the size of tensor b (189)". kvoracle's pyramidkv rows run; this cross-check leaves it out.
PIPELINE_FAILS = {"pyramidkv"}
POLICY = kvo.policies()[0]["name"]  # the registry's first policy (h2o)


@pytest.fixture(scope="module")
def setup(tiny_model_path, hf_tiny):
    from transformers import AutoTokenizer, pipeline

    kvpress = pytest.importorskip("kvpress", reason="kvpress is installed by scripts/setup-deps")
    m = kvo.Model(tiny_model_path)
    tok = AutoTokenizer.from_pretrained(os.path.dirname(tiny_model_path), gguf_file=os.path.basename(tiny_model_path))
    pipe = pipeline("kv-press-text-generation", model=hf_tiny, tokenizer=tok)
    return kvpress, m, pipe, m.generate_tasks(**SUITE)


def kvpress_answer(pipe, m, instance, press=None, cache=None):
    t = m.task_tokens(instance)
    ids = {"context_ids": torch.tensor([t["context"]]), "questions_ids": [torch.tensor([t["question"]])]}
    with torch.no_grad():
        return pipe._forward(ids, max_new_tokens=instance["max_new_tokens"], press=press, cache=cache)[0]


def test_streaming_rows_answer_as_kvpress_pipeline_with_the_evicting_cache(hf_tiny, setup):
    _, m, pipe, instances = setup
    res = m.run_tasks(instances, policies=[POLICY], budgets=[0.5], topk=False)
    ours = {(o["instance"], o["row"]): o["answer"] for o in res["outcomes"]}
    differ = []
    try:
        for inst in instances:
            t = m.task_tokens(inst)
            k = math.floor(0.5 * (len(t["context"]) + len(t["question"])) + 1e-9)  # tasks run's budget
            for row, cache in (("full-cache", None), (POLICY, EvictingCache(hf_tiny, POLICY, str(k)))):
                theirs = kvpress_answer(pipe, m, inst, cache=cache)
                if theirs != ours[(inst["id"], row)]:
                    differ.append((inst["id"], row, theirs, ours[(inst["id"], row)]))
    finally:
        hf_tiny.set_attn_implementation("eager")  # EvictingCache routed it through kvoracle's
    assert not differ, differ
    assert len(res["outcomes"]) == 2 * len(instances)


@pytest.mark.kvpress
def test_prefill_rows_answer_as_kvpress_presses_in_its_pipeline(hf_tiny, setup):
    kvpress, m, pipe, instances = setup
    hf_tiny.set_attn_implementation("eager")  # kvpress's attention-scored presses read eager weights
    presses = [(name, getattr(kvpress, cls)) for name, cls in kvo.press_names() if name not in PIPELINE_FAILS]
    res = m.run_tasks(
        instances, protocol="prefill", policies=[], presses=[n for n, _ in presses], budgets=[0.5], optimum=False
    )
    ours = {(o["instance"], o["row"]): o["answer"] for o in res["outcomes"]}
    # A press that shares its name with a policy (tova, random) has the row press:NAME.
    label = {name: kvo._core.prefill_set("press:" + name)["label"] for name, _ in presses}
    differ = []
    for inst in instances:
        for name, cls in presses:
            seeded = "seed" in cls.__dataclass_fields__  # RandomPress: kvoracle's default seed is 0
            theirs = kvpress_answer(pipe, m, inst, press=cls(compression_ratio=0.5, **({"seed": 0} if seeded else {})))
            if theirs != ours[(inst["id"], label[name])]:
                differ.append((inst["id"], name, theirs, ours[(inst["id"], label[name])]))
    assert not differ, differ
    assert len(ours) == len(instances) * (1 + len(presses)) >= 2 * 10
