"""docs/contamination.md's tables, from the validation's committed raw results (results/studies/contamination,
written by studies/contamination_validation.py --collect) through the same functions as
notebooks/contamination_validation (report.contamination and contamination.detector_auc): first the auditor's table (the
detectors that need nothing but the model, with the clean controls' AUCs and false alarms), then the reference ratio
apart as an upper bound; then what was measured, the AUCs per exam, the accuracy gains, the probe, the model-level
tests, the time of the steps, how much of the second session's plan ran and what was measured twice. A cell that
measured nothing says so."""
from __future__ import annotations

import json
import math

import pandas as pd

from mcqa_toolkit.contamination import accuracy_gain, detector_auc
from mcqa_toolkit.report import contamination
from mcqa_toolkit.report.contamination import Validation
from pages.blocks import REPO, table

DATA = REPO / "results" / "studies" / "contamination"
ALPHA = 0.01
EXPOSURE_EXAM = "pt2021"
SHORT = {"min_k": "Min-K%", "min_k_pp": "Min-K%++", "zlib": "zlib", "reference": "reference", "probe": "probe",
         "key_pull": "key pull", "fit_residual": "3PL residual"}
AUDITOR = {"min_k": "dataset_inference_min_k", "min_k_pp": "dataset_inference_min_k_pp",   # detector -> its
           "zlib": "dataset_inference_zlib", "probe": None, "key_pull": "key_pull",       # model-level test
           "fit_residual": "person_fit"}
UPPER = {"reference": "dataset_inference_reference"}


def _exposures(e: int) -> str:
    return "clean" if e == 0 else f"{e} exposure{'s' if e > 1 else ''}"


def _model_order(m: str) -> tuple:
    return ("cs".find(m[0]) if m != "clean" else -2, m.split("-x")[0], int(m.split("-x")[1]) if "-x" in m else 0)


def _spread(x: pd.Series) -> str:
    """Mean (min-max) [n] of a cell's AUCs."""
    if x.empty:
        return "not measured"
    return f"{x.mean():.2f} ({x.min():.2f}–{x.max():.2f}) [{len(x)}]" if len(x) > 1 else f"{x.iloc[0]:.2f} [1]"


def _test_name(test: str) -> str:
    return test.replace("dataset_inference_", "dataset inference, ").replace("_", " ").replace(
        "min k pp", "Min-K%++").replace("min k", "Min-K%").replace("reference", "reference ratio")


def _controls(n: int) -> str:
    return f"{n} control{'s' if n != 1 else ''}"


def _counts(rates: pd.DataFrame, test: str | None, kind: str, exposures=None) -> str:
    if test is None:
        return "—"
    r = rates[(rates["test"] == test) & (rates["kind"] == kind)]
    if exposures is not None:
        r = r[r["exposures"].isin(exposures)]
    if r.empty:
        return "not measured"
    n, k = int(r["n"].sum()), int(r["flagged"].sum())
    if kind != "clean models":
        return f"{k} of {n}"
    return (f"{k} of {n} ({_controls(int(r['n_controls'].sum()))}): rate at most "
            f"{contamination.rate_upper_bound(k, n):.2f}")


def _summary_rows(v: Validation, aucs: pd.DataFrame, detectors: dict) -> list[list[str]]:
    a = contamination.with_models(aucs[aucs["exam"] == EXPOSURE_EXAM], v.models)
    rates = contamination.flag_summary(contamination.flag_tests(v.tests, v.models, ALPHA, EXPOSURE_EXAM))
    big = sorted(e for e in a.loc[a["kind"] == "contaminated", "exposures"].unique() if e >= 3)
    rows = []
    for det, test in detectors.items():
        d = a[a["detector"] == det].dropna(subset=["auc"])
        row = [contamination.DETECTOR_NAMES[det]]
        for e in sorted(a.loc[a["kind"] == "contaminated", "exposures"].unique()):
            row.append(_spread(d[(d["kind"] == "contaminated") & (d["exposures"] == e)]["auc"]))
        row += [_spread(d[d["kind"] == "control"]["auc"]), _test_name(test) if test else "— (no control exam)",
                _counts(rates, test, "detection", big), _counts(rates, test, "clean models")]
        rows.append(row)
    return rows


