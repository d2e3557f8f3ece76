"""The contamination validation of docs/contamination.md: Gemma-3-270M contaminated on half of ENEM 2021 (Portuguese)
at 1, 3 and 10 exposures with two seeds, and clean controls fine-tuned the same way (as many pages per area, the same
recipe, 3 exposures, five seeds) on solved pages of ENEM 2011 and 2013, text that holds no item of an audited exam;
every model audited on ENEM 2021 in Portuguese, the clean model and the 3- and 10-exposure models also on its English
translation and on a seeded half of each area of ENEM 2019 and 2017 (exams no model was trained on), the controls on
2021 and 2019 as the contaminated models are.

    python studies/contamination_validation.py --work W --list      # the steps, done or not
    python studies/contamination_validation.py --work W --next      # pending steps for up to 28 minutes (exit 3: none)
    python studies/contamination_validation.py --work W --collect   # raw results -> results/studies/contamination/

A step (one training exposure, one measurement of one model on one exam: a few minutes on 2 CPU cores) writes under
--work (model and audit folders: large, never committed) and marks itself done; `--next` starts steps while the next
(as long as the longest so far) still ends within `--minutes`, so the whole runs as jobs of under half an hour:

    while flock /tmp/mcqa-heavy.lock python studies/contamination_validation.py --work W --next; do :; done

It ran in two sessions: the first one's results are committed (its steps in steps.json) and its work folder is gone,
so `plan` holds the second's steps: the clean model's familiarity again (the reference ratio's reference), the
controls, and seed 1 trained again from its first exposure to 10. `--collect` adds what the audits under --work
measured to the committed raw results (no paths, no weights), never rewriting a committed row (checked):
scores.parquet, labels.parquet, accuracy.parquet, tests.parquet, probe.parquet, models.json (each model's manifest
without its item lists), steps.json (seconds and load of every step run), plan.json (`plan`'s steps: run or not) and
reproduced.json (what was measured twice). Remove a file to rebuild it from the work folder alone. The design was
fixed before any audit ran.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "results" / "studies" / "contamination"
BASE = "gemma-3-270m"
SEEDS, EXPOSURES, LR, FRACTION = (0, 1), (1, 3, 10), 1e-5, 0.5
CONTROL_SEEDS, CONTROL_EXPOSURES = (0, 1, 2, 3, 4), (3,)
POOL = ("pt2011", "pt2013")                 # the controls' pages: items of no audited exam
EXAMS = {"pt2021": ("pt-br", 2021), "en2021": ("en", 2021), "pt2019": ("pt-br", 2019), "pt2017": ("pt-br", 2017),
         "pt2011": ("pt-br", 2011), "pt2013": ("pt-br", 2013)}
AUDITS = {"pt2021": ("letters", "familiarity", "probe"), "en2021": ("letters", "familiarity"),
          "pt2019": ("letters", "familiarity"), "pt2017": ("familiarity",)}
HALF = ("pt2019", "pt2017")                 # control exams: a seeded half of each area (seed = the year)
CONTROL_EXAM = {"pt2021": "pt2019", "pt2019": "pt2017"}   # dataset inference: suspect exam -> a control exam
N_PERM, SHUFFLES = 9999, 5
FRAMES = ("scores", "labels", "accuracy", "tests", "probe")
DETECTORS = ("min_k_pp", "min_k", "zlib", "reference")   # the dataset-inference tests' detectors
MODELS = (["clean"] + [f"s{s}-x{e}" for s in SEEDS for e in EXPOSURES]
          + [f"c{s}-x{e}" for s in CONTROL_SEEDS for e in CONTROL_EXPOSURES])


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


def kind(model: str) -> str:
    """clean (the base model), contaminated (s<seed>-x<e>) or control (c<seed>-x<e>: fine-tuned on other exams)."""
    return {"s": "contaminated", "c": "control"}.get(model[0], "clean") if model != "clean" else "clean"


def model_dir(work: Path, model: str) -> Path | str:
    training, exposures = model.split("-x") if model != "clean" else (None, None)
    return BASE if model == "clean" else work / "models" / training / f"x{exposures}"


def audits_of(model: str) -> list[tuple[str, str]]:
    """(exam, measure) of the design's audits of a model: the 1-exposure models on the exposure exam only, the
    controls on it and on its control exam (as the contaminated models are), the others on every exam."""
    exams = {"clean": list(AUDITS), "control": ["pt2021", "pt2019"]}.get(
        kind(model), list(AUDITS) if int(model.split("-x")[1]) > 1 else ["pt2021"])
    return [(exam, m) for exam in exams for m in AUDITS[exam]]


def _train(training: str, e: int, work: Path) -> tuple[str, Path, dict]:
    return (f"train {training} exposure {e}", work / "marks" / f"train_{training}_e{e}.json",
            {"kind": "train", "training": training, "until": e})


def _audit(model: str, exam: str, m: str, work: Path) -> tuple[str, Path, dict]:
    return (f"audit {model} {exam} {m}", work / "marks" / f"audit_{model}_{exam}_{m}.json",
            {"kind": m, "model": model, "exam": exam})


def plan(work: Path) -> list[tuple[str, Path, dict]]:
    """(name, the file that marks it done, arguments) of this session's steps, in the order they run: the clean
    model's familiarity again (the reference of the new models' reference ratio), then each control (trained, then
    audited), seed 1 trained again to 10 exposures and its 10-exposure model audited, then two more controls."""
    def control(seed):
        model = f"c{seed}-x{CONTROL_EXPOSURES[-1]}"
        return ([_train(f"c{seed}", e, work) for e in range(1, CONTROL_EXPOSURES[-1] + 1)]
                + [_audit(model, exam, m, work) for exam, m in audits_of(model)])

    out = [_audit("clean", exam, "familiarity", work) for exam in ("pt2021", "pt2019")]
    for seed in CONTROL_SEEDS[:3]:
        out += control(seed)
    out += [_train("s1", e, work) for e in range(1, max(EXPOSURES) + 1)]
    out += [_audit("s1-x10", exam, m, work) for exam, m in audits_of("s1-x10") if exam in ("pt2021", "pt2019")]
    for seed in CONTROL_SEEDS[3:]:
        out += control(seed)
    return out


def committed_steps() -> list[dict]:
    """The steps of the earlier session, as committed (steps.json)."""
    return json.loads((OUT / "steps.json").read_text()) if (OUT / "steps.json").exists() else []


def train(work: Path, shared: Path, training: str, until: int) -> None:
    """One exposure more of a contaminated model (s<seed>: half of ENEM 2021) or of a control (c<seed>: as many
    pages of ENEM 2011 and 2013 items per subject as s0 saw of 2021)."""
    from mcqa_toolkit.contamination.fine_tuning import Recipe, contaminate
    from mcqa_toolkit.items import ItemSet
    from mcqa_toolkit.prompts.solved_page import exposure_split, matched_split

    seed = int(training[1:])
    pt = items(work, shared, "pt2021")
    if training.startswith("s"):
        exposed, _ = exposure_split(pt, FRACTION, seed)
        recipe, trained_on = Recipe(exposures=EXPOSURES, lr=LR, seed=seed), pt
    else:
        s0 = set(exposure_split(pt, FRACTION, 0)[0])
        counts = pd.Series([it.subject for it in pt if it.item_id in s0]).value_counts().to_dict()
        trained_on = ItemSet([it for exam in POOL for it in items(work, shared, exam)], name="enem:2011+2013")
        exposed = matched_split(trained_on, counts, seed)
        recipe = Recipe(exposures=CONTROL_EXPOSURES, lr=LR, seed=seed)
    contaminate(BASE, trained_on, exposed, work / "models" / training, recipe, until=until)


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
        train(work, shared, args["training"], args["until"])
    else:
        audit(work, shared, args["model"], args["exam"], args["kind"])
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(json.dumps({"step": name, "seconds": round(time.time() - t0, 1), "load_before": load0,
                                "load_after": os.getloadavg()[0],
                                "date": datetime.now(timezone.utc).date().isoformat()}))
    print(f"{name}: {time.time() - t0:.0f} s", flush=True)


def collect(work: Path, shared: Path) -> None:
    """Add the audits under `work` that the committed raw results lack (module docstring); committed rows stay as
    they are (checked after writing)."""
    from mcqa_toolkit.backends.hf.manifest import MANIFEST, read_manifest
    from mcqa_toolkit.contamination.audit import load_audit
    from mcqa_toolkit.contamination.validation import add_results, validation_results
    from mcqa_toolkit.prompts.solved_page import exposure_split, has_page

    old = {f: pd.read_parquet(OUT / f"{f}.parquet") for f in FRAMES if (OUT / f"{f}.parquet").exists()}
    old_models = json.loads((OUT / "models.json").read_text()) if (OUT / "models.json").exists() else {}
    before = set(zip(old["scores"]["model"], old["scores"]["exam"], strict=True)) if "scores" in old else set()
    manifests = {m: read_manifest(model_dir(work, m)) for m in MODELS[1:] if (model_dir(work, m) / MANIFEST).exists()}
    pt = items(work, shared, "pt2021")
    keyed = [it.parallel_id for it in pt if has_page(it)]

    def split(model: str, seed: int, exposed) -> pd.DataFrame:
        return pd.DataFrame({"model": model, "parallel_id": keyed, "split": f"s{seed}",
                             "exposed": pd.Series(keyed).isin(set(exposed))})
    splits = {s: [pt[i].parallel_id for i in exposure_split(pt, FRACTION, s)[0]] for s in SEEDS}
    labelled = set(old["labels"]["model"]) if "labels" in old else set()
    new_labels = [split(m, man["recipe"]["seed"], man["items"]["exposed_parallel_ids"]) for m, man in manifests.items()
                  if kind(m) == "contaminated" and m not in labelled]
    new_labels += [split(m, s, splits[s]) for m in MODELS if kind(m) != "contaminated" and m not in labelled
                   and (m == "clean" or m in manifests) for s in SEEDS]    # nothing seen: under either split
    labels = pd.concat([*([old["labels"]] if "labels" in old else []), *new_labels], ignore_index=True)
    audits, references = {}, {}
    for model in MODELS:
        for exam in AUDITS:
            audit = load_audit(work / "audits" / model / exam)   # the steps done (AuditDir.done), None else
            if model == "clean" and audit.familiarity is not None:
                references[exam] = audit.familiarity
            if (model, exam) not in before and any(x is not None for x in (audit.records, audit.familiarity,
                                                                             audit.probe)):
                audits[(model, exam)] = audit
    new = validation_results(audits, {exam: items(work, shared, exam) for exam in AUDITS}, labels, {},
                             n_perm=N_PERM, references=references) if audits else {}
    frames = {**add_results(old, new, CONTROL_EXAM, DETECTORS), "labels": labels}
    OUT.mkdir(parents=True, exist_ok=True)
    for name, frame in frames.items():
        frame.to_parquet(OUT / f"{name}.parquet", index=False)
    for name, frame in old.items():   # what was committed is still there, row for row
        pd.testing.assert_frame_equal(pd.read_parquet(OUT / f"{name}.parquet").iloc[:len(frame)], frame,
                                      check_dtype=False)
    kept = ("exposures", "base_model", "weights_sha256", "recipe", "parameters", "templates", "pages_sha256",
            "train_loss", "packages")   # the seconds of training are each step's, in steps.json
    models = {**old_models, **{m: {"kind": kind(m), **{k: man[k] for k in kept},
                                   "n_exposed": len(man["items"]["exposed"]),
                                   "n_held_out": len(man["items"]["held_out"]),
                                   "items_dataset": man["items"]["dataset"],
                                   "items_fingerprint": man["items"]["fingerprint"]}
                               for m, man in manifests.items() if m not in old_models}}
    (OUT / "models.json").write_text(json.dumps(models, indent=1, ensure_ascii=False) + "\n")
    log = committed_steps()
    log += [m for m in (json.loads(mark.read_text()) for _, mark, _ in plan(work) if mark.exists()) if m not in log]
    for what, data in (("steps", log), ("plan", {step: mark.exists() for step, mark, _ in plan(work)}),
                       ("reproduced", reproduced(old, references, manifests, old_models))):
        (OUT / f"{what}.json").write_text(json.dumps(data, indent=1) + "\n")
    print(f"raw results in {OUT.relative_to(REPO)}: {len(audits)} audits added")


def reproduced(old: dict, references: dict, manifests: dict, old_models: dict) -> dict:
    """What this session measured again of the committed results: the clean model's text scores from its
    familiarity measured again (largest difference per detector and exam), seed 1's weights trained again."""
    from mcqa_toolkit.contamination.detectors import contamination_scores

    out = {"clean_familiarity": {}, "weights": {}}
    for exam, fam in references.items():
        again = contamination_scores(fam).assign(exam=exam)
        was = old["scores"][(old["scores"]["model"] == "clean") & (old["scores"]["exam"] == exam)]
        m = again.merge(was, on=["item_id", "detector", "exam"], suffixes=("", "_committed"))
        out["clean_familiarity"][exam] = {d: {"n_items": int(len(g)), "max_abs_difference":
                                              float((g["score"] - g["score_committed"]).abs().max())}
                                          for d, g in m.groupby("detector")}
    # the controls are this session's own models: one already committed was collected from this same work folder
    # earlier, not trained again
    out["weights"] = {m: {"same_weights": man["weights_sha256"] == old_models[m]["weights_sha256"]}
                      for m, man in manifests.items() if m in old_models and kind(m) != "control"}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, type=Path, help="where models and audits go (several GB)")
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "reference")
    what = ap.add_mutually_exclusive_group(required=True)
    for flag in ("--list", "--next", "--collect"):
        what.add_argument(flag, action="store_true")
    ap.add_argument("--minutes", type=float, default=28.0, help="--next: the time a job may take")
    ap.add_argument("--only", nargs="+", metavar="STEP", help="--next: only these steps (names as --list prints "
                    "them), in this order; to run the audits of one comparison first")
    args = ap.parse_args()
    work = args.work.resolve()
    known = {name: (name, mark, step_args) for name, mark, step_args in plan(work)}
    unknown = sorted(set(args.only or ()) - set(known))
    if unknown:
        ap.error(f"--only: no step named {', '.join(map(repr, unknown))} (see --list)")
    if args.collect:
        collect(work, args.shared)
        return 0
    if args.list:
        for step in committed_steps():
            print(f"earlier {step['step']}")
        for name, mark, _ in plan(work):
            print(f"{'done   ' if mark.exists() else 'pending'} {name}")
        return 0
    t0, longest, ran = time.time(), 0.0, 0
    for name, mark, step_args in [known[n] for n in args.only] if args.only else plan(work):
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
