"""`mcqa` command line: run a params file as papermill executions, report, demo, inspect.

    mcqa run params/demo.yaml      # one executed run_model.ipynb + results folder per combination, resumable
    mcqa report                    # execute the analysis notebooks over everything in outputs/
    mcqa demo                      # run params/demo.yaml, then report
    mcqa inspect                   # open the question inspector in JupyterLab

A params file lists models, datasets, languages and strategies; `mcqa run` executes their product. A
combination whose run folder is complete (records.parquet + provenance + summary.json) is skipped, so a
second invocation resumes; failures are collected and reported at the end without stopping the others.
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tqdm.auto import tqdm

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
RUN_NOTEBOOK = NOTEBOOKS / "run_model.ipynb"
REPORT_NOTEBOOKS = ("10_tables.ipynb", "11_irt.ipynb", "12_language_gap.ipynb", "13_position_bias.ipynb",
                    "14_contamination.ipynb")
PARAM_KEYS = {"output_dir", "models", "datasets", "languages", "strategies", "limit", "seed", "shuffles", "shots",
              "device", "dtype", "min_k", "kernel"}


@dataclass(frozen=True)
class Job:
    """One model x dataset x language x strategy combination and its run folder."""

    model: str
    dataset: str
    dataset_args: dict[str, Any]
    language: str | None
    strategy: Any                    # name or dict of Strategy fields
    out_dir: Path
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.out_dir.name

    def parameters(self) -> dict[str, Any]:
        return {"MODEL": self.model, "DATASET": self.dataset, "DATASET_ARGS": self.dataset_args,
                "LANGUAGE": self.language, "STRATEGY": self.strategy, "OUTPUT_DIR": str(self.out_dir),
                "SHOTS": self.options.get("shots"), "SHUFFLES": self.options.get("shuffles"),
                "SEED": self.options.get("seed"), "LIMIT": self.options.get("limit"),
                "DEVICE": self.options.get("device"), "DTYPE": self.options.get("dtype"),
                "MIN_K": self.options.get("min_k", True)}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def _strategy_name(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict) and ("name" in spec or "base" in spec):
        return str(spec.get("name") or spec["base"])
    raise ValueError(f"strategy {spec!r}: give a predefined name or a dict with 'name' or 'base'")


def load_params(path: str | Path) -> dict[str, Any]:
    """Read and check a params YAML; relative paths are relative to the file's folder's parent (the project)."""
    p = Path(path)
    try:
        params = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{p}: not valid YAML: {e}") from None
    unknown = sorted(set(params) - PARAM_KEYS)
    if unknown:
        raise ValueError(f"{p}: unknown key(s) {unknown}; allowed: {sorted(PARAM_KEYS)}")
    for key in ("models", "datasets", "strategies"):
        if not params.get(key):
            raise ValueError(f"{p}: '{key}' must be a non-empty list")
    return params


def expand(params: dict[str, Any], base_dir: Path | None = None) -> list[Job]:
    """The product models x datasets x languages x strategies as Jobs with their run folders."""
    out = Path(params.get("output_dir", "outputs"))
    if base_dir is not None and not out.is_absolute():
        out = base_dir / out
    options = {k: params.get(k) for k in ("limit", "seed", "shuffles", "shots", "device", "dtype", "min_k")}
    jobs = []
    min_k_done: set[tuple] = set()  # Min-K% depends on model and items only: measure it once per combination
    datasets = [d if isinstance(d, dict) else {"name": d} for d in params["datasets"]]
    for model, ds, lang, st in itertools.product(params["models"], datasets, params.get("languages") or [None],
                                                 params["strategies"]):
        name = "__".join(_slug(str(x)) for x in (model, ds.get("label", ds["name"]), lang or "all", _strategy_name(st)))
        key = (model, name.split("__")[1], lang)
        wanted = options.get("min_k") is None or bool(options["min_k"])
        opts = {**options, "min_k": wanted and key not in min_k_done}
        min_k_done.add(key)
        jobs.append(Job(model, ds["name"], dict(ds.get("args") or {}), lang, st, out / name, opts))
    names = [j.run_id for j in jobs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"two combinations map to the same run folder {sorted(dup)}; give datasets a 'label'")
    return jobs


RESUME_KEYS = ("MODEL", "DATASET", "DATASET_ARGS", "LANGUAGE", "STRATEGY", "SHOTS", "SHUFFLES", "SEED", "LIMIT")


def is_complete(job: Job) -> bool:
    """True when the run folder holds a finished run made with the same parameters (else it is re-executed,
    and the runner refuses to mix a different strategy into existing records)."""
    from mcqa_toolkit.results import ResultStore

    summary = job.out_dir / "summary.json"
    if not (ResultStore(job.out_dir).is_complete() and summary.exists()):
        return False
    done = json.loads(summary.read_text()).get("params", {})
    want = job.parameters()
    return all(done.get(k) == want.get(k) for k in RESUME_KEYS)


def execute(job: Job, kernel: str = "python3") -> None:
    import papermill as pm

    job.out_dir.mkdir(parents=True, exist_ok=True)
    pm.execute_notebook(str(RUN_NOTEBOOK), str(job.out_dir / "run_model.ipynb"), parameters=job.parameters(),
                        kernel_name=kernel, cwd=str(NOTEBOOKS), progress_bar=False)


def run_params(path: str | Path, dry_run: bool = False, kernel: str = "python3") -> int:
    """Execute every combination of a params file; returns the number of failures."""
    params = load_params(path)
    jobs = expand(params, base_dir=ROOT)
    todo = [j for j in jobs if not is_complete(j)]
    print(f"{len(jobs)} combinations, {len(jobs) - len(todo)} already complete, {len(todo)} to run")
    if dry_run:
        for j in todo:
            print("  would run", j.run_id)
        return 0
    failures: list[tuple[Job, str]] = []
    t0 = time.time()
    for job in tqdm(todo, desc="runs", unit="run"):
        try:
            execute(job, params.get("kernel") or kernel)
        except Exception as e:  # papermill raises PapermillExecutionError with the cell's traceback
            failures.append((job, f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"))
    print(f"done in {time.time() - t0:.0f} s: {len(todo) - len(failures)} ran, {len(failures)} failed")
    for job, msg in failures:
        print(f"  FAILED {job.run_id}: {msg}\n    see {job.out_dir / 'run_model.ipynb'}")
    return len(failures)


def report(results_dir: str | Path = "outputs", figures_dir: str | Path = "figures", latex_dir: str | Path = "latex",
           dataset: str = "demo", kernel: str = "python3") -> int:
    """Execute the analysis notebooks over every run in `results_dir`; executed copies go to results_dir/_report."""
    import papermill as pm

    res, fig, tex = (Path(x).resolve() for x in (results_dir, figures_dir, latex_dir))
    executed = res / "_report"
    executed.mkdir(parents=True, exist_ok=True)
    failures = 0
    for name in tqdm(REPORT_NOTEBOOKS, desc="report", unit="notebook"):
        try:
            pm.execute_notebook(str(NOTEBOOKS / name), str(executed / name), kernel_name=kernel, cwd=str(NOTEBOOKS),
                                parameters={"RESULTS_DIR": str(res), "FIGURES_DIR": str(fig), "LATEX_DIR": str(tex),
                                            "DATASET": dataset}, progress_bar=False)
        except Exception as e:
            failures += 1
            print(f"  FAILED {name}: {type(e).__name__}; see {executed / name}")
    print(f"figures in {fig}, LaTeX in {tex}, executed notebooks in {executed}")
    return failures


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input (params file, dataset, strategy) is one clear line on stderr, exit code 2."""
    try:
        return _main(argv)
    except (ValueError, FileNotFoundError) as e:  # DatasetError is a ValueError
        print(f"mcqa: error: {e}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mcqa", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute run_model.ipynb for every combination of a params file")
    r.add_argument("params")
    r.add_argument("--dry-run", action="store_true")
    r.add_argument("--kernel", default="python3")
    rep = sub.add_parser("report", help="execute the analysis notebooks over outputs/")
    rep.add_argument("--results", default=str(ROOT / "outputs"))
    rep.add_argument("--figures", default=str(ROOT / "figures"))
    rep.add_argument("--latex", default=str(ROOT / "latex"))
    rep.add_argument("--dataset", default="demo")
    rep.add_argument("--kernel", default="python3")
    d = sub.add_parser("demo", help="run params/demo.yaml on the embedded model, then report")
    d.add_argument("--kernel", default="python3")
    sub.add_parser("inspect", help="open the question inspector notebook in JupyterLab")
    args = ap.parse_args(argv)
    if args.command == "run":
        return 1 if run_params(args.params, args.dry_run, args.kernel) else 0
    if args.command == "report":
        return 1 if report(args.results, args.figures, args.latex, args.dataset, args.kernel) else 0
    if args.command == "demo":
        t0 = time.time()
        failed = run_params(ROOT / "params" / "demo.yaml", kernel=args.kernel)
        failed += report(ROOT / "outputs", ROOT / "figures", ROOT / "latex", "demo", args.kernel)
        print(f"demo finished in {time.time() - t0:.0f} s")
        return 1 if failed else 0
    import subprocess

    return subprocess.call([sys.executable, "-m", "jupyter", "lab", str(NOTEBOOKS / "inspect_questions.ipynb")])


if __name__ == "__main__":
    sys.exit(main())