def _summary_header(v: Validation, aucs: pd.DataFrame) -> list[str]:
    a = contamination.with_models(aucs[aucs["exam"] == EXPOSURE_EXAM], v.models)
    return ["detector", *[f"AUC, {_exposures(int(e))}" for e in sorted(a.loc[a["kind"] == "contaminated",
                                                                                "exposures"].unique())],
            "AUC, clean controls", "model-level test", "flags, contaminated (3+ exposures)",
            "false alarms, clean models"]


def auditor(v: Validation, aucs: pd.DataFrame) -> str:
    """The detectors an auditor runs on a model they did not train: item-level AUC by exposures, the clean
    controls' AUC, and the model-level test each feeds, with its detections and false alarms."""
    header = _summary_header(v, aucs)
    return table(header, _summary_rows(v, aucs, AUDITOR), "l" + "r" * (len(header) - 4) + "lrr") + (
        f"\n\nAUC cells: mean (min–max) [number of models; the controls each against both splits]. Flags: p < "
        f"{ALPHA:g}. False alarms: the clean models on {EXPOSURE_EXAM} (the base model and the controls fine-tuned "
        "on other exams); a test that needs a control exam compares it with its control exam. \"Rate at most\": "
        "the exact (Clopper-Pearson) one-sided 95% upper bound of the false-alarm rate that count allows.")


def upper_bound(v: Validation, aucs: pd.DataFrame) -> str:
    """The reference ratio against the model before fine-tuning: what an auditor with that checkpoint would see."""
    header = _summary_header(v, aucs)
    return table(header, _summary_rows(v, aucs, UPPER), "l" + "r" * (len(header) - 4) + "lrr") + (
        "\n\nThe reference is the model before its fine-tuning, which only whoever trained the model has; the base "
        "model cannot be tested against itself, so its false alarms count the controls only.")


def measured(v: Validation) -> str:
    """Per model x exam: the detectors that scored items (and how many items)."""
    counts = v.scores.groupby(["model", "exam", "detector"])["item_id"].nunique().reset_index()
    exams = sorted(counts["exam"].unique(), key=lambda e: (e[2:], e[:2]), reverse=True)
    rows = []
    for model in sorted(counts["model"].unique(), key=_model_order):
        row = [f"`{model}`"]
        for exam in exams:
            c = counts[(counts["model"] == model) & (counts["exam"] == exam)]
            row.append(", ".join(f"{SHORT.get(d, d)}" for d in c["detector"]) + f" ({c['item_id'].max()})"
                       if len(c) else "not measured")
        rows.append(row)
    return table(["model", *exams], rows)


def auc(v: Validation, aucs: pd.DataFrame, exam: str) -> str:
    """Detectors x exposures: the AUC of each model (seed) and their mean; the clean model against each split;
    the controls' mean (min–max) [n]."""
    a = contamination.with_models(aucs[aucs["exam"] == exam], v.models)
    if a.empty:
        return f"Not measured: no audit of {exam}."
    exposures = sorted(a.loc[a["kind"] != "control", "exposures"].unique())
    controls = a[a["kind"] == "control"]
    rows = []
    for det in [d for d in contamination.DETECTOR_NAMES if d in set(a["detector"])]:
        row = [contamination.DETECTOR_NAMES[det]]
        for e in exposures:
            cell = a[(a["detector"] == det) & (a["exposures"] == e) & (a["kind"] != "control")].dropna(subset=["auc"])
            if e == 0:   # the clean model, scored against each seed's split
                row.append(" / ".join(f"{x:.2f}" for x in cell["auc"]) if len(cell) else "—")
            elif len(cell) == 0:
                row.append("not measured")
            else:
                per = " / ".join(f"{m.split('-')[0]} {x:.2f}"
                                 for m, x in sorted(zip(cell["model"], cell["auc"], strict=True)))
                row.append(f"**{cell['auc'].mean():.2f}** ({per})" if len(cell) > 1 else per)
        if len(controls):
            row.append(_spread(controls[controls["detector"] == det]["auc"].dropna()))
        rows.append(row)
    header = ["detector", *[_exposures(int(e)) for e in exposures]]
    header += [contamination.column_name("control", int(controls["exposures"].max()))] if len(controls) else []
    return table(header, rows, "l" + "r" * (len(header) - 1)) + (
        "\n\nCells: the mean over the seeds in bold where two were measured, then each seed's model; the clean "
        "column holds the clean model's AUC against each seed's split (— where a detector has no score for it: the "
        "reference ratio of the clean model against itself is zero everywhere); the controls: mean (min–max) "
        "[controls x splits].")


