"""The DIF report's data: which persons the analysis stands on (the runs' response patterns, or labelled
simulated persons when the runs are too few), Mantel-Haenszel per focal language against the reference, the
LaTeX table of the B and C questions with their text in both languages, and the per-question classes that the
question inspector and the HTML report read (`<latex>/dif_classes.csv`).

Persons: every model x strategy x language x shuffle of the runs is a response pattern (`measure.dif.persons`,
questions matched on parallel_id, blocks = model / strategy, so Mantel-Haenszel stratifies by block x score).
Adaptive runs are left out: a CAT's pattern is incomplete by design and its items depend on its answers. A
language with fewer than `measure.MIN_GROUP` patterns (or runs with fewer than 2 questions answered by every
pattern) cannot be analysed; `persons="auto"` then falls back to
`measure.simulate_dif_persons` on the same questions and says so (`DifReport.source`, `.reason`): the demo
(one model, 1-3 shuffles per strategy) shows the report on simulated persons, labelled as such everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.adaptive import is_adaptive
from mcqa_toolkit.measure.dif import (
    MIN_GROUP,
    DifPersons,
    dif_persons,
    mantel_haenszel,
    mh_permutation,
    simulate_dif_persons,
)
from mcqa_toolkit.report.tables import escape_latex

SOURCES = ("auto", "runs", "simulated")
CLASSES_FILE = "dif_classes.csv"     # what the inspector and the HTML report read
CLASS_COLUMNS = ["parallel_id", "subject", "focal", "reference", "ets_class", "delta_mh", "delta_se", "p_value",
                 "p_bh", "flag_bh", "n_focal", "n_reference", "source", "note"]


@dataclass(frozen=True)
class DifReport:
    """table: one row per focal language x question (CLASS_COLUMNS, plus b_shift and injected when simulated);
    source: "runs" or "simulated"; reason: why simulated ("" for runs); n_persons: persons per language."""

    table: pd.DataFrame
    source: str
    reference: str
    n_persons: pd.Series
    reason: str = ""
    truth: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def simulated(self) -> bool:
        return self.source == "simulated"

    def describe(self) -> str:
        counts = ", ".join(f"{k}: {v:,}" for k, v in self.n_persons.items())
        classes = self.table.groupby("focal")["ets_class"].value_counts().unstack(fill_value=0)
        text = "; ".join(f"{f}: " + ", ".join(f"{c} {int(n)}" for c, n in row.items()) for f, row in classes.iterrows())
        head = ("SIMULATED persons (DIF injected on known questions)" if self.simulated
                else "the runs' response patterns")
        return (f"DIF on {head}, reference {self.reference!r}; persons per language {counts}. ETS classes per focal "
                f"language: {text}." + (f" Why simulated: {self.reason}" if self.reason else ""))


def _run_persons(records: pd.DataFrame, reference: str, focal: list[str]) -> tuple[dict[str, DifPersons], str]:
    """Persons of the runs per focal language (adaptive runs left out), and "" or why they cannot be used."""
    fixed = records[~is_adaptive(records)]
    try:
        persons = {lang: dif_persons(fixed, lang, reference) for lang in focal}
    except ValueError as e:       # e.g. no fixed-form run in a language, or fewer than 2 questions in common
        return {}, f"the runs give no complete response patterns: {e}"
    counts = {lang: p.group.value_counts().to_dict() for lang, p in persons.items()}
    short = {f"{lang} vs {reference}": c for lang, c in counts.items() if min(c.values()) < MIN_GROUP}
    why = (f"the runs hold too few response patterns (fewer than MIN_GROUP = {MIN_GROUP} per language): "
           + "; ".join(f"{k}: {v}" for k, v in short.items())) if short else ""
    return persons, why


def dif_report(records: pd.DataFrame, items: ItemSet, reference: str = "en", persons: str = "auto",
               n_per_group: int = 500, n_permutations: int = 0, purify: bool = False, alpha: float = 0.05,
               seed: int = 0) -> DifReport:
    """Mantel-Haenszel DIF of every other language of `records` against `reference` (see the module docstring):
    persons "runs" (ValueError when a language has too few patterns), "simulated" or "auto" (runs when enough).
    n_permutations > 0 adds the permutation p-value within blocks (`measure.mh_permutation`; p_bh and flag_bh
    then follow it)."""
    if persons not in SOURCES:
        raise ValueError(f"persons = {persons!r}: expected one of {SOURCES}")
    languages = sorted(records["language"].unique())
    focal = [lang for lang in languages if lang != reference]
    if reference not in languages or not focal:
        raise ValueError(f"DIF needs the reference language {reference!r} and another; the runs have {languages}")
    why, truth = "", None
    if persons != "simulated":
        by_lang, why = _run_persons(records, reference, focal)
        if why and persons == "runs":
            raise ValueError(why)
    if persons == "simulated" or why:
        sim = simulate_dif_persons(items, reference, focal, n_per_group=n_per_group, seed=seed)
        by_lang, truth = {lang: sim.persons for lang in focal}, sim.truth
        why = why or "simulated persons asked for (persons='simulated')"
    source = "simulated" if truth is not None else "runs"
    frames = []
    for lang, p in by_lang.items():
        res = (mh_permutation(p.responses, p.group, lang, reference, p.block, n_permutations=n_permutations,
                              seed=seed, alpha=alpha, purify=purify) if n_permutations else
               mantel_haenszel(p.responses, p.group, lang, reference, within=p.block, alpha=alpha, purify=purify))
        frames.append(res.table.rename(columns={"item_id": "parallel_id"}).assign(focal=lang, reference=reference))
    subject = {pid: next(iter(g.values())).subject for pid, g in items.by_parallel_id().items()}
    table = pd.concat(frames, ignore_index=True).assign(source=source)
    table["subject"] = table["parallel_id"].map(subject).fillna("")
    extra = [c for c in table.columns if c not in CLASS_COLUMNS]
    table = table[[*CLASS_COLUMNS, *extra]]
    if truth is not None:
        table = table.merge(truth.rename(columns={"language": "focal"}), on=["focal", "parallel_id"], how="left")
    counts = {reference: int((next(iter(by_lang.values())).group == reference).sum())}
    counts |= {lang: int((p.group == lang).sum()) for lang, p in by_lang.items()}
    return DifReport(table, source, reference, pd.Series(counts, name="persons"), "" if source == "runs" else why,
                     truth)


def _stem(items: dict[str, dict], pid: str, lang: str) -> str:
    it = items.get(pid, {}).get(lang)
    return "" if it is None else " ".join(it.stem.split())


@dataclass(frozen=True)
class TextTable:
    """Rows of text to typeset (the B/C questions with their stems): `frame` holds strings and numbers; the
    LaTeX escapes the strings, shortens `long` columns to `max_chars` (the CSV keeps them whole) and writes
    numbers with 2 decimals and true minus signs."""

    frame: pd.DataFrame
    long: tuple[str, ...] = ()
    max_chars: int = 240
    caption: str = ""
    label: str = ""

    def _cell(self, col: str, value: object) -> str:
        text, cut = _number_text(value) if isinstance(value, float) else str(value), ""
        if col in self.long and len(text) > self.max_chars:
            text, cut = text[: self.max_chars].rsplit(" ", 1)[0], r"~\ldots"
        return escape_latex(text).replace("∞", r"$\infty$").replace("−", "$-$") + cut   # true minus signs

    def to_latex(self) -> str:
        if self.frame.empty:
            raise ValueError("cannot typeset an empty table")
        spec = "".join(r"p{0.27\textwidth}" if c in self.long else "l" for c in self.frame.columns)
        lines = [r"\begin{table}[ht]", r"\centering", r"\small"]
        lines += [rf"\caption{{{escape_latex(self.caption)}}}"] if self.caption else []
        lines += [rf"\label{{{self.label}}}"] if self.label else []
        lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
                  " & ".join(escape_latex(c) for c in self.frame.columns) + r" \\", r"\midrule"]
        lines += [" & ".join(self._cell(c, v) for c, v in row.items()) + r" \\" for _, row in self.frame.iterrows()]
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def save(self, directory: str | Path, name: str) -> Path:
        """`<directory>/<name>.tex` and the whole texts as `<name>.csv` (the HTML report reads it)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.tex"
        path.write_text(self.to_latex())
        self.frame.to_csv(out / f"{name}.csv", index=False)
        return path


