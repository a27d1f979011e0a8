"""kvpress's own evaluation with the ceiling: kvpress's ``evaluation/evaluate.py`` (from its source
release, run unchanged) answers each data set under each press, and kvoracle adds the exact
query-aware prefill optimum as presses (the ceiling), its policies as presses, local data sets, and a
summary of every press as a share of the ceiling with intervals.

``register(evaluation)`` imports ``evaluate.py`` from kvpress's ``evaluation`` folder and adds to its
registries: ``kvoracle_optimum`` (per-head budgets) and ``kvoracle_optimum_layer``,
``_layerwise``, ``_model`` (shared budgets of the same total) as ``OptimumPress``es,
``kvoracle_<policy>`` for each of kvoracle's policies that can be a press (``KvoraclePress``), and
``data``'s local data sets (a folder holding ``test.jsonl`` or ``test.parquet``). A data set kvpress
knows (``ruler``, ``longbench``, ...) keeps kvpress's scorer; ``kvoracle`` (kvoracle's generated
suites in kvpress's columns) is scored by kvoracle's rule, as ``kvoracle tasks run`` scores it. It
also registers kvoracle's subclass of kvpress's pipeline, which builds the optimum's reference (the
full cache's answers to the context's questions) before each context is prefilled; every other
press runs exactly as in kvpress's pipeline.

``evaluate_ceiling(...)`` runs ``evaluate.py``'s command (``CliEntryPoint``) once per press and
compression ratio, the ceiling first, keeps each run's per-instance scores (kvpress's scorer applied
to each instance alone) next to kvpress's ``predictions.csv`` and ``metrics.json``, skips runs whose
files are already there (a run cut short resumes), and returns ``kvoracle.ceiling_share``'s result.
``python -m kvoracle.hf.kvpress_eval`` is the same from a shell.
"""

import argparse
import importlib
import json
import os
import sys

from .. import _core

CEILING = "kvoracle_optimum"
RATIOS = (0.25, 0.5, 0.75, 0.875, 1 - 1 / 16, 1 - 1 / 32)
_SCORES = "kvoracle_scores.json"  # per-instance scores of one run, beside kvpress's files
_last = {}  # the per-instance scores of the scorer's last call (read by evaluate_ceiling)


def parse_ratio(text):
    """A compression ratio: 0.5, or "16:1" (1 - 1/16)."""
    text = str(text).strip()
    try:
        if ":" in text:
            a, b = (float(x) for x in text.split(":"))
            value = 1.0 - b / a
        else:
            value = float(text)
    except ValueError:
        raise _core.KvoError(f"kvpress_eval: compression ratio '{text}' is not a number or N:1") from None
    if not 0 <= value < 1:
        raise _core.KvoError(f"kvpress_eval: compression ratio '{text}' is outside [0, 1)")
    return value


def _import_evaluation(evaluation):
    folder = os.path.abspath(evaluation)
    if not os.path.isfile(os.path.join(folder, "evaluate.py")) or not os.path.isfile(
        os.path.join(folder, "evaluate_registry.py")
    ):
        raise _core.KvoError(
            f"kvpress_eval: '{evaluation}' is not kvpress's evaluation folder (no evaluate.py and evaluate_registry.py)"
        )
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        return importlib.import_module("evaluate"), importlib.import_module("evaluate_registry")
    except ImportError as e:
        raise _core.KvoError(
            f"kvpress_eval: kvpress's evaluation cannot be imported ({e}); its scorers need kvpress's 'eval' extras"
        ) from None


def _instance_score(scorer, one):
    """kvpress's scorer on one instance: the single number of its {task: {metric: value}}."""
    metrics = scorer(one.copy())
    values = [v for task in metrics.values() for v in (task.values() if isinstance(task, dict) else [task])]
    return float(values[0]) if values else float("nan")


def _with_instance_scores(scorer):
    """kvpress's scorer, also scoring each instance alone (kept for evaluate_ceiling's intervals)."""

    def score(df):
        _last.clear()
        for index in df.index:
            _last[str(df.loc[index, "id"] if "id" in df.columns else index)] = _instance_score(scorer, df.loc[[index]])
        return scorer(df)

    score.kvoracle_wrapped = True
    return score


def _kvoracle_scorer(df):
    """kvoracle's rule (tasks run's score_answer) per instance, as percentages per task."""
    out = {}
    for task, group in df.groupby("task"):
        scores = [_core.score_answer(_row(r), str(r["predicted_answer"])) for _, r in group.iterrows()]
        out[task] = {"score": 100.0 * sum(scores) / len(scores)}
    return out


def _plain(value):
    """numpy arrays and scalars (as pandas holds a data set's columns) as Python lists and numbers."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _row(r):
    """A pandas row as the instance dict kvoracle's library reads."""
    return {key: _plain(value) for key, value in r.items() if key != "predicted_answer"}


