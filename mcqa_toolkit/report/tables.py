"""Pivots of tidy metric frames into paper tables, and their LaTeX (booktabs) export.

A `Table` holds a frame of numbers (rows x columns), optionally a same-shaped frame of errors shown as
`value ± error`, the rule that picks the best cell of each column (bolded; ties after rounding all bold),
and, for tables in blocks (UNED Table 5: Spanish, then English), the index level that splits the rows.
The builders give the seed papers' shapes; `to_latex()` writes by hand what pandas' `Styler.to_latex` (3.1) cannot:
blocks as header rows (it makes a multirow column), the best per block (it: per column), `value ± error` ranked.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}",  # OT1 fonts print < and > as inverted ! and ?
}
_LATEX_SPECIALS = str.maketrans(_ESCAPES)
_UNESCAPES = {v: k for k, v in _ESCAPES.items()}
_ESCAPED = re.compile("|".join(re.escape(v) for v in sorted(_UNESCAPES, key=len, reverse=True)))


def escape_latex(text: object) -> str:
    """Text with LaTeX's special characters escaped (one pass, so nothing is escaped twice)."""
    return str(text).translate(_LATEX_SPECIALS)


def unescape_latex(text: str) -> str:
    """The inverse of `escape_latex` (one pass): the plain text of a caption or label we wrote."""
    return _ESCAPED.sub(lambda m: _UNESCAPES[m.group(0)], text)