def gains(v: Validation) -> str:
    """Accuracy minus the clean model's on the same items, per exam x exposed x order (mean over seeds), the
    controls in a column of their own."""
    g = contamination.gain_summary(accuracy_gain(v.accuracy, "clean"), v.models)
    cols = sorted({(k, int(e)) for k, e in zip(g["kind"], g["exposures"], strict=True)},
                  key=lambda ke: (contamination.KINDS.index(ke[0]), ke[1]))
    rows = []
    for (exam, exposed, order), cell in g.groupby(["exam", "exposed", "order"], sort=True):
        n = v.accuracy[(v.accuracy["exam"] == exam) & (v.accuracy["exposed"] == exposed)]["n_items"].max()
        row = [exam, f"{'exposed' if exposed else 'held out'} ({n})", order,
               f"{cell['clean_accuracy'].iloc[0]:.3f}"]
        for k, e in cols:
            x = cell[(cell["kind"] == k) & (cell["exposures"] == e)]
            n_models = int(x["n_models"].iloc[0]) if len(x) else 0
            row.append("not measured" if x.empty else
                       f"{x['gain'].iloc[0]:+.3f} ({n_models} model{'s' if n_models > 1 else ''})")
        rows.append(row)
    return table(["exam", "questions", "option order", "clean accuracy",
                  *[contamination.column_name(k, e) for k, e in cols]], rows, "lllr" + "r" * len(cols))


def probe(v: Validation) -> str:
    """The masked-option probe's exact-match rate and ROUGE-L, per exam x kind x exposures x exposed."""
    if v.probe.empty:
        return "Not measured: no probe was run."
    p = contamination.probe_rates(v.probe, v.labels, v.models)
    p = p.assign(o=p["kind"].map(contamination.KINDS.index)).sort_values(["exam", "o", "exposures", "exposed"])
    rows = [[r.exam, contamination.column_name(r.kind, int(r.exposures)), "exposed" if r.exposed else "held out",
             str(r.n), f"{r.exact_rate:.3f}", f"{r.rouge_l:.3f}"] for r in p.itertuples()]
    return table(["exam", "model", "questions", "probes", "exact match", "ROUGE-L"], rows, "lllrrr")


