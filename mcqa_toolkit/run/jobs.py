"""Jobs: a params file (models x datasets x languages x strategies) expanded into run folders, the resume
contract, the steps `notebooks/run_model.ipynb` runs for one job, and the grid's execution: every job's
notebook is executed by papermill in one shared kernel (run.session), cheapest strategies first.

A job is complete when its run folder holds a finished run (records.parquet + provenance with complete=True)
AND a summary.json written with the same job parameters (RESUME_KEYS); anything else is (re-)executed, and
the runner itself refuses to mix a different strategy, model or dataset into existing records.
"""
from __future__ import annotations

import itertools
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.run.store import RunDir
from mcqa_toolkit.run.strategy import Strategy, build_strategy

PARAM_KEYS = {"output_dir", "models", "datasets", "languages", "strategies", "limit", "seed", "shuffles", "shots",
              "device", "dtype", "min_k", "kernel"}
# the notebook parameters that must match for a finished run folder to count as this job
RESUME_KEYS = ("MODEL", "DATASET", "DATASET_ARGS", "LANGUAGE", "STRATEGY", "SHOTS", "SHUFFLES", "SEED", "LIMIT")


def load_items(dataset: str, dataset_args: dict[str, Any] | None = None, language: str | None = None) -> ItemSet:
    """Items of a registered dataset, restricted to `language` (demo: loaded in that language only)."""
    args = dict(dataset_args or {})
    if dataset == "demo" and language is not None:
        args.setdefault("language", language)
    items = load(dataset, **args)
    if language is not None:
        items = items.filter(language=language)
        if not len(items):
            raise ValueError(f"dataset {dataset!r} has no items in language {language!r}")
    return items.filter(answer_type="single")


@dataclass(frozen=True)
class Job:
    """One model x dataset x language x strategy combination and its run folder."""

    model: Any                       # a model name/path, or a backend entry dict (see backends.load_backend)
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

    @property
    def run_dir(self) -> RunDir:
        return RunDir(self.out_dir)

    def parameters(self) -> dict[str, Any]:
        """The run notebook's parameters for this job (papermill injects them)."""
        return {"MODEL": self.model, "DATASET": self.dataset, "DATASET_ARGS": self.dataset_args,
                "LANGUAGE": self.language, "STRATEGY": self.strategy, "OUTPUT_DIR": str(self.out_dir),
                "SHOTS": self.shots, "SHUFFLES": self.shuffles, "SEED": self.seed, "LIMIT": self.limit,
                "DEVICE": self.device, "DTYPE": self.dtype, "MIN_K": self.min_k}

    @classmethod
    def from_parameters(cls, **params: Any) -> "Job":
        """The job a run notebook was given (its UPPER_CASE parameters)."""
        fields = {k.lower(): v for k, v in params.items()}
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

        return load_backend(self.model, reuse=reuse, device=self.device, dtype=self.dtype)

    def measure_min_k(self, backend: Any, items: ItemSet, records: pd.DataFrame) -> pd.DataFrame:
        """Min-K% prob of the evaluated questions, written to the run folder."""
        from mcqa_toolkit.scoring.min_k import min_k_table

        table = min_k_table(backend, items.filter(item_id=set(records["item_id"])))
        self.run_dir.write_min_k(table)
        return table

    def write_summary(self, summary: dict[str, Any], strategy: Strategy) -> Path:
        """summary.json with the parameters that make this run folder count as this job (resume contract)."""
        params = {k: v for k, v in self.parameters().items() if k in RESUME_KEYS}
        return self.run_dir.write_summary(summary, {**params, "strategy_hash": strategy.hash})

    def is_complete(self) -> bool:
        """A finished run made with the same parameters (else it is re-executed)."""
        rd = self.run_dir
        if not (rd.is_complete() and rd.summary_file.exists()):
            return False
        done, want = rd.summary().get("params", {}), self.parameters()
        return all(done.get(k) == want.get(k) for k in RESUME_KEYS)


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
    return params


def expand(params: dict[str, Any], base_dir: Path | None = None) -> list[Job]:
    """The product models x datasets x languages x strategies as Jobs with their run folders."""
    out = Path(params.get("output_dir", "outputs"))
    if base_dir is not None and not out.is_absolute():
        out = base_dir / out
    options = {k: params.get(k) for k in ("limit", "seed", "shuffles", "shots", "device", "dtype")}
    wanted_min_k = params.get("min_k") is None or bool(params["min_k"])
    jobs: list[Job] = []
    min_k_done: set[tuple] = set()  # Min-K% depends on model and items only: measure it once per combination
    datasets = [d if isinstance(d, dict) else {"name": d} for d in params["datasets"]]
    for model, ds, lang, st in itertools.product(params["models"], datasets, params.get("languages") or [None],
                                                 params["strategies"]):
        label = ds.get("label", ds["name"])
        name = "__".join(_slug(str(x)) for x in (model_label(model), label, lang or "all", _strategy_name(st)))
        key = (model_label(model), label, lang)
        jobs.append(Job(model, ds["name"], dict(ds.get("args") or {}), lang, st, out / name, **options,
                        min_k=wanted_min_k and key not in min_k_done))
        min_k_done.add(key)
    names = [j.run_dir.name for j in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"two combinations map to the same run folder {dup}; give datasets a 'label'")
    return jobs


