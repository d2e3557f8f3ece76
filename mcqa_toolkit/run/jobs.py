"""Jobs: a params file (models x datasets x languages x strategies) expanded into run folders, the resume
contract, and the steps `notebooks/run_model.ipynb` runs for one job (run.grid executes the notebooks).

A job is complete when its run folder holds a finished run (records.parquet + provenance with complete=True)
AND a summary.json written with the same job parameters (RESUME_KEYS); anything else is (re-)executed, and
the runner itself refuses to mix a different strategy, model or dataset into existing records.
"""
from __future__ import annotations

import itertools
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.run.store import RunDir
from mcqa_toolkit.run.strategy import Strategy, build_strategy

PARAM_KEYS = {"output_dir", "models", "datasets", "languages", "strategies", "limit", "seed", "shuffles", "shots",
              "device", "dtype", "min_k", "kernel", "judges", "judge_combine"}
# the notebook parameters that must match for a finished run folder to count as this job (and the backend kind)
RESUME_KEYS = ("MODEL", "DATASET", "DATASET_ARGS", "LANGUAGE", "STRATEGY", "SHOTS", "SHUFFLES", "SEED", "LIMIT",
               "JUDGES", "JUDGE_COMBINE")


def load_items(dataset: str, dataset_args: dict[str, Any] | None = None, language: str | None = None) -> ItemSet:
    """Items of a registered dataset (every question type), restricted to `language` (demo: loaded in that
    language only)."""
    args = dict(dataset_args or {})
    if dataset == "demo" and language is not None:
        args.setdefault("language", language)
    items = load(dataset, **args)
    if language is not None:
        items = items.filter(language=language)
        if not len(items):
            raise ValueError(f"dataset {dataset!r} has no items in language {language!r}")
    return items


@dataclass(frozen=True)
class Job:
    """One model x dataset x language x strategy combination and its run folder."""

    model: str                       # model name/path (hf) or the served model's name (API backends)
    dataset: str
    dataset_args: dict[str, Any]
    language: str | None
    strategy: Any                    # a predefined name or a dict of Strategy fields
    out_dir: Path
    shots: int | None = None
    shuffles: int | None = None
    seed: int | None = None
    limit: int | None = None
    device: str | None = None
    dtype: str | None = None
    min_k: bool = True
    backend_options: dict[str, Any] = field(default_factory=dict)  # {backend: openai, base_url: ..., ...}; {} = hf
    judges: list[Any] | None = None  # judge models of short answers (names/paths/backend dicts); None: no judge
    judge_combine: str | None = None  # mean | majority (None: mean)

    @property
    def run_dir(self) -> RunDir:
        return RunDir(self.out_dir)

    def parameters(self) -> dict[str, Any]:
        """The run notebook's parameters for this job (papermill injects them)."""
        return {"MODEL": self.model, "BACKEND": self.backend_options, "DATASET": self.dataset,
                "DATASET_ARGS": self.dataset_args,
                "LANGUAGE": self.language, "STRATEGY": self.strategy, "OUTPUT_DIR": str(self.out_dir),
                "SHOTS": self.shots, "SHUFFLES": self.shuffles, "SEED": self.seed, "LIMIT": self.limit,
                "DEVICE": self.device, "DTYPE": self.dtype, "MIN_K": self.min_k, "JUDGES": self.judges,
                "JUDGE_COMBINE": self.judge_combine}

    @classmethod
    def from_parameters(cls, **params: Any) -> "Job":
        """The job a run notebook was given (its UPPER_CASE parameters)."""
        fields = {k.lower(): v for k, v in params.items()}
        fields["backend_options"] = dict(fields.pop("backend", None) or {})
        out = fields.pop("output_dir")  # None: a fresh temporary folder (tests re-execute the notebook)
        fields["out_dir"] = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="mcqa_run_"))
        return cls(**fields)

    # ---- the steps of one run ----------------------------------------------------------------------------
    def items(self) -> ItemSet:
        return load_items(self.dataset, self.dataset_args, self.language)

    def build_strategy(self) -> Strategy:
        return build_strategy(self.strategy, shots=self.shots, shuffles=self.shuffles, seed=self.seed)

    def backend(self, reuse: Any = None) -> Any:
        """The job's backend; `reuse` (the previous job's backend in the same kernel) is renewed instead of
        loaded again when it was loaded from the same model entry (backends.load_backend)."""
        from mcqa_toolkit.backends import load_backend

        return load_backend({"model": self.model, **self.backend_options}, reuse=reuse, device=self.device,
                            dtype=self.dtype)

    def judging(self, backend: Any) -> dict[str, Any]:
        """run()'s judges= and combine= arguments: an LLMJudge per entry of `judges` (an entry naming the run's
        own model reuses its loaded backend) and the combination rule."""
        from mcqa_toolkit.backends import load_backend
        from mcqa_toolkit.scoring.judge import LLMJudge

        judges = [LLMJudge(backend if spec == self.model else load_backend(spec, device=self.device, dtype=self.dtype),
                           name=model_label(spec)) for spec in (self.judges or [])]
        return {"judges": judges, "combine": self.judge_combine or "mean"}

    def measure_min_k(self, backend: Any, items: ItemSet, records: pd.DataFrame) -> pd.DataFrame:
        """Min-K% prob of the evaluated questions, written to the run folder."""
        from mcqa_toolkit.scoring.min_k import min_k_table

        table = min_k_table(backend, items.filter(item_id=set(records["item_id"])))
        self.run_dir.write_min_k(table)
        return table

    def write_summary(self, summary: dict[str, Any], strategy: Strategy) -> Path:
        """summary.json with the parameters that make this run folder count as this job (resume contract)."""
        params = {k: v for k, v in self.parameters().items() if k in RESUME_KEYS}
        return self.run_dir.write_summary(summary, {**params, "BACKEND_KIND": self.backend_options.get("backend", "hf"),
                                                    "strategy_hash": strategy.hash})

    def is_complete(self) -> bool:
        """A finished run made with the same parameters (else it is re-executed)."""
        rd = self.run_dir
        if not (rd.is_complete() and rd.summary_file.exists()):
            return False
        done, want = rd.summary().get("params", {}), self.parameters()
        kind = done.get("BACKEND_KIND", "hf") == self.backend_options.get("backend", "hf")
        return kind and all(done.get(k) == want.get(k) for k in RESUME_KEYS)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def _strategy_name(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict) and ("name" in spec or "base" in spec):
        return str(spec.get("name") or spec["base"])
    raise ValueError(f"strategy {spec!r}: give a predefined name or a dict with 'name' or 'base'")