@dataclass(frozen=True)
class Table:
    """Numbers to typeset. `best` is "max", "min" or None for every column, or a per-column mapping;
    `formats` maps a column to a format spec (default f".{digits}f"); `groups` names an index level that
    splits rows into blocks, each with its own header row and its own best cells."""
    values: pd.DataFrame
    errors: pd.DataFrame | None = None
    best: str | None | Mapping[str, str | None] = "max"
    digits: int = 2
    formats: Mapping[str, str] = field(default_factory=dict)
    groups: str | None = None
    caption: str = ""
    label: str = ""

    def _fmt(self, col: Any) -> str:  # a column label
        return self.formats.get(col, f".{self.digits}f")

    def _rule(self, col: Any) -> str | None:
        rule = self.best.get(col) if isinstance(self.best, Mapping) else self.best
        if rule not in (None, "max", "min"):
            raise ValueError(f"best for column {col!r} must be 'max', 'min' or None, got {rule!r}")
        return rule

    def _cells(self, block: pd.DataFrame, latex: bool = True) -> pd.DataFrame:
        """Formatted cells of one block; in LaTeX the best per column is bold and ± is $\\pm$."""
        pm = r" $\pm$ " if latex else " ± "
        out = pd.DataFrame(index=block.index, columns=block.columns, dtype=object)
        for col in block.columns:
            fmt, vals = self._fmt(col), block[col].astype(float)
            shown = vals.map(lambda v, fmt=fmt: np.nan if pd.isna(v) else float(format(v, fmt)))  # as printed
            rule = self._rule(col)
            best = (shown.max() if rule == "max" else shown.min()) if rule and shown.notna().any() else np.nan
            err = self.errors[col].reindex(block.index) if self.errors is not None and col in self.errors else None
            for idx, v in vals.items():
                text = "--" if pd.isna(v) else format(v, fmt)
                if err is not None and not pd.isna(v) and not pd.isna(err[idx]):
                    text += pm + format(err[idx], fmt)
                out.loc[idx, col] = rf"\textbf{{{text}}}" if latex and shown[idx] == best else text
        return out

    def to_frame(self) -> pd.DataFrame:
        """The formatted cells as plain strings ("0.81 ± 0.02", no bold): for notebooks."""
        return self._cells(self.values, latex=False)

    def to_latex(self) -> str:
        """A complete booktabs `table` environment: \\toprule, header, \\midrule, rows, \\bottomrule."""
        v = self.values
        if v.empty:
            raise ValueError("cannot typeset an empty table")
        names = [n or "" for n in v.index.names]
        label_cols = [n for n in names if n != self.groups] if self.groups else names
        ncol = len(label_cols) + v.shape[1]
        lines = [r"\begin{table}[ht]", r"\centering"]
        if self.caption:
            lines.append(rf"\caption{{{escape_latex(self.caption)}}}")
        if self.label:
            lines.append(rf"\label{{{self.label}}}")
        lines += [rf"\begin{{tabular}}{{{'l' * len(label_cols)}{'r' * v.shape[1]}}}", r"\toprule",
                  " & ".join(escape_latex(c) for c in [*label_cols, *v.columns]) + r" \\", r"\midrule"]
        blocks = v.groupby(level=self.groups, sort=False) if self.groups else [(None, v)]
        for i, (name, block) in enumerate(blocks):
            if self.groups:
                if i:
                    lines.append(r"\midrule")
                lines.append(rf"\multicolumn{{{ncol}}}{{l}}{{\textit{{{escape_latex(name)}}}}} \\")
            cells = self._cells(block)
            for idx, row in cells.iterrows():
                keys: Sequence[Any] = idx if isinstance(idx, tuple) else (idx,)
                keys = [k for n, k in zip(names, keys, strict=True) if n != self.groups] if self.groups else keys
                lines.append(" & ".join([*(escape_latex(k) for k in keys), *row]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines) + "\n"

    def to_tidy(self) -> pd.DataFrame:
        """The numbers as a flat frame: index levels as columns, then each value column followed by its
        error as `<column> ±` when there are errors (unrounded; for CSV and the HTML report)."""
        out = self.values.copy()
        if self.errors is not None:
            for col in [c for c in self.values.columns if c in self.errors.columns]:
                out.insert(out.columns.get_loc(col) + 1, f"{col} ±", self.errors[col].reindex(out.index))
        out.columns = [str(c) for c in out.columns]
        return out.reset_index()

    def save(self, directory: str | Path, name: str) -> Path:
        """Write `<directory>/<name>.tex` and the same numbers as `<name>.csv` (to_tidy; the HTML report reads
        them) in `directory` (created); returns the .tex path."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.tex"
        path.write_text(self.to_latex())
        self.to_tidy().to_csv(out / f"{name}.csv", index=False)
        return path


def _pivot(frame: pd.DataFrame, rows: str | Sequence[str], cols: str, value: str) -> pd.DataFrame:
    rows = [rows] if isinstance(rows, str) else list(rows)
    missing = [c for c in (*rows, cols, value) if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks column(s) {missing}; it has {list(frame.columns)}")
    if frame.empty:
        raise ValueError("frame is empty: nothing to tabulate")
    if frame.duplicated([*rows, cols]).any():
        raise ValueError(f"several rows per {rows} x {cols}: filter or aggregate before tabulating")
    out = frame.pivot(index=rows, columns=cols, values=value)
    out.columns.name = None
    return out


def _half_width(frame: pd.DataFrame) -> pd.Series:
    """Half the width of the CI, shown as ±: a percentile interval may be asymmetric, ± shows its mean half."""
    return (frame["ci_high"] - frame["ci_low"]) / 2


def strategy_table(scores: pd.DataFrame, value: str = "accuracy", rows: str | Sequence[str] = "model",
                   cols: str = "strategy", ci: bool = True, **kw) -> Table:
    """Models x strategies (ENADE S1-S6 shape) of `accuracy()` or `kappa()` output, CI half-width as ±."""
    errors = None
    if ci and {"ci_low", "ci_high"} <= set(scores.columns):
        errors = _pivot(scores.assign(_hw=_half_width(scores)), rows, cols, "_hw")
    return Table(_pivot(scores, rows, cols, value), errors, best="max", **kw)


def subject_table(subject_scores: pd.DataFrame, value: str = "kappa", rows: str = "model", cols: str = "subject",
                  groups: str | None = "language", group_order: Sequence[str] | None = None,
                  average: str | None = "Average", **kw) -> Table:
    """Per-subject scores (UNED Table 5 shape): one block per `groups` value (e.g. language), rows sorted by
    the row mean over subjects, which is added as the `average` column (the macro average)."""
    index = [groups, rows] if groups else [rows]
    t = _pivot(subject_scores, index, cols, value)
    if average:
        t[average] = t.mean(axis=1)
    sort_by = t[average] if average else t.mean(axis=1)
    t = t.assign(_s=sort_by).sort_values(index[:-1] + ["_s"], ascending=[True] * (len(index) - 1) + [False])
    t = t.drop(columns="_s")
    if groups and group_order is not None:
        t = t.reindex(list(group_order), level=0)
    return Table(t, best="max", groups=groups, **kw)


def gap_table(gaps: pd.DataFrame, rows: str = "model", **kw) -> Table:
    """`language_gap()` output for one language pair (UNED Table 3 shape): reference score, other score and
    Gap %, rows sorted by the reference score; best (max) bold in the score columns, never in Gap %."""
    if gaps.empty:
        raise ValueError("frame is empty: nothing to tabulate")
    if gaps["language"].nunique() != 1:
        raise ValueError("gap_table shows one language pair; filter `gaps` to one language")
    ref, other = gaps["reference"].iloc[0], gaps["language"].iloc[0]
    t = gaps.set_index(rows)[["score_ref", "score_other", "gap_pct"]].sort_values("score_ref", ascending=False)
    t.columns = [str(ref).upper(), str(other).upper(), "Gap %"]
    return Table(t, best={t.columns[0]: "max", t.columns[1]: "max", "Gap %": None}, **kw)


def difference_table(differences: pd.DataFrame, rows: str | Sequence[str] = ("model", "strategy"), **kw) -> Table:
    """`measure.language_differences()` output: rows x other languages, each cell the score minus the reference
    language's (> 0: better than the reference) ± half its 95% CI; no cell is ranked."""
    rows = [rows] if isinstance(rows, str) else list(rows)
    f = differences.assign(_hw=_half_width(differences), _col=differences["language"].astype(str).str.upper() + " − "
                           + differences["reference"].astype(str).str.upper())
    return Table(_pivot(f, rows, "_col", "diff"), _pivot(f, rows, "_col", "_hw"), best=None, **kw)


def candidates_table(placed: pd.DataFrame, rows: Sequence[str] = ("model", "strategy", "language"), **kw) -> Table:
    """`enem.place_among_candidates()` output: per system the mean official score over shuffles, the shuffles'
    lowest and highest, and the percentile of the mean among the candidates (no cell is ranked)."""
    names = {"n_persons": "shuffles", "enem_score": "score", "score_min": "lowest", "score_max": "highest",
             "percentile": "percentile"}
    t = placed.set_index(list(rows))[list(names)].rename(columns=names)
    return Table(t, best=None, formats={"shuffles": ".0f", "score": ".1f", "lowest": ".1f", "highest": ".1f",
                                        "percentile": ".1f"}, **kw)


def irt_table(frame: pd.DataFrame, by: str | Sequence[str] = "model", theta: str = "theta", se: str | None = None,
              lz: str = "lz", **kw) -> Table:
    """theta, SE and l_z per model as mean ± sd over its rows (shuffles). `se` defaults to 'psd' if present,
    else 'se'. Bold: highest theta and lowest SE; l_z is not ranked (both tails are unusual)."""
    se = se or ("psd" if "psd" in frame.columns else "se")
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in (*by, theta, se, lz) if c not in frame.columns]
    if missing or frame.empty:
        raise ValueError(f"irt_table needs a non-empty frame with columns {[*by, theta, se, lz]}; missing {missing}")
    g = frame.groupby(by, sort=True)[[theta, se, lz]]
    names = {theta: "theta", se: "SE", lz: "l_z"}
    values, errors = g.mean().rename(columns=names), g.std(ddof=1).rename(columns=names)  # sd NaN for one row
    return Table(values, errors, best={"theta": "max", "SE": "min", "l_z": None}, **kw)


