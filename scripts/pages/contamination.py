"""docs/contamination.md's tables, from the validation's committed raw results (data/contamination, written by
scripts/contamination_validation.py --collect) through the same functions as notebooks/19_contamination
(report.contamination and contamination.detector_auc): what was measured, the item-level AUCs per exam, the
accuracy gains, the probe's exact matches and the model-level tests. A cell that measured nothing says so."""
from __future__ import annotations

import math

import pandas as pd

from mcqa_toolkit.contamination import accuracy_gain, detector_auc
from mcqa_toolkit.report import contamination
from mcqa_toolkit.report.contamination import Validation

from pages.blocks import REPO, table

DATA = REPO / "data" / "contamination"
ALPHA = 0.01
EXPOSURE_EXAM = "pt2021"
SHORT = {"min_k": "Min-K%", "min_k_pp": "Min-K%++", "zlib": "zlib", "reference": "reference", "probe": "probe",
         "key_pull": "key pull", "fit_residual": "3PL residual"}


def _exposures(e: int) -> str:
    return "clean" if e == 0 else f"{e} exposure{'s' if e > 1 else ''}"


def measured(v: Validation) -> str:
    """Per model x exam: the detectors that scored items (and how many items)."""
    counts = v.scores.groupby(["model", "exam", "detector"])["item_id"].nunique().reset_index()
    exams = sorted(counts["exam"].unique(), key=lambda e: (e[2:], e[:2]), reverse=True)
    order = ["clean"] + sorted((m for m in counts["model"].unique() if m != "clean"),
                               key=lambda m: (m.split("-")[0], int(m.split("-x")[1])))
    rows = []
    for model in order:
        row = [f"`{model}`"]
        for exam in exams:
            c = counts[(counts["model"] == model) & (counts["exam"] == exam)]
            row.append(", ".join(f"{SHORT.get(d, d)}" for d in c["detector"]) + f" ({c['item_id'].max()})"
                       if len(c) else "not measured")
        rows.append(row)
    return table(["model", *exams], rows)


def auc(v: Validation, aucs: pd.DataFrame, exam: str) -> str:
    """Detectors x exposures: the AUC of each model (seed) and their mean; the clean model against each split."""
    a = contamination.with_models(aucs[aucs["exam"] == exam], v.models)
    if a.empty:
        return f"Not measured: no audit of {exam}."
    exposures = sorted(a["exposures"].unique())
    rows = []
    for det in [d for d in contamination.DETECTOR_NAMES if d in set(a["detector"])]:
        row = [contamination.DETECTOR_NAMES[det]]
        for e in exposures:
            cell = a[(a["detector"] == det) & (a["exposures"] == e)].dropna(subset=["auc"])
            if e == 0:   # the clean model, scored against each seed's split
                row.append(" / ".join(f"{x:.2f}" for x in cell["auc"]) if len(cell) else "—")
            elif len(cell) == 0:
                row.append("not measured")
            else:
                per = " / ".join(f"{m.split('-')[0]} {x:.2f}" for m, x in sorted(zip(cell["model"], cell["auc"])))
                row.append(f"**{cell['auc'].mean():.2f}** ({per})" if len(cell) > 1 else per)
        rows.append(row)
    header = ["detector", *[_exposures(int(e)) for e in exposures]]
    return table(header, rows, "l" + "r" * len(exposures)) + (
        "\n\nCells: the mean over the seeds in bold where two were measured, then each seed's model; the clean "
        "column holds the clean model's AUC against each seed's split (— where a detector has no score for it: the "
        "reference ratio of the clean model against itself is zero everywhere).")