def register(evaluation, data=None):
    """Adds kvoracle's presses, pipeline and the local data sets `data` ({name: folder}) to kvpress's
    evaluation (the folder holding evaluate.py); returns its evaluate module."""
    from kvpress.pipeline import KVPressTextGenerationPipeline
    from transformers import AutoModelForCausalLM
    from transformers.pipelines import PIPELINE_REGISTRY

    from .kvpress_press import KvoraclePress
    from .optimum_press import OptimumPress

    evaluate, registry = _import_evaluation(evaluation)
    registry.PRESS_REGISTRY[CEILING] = OptimumPress()
    for scope in ("layer", "layerwise", "model"):
        registry.PRESS_REGISTRY[f"{CEILING}_{scope}"] = OptimumPress(scope=scope)
    for policy in _core.task_request(protocol="prefill")["policies"]:
        registry.PRESS_REGISTRY[f"kvoracle_{policy}"] = KvoraclePress(policy="policy:" + policy)
    for name, folder in (data or {}).items():
        if not os.path.isdir(folder):
            raise _core.KvoError(f"kvpress_eval: data set '{name}': '{folder}' is not a folder")
        if not any(os.path.exists(os.path.join(folder, f"test.{ext}")) for ext in ("jsonl", "json", "parquet")):
            raise _core.KvoError(f"kvpress_eval: data set '{name}': '{folder}' holds no test.jsonl or test.parquet")
        registry.DATASET_REGISTRY[name] = os.path.abspath(folder)
        if name not in registry.SCORER_REGISTRY:
            registry.SCORER_REGISTRY[name] = _kvoracle_scorer
    for name, scorer in list(registry.SCORER_REGISTRY.items()):
        if not getattr(scorer, "kvoracle_wrapped", False):
            registry.SCORER_REGISTRY[name] = _with_instance_scores(scorer)

    class CeilingPipeline(KVPressTextGenerationPipeline):
        """kvpress's pipeline; before an OptimumPress prefills a context, the full cache's reference."""

        def _forward(self, input_tensors, max_new_tokens=50, press=None, cache=None):
            if isinstance(press, OptimumPress):
                press.prepare(
                    self.model,
                    input_tensors["context_ids"].to(self.model.device),
                    [q.to(self.model.device) for q in input_tensors["questions_ids"]],
                    max_new_tokens,
                )
            return super()._forward(input_tensors, max_new_tokens=max_new_tokens, press=press, cache=cache)

    PIPELINE_REGISTRY.register_pipeline(
        "kv-press-text-generation", pipeline_class=CeilingPipeline, pt_model=AutoModelForCausalLM
    )
    return evaluate


def transformers_folder(gguf, folder):
    """A GGUF model saved once as a transformers folder (model and tokenizer; evaluate.py loads a
    folder or a hub name); returns the folder. The tokenizer is the GGUF's as transformers reads it."""
    if os.path.exists(os.path.join(folder, "config.json")):
        return folder
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where, name = os.path.split(os.path.abspath(gguf))
    if not os.path.isfile(gguf):
        raise _core.KvoError(f"kvpress_eval: model file '{gguf}' does not exist")
    tmp = f"{folder}.tmp{os.getpid()}"
    AutoModelForCausalLM.from_pretrained(where, gguf_file=name).save_pretrained(tmp)
    AutoTokenizer.from_pretrained(where, gguf_file=name).save_pretrained(tmp)
    os.replace(tmp, folder)
    return folder


def _run_folder(output_dir, config):
    """Where evaluate.py writes one run (its get_results_dir's name, without creating it)."""
    parts = [
        config["dataset"],
        str(config["data_dir"]) if config.get("data_dir") else "",
        config["model"].replace("/", "--"),
        config["press_name"],
        f"{0.0 if config['press_name'] == 'no_press' else config['compression_ratio']:.2f}",  # evaluate.py's override
    ]
    if config.get("fraction", 1.0) < 1.0:
        parts.append(f"fraction{config['fraction']:.3f}")
    if config.get("max_context_length") is not None:
        parts.append(f"max_context{config['max_context_length']}")
    if config.get("query_aware"):
        parts.append("query_aware")
    return os.path.join(output_dir, "__".join(p for p in parts if p))


