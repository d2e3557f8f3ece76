"""Jobs: a params file (models x datasets x languages x strategies) expanded into run folders.

A Job says *what* one run is (its model, dataset, language, strategy and options, and its run folder); the
recipe (run.recipe.run_job) does it, and its identity (records.identity.RunIdentity, what determines the records)
comes from its plan (run.recipe.prepare). A Job converts to and from the run notebook's papermill parameters
(`parameters`, `from_parameters`: UPPER_CASE names, what a researcher passes to `papermill run_model.ipynb -p ...`;
nothing else spells them): the one description of a run that crosses a process boundary (`mcqa run`'s kernel opens,
locks and writes the run from them, run.kernel).
"""
from __future__ import annotations

import dataclasses
import itertools
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from mcqa_toolkit.backends.secrets import strip_credentials
from mcqa_toolkit.datasets import load_items
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run.strategy import Strategy, build_strategy
from mcqa_toolkit.scoring.judge import COMBINE_RULES

# params-file keys: the grid (models, datasets, languages, strategies), where it goes, and options every job gets
PARAM_KEYS = {"output_dir", "models", "datasets", "languages", "strategies", "kernel", "limit", "seed", "shuffles",
              "shots", "device", "dtype", "min_k", "judges", "judge_combine", "cluster"}
_OPTIONS = ("limit", "seed", "shuffles", "shots", "device", "dtype", "judges", "judge_combine")  # Job fields too
_PARAMETER = {"backend_options": "BACKEND"}  # notebook parameter names that are not the field's upper-cased