def position_bias_table(bias: pd.DataFrame, rows: str | Sequence[str] = ("model", "strategy"),
                        consistency: pd.DataFrame | None = None, **kw) -> Table:
    """`position_bias()` output as TVD and chi2 p-value per number of options (lowest TVD bold), plus the mean
    shuffle consistency per row when a `shuffle_consistency()` frame is given."""
    rows = [rows] if isinstance(rows, str) else list(rows)
    b = bias.assign(_k=bias["n_options"].astype(int).astype(str))
    t = pd.concat([_pivot(b, rows, "_k", "tvd").add_prefix("TVD k="),
                   _pivot(b, rows, "_k", "p_value").add_prefix("p k=")], axis=1)
    ks = sorted(b["_k"].unique(), key=int)
    t = t[[c for k in ks for c in (f"TVD k={k}", f"p k={k}")]]
    if consistency is not None:
        t["consistency"] = consistency.groupby(rows)["consistency"].mean().reindex(t.index)
    best = {c: ("min" if c.startswith("TVD") else "max" if c == "consistency" else None) for c in t.columns}
    return Table(t, best=best, formats={c: ".2g" for c in t.columns if c.startswith("p k=")}, **kw)


def cat_length_table(curve: pd.DataFrame, **kw) -> Table:
    """`measure.adaptive.cat_length_curve` output: per SE target, the mean and median test length and the
    share of persons reaching the target, for the CAT and for the random order (no cell is ranked)."""
    names = {"adaptive": "CAT", "random": "random"}
    parts = [_pivot(curve, "se_target", "order", value)
             .rename(columns=lambda o, label=label: f"{names.get(o, o)} {label}")
             for value, label in (("mean_length", "mean"), ("median_length", "median"), ("share_reached", "reached"))]
    t = pd.concat(parts, axis=1)
    t = t[[c for o in curve["order"].drop_duplicates() for c in t.columns if c.startswith(f"{names.get(o, o)} ")]]
    t.index.name = "SE target"
    return Table(t, best=None, formats={c: ".1f" for c in t.columns if not c.endswith("reached")}, **kw)


