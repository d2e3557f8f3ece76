"""`mcqa` command line: run a params file as papermill executions, report, demo, inspect, validate-enem.

    mcqa run params/demo.yaml      # one executed run_model.ipynb + results folder per combination, resumable
    mcqa run params/x.yaml --batch-submit | --batch-fetch    # API batch mode (cheaper, slower)
    mcqa report                    # execute the analysis notebooks over everything in outputs/
    mcqa demo                      # run the shipped params/demo.yaml, then report
    mcqa inspect                   # open the question inspector in JupyterLab
    mcqa validate-enem ITENS_PROVA_2023.csv MICRODADOS_ENEM_2023.csv   # our ENEM scores vs INEP's NU_NOTA

A params file lists models, datasets, languages and strategies; `mcqa run` executes their product (see
run.jobs). Relative output folders are relative to the current directory: `cd /tmp && mcqa demo` writes
/tmp/outputs, /tmp/figures and /tmp/latex.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tqdm.auto import tqdm

from mcqa_toolkit.resources import notebooks_dir, params_file
from mcqa_toolkit.run.jobs import run_params

RUN_NOTEBOOK = "run_model.ipynb"
REPORT_NOTEBOOKS = ("10_tables.ipynb", "11_irt.ipynb", "12_language_gap.ipynb", "13_position_bias.ipynb",
                    "14_contamination.ipynb", "15_adaptive.ipynb", "16_course_exam.ipynb")


def report(results_dir: str | Path = "outputs", figures_dir: str | Path = "figures", latex_dir: str | Path = "latex",
           dataset: str = "demo", kernel: str = "python3") -> int:
    """Execute the analysis notebooks over every run in `results_dir`; executed copies go to results_dir/_report."""
    import papermill as pm

    res, fig, tex = (Path(x).resolve() for x in (results_dir, figures_dir, latex_dir))
    if not res.is_dir():
        raise FileNotFoundError(f"results folder not found: {res}; run `mcqa run <params>` first")
    executed = res / "_report"
    executed.mkdir(parents=True, exist_ok=True)
    failures = 0
    for name in tqdm(REPORT_NOTEBOOKS, desc="report", unit="notebook"):
        try:
            pm.execute_notebook(str(notebooks_dir() / name), str(executed / name), kernel_name=kernel,
                                cwd=str(notebooks_dir()), progress_bar=False,
                                parameters={"RESULTS_DIR": str(res), "FIGURES_DIR": str(fig), "LATEX_DIR": str(tex),
                                            "DATASET": dataset})
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
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--batch-submit", action="store_true", help="submit each run's requests to its backend's "
                      "batch API (openai, anthropic) instead of running it")
    mode.add_argument("--batch-fetch", action="store_true", help="fetch ended batches into the request cache and "
                      "run the runs whose batches have all ended")
    rep = sub.add_parser("report", help="execute the analysis notebooks over outputs/")
    rep.add_argument("--results", default="outputs")
    rep.add_argument("--figures", default="figures")
    rep.add_argument("--latex", default="latex")
    rep.add_argument("--dataset", default="demo")
    rep.add_argument("--kernel", default="python3")
    d = sub.add_parser("demo", help="run the shipped params/demo.yaml on the embedded model, then report")
    d.add_argument("--kernel", default="python3")
    sub.add_parser("inspect", help="open the question inspector notebook in JupyterLab")
    v = sub.add_parser("validate-enem", help="score every candidate of an INEP microdata file and compare with "
                       "NU_NOTA per year x area x booklet (table + figure)")
    v.add_argument("item_params", metavar="ITENS_PROVA_<year>.csv")
    v.add_argument("microdata", metavar="MICRODADOS_ENEM_<year>.csv")
    v.add_argument("--out", default="enem_validation", help="folder for the table (CSV, Parquet) and figure")
    v.add_argument("--area", action="append", choices=("CH", "CN", "LC", "MT"),
                   help="only this area (repeatable; default: every area in the file)")
    v.add_argument("--chunksize", type=int, default=100_000, help="rows per chunk (bounds memory)")
    args = ap.parse_args(argv)
    if args.command == "validate-enem":
        from mcqa_toolkit.report.enem_validation import validate_enem

        print(validate_enem(args.item_params, args.microdata, args.out, args.area, args.chunksize).text())
        return 0
    run_notebook = notebooks_dir() / RUN_NOTEBOOK
    if args.command == "run":
        batch = "submit" if args.batch_submit else "fetch" if args.batch_fetch else None
        return 1 if run_params(args.params, run_notebook, Path.cwd(), args.dry_run, args.kernel, batch) else 0
    if args.command == "report":
        return 1 if report(args.results, args.figures, args.latex, args.dataset, args.kernel) else 0
    if args.command == "demo":
        t0 = time.time()
        failed = run_params(params_file("demo"), run_notebook, Path.cwd(), kernel=args.kernel)
        failed += report("outputs", "figures", "latex", "demo", args.kernel)
        print(f"demo finished in {time.time() - t0:.0f} s")
        return 1 if failed else 0
    import subprocess

    return subprocess.call([sys.executable, "-m", "jupyter", "lab", str(notebooks_dir() / "inspect_questions.ipynb")])


if __name__ == "__main__":
    sys.exit(main())