def evaluate_ceiling(
    evaluation,
    model,
    dataset,
    presses,
    ratios=RATIOS,
    *,
    data=None,
    output_dir="./results",
    ceiling=CEILING,
    progress=False,
    **config,
):
    """Runs kvpress's evaluate.py for the ceiling and each press at each compression ratio and returns
    kvoracle.ceiling_share's result (rows, report), with `runs`: each run's folder and kvpress's
    metrics. model: a hub name or a local folder (model and tokenizer); dataset: a name of kvpress's
    DATASET_REGISTRY or of `data`; config: evaluate.py's other fields (fraction, device,
    model_kwargs, max_new_tokens, max_context_length, query_aware, data_dir, ...).
    """
    import yaml
    from tqdm.auto import tqdm

    evaluate = register(evaluation, data)
    ratios = [parse_ratio(r) for r in ratios]
    presses = [p for p in presses if p != ceiling]
    for name in [ceiling, *presses]:
        if name not in evaluate.PRESS_REGISTRY:
            raise _core.KvoError(f"kvpress_eval: press '{name}' is not in kvpress's PRESS_REGISTRY")
    if dataset not in evaluate.DATASET_REGISTRY:
        raise _core.KvoError(
            f"kvpress_eval: data set '{dataset}' is neither kvpress's nor given in data= "
            f"(kvpress's: {', '.join(sorted(evaluate.DATASET_REGISTRY))})"
        )
    unknown = sorted(set(config) - set(evaluate.EvaluationConfig.__dataclass_fields__))
    if unknown:
        raise _core.KvoError(f"kvpress_eval: '{unknown[0]}' is not a field of kvpress's EvaluationConfig")
    os.makedirs(output_dir, exist_ok=True)
    records, runs = [], []
    bar = tqdm(total=len(ratios) * (1 + len(presses)), desc="kvpress evaluation", disable=not progress)
    for ratio in ratios:
        for press in [ceiling, *presses]:
            fields = {
                **config,
                "dataset": dataset,
                "model": model,
                "press_name": press,
                "compression_ratio": ratio,
                "output_dir": output_dir,
                "log_level": config.get("log_level", "WARNING"),
            }
            folder = _run_folder(output_dir, fields)
            files = [os.path.join(folder, f) for f in ("predictions.csv", "metrics.json", _SCORES)]
            if not all(os.path.exists(f) for f in files):  # else: done before, resumed
                config_file = os.path.join(output_dir, "kvoracle-evaluate-config.yaml")
                with open(config_file, "w") as f:
                    yaml.safe_dump(fields, f)
                _last.clear()
                evaluate.CliEntryPoint()(config_file=config_file)
                with open(files[2] + ".tmp", "w") as f:
                    json.dump(dict(_last), f)
                os.replace(files[2] + ".tmp", files[2])
            with open(files[2]) as f:
                scores = json.load(f)
            with open(files[1]) as f:
                runs.append({"press": press, "compression_ratio": ratio, "folder": folder, "metrics": json.load(f)})
            records += [
                {"press": press, "compression_ratio": ratio, "instance": i, "score": s} for i, s in scores.items()
            ]
            bar.update()
    bar.close()
    result = _core.ceiling_share(records, ceiling=ceiling)
    result["runs"] = runs
    return result


def main(argv=None):
    """python -m kvoracle.hf.kvpress_eval: evaluate_ceiling from a shell; prints the table and writes
    the JSON and ceiling-share.svg into --output_dir."""
    parser = argparse.ArgumentParser(prog="python -m kvoracle.hf.kvpress_eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluation", required=True, help="kvpress's evaluation folder (holds evaluate.py)")
    parser.add_argument(
        "--model", required=True, help="a hub name, a local folder with model and tokenizer, or a .gguf file"
    )
    parser.add_argument("--dataset", required=True, help="kvpress's data set name, or one given with --data")
    parser.add_argument("--data", action="append", default=[], help="NAME=FOLDER: a local data set (test.jsonl)")
    parser.add_argument("--presses", default="knorm,snapkv,streaming_llm", help="kvpress's PRESS_REGISTRY names")
    parser.add_argument("--ratios", default="0.25,0.5,0.75,0.875,16:1,32:1", help="compression ratios (N:1 too)")
    parser.add_argument("--output_dir", default="./results")
    parser.add_argument("--ceiling", default=CEILING)
    parser.add_argument("--fraction", type=float, default=1.0)
    parser.add_argument("--device", default=None)
    parser.add_argument("--max_new_tokens", type=int, default=None)
    parser.add_argument("--max_context_length", type=int, default=None)
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--dtype", default="auto", help="the model's dtype (model_kwargs.dtype)")
    parser.add_argument("--attn_implementation", default=None, help="model_kwargs.attn_implementation")
    args = parser.parse_args(argv)
    data = {}
    for item in args.data:
        name, sep, folder = item.partition("=")
        if not sep:
            print(f"kvpress_eval: --data '{item}' is not NAME=FOLDER", file=sys.stderr)
            return 2
        data[name] = folder
    optional = {k: getattr(args, k) for k in ("device", "max_new_tokens", "max_context_length", "data_dir")}
    try:
        model = args.model
        if model.endswith(".gguf"):
            os.makedirs(args.output_dir, exist_ok=True)
            stem = os.path.splitext(os.path.basename(model))[0]
            model = transformers_folder(model, os.path.join(os.path.abspath(args.output_dir), "model-" + stem))
        result = evaluate_ceiling(
            args.evaluation,
            model,
            args.dataset,
            [p for p in args.presses.split(",") if p],
            [r for r in args.ratios.split(",") if r],
            data=data,
            output_dir=args.output_dir,
            ceiling=args.ceiling,
            progress=True,
            fraction=args.fraction,
            model_kwargs={"dtype": args.dtype, "attn_implementation": args.attn_implementation},
            **{k: v for k, v in optional.items() if v is not None},
        )
    except _core.KvoError as e:
        print(str(e), file=sys.stderr)
        return 1
    print(result.report)
    result.report.save_plots(args.output_dir)
    path = os.path.join(args.output_dir, "ceiling-share.json")
    with open(path + ".tmp", "w") as f:
        json.dump({k: v for k, v in result.items()}, f, indent=1)
    os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