def _p(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    text = f"{x:.2g}"
    return f"**{text}**" if x < ALPHA else text


def tests(v: Validation) -> str:
    """p-values of every model-level test per model x exam (bold: a flag), then detections and false alarms."""
    flags = contamination.flag_tests(v.tests, v.models, ALPHA, EXPOSURE_EXAM)
    flags = flags[flags["p_value"].notna()]
    names = sorted(flags["test"].unique())
    rows = []
    for (model, exam), t in sorted(flags.groupby(["model", "exam"]), key=lambda me: (_model_order(me[0][0]),
                                                                                      me[0][1] != EXPOSURE_EXAM,
                                                                                      me[0][1])):
        cells = dict(zip(t["test"], t["p_value"], strict=True))
        rows.append([f"`{model}`", exam] + [_p(cells.get(n, float("nan"))) for n in names])
    p_table = table(["model", "exam", *[_test_name(n) for n in names]], rows, "ll" + "r" * len(names))
    rates = contamination.flag_summary(flags)
    r_rows = []
    for r in rates.itertuples():
        who = {"detection": _exposures(int(r.exposures)), "clean models": f"clean models on {EXPOSURE_EXAM}",
               "false alarm": "every pair that saw nothing"}[r.kind]
        extra = f" ({_controls(r.n_controls)})" if r.kind == "clean models" else ""
        r_rows.append([_test_name(r.test), "detection" if r.kind == "detection" else "false alarm", who,
                       f"{r.flagged} of {r.n}{extra}"])
    return (p_table + f"\n\nFlags (p < {ALPHA:g}) per test: detections are contaminated models on the exam they were "
            "trained on; false alarms are counted on the clean models (the base model and the controls) on the "
            "exposure exam, and on every model x exam pair that saw nothing (the clean models everywhere, "
            "contaminated models on exams they were not trained on); the translation is apart (above).\n\n"
            + table(["test", "kind", "models", "flagged"], r_rows, "lllr"))


def step_times() -> str:
    """The seconds of each kind of step (steps.json: both sessions), with the load average when it started."""
    steps = pd.DataFrame(json.loads((DATA / "steps.json").read_text()))
    what = steps["step"].str.split().map(lambda w: "training exposure" if w[0] == "train" else f"audit: {w[-1]}")
    rows = []
    for name, g in steps.assign(what=what).groupby("what", sort=True):
        s = g["seconds"]
        rows.append([name, str(len(g)), f"{s.median():.0f}", f"{s.min():.0f}–{s.max():.0f}",
                     f"{g['load_before'].median():.1f}"])
    return table(["step", "steps", "median s", "range s", "median load before"], rows, "lrrrr")


def session() -> str:
    """The second session's plan (plan.json: each step, run or not), per model trained or measured: how many of its
    training exposures and audits ran, and how many of the planned controls were audited in full."""
    path = DATA / "plan.json"
    if not path.exists():
        return "No plan recorded."
    plan = pd.DataFrame([{"who": n.split()[1].split("-x")[0], "train": n.startswith("train"), "ran": ran}
                         for n, ran in json.loads(path.read_text()).items()])   # "train c0 ...", "audit c0-x3 ..."
    rows, full, missing = [], [], []
    for who, g in plan.groupby("who", sort=False):
        n_train = int(g["train"].sum())
        control = who != "clean" and who[0] == "c"
        name = (f"control `{who}`" if control else f"seed {who[1:]} trained again" if who[0] == "s"
                else f"the {who} model")
        cells = [f"{int(x['ran'].sum())} of {len(x)}" if len(x) else "—" for x in (g[g["train"]], g[~g["train"]])]
        rows.append([name + (f" ({n_train} exposures)" if n_train else ""), *cells])
        full += [bool(g["ran"].all())] if control else []
        if who[0] == "s" and not g["ran"].all():
            missing.append(f" Seed {who[1:]}'s {n_train}-exposure model " + ("was trained again but not audited in "
                           "full." if g.loc[g["train"], "ran"].all() else "was not trained again: no table holds it."))
    return table(["planned", "training exposures run", "audits run"], rows, "lrr") + (
        f"\n\nControls trained and audited in full: {sum(full)} of the {len(full)} planned." + "".join(missing))


def reproduced() -> str:
    """What the second session measured again of the first's results."""
    path = DATA / "reproduced.json"
    if not path.exists():
        return "Nothing was measured twice."
    r = json.loads(path.read_text())
    lines = [f"- The clean model's familiarity on {exam}, measured again: the largest difference from the committed "
             "score " + ", ".join(f"{SHORT.get(d, d)} {x['max_abs_difference']:.2g}" for d, x in sorted(det.items()))
             + f" ({next(iter(det.values()))['n_items']} questions)."
             for exam, det in sorted(r["clean_familiarity"].items())]
    lines += [f"- `{m}` trained again from its first exposure: "
              + ("the same weights (sha256) as the committed model." if x["same_weights"] else
                 "other weights than the committed model's (sha256 differs).") for m, x in sorted(r["weights"].items())]
    return "\n".join(lines) if lines else "Nothing was measured twice."


def blocks() -> dict[str, str]:
    v = contamination.load_validation(DATA)
    aucs = detector_auc(v.scores, v.labels, by=("model", "exam", "language", "detector"))
    return {"contam-auditor": auditor(v, aucs), "contam-upper": upper_bound(v, aucs), "contam-measured": measured(v),
            "contam-auc-pt2021": auc(v, aucs, "pt2021"), "contam-auc-en2021": auc(v, aucs, "en2021"),
            "contam-gain": gains(v), "contam-probe": probe(v), "contam-tests": tests(v), "contam-steps": step_times(),
            "contam-session": session(), "contam-reproduced": reproduced()}