# Relative wall time of one record (item x shuffle) by method, and of Min-K% per item, measured on Gemma-3-270M
# on 2 CPU cores (the demo's strategies, one language): `mcqa run` starts with the cheapest runs so that the
# first numbers are on screen early. Cloze scores every token of every option (an LM-head call per token);
# generation costs about one unit per new token.
METHOD_COST = {"first_token": 12.0, "cloze": 17.0, "loglik": 17.0, "generate": 1.2}  # generate: x max_new_tokens
MIN_K_COST = 24.0


def estimated_cost(job: Job) -> float:
    """A job's relative cost per item, for ordering only (a strategy that fails to build sorts first: it
    fails at once)."""
    try:
        st = job.build_strategy()
    except ValueError:
        return 0.0
    per_record = METHOD_COST[st.method] * (st.max_new_tokens if st.method == "generate" else 1)
    return per_record * st.shuffles + (MIN_K_COST if job.min_k else 0.0)


def schedule(jobs: list[Job]) -> list[Job]:
    """Execution order: model by model (each model is loaded once), cheapest strategies first, and within
    a strategy the languages in params order, so the first results cover every language early."""
    models = list(dict.fromkeys(model_label(j.model) for j in jobs))
    return sorted(jobs, key=lambda j: (models.index(model_label(j.model)), estimated_cost(j)))


def execute(job: Job, notebook: Path, session: Any) -> None:
    """Execute the run notebook for one job in a `run.session.KernelSession`; the executed copy is kept in
    the run folder."""
    job.out_dir.mkdir(parents=True, exist_ok=True)
    session.execute(notebook, job.run_dir.notebook, job.parameters(), cwd=notebook.parent)


def _result_line(job: Job) -> str:
    s = job.run_dir.summary()
    return f"accuracy {s.get('accuracy', float('nan')):.3f}  kappa {s.get('kappa', float('nan')):+.3f}  " \
           f"({s.get('n_items', 0)} items x {s.get('shuffles', 0)} shuffles)"


def run_params(path: str | Path, notebook: Path, base_dir: Path, dry_run: bool = False,
               kernel: str = "python3") -> int:
    """Execute every incomplete combination of a params file in one kernel (run.session), printing each
    run's headline numbers as it finishes; failures are collected and reported at the end without stopping
    the others. Returns the number of failures."""
    from mcqa_toolkit.run.session import KernelSession

    params = load_params(path)
    jobs = expand(params, base_dir=base_dir)
    todo = schedule([j for j in jobs if not j.is_complete()])
    print(f"{len(jobs)} combinations, {len(jobs) - len(todo)} already complete, {len(todo)} to run", flush=True)
    if dry_run or not todo:
        for j in todo:
            print("  would run", j.run_dir.name)
        return 0
    failures: list[tuple[Job, str]] = []
    t0 = time.time()
    with KernelSession(params.get("kernel") or kernel, cwd=notebook.parent, keep=("backend",)) as session:
        for n, job in enumerate(todo, start=1):
            t = time.time()
            try:
                execute(job, notebook, session)
                result = _result_line(job)
            except Exception as e:  # papermill raises PapermillExecutionError with the cell's traceback
                last = str(e).strip().splitlines()[-1] if str(e).strip() else ""
                failures.append((job, f"{type(e).__name__}: {last}"))
                result = "failed (see below)"
            print(f"[{n:>{len(str(len(todo)))}}/{len(todo)}] {time.time() - t:5.0f} s  {job.run_dir.name:<40} "
                  f"{result}", flush=True)
    print(f"done in {time.time() - t0:.0f} s: {len(todo) - len(failures)} ran, {len(failures)} failed")
    for job, msg in failures:
        print(f"  FAILED {job.run_dir.name}: {msg}\n    see {job.run_dir.notebook}")
    return len(failures)


__all__ = ["Job", "load_items", "load_params", "expand", "model_label", "execute", "run_params", "schedule",
           "estimated_cost", "RESUME_KEYS", "PARAM_KEYS"]
