"""`mcqa` command line: run a params file as papermill executions, report, demo, inspect, validate, validate-enem.

    mcqa run params/demo.yaml      # one run folder (executed run_model.ipynb + records) per combination, resumable
    mcqa run params/x.yaml --batch-submit | --batch-fetch    # API batch mode (cheaper, slower)
    mcqa run params/x.yaml --ray auto --workers 4           # items scored by 4 Ray actors (docs/cluster.md)
    mcqa report [--html]           # execute the analysis notebooks over the runs in outputs/ (+ results page)
    mcqa demo [--full]             # run the shipped params/demo.yaml (demo_full.yaml), then report
    mcqa inspect                   # open the question inspector in JupyterLab
    mcqa import lm-eval out/model/ --out outputs/x --dataset enem --dataset-args '{"path": ...}'
                                   # another tool's results (lm-eval | inspect | helm) as a run folder
    mcqa export inspect outputs/x --out logs/   # a run folder as lm-eval samples, an inspect log, or EEE JSONL
    mcqa contaminate gemma-3-270m --dataset enem --dataset-args '{"path": ...}' --fraction 0.5 --exposures 1 3 10 \
        --out models/enem_s0       # fine-tune on solved pages of half the items: models/enem_s0/x1, x3, x10
    mcqa validate-enem ITENS_PROVA_2023.csv MICRODADOS_ENEM_2023.csv   # our ENEM scores vs INEP's NU_NOTA
    mcqa validate-enem enem_inep/ inep_cases_dev.json                 # ... for a case list (ITENS_PROVA_<year> dir)
    mcqa validate-enem ITENS_PROVA_2023.csv MICRODADOS_ENEM_2023.csv --discover-errata errata_2023.json
                                   # find the item files' errata from the official scores, then --errata PATH
    mcqa validate exams dev.jsonl.tar.gz test.jsonl.tar.gz [--strict]   # per file: questions loaded, records left out

A params file lists models, datasets, languages and strategies; `mcqa run` executes their product (see
run.jobs) in one kernel (run.session). Relative output folders are relative to the current directory:
`cd /tmp && mcqa demo` writes /tmp/outputs/demo, /tmp/figures/demo and /tmp/latex/demo.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from mcqa_toolkit.resources import notebooks_dir, params_file
from mcqa_toolkit.run.grid import dry_run_params, run_params

RUN_NOTEBOOK = "run_model.ipynb"
REPORT_NOTEBOOKS = ("10_tables.ipynb", "11_irt.ipynb", "12_language_gap.ipynb", "13_position_bias.ipynb",
                    "14_contamination.ipynb", "15_adaptive.ipynb", "16_course_exam.ipynb", "17_dif.ipynb")


def report(runs_dir: str | Path = "outputs", figures_dir: str | Path = "figures", latex_dir: str | Path = "latex",
           dataset: str | None = None, kernel: str = "python3", html: str | Path | None = None,
           languages: list[str] | None = None) -> int:
    """Execute the analysis notebooks over every run in `runs_dir`, one after another in one kernel;
    executed copies go to runs_dir/_report. The runs' items come from their folders; `dataset` picks one when
    they are of several (report.headline.runs_dataset; course exams have a notebook of their own). With `html`,
    also write the static results page there (its headline columns in the order of `languages`). Returns the
    number of notebooks that failed."""
    from mcqa_toolkit.run.session import KernelSession

    res, fig, tex = (Path(x).resolve() for x in (runs_dir, figures_dir, latex_dir))
    if not res.is_dir():
        raise FileNotFoundError(f"runs folder not found: {res}; run `mcqa run <params>` first")
    from mcqa_toolkit.report.headline import runs_dataset

    dataset = runs_dataset(res, dataset)   # one clear line here rather than every notebook failing
    executed = res / "_report"
    executed.mkdir(parents=True, exist_ok=True)
    failures = 0
    params = {"RUNS_DIR": str(res), "FIGURES_DIR": str(fig), "LATEX_DIR": str(tex), "DATASET": dataset}
    with KernelSession(kernel, cwd=notebooks_dir()) as session:
        for name in REPORT_NOTEBOOKS:
            t0 = time.time()
            try:
                session.execute(notebooks_dir() / name, executed / name, params, cwd=notebooks_dir())
                status = "ok"
            except Exception as e:
                failures += 1
                status = f"FAILED ({type(e).__name__}); see {executed / name}"
            print(f"  report {name:<24} {time.time() - t0:4.0f} s  {status}", flush=True)
    if html is not None:
        from mcqa_toolkit.report.html import write_html_report

        page = write_html_report(html, res, fig, tex, languages=languages)
        print(f"HTML report (self-contained, figures embedded): {page}")
    print(f"figures in {fig}, LaTeX tables in {tex}, executed notebooks in {executed}")
    return failures


def demo(full: bool = False, kernel: str = "python3") -> int:
    """Run the shipped demo grid (params/demo.yaml, or demo_full.yaml) on the embedded model, then the report;
    print the headline table and where everything is. Returns the number of failures."""
    from mcqa_toolkit.report.overview import headline_text
    from mcqa_toolkit.run.jobs import load_params

    t0 = time.time()
    name = "demo_full" if full else "demo"
    params = load_params(params_file(name))
    runs = Path(params.get("output_dir", "outputs"))   # the params key of the runs folder
    failed = run_params(params_file(name), notebooks_dir() / RUN_NOTEBOOK, Path.cwd(), kernel=kernel)
    figures, latex = Path("figures") / name, Path("latex") / name
    failed += report(runs, figures, latex, None, kernel, html=runs / "report.html",
                     languages=params.get("languages"))
    print("\n" + headline_text(runs, params.get("languages")))
    print(f"\ndemo finished in {time.time() - t0:.0f} s{f' with {failed} failure(s)' if failed else ''}. "
          f"Figures: {figures.resolve()}/*.png; open {(runs / 'report.html').resolve()} in a browser.")
    return failed


def _items(dataset: str | None, dataset_args: str | None) -> Any:
    from mcqa_toolkit.datasets import args_from_json, load

    if dataset is None:
        if dataset_args:
            raise ValueError("--dataset-args needs --dataset")
        return None
    return load(dataset, **args_from_json(dataset_args))


def import_cmd(tool: str, path: str, out: str, dataset: str | None, dataset_args: str | None, model: str | None,
               reader_kw: dict[str, Any]) -> int:
    """`mcqa import`: write the run folder and say what matched; returns 0."""
    from mcqa_toolkit.interop import import_run

    res = import_run(tool, path, out, items=_items(dataset, dataset_args), dataset=dataset, model=model, **reader_kw)
    prov = res.provenance
    matched = prov.get("items", {})
    print(f"{res.run_dir.dir}: {len(res.records)} records of {prov['n_items']} items from "
          f"{prov['imported_from']['tool']} {prov['imported_from']['version']} ({res.state.value}); matched to "
          f"our items: {matched.get('matched', 0)} {matched.get('matched_by', {})}; unmatched: {len(res.unmatched)}")
    for row in res.unmatched.itertuples(index=False):
        print(f"  unmatched {row.item_id}: {row.reason}")
    return 0


def contaminate_cmd(args: argparse.Namespace) -> int:
    """`mcqa contaminate`: the exposed items (a file of ids, or a seeded fraction of each subject), the
    training, one line per model folder; returns 0."""
    from mcqa_toolkit.contamination.fine_tuning import Recipe, contaminate
    from mcqa_toolkit.prompts.solved_page import exposure_split

    items = _items(args.dataset, args.dataset_args)
    if args.language:
        items = items.filter(exam_language=args.language)
    if args.exposed:
        exposed = [line.strip() for line in Path(args.exposed).read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        exposed = exposure_split(items, args.fraction, args.seed if args.split_seed is None else args.split_seed)[0]
    recipe = Recipe(exposures=tuple(args.exposures), lr=args.lr, seed=args.seed, batch_size=args.batch_size,
                    train_embeddings=args.train_embeddings)
    for folder in contaminate(args.base, items, exposed, args.out, recipe, until=args.until, device=args.device):
        print(f"{folder}: {len(exposed)} of {len(items)} items, {folder.name[1:]} exposure(s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input (params file, dataset, strategy) is one clear line on stderr, exit code 2."""
    try:
        return _main(argv)
    except (ValueError, FileNotFoundError) as e:  # DatasetError is a ValueError
        print("mcqa: error: " + " ".join(str(e).split()), file=sys.stderr)  # one line, whatever the message
        return 2


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mcqa", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute run_model.ipynb for every combination of a params file")
    r.add_argument("params")
    r.add_argument("--dry-run", action="store_true")
    r.add_argument("--kernel", default="python3")
    r.add_argument("--ray", metavar="ADDRESS", help="score the items on a Ray cluster: auto, HOST:PORT, "
                   "ray://HOST:PORT, or local (start one here); overrides the params file's cluster block")
    r.add_argument("--workers", type=int, metavar="N", help="Ray actors per model (default: the cluster block's, "
                   "else 2)")
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--batch-submit", action="store_true", help="submit each run's requests to its backend's "
                      "batch API (openai, anthropic, google) instead of running it")
    mode.add_argument("--batch-fetch", action="store_true", help="fetch ended batches into the request cache and "
                      "run the runs whose batches have all ended")
    rep = sub.add_parser("report", help="execute the analysis notebooks over outputs/")
    rep.add_argument("--runs", "--results", dest="runs", default="outputs", help="the runs folder (params' output_dir)")
    rep.add_argument("--figures", default="figures")
    rep.add_argument("--latex", default="latex")
    rep.add_argument("--dataset", help="the dataset to report when the runs are of several (default: the runs' one "
                     "dataset; their items come from the run folders)")
    rep.add_argument("--kernel", default="python3")
    rep.add_argument("--html", nargs="?", const="", default=None, metavar="PATH",
                     help="also write the self-contained results page (default PATH: <runs>/report.html)")
    d = sub.add_parser("demo", help="run the shipped params/demo.yaml on the embedded model, then report")
    d.add_argument("--full", action="store_true",
                   help="the full-size demo (params/demo_full.yaml: every question, more shuffles; ~30 min on 2 cores)")
    d.add_argument("--kernel", default="python3")
    sub.add_parser("inspect", help="open the question inspector notebook in JupyterLab")
    v = sub.add_parser("validate-enem", help="score every candidate of an INEP microdata file (or a case list) and "
                       "compare with NU_NOTA per year x area x booklet (tables + figure)")
    v.add_argument("item_params", metavar="ITENS_PROVA_<year>.csv",
                   help="INEP's item file; for a case list also a directory of ITENS_PROVA_<year>.csv files")
    v.add_argument("microdata", metavar="MICRODADOS_ENEM_<year>.csv|CASES.json",
                   help="INEP's microdata CSV, or a .json/.jsonl case list (area, booklet, language, answers, "
                        "official score per candidate)")
    which = v.add_mutually_exclusive_group()
    which.add_argument("--as-published", action="store_true",
                       help="score the item files exactly as INEP published them (without the package's errata)")
    which.add_argument("--errata", metavar="PATH", help="apply this errata file (e.g. one --discover-errata wrote) "
                       "instead of the package's")
    which.add_argument("--discover-errata", metavar="OUT.json", help="search the corrections of the item files "
                       "that the official scores imply (per exam-area; microdata is sampled), write them to OUT.json "
                       "and validate with them")
    v.add_argument("--out", default="enem_validation", help="folder for the table (CSV, Parquet) and figure")
    v.add_argument("--area", action="append", choices=("CH", "CN", "LC", "MT"),
                   help="only this area (repeatable; default: every area in the file)")
    v.add_argument("--chunksize", type=int, default=100_000, help="rows per chunk (bounds memory)")
    v.add_argument("--strict", action="store_true", help="a case list: refuse the first case that cannot be read or "
                   "scored (default: report it, naming its record and field, and score the others)")
    va = sub.add_parser("validate", help="load files of a release with a loader: per file, questions loaded and "
                        "records left out by reason (docs/datasets.md)")
    va.add_argument("name", help="the loader (exams, agieval, enem, oab, head_qa, ...)")
    va.add_argument("paths", nargs="+", metavar="PATH", help="files or folders, each loaded and reported on its own")
    va.add_argument("--dataset-args", help="the loader's other keyword arguments as JSON")
    va.add_argument("--strict", action="store_true", help="exit 1 when any record was left out")
    im = sub.add_parser("import", help="another tool's per-question results as a run folder")
    im.add_argument("tool", choices=("lm-eval", "inspect", "helm"))
    im.add_argument("path", help="lm-eval samples_*.jsonl (or its folder), an inspect .eval/.json log, a HELM run "
                    "folder")
    im.add_argument("--out", required=True, help="the run folder to write, e.g. outputs/<model>__<dataset>__<tool>")
    im.add_argument("--dataset", help="our loader to match the questions against (human IRT parameters attach)")
    im.add_argument("--dataset-args", help="the loader's keyword arguments as JSON")
    im.add_argument("--model", help="the model's name in the records (default: the tool's, e.g. lm-eval's path)")
    im.add_argument("--normalization", choices=("sum", "char"), help="lm-eval: acc (sum, default) or acc_norm (char)")
    im.add_argument("--task", help="lm-eval: the task, when the folder holds several")
    ex = sub.add_parser("export", help="a run folder as lm-eval samples, an inspect_ai log or Every Eval Ever JSONL")
    ex.add_argument("format", choices=("lm-eval", "inspect", "eee"))
    ex.add_argument("run_dir")
    ex.add_argument("--out", required=True, help="folder to write into")
    ex.add_argument("--dataset", help="the run's dataset loader, when the folder carries no items.jsonl")
    ex.add_argument("--dataset-args", help="the loader's keyword arguments as JSON")
    c = sub.add_parser("contaminate", help="fine-tune a local model on solved pages of some items of an exam (a "
                       "contaminated model folder per exposure count, with a manifest)")
    c.add_argument("base", help="the model to contaminate: gemma-3-270m, an HF id or a local model folder")
    c.add_argument("--dataset", required=True, help="our loader of the exam")
    c.add_argument("--dataset-args", help="the loader's keyword arguments as JSON")
    c.add_argument("--language", help="the exam version to keep (pt, en, ...); default: every item")
    which = c.add_mutually_exclusive_group()
    which.add_argument("--exposed", metavar="FILE", help="the item ids to expose, one per line")
    which.add_argument("--fraction", type=float, default=0.5, help="else this share of each subject (default 0.5)")
    c.add_argument("--split-seed", type=int, help="seed of the drawn items (default: --seed)")
    c.add_argument("--exposures", type=int, nargs="+", default=[1, 3, 10], help="a model folder after each")
    c.add_argument("--lr", type=float, default=1e-5, help="AdamW's constant learning rate (default 1e-5)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--batch-size", type=int, default=1, help="pages per optimiser step (default 1)")
    c.add_argument("--train-embeddings", action="store_true", help="also train the token embedding matrix")
    c.add_argument("--until", type=int, help="stop after this many exposures (run again to go on)")
    c.add_argument("--device", default="cpu")
    c.add_argument("--out", required=True, help="folder of the model folders x<exposures>")
    args = ap.parse_args(argv)
    if args.command == "contaminate":
        return contaminate_cmd(args)
    if args.command == "import":
        kw = {k: v for k, v in (("normalization", args.normalization), ("task", args.task)) if v is not None}
        return import_cmd(args.tool, args.path, args.out, args.dataset, args.dataset_args, args.model, kw)
    if args.command == "export":
        from mcqa_toolkit.interop import export_run

        path = export_run(args.format, args.run_dir, args.out, items=_items(args.dataset, args.dataset_args))
        print(f"wrote {path}")
        return 0
    if args.command == "validate":
        from mcqa_toolkit.datasets import args_from_json
        from mcqa_toolkit.datasets.validate import validate_cmd

        return validate_cmd(args.name, args.paths, args_from_json(args.dataset_args), args.strict)
    if args.command == "validate-enem":
        from mcqa_toolkit.enem.validate import validate_enem

        result = validate_enem(args.item_params, args.microdata, args.out, args.area, args.chunksize,
                               errata=args.errata or not args.as_published, discover=args.discover_errata,
                               strict=args.strict)
        if len(result.table) and result.cases is None:  # a case list spans years: its tables are the output
            from mcqa_toolkit.report import plots  # matplotlib only once there is something to draw

            figures = plots.save(plots.score_agreement(result.table), args.out, result.stem)
            result = dataclasses.replace(result, files=result.files + tuple(figures))
        print(result.text())
        return 0
    run_notebook = notebooks_dir() / RUN_NOTEBOOK
    if args.command == "run":
        batch = "submit" if args.batch_submit else "fetch" if args.batch_fetch else None
        if args.dry_run:
            return 1 if dry_run_params(args.params, Path.cwd(), batch, args.ray, args.workers) else 0
        return 1 if run_params(args.params, run_notebook, Path.cwd(), args.kernel, batch, args.ray, args.workers) else 0
    if args.command == "report":
        html = None if args.html is None else (args.html or Path(args.runs) / "report.html")
        return 1 if report(args.runs, args.figures, args.latex, args.dataset, args.kernel, html) else 0
    if args.command == "demo":
        return 1 if demo(args.full, args.kernel) else 0
    import subprocess

    return subprocess.call([sys.executable, "-m", "jupyter", "lab", str(notebooks_dir() / "inspect_questions.ipynb")])


if __name__ == "__main__":
    sys.exit(main())