def model_label(model: Any) -> str:
    """The name a model gets in run folder names: the entry's `name`, else its `model`, else the string."""
    if isinstance(model, dict):
        if "model" not in model:
            raise ValueError(f"model entry {model!r} needs a 'model'")
        return str(model.get("name") or model["model"])
    return str(model)


def load_params(path: str | Path) -> dict[str, Any]:
    """Read and check a params YAML (one clear error naming the file and the key)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"params file not found: {p}")
    try:
        params = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{p}: not valid YAML: {e}") from None
    if not isinstance(params, dict):
        raise ValueError(f"{p}: expected a mapping of keys such as models, datasets, strategies")
    unknown = sorted(set(params) - PARAM_KEYS)
    if unknown:
        raise ValueError(f"{p}: unknown key(s) {unknown}; allowed: {sorted(PARAM_KEYS)}")
    for key in ("models", "datasets", "strategies"):
        if not params.get(key) or not isinstance(params[key], list):
            raise ValueError(f"{p}: '{key}' must be a non-empty list")
    if params.get("judges") is not None and (not isinstance(params["judges"], list) or not params["judges"]):
        raise ValueError(f"{p}: 'judges' must be a non-empty list of models (or left out)")
    if params.get("judge_combine") not in (None, "mean", "majority"):
        raise ValueError(f"{p}: 'judge_combine' must be mean or majority, got {params['judge_combine']!r}")
    return params


def expand(params: dict[str, Any], base_dir: Path | None = None) -> list[Job]:
    """The product models x datasets x languages x strategies as Jobs with their run folders."""
    out = Path(params.get("output_dir", "outputs"))
    if base_dir is not None and not out.is_absolute():
        out = base_dir / out
    options = {k: params.get(k) for k in ("limit", "seed", "shuffles", "shots", "device", "dtype", "judges",
                                          "judge_combine")}
    wanted_min_k = params.get("min_k") is None or bool(params["min_k"])
    jobs: list[Job] = []
    min_k_done: set[tuple] = set()  # Min-K% depends on model and items only: measure it once per combination
    datasets = [d if isinstance(d, dict) else {"name": d} for d in params["datasets"]]
    for model, ds, lang, st in itertools.product(params["models"], datasets, params.get("languages") or [None],
                                                 params["strategies"]):
        label = ds.get("label", ds["name"])
        name = "__".join(_slug(str(x)) for x in (model_label(model), label, lang or "all", _strategy_name(st)))
        key = (model_label(model), label, lang)
        entry = dict(model) if isinstance(model, dict) else {"model": model}
        args = dict(ds.get("args") or {})
        if base_dir is not None and isinstance(args.get("path"), str) and not Path(args["path"]).is_absolute():
            args["path"] = str(base_dir / args["path"])  # relative to where `mcqa run` runs, not the notebook's cwd
        jobs.append(Job(str(entry.pop("model")), ds["name"], args, lang, st, out / name, **options,
                        min_k=wanted_min_k and key not in min_k_done, backend_options=entry))
        min_k_done.add(key)
    names = [j.run_dir.name for j in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"two combinations map to the same run folder {dup}; give datasets a 'label'")
    return jobs


__all__ = ["Job", "load_items", "load_params", "expand", "model_label", "RESUME_KEYS", "PARAM_KEYS"]