def _number_text(d: float) -> str:
    return "" if np.isnan(d) else ("∞" if d > 0 else "−∞") if np.isinf(d) else f"{d:.2f}".replace("-", "−")


def dif_items_table(report: DifReport, items: ItemSet, classes: tuple[str, ...] = ("B", "C"),
                    max_chars: int = 240) -> TextTable:
    """The questions classed `classes` (one row per focal language x question, largest |delta| first) with
    subject, class, delta_MH and the stem in the reference and in the focal language. Empty when none is."""
    from mcqa_toolkit.report.plots._layout import LANGUAGE_NAMES

    t = report.table[report.table["ets_class"].isin(classes)]
    t = t.assign(_abs=t["delta_mh"].abs()).sort_values(["_abs", "focal", "parallel_id"], ascending=[False, True, True])
    groups = items.by_parallel_id()
    ref_name = LANGUAGE_NAMES.get(report.reference, report.reference)
    frame = pd.DataFrame({
        "question": t["parallel_id"], "subject": t["subject"].str.replace("_", " "),
        "language": [LANGUAGE_NAMES.get(f, f) for f in t["focal"]], "class": t["ets_class"],
        "delta MH": t["delta_mh"].astype(float),
        f"stem ({ref_name})": [_stem(groups, p, report.reference) for p in t["parallel_id"]],
        "stem (that language)": [_stem(groups, p, f) for p, f in zip(t["parallel_id"], t["focal"], strict=True)]})
    who = ("SIMULATED persons with DIF injected on known questions" if report.simulated
           else "the runs' response patterns")
    caption = (f"Questions of ETS class {' or '.join(classes)} (Mantel-Haenszel delta, reference "
               f"{ref_name}) on {who}, with their stem in both languages")
    return TextTable(frame.reset_index(drop=True), (f"stem ({ref_name})", "stem (that language)"), max_chars,
                     caption, "tab:dif_items")


def write_classes(report: DifReport, directory: str | Path) -> Path:
    """Every question's class per focal language as `<directory>/dif_classes.csv` (CLASS_COLUMNS)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / CLASSES_FILE
    report.table[CLASS_COLUMNS].to_csv(path, index=False)
    return path


def read_classes(path: str | Path) -> pd.DataFrame:
    """A `dif_classes.csv` (a file, or the LaTeX folder holding it) as written by `write_classes`."""
    p = Path(path)
    p = p / CLASSES_FILE if p.is_dir() else p
    frame = pd.read_csv(p, keep_default_na=False, na_values=[""])
    missing = [c for c in CLASS_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{p}: not a DIF classes file (lacks {missing})")
    return frame
