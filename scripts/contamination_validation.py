"""The contamination validation of docs/contamination.md: Gemma-3-270M contaminated on half of ENEM 2021 (Portuguese)
at 1, 3 and 10 exposures with two seeds; every model audited on ENEM 2021 in Portuguese; the clean model and the
3- and 10-exposure models also on ENEM 2021 in English (the cross-language audit) and on a seeded half of each
area of ENEM 2019 and 2017 in Portuguese (exams no model was trained on: the false-alarm controls). The cuts (1
exposure on the exposure exam only, half control exams) keep the whole within about five hours of 2 CPU cores.

    python scripts/contamination_validation.py --work W --list        # the steps, done or not
    python scripts/contamination_validation.py --work W --next        # run pending steps for up to 28 minutes
                                                                       # (exit 3: none was left)
    python scripts/contamination_validation.py --work W --collect     # raw results -> data/contamination/

Every step writes its result under --work (model folders, audit folders: large, never committed) and is skipped
when that result is there; a step is one training exposure or one measurement of one model on one exam, a few
minutes each on 2 CPU cores; `--next` starts steps while the next one (as long as the longest so far) still ends
within `--minutes`, so the whole runs as many jobs of under half an hour under the heavy-job lock:

    while flock /tmp/mcqa-heavy.lock python scripts/contamination_validation.py --work W --next; do :; done

`--collect` writes the committed raw results (no paths, no weights): scores.parquet (every detector's score per
model x exam x item), labels.parquet, accuracy.parquet, tests.parquet (the model-level tests), probe.parquet,
models.json (each model's manifest without its item lists) and steps.json (seconds and load of every step).
The design and every choice in it were fixed before any audit ran (docs/contamination.md).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data" / "contamination"
BASE = "gemma-3-270m"
SEEDS, EXPOSURES, LR, FRACTION = (0, 1), (1, 3, 10), 1e-5, 0.5
EXAMS = {"pt2021": ("pt-br", 2021), "en2021": ("en", 2021), "pt2019": ("pt-br", 2019), "pt2017": ("pt-br", 2017)}
AUDITS = {"pt2021": ("letters", "familiarity", "probe"), "en2021": ("letters", "familiarity"),
          "pt2019": ("letters", "familiarity"), "pt2017": ("familiarity",)}
HALF = ("pt2019", "pt2017")                 # control exams: a seeded half of each area (seed = the year)
FULL_AUDIT = (0, 3, 10)                     # exposures audited on every exam; the others on pt2021 only
CONTROL = {"pt2021": "pt2019", "pt2019": "pt2017"}   # dataset inference: suspect exam -> a control exam
N_PERM, SHUFFLES = 9999, 5
MODELS = ["clean"] + [f"s{s}-x{e}" for s in SEEDS for e in EXPOSURES]


def items(work: Path, shared: Path, exam: str):
    """The exam's items, with INEP's item parameters (a folder of links to the year's CSVs under --work)."""
    from mcqa_toolkit.datasets import load

    version, year = EXAMS[exam]
    folder = work / "exams" / exam
    if not folder.exists():
        tmp = folder.with_name(f".{exam}.{os.getpid()}")
        tmp.mkdir(parents=True)
        for f in sorted((shared / "enem_exams" / version).glob(f"ENEM_{year}_*.csv")):
            (tmp / f.name).symlink_to(f)
        tmp.replace(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the booklet-code warnings of the real files (tests/datasets)
        loaded = load("enem", path=folder, item_params=shared / "enem_inep" / f"ITENS_PROVA_{year}.csv")
    if exam in HALF:
        from mcqa_toolkit.prompts.solved_page import exposure_split

        return loaded.filter(item_id=set(exposure_split(loaded, 0.5, year)[0]))
    return loaded


def _exposures(model: str) -> int:
    return 0 if model == "clean" else int(model.split("-x")[1])


def model_dir(work: Path, model: str) -> Path | str:
    if model == "clean":
        return BASE
    seed, exposures = model[1:].split("-x")
    return work / "models" / f"s{seed}" / f"x{exposures}"


def steps(work: Path) -> list[tuple[str, Path, dict]]:
    """(name, the file that marks it done, arguments) of every step, in the order they run."""
    def audits(models):
        return [(f"audit {model} {exam} {m}", work / "marks" / f"audit_{model}_{exam}_{m}.json",
                 {"kind": m, "model": model, "exam": exam})
                for model in models for exam, measures in AUDITS.items() for m in measures
                if exam == "pt2021" or _exposures(model) in FULL_AUDIT]

    out = []
    for seed in SEEDS:   # a seed's models are audited before the next seed trains: results come early
        out += [(f"train s{seed} exposure {e}", work / "marks" / f"train_s{seed}_e{e}.json",
                 {"kind": "train", "seed": seed, "until": e}) for e in range(1, max(EXPOSURES) + 1)]
        out += audits((["clean"] if seed == SEEDS[0] else []) + [f"s{seed}-x{e}" for e in EXPOSURES])
    return out


def train(work: Path, shared: Path, seed: int, until: int) -> None:
    from mcqa_toolkit.contamination.fine_tuning import Recipe, contaminate
    from mcqa_toolkit.prompts.solved_page import exposure_split

    pt = items(work, shared, "pt2021")
    exposed, _ = exposure_split(pt, FRACTION, seed)
    recipe = Recipe(exposures=EXPOSURES, lr=LR, seed=seed)
    contaminate(BASE, pt, exposed, work / "models" / f"s{seed}", recipe, until=until)


def audit(work: Path, shared: Path, model: str, exam: str, step: str) -> None:
    from mcqa_toolkit.backends.hf import HFBackend, load_model
    from mcqa_toolkit.contamination.audit import audit_model
    from mcqa_toolkit.run.strategy import strategy

    lm = load_model(str(model_dir(work, model)), device="cpu", dtype="float32")
    lm.name = model   # the records say "s0-x3", not a path
    audit_model(HFBackend(lm), items(work, shared, exam), work / "audits" / model / exam,
                strategy("enem_0shot", shuffles=SHUFFLES), steps=(step,))


def run_step(work: Path, shared: Path, name: str, mark: Path, args: dict) -> None:
    load0, t0 = os.getloadavg()[0], time.time()
    if args["kind"] == "train":
        train(work, shared, args["seed"], args["until"])
    else:
        audit(work, shared, args["model"], args["exam"], args["kind"])
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(json.dumps({"step": name, "seconds": round(time.time() - t0, 1), "load_before": load0,
                                "load_after": os.getloadavg()[0]}))
    print(f"{name}: {time.time() - t0:.0f} s", flush=True)


def collect(work: Path, shared: Path) -> None:
    """The committed raw results (module docstring), from the audits and the manifests."""
    from mcqa_toolkit.backends.hf.manifest import read_manifest
    from mcqa_toolkit.prompts.solved_page import has_page
    from mcqa_toolkit.records import RunDir
    from mcqa_toolkit.contamination.audit import FAMILIARITY, LETTERS, PROBE, Audit
    from mcqa_toolkit.contamination.validation import validation_results

    def done(model: str, exam: str, measure: str) -> bool:   # a step killed half-way left files but no mark
        return (work / "marks" / f"audit_{model}_{exam}_{measure}.json").exists()

    trained = [m for m in MODELS[1:] if (work / "marks" / f"train_{m.split('-x')[0]}_e{_exposures(m)}.json").exists()]
    manifests = {m: read_manifest(model_dir(work, m)) for m in trained}
    keyed = [it.parallel_id for it in items(work, shared, "pt2021") if has_page(it)]
    labels = pd.concat([pd.DataFrame({"model": m, "parallel_id": keyed, "split": f"s{man['recipe']['seed']}",
                                      "exposed": pd.Series(keyed).isin(man["items"]["exposed_parallel_ids"])})
                        for m, man in manifests.items()], ignore_index=True)
    clean = [labels[labels["model"] == f"s{s}-x1"].assign(model="clean") for s in SEEDS]  # the clean model
    labels = pd.concat([labels, *clean], ignore_index=True)                               # under either split
    audits = {}
    for model in MODELS:
        for exam in EXAMS:
            folder = work / "audits" / model / exam
            records = RunDir(folder / LETTERS).load() if done(model, exam, "letters") else None
            audit = Audit(folder, records, *(pd.read_parquet(folder / name) if done(model, exam, measure) else None
                                             for name, measure in ((FAMILIARITY, "familiarity"), (PROBE, "probe"))))
            if any(x is not None for x in (audit.records, audit.familiarity, audit.probe)):
                audits[(model, exam)] = audit
    results = validation_results(audits, {exam: items(work, shared, exam) for exam in EXAMS}, labels, CONTROL,
                                 n_perm=N_PERM)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, frame in {**results, "labels": labels}.items():
        frame.to_parquet(OUT / f"{name}.parquet", index=False)
    kept = ("exposures", "base_model", "weights_sha256", "recipe", "parameters", "templates", "pages_sha256",
            "train_loss", "packages")   # the seconds of training are each step's, in steps.json
    models = {m: {**{k: man[k] for k in kept}, "n_exposed": len(man["items"]["exposed"]),
                  "n_held_out": len(man["items"]["held_out"]), "items_fingerprint": man["items"]["fingerprint"]}
              for m, man in manifests.items()}
    (OUT / "models.json").write_text(json.dumps(models, indent=1, ensure_ascii=False) + "\n")
    log = [json.loads(mark.read_text()) for _, mark, _ in steps(work) if mark.exists()]
    (OUT / "steps.json").write_text(json.dumps(log, indent=1) + "\n")
    print(f"raw results in {OUT.relative_to(REPO)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, type=Path, help="where models and audits go (several GB)")
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "reference")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true")
    what.add_argument("--next", action="store_true")
    what.add_argument("--collect", action="store_true")
    ap.add_argument("--minutes", type=float, default=28.0, help="--next: the time a job may take")
    ap.add_argument("--only", nargs="+", metavar="STEP", help="--next: only these steps (names as --list prints "
                    "them), in this order; to run the audits of one comparison first")
    args = ap.parse_args()
    work = args.work.resolve()
    known = {name: (name, mark, step_args) for name, mark, step_args in steps(work)}
    unknown = sorted(set(args.only or ()) - set(known))
    if unknown:
        ap.error(f"--only: no step named {', '.join(map(repr, unknown))} (see --list)")
    if args.collect:
        collect(work, args.shared)
        return 0
    if args.list:
        for name, mark, _ in steps(work):
            print(f"{'done   ' if mark.exists() else 'pending'} {name}")
        return 0
    t0, longest, ran = time.time(), 0.0, 0
    for name, mark, step_args in [known[n] for n in args.only] if args.only else steps(work):
        if mark.exists():
            continue
        if ran and time.time() - t0 + longest > 60 * args.minutes:
            break
        t1 = time.time()
        run_step(work, args.shared, name, mark, step_args)
        longest, ran = max(longest, time.time() - t1), ran + 1
    return 0 if ran else 3


if __name__ == "__main__":
    sys.exit(main())