def gains(v: Validation) -> str:
    """Accuracy minus the clean model's on the same items, per exam x exposed x order (mean over seeds)."""
    g = contamination.gain_summary(accuracy_gain(v.accuracy, "clean"), v.models)
    g = g[g["exposures"] > 0]
    seeds = contamination.with_models(v.accuracy[v.accuracy["model"] != "clean"], v.models)
    n_seeds = seeds.groupby(["exam", "exposures"])["seed"].nunique()
    exposures = sorted(g["exposures"].unique())
    rows = []
    for (exam, exposed, order), cell in g.groupby(["exam", "exposed", "order"], sort=True):
        n = v.accuracy[(v.accuracy["exam"] == exam) & (v.accuracy["exposed"] == exposed)]["n_items"].max()
        row = [exam, f"{'exposed' if exposed else 'held out'} ({n})", order,
               f"{cell['clean_accuracy'].iloc[0]:.3f}"]
        for e in exposures:
            x = cell[cell["exposures"] == e]["gain"]
            k = n_seeds.get((exam, e), 0)
            row.append("not measured" if x.empty else f"{x.iloc[0]:+.3f} ({k} seed{'s' if k > 1 else ''})")
        rows.append(row)
    return table(["exam", "questions", "option order", "clean accuracy", *[_exposures(int(e)) for e in exposures]],
                 rows, "lllr" + "r" * len(exposures))


def probe(v: Validation) -> str:
    """The masked-option probe's exact-match rate and ROUGE-L, per exam x exposed x exposures."""
    if v.probe.empty:
        return "Not measured: no probe was run."
    p = contamination.probe_rates(v.probe, v.labels, v.models)
    rows = [[r.exam, _exposures(int(r.exposures)), "exposed" if r.exposed else "held out", str(r.n),
             f"{r.exact_rate:.3f}", f"{r.rouge_l:.3f}"] for r in p.itertuples()]
    return table(["exam", "model", "questions", "probes", "exact match", "ROUGE-L"], rows, "lllrrr")


def _p(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    text = f"{x:.2g}"
    return f"**{text}**" if x < ALPHA else text


def tests(v: Validation) -> str:
    """p-values of every model-level test (bold: a flag), then detections and false alarms per test."""
    flags = contamination.flag_tests(v.tests, v.models, ALPHA, EXPOSURE_EXAM)
    flags = flags[flags["p_value"].notna()]
    cols = sorted({(r.model, r.exam) for r in flags.itertuples()},
                  key=lambda me: (me[0] != "clean", me[0].split("-")[0], int(me[0].split("-x")[1]) if "-x" in me[0]
                                  else 0, me[1] != EXPOSURE_EXAM, me[1]))
    rows = []
    for test, t in flags.groupby("test", sort=True):
        cells = {(r.model, r.exam): r.p_value for r in t.itertuples()}
        rows.append([test.replace("_", " ")] + [_p(cells.get(c, float("nan"))) for c in cols])
    p_table = table(["test", *[f"{m}, {e}" for m, e in cols]], rows, "l" + "r" * len(cols))
    rates = contamination.flag_summary(flags)
    r_rows = [[r.test.replace("_", " "), r.kind, "—" if r.exposures < 0 else _exposures(int(r.exposures)),
               f"{int(r.flagged)} of {int(r.n)}"] for r in rates.itertuples()]
    return (p_table + f"\n\nFlags (p < {ALPHA:g}) per test: detections are contaminated models on the exam they were "
            "trained on, false alarms the pairs that saw nothing (the clean model on every exam, contaminated models "
            "on exams they were not trained on); the translation is apart (above).\n\n"
            + table(["test", "kind", "models", "flagged"], r_rows, "lllr"))


def blocks() -> dict[str, str]:
    v = contamination.load_validation(DATA)
    aucs = detector_auc(v.scores, v.labels, by=("model", "exam", "language", "detector"))
    return {"contam-measured": measured(v), "contam-auc-pt2021": auc(v, aucs, "pt2021"),
            "contam-auc-en2021": auc(v, aucs, "en2021"), "contam-gain": gains(v), "contam-probe": probe(v),
            "contam-tests": tests(v)}