@dataclass(frozen=True)
class Job:
    """One model x dataset x language x strategy combination and its run folder."""

    model: str                       # model name/path (hf) or the served model's name (API backends)
    dataset: str
    dataset_args: dict[str, Any]
    language: str | None
    strategy: Any                    # a predefined name or a dict of Strategy fields
    run_dir: RunDir                  # the run folder (a path is taken as one)
    shots: int | None = None
    shuffles: int | None = None
    seed: int | None = None
    limit: int | None = None
    device: str | None = None
    dtype: str | None = None
    min_k: bool = True
    backend_options: dict[str, Any] = field(default_factory=dict)  # {backend: openai, base_url: ..., ...}; {} = hf
    judges: list[Any] | None = None  # judge models of short answers (names/paths/backend dicts); None: no judge
    judge_combine: str = "mean"      # several judges: scoring.judge.COMBINE_RULES
    shot_pool: dict[str, Any] | None = None  # {name, args}: the exam whose items give the few-shot examples (e.g.
                                             # an earlier year's, as the ENEM paper did); None: the job's own items

    def __post_init__(self) -> None:
        if not isinstance(self.run_dir, RunDir):
            object.__setattr__(self, "run_dir", RunDir(self.run_dir))
        if self.judge_combine not in COMBINE_RULES:
            raise ValueError(f"judge_combine must be one of {COMBINE_RULES}, got {self.judge_combine!r}")
        if self.judges is not None and (not isinstance(self.judges, list) or not self.judges):
            raise ValueError("judges must be a non-empty list of models (or left out)")
        if self.shot_pool is not None and not (isinstance(self.shot_pool, dict)
                                               and isinstance(self.shot_pool.get("name"), str)
                                               and isinstance(self.shot_pool.get("args") or {}, dict)):
            raise ValueError(f"shot_pool must be a mapping with a dataset 'name' and 'args', got {self.shot_pool!r}")

    def model_entry(self) -> dict[str, Any]:
        """The params-file entry of the job's model (backends.backend_entry completes it)."""
        return {"model": self.model, **self.backend_options}

    def items(self) -> ItemSet:
        """The items the job's run is given (datasets.load_items; run.recipe.prepare loads them and its shot pool)."""
        return load_items(self.dataset, self.dataset_args, self.language)

    def build_strategy(self) -> Strategy:
        """The job's Strategy, built once per Job (scheduling, the params check and the run all use it)."""
        return self._strategy

    @cached_property
    def _strategy(self) -> Strategy:
        return build_strategy(self.strategy, shots=self.shots, shuffles=self.shuffles, seed=self.seed)

    def parameters(self) -> dict[str, Any]:
        """The run notebook's parameters for this job (papermill injects them), JSON-ready values (the run folder
        as a string); `from_parameters` is the inverse."""
        return {_name(f.name): _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_parameters(cls, params: Mapping[str, Any]) -> Job:
        """The job of a run notebook's parameters (any mapping holding them, e.g. the notebook's `globals()`;
        other names are ignored). RUN_DIR None: a fresh temporary folder (tests re-execute the notebook)."""
        fields = {f.name: params[_name(f.name)] for f in dataclasses.fields(cls) if _name(f.name) in params}
        fields["backend_options"] = dict(fields.get("backend_options") or {})
        if fields.get("run_dir") is None:
            fields["run_dir"] = tempfile.mkdtemp(prefix="mcqa_run_")
        if fields.get("judge_combine") is None:
            fields.pop("judge_combine", None)
        return cls(**fields)


def _name(field_name: str) -> str:
    """A Job field's notebook parameter name."""
    return _PARAMETER.get(field_name, field_name.upper())


def _plain(value: Any) -> Any:
    return str(value.dir if isinstance(value, RunDir) else value) if isinstance(value, (Path, RunDir)) else value


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
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    try:
        params = yaml.load(text, Loader=_YAML_LOADER) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{p}: not valid YAML: {_yaml_problem(e)}") from None
    if not isinstance(params, dict):
        raise ValueError(f"{p}: expected a mapping of keys such as models, datasets, strategies")
    unknown = sorted(set(params) - PARAM_KEYS, key=str)
    if unknown:
        raise ValueError(f"{p}: unknown key(s) {_short(unknown)}; allowed: {sorted(PARAM_KEYS)}")
    for key in ("models", "datasets", "strategies"):
        if not params.get(key) or not isinstance(params[key], list):
            raise ValueError(f"{p}: '{key}' must be a non-empty list")
    for key, (ok, what) in _PARAM_TYPES.items():
        if params.get(key) is not None and not ok(params[key]):
            raise ValueError(f"{p}: '{key}' must be {what}, got {_short(params[key])}")
    for n, ds in enumerate(params["datasets"], start=1):
        if isinstance(ds, dict) and not (isinstance(ds.get("name"), str) and isinstance(ds.get("args") or {}, dict)
                                         and isinstance(ds.get("label", ""), str)):
            raise ValueError(f"{p}: datasets[{n}] needs a 'name' (text), and 'args' must be a mapping, "
                             f"got {_short(ds)}")
        pool = ds.get("shot_pool") if isinstance(ds, dict) else None
        if pool is not None and not (isinstance(pool, dict) and isinstance(pool.get("name"), str)
                                     and isinstance(pool.get("args") or {}, dict)):
            raise ValueError(f"{p}: datasets[{n}].shot_pool needs a dataset 'name' and 'args' (the exam whose items "
                             f"give the few-shot examples), got {_short(pool)}")
    return params


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# the params file's scalar and list keys: (check, what it must be); None (or absent) means the default
_PARAM_TYPES: dict[str, tuple[Any, str]] = {
    "output_dir": (lambda v: isinstance(v, str) and v.strip() != "", "a folder name"),
    "kernel": (lambda v: isinstance(v, str) and v.strip() != "", "a Jupyter kernel name"),
    "models": (lambda v: all(isinstance(m, (str, dict)) for m in v), "a list of model names or mappings"),
    "datasets": (lambda v: all(isinstance(d, (str, dict)) for d in v), "a list of dataset names or mappings"),
    "strategies": (lambda v: all(isinstance(s, (str, dict)) for s in v), "a list of strategy names or mappings"),
    "languages": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of language codes"),
    "limit": (lambda v: _is_int(v) and v >= 1, "a positive number of items"),
    "seed": (_is_int, "an integer"),
    "shuffles": (lambda v: _is_int(v) and v >= 1, "a positive integer"),
    "shots": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "device": (lambda v: isinstance(v, str), "a device name such as cpu or cuda"),
    "dtype": (lambda v: isinstance(v, str), "a dtype name such as float32 or bfloat16"),
    "min_k": (lambda v: isinstance(v, bool), "true or false"),
    "judges": (lambda v: isinstance(v, list) and all(isinstance(j, (str, dict)) for j in v),
               "a list of judge models"),
    "judge_combine": (lambda v: isinstance(v, str), f"one of {COMBINE_RULES}"),
    "cluster": (lambda v: isinstance(v, dict), "a mapping {address, workers} (a Ray cluster: run.pool)"),
}
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: same YAML, much faster


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _yaml_problem(e: Exception) -> str:
    """A YAML error on one line: what is wrong and where (PyYAML's own text spans several lines)."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(f"{problem}{where}".split())[:200]


def _rooted(args: dict[str, Any] | None, base_dir: Path | None) -> dict[str, Any]:
    """Loader arguments with relative file paths (path, item_params, parallel; one path or a list, as HEAD-QA's
    two languages) taken from where `mcqa run` runs, not from the notebook's folder."""
    args = dict(args or {})

    def rooted(value: Any) -> Any:
        if isinstance(value, list):
            return [rooted(v) for v in value]
        if base_dir is not None and isinstance(value, str) and not Path(value).is_absolute():
            return str(base_dir / value)
        return value

    for key in ("path", "item_params", "parallel"):
        if key in args:
            args[key] = rooted(args[key])
    return args


def expand(params: dict[str, Any], base_dir: Path | None = None) -> list[Job]:
    """The product models x datasets x languages x strategies as Jobs with their run folders. Credentials
    written in a model's or judge's base URL are moved to this process's environment (backends.secrets), so the
    jobs, and the notebooks they parameterise, never hold them."""
    out = Path(params.get("output_dir", "outputs"))
    if base_dir is not None and not out.is_absolute():
        out = base_dir / out
    options = {k: params[k] for k in _OPTIONS if params.get(k) is not None}
    if isinstance(options.get("judges"), list):  # credentials in a base URL go to the environment, not a notebook
        options["judges"] = [strip_credentials(j) if isinstance(j, dict) else j for j in options["judges"]]
    wanted_min_k = params.get("min_k") is None or bool(params["min_k"])
    jobs: list[Job] = []
    min_k_done: set[tuple] = set()  # Min-K% depends on model and items only: measure it once per combination
    datasets = [d if isinstance(d, dict) else {"name": d} for d in params["datasets"]]
    for model, ds, lang, st in itertools.product(params["models"], datasets, params.get("languages") or [None],
                                                 params["strategies"]):
        label = ds.get("label", ds["name"])
        name = "__".join(_slug(str(x)) for x in (model_label(model), label, lang or "all", _strategy_name(st)))
        key = (model_label(model), label, lang)
        entry = strip_credentials(dict(model)) if isinstance(model, dict) else {"model": model}
        args = _rooted(ds.get("args"), base_dir)
        pool = ds.get("shot_pool")
        pool = None if pool is None else {"name": pool["name"], "args": _rooted(pool.get("args"), base_dir)}
        jobs.append(Job(str(entry.pop("model")), ds["name"], args, lang, st, RunDir(out / name), **options,
                        min_k=wanted_min_k and key not in min_k_done, backend_options=entry, shot_pool=pool))
        min_k_done.add(key)
    names = [j.run_dir.name for j in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"two combinations map to the same run folder {dup}; give datasets a 'label'")
    return jobs


__all__ = ["Job", "load_params", "expand", "model_label", "PARAM_KEYS"]