def adaptive_runs_table(savings: pd.DataFrame, rows: Sequence[str] = ("model", "language", "strategy"),
                        **kw) -> Table:
    """`measure.adaptive.adaptive_savings` output: per adaptive run, items and forwarded tokens of the CAT and
    of the full test (summed over shuffles), the % saved, and the RMSE and bias of the CAT's theta against
    the full test's (no cell is ranked)."""
    columns = {"shuffles": "shuffles", "items_cat": "items CAT", "items_full": "items full",
               "items_saved_pct": "items saved %", "tokens_cat": "tokens CAT", "tokens_full": "tokens full",
               "tokens_saved_pct": "tokens saved %", "theta_rmse": "theta RMSE", "theta_bias": "theta bias"}
    missing = [c for c in (*rows, *columns) if c not in savings.columns]
    if missing or savings.empty:
        raise ValueError(f"adaptive_runs_table needs a non-empty frame with columns {list(columns)}; missing {missing}")
    t = savings.set_index(list(rows))[list(columns)].rename(columns=columns)
    counts = ("shuffles", "items CAT", "items full", "tokens CAT", "tokens full")
    return Table(t, best=None, formats={**{c: ".0f" for c in counts}, "items saved %": ".1f",
                                        "tokens saved %": ".1f"}, **kw)


def anchor_table(anchors: pd.DataFrame, estimate: str = "gpirt", **kw) -> Table:
    """`measure.adaptive.anchor_curve` output: per k, the mean absolute error of each selection's accuracy
    (`estimate`) and theta estimates (no cell is ranked)."""
    wide = anchors.pivot(index="k", columns="selection", values=[f"mae_{estimate}", "mae_theta"])
    wide.columns = [f"{'theta' if v == 'mae_theta' else 'accuracy'} {s}" for v, s in wide.columns]
    return Table(wide, best=None, digits=3, **kw)


def exam_score_table(comparison: pd.DataFrame, rows: str | Sequence[str] = ("model", "strategy"), **kw) -> Table:
    """`compare_to_students()` output as one block per exam (its `exam_name` when present): per system the points
    earned of the points graded, the score on the exam's scale, the students' mean, median and SD, z and the
    (normal-approximation) percentile; the best score of each exam bold."""
    rows = [rows] if isinstance(rows, str) else list(rows)
    need = [*rows, "exam", "points_earned", "points_graded", "model_score", "score_avg", "score_median",
            "score_standard_deviation", "z", "percentile"]
    missing = [c for c in need if c not in comparison.columns]
    if missing:
        raise ValueError(f"frame lacks column(s) {missing}; it has {list(comparison.columns)}")
    if comparison.empty:
        raise ValueError("frame is empty: nothing to tabulate")
    f = comparison.assign(exam=comparison.get("exam_name", comparison["exam"]),
                          system=comparison[rows].astype(str).agg(" / ".join, axis=1))
    names = {"points_earned": "points", "points_graded": "of", "model_score": "score", "score_avg": "student mean",
             "score_median": "student median", "score_standard_deviation": "student SD", "z": "z",
             "percentile": "percentile"}
    values = f.set_index(["exam", "system"])[list(names)].rename(columns=names).astype(float)
    best = {c: ("max" if c == "score" else None) for c in values.columns}
    fmt = {c: ".1f" for c in values.columns} | {"z": ".2f", "percentile": ".0f"}
    return Table(values, best=best, formats=fmt, groups="exam", **kw)
