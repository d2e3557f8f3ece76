"""How closely our ENEM scores reproduce INEP's NU_NOTA, per year x area x booklet (x item set): the numbers
behind `mcqa validate-enem`, so a researcher can check that the human thetas of an LLM comparison are INEP's.

Pure pandas. `agreement_counts` / `problem_counts` reduce one chunk of `enem.iter_microdata` to a few rows,
`add_counts` / `add_problems` keep running totals (so memory does not grow with the file), and
`validation_table` turns the totals into shares. Agreement bands on |score - NU_NOTA|: exact = equal at 0.1
(< 0.05; both are rounded to 0.1), within 1 and within 2 points (<= 1, <= 2, with 1e-6 for float noise).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.reproducibility import status_of

KEYS = ["area", "CO_PROVA", "item_set", "item_set_rule"]
COUNTS = ["n_scored", "n_compared", "n_exact", "n_within_1", "n_within_2", "sum_abs_error", "max_abs_error"]
PROBLEM_KEYS = ["area", "CO_PROVA", "problem"]
TABLE_COLUMNS = ["year", "area", "CO_PROVA", "item_set", "item_set_rule", "status", "n_candidates", "n_compared",
                 "share_exact", "share_within_1", "share_within_2", "max_abs_error", "mean_abs_error", "detail"]
_EPS = 1e-6


def agreement_counts(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (area, CO_PROVA, item_set, item_set_rule) of scored rows (iter_microdata's `scores`): candidates,
    those with an official NU_NOTA, how many agree exactly / within 1 / within 2, sum and max of |error|."""
    if scores.empty:
        return pd.DataFrame(columns=KEYS + COUNTS)
    err = (scores["score"].astype(float) - scores["NU_NOTA"].astype(float)).abs()
    df = pd.DataFrame({**{k: scores[k] for k in KEYS}, "n_scored": 1, "n_compared": err.notna().astype(int),
                       "n_exact": (err < 0.05).astype(int), "n_within_1": (err <= 1 + _EPS).astype(int),
                       "n_within_2": (err <= 2 + _EPS).astype(int), "sum_abs_error": err.fillna(0.0),
                       "max_abs_error": err})
    df["CO_PROVA"] = df["CO_PROVA"].astype(str)
    return _reduce(df, KEYS, COUNTS)


def add_counts(total: pd.DataFrame | None, part: pd.DataFrame) -> pd.DataFrame:
    """Running totals of `agreement_counts` (sums; the max for max_abs_error)."""
    return part if total is None else _reduce(pd.concat([total, part]), KEYS, COUNTS)


def problem_counts(problems: pd.DataFrame) -> pd.DataFrame:
    """Per (area, CO_PROVA, problem) of iter_microdata's `problems`: rows, first row, first message."""
    df = problems.assign(CO_PROVA=problems["CO_PROVA"].astype(str))
    return df.groupby(PROBLEM_KEYS, sort=False, as_index=False).agg(
        n_rows=("n_rows", "sum"), first_row=("first_row", "min"), detail=("detail", "first"))


def add_problems(total: pd.DataFrame | None, part: pd.DataFrame) -> pd.DataFrame:
    """Running totals of `problem_counts`."""
    return part if total is None else problem_counts(pd.concat([total, part]))


def _reduce(df: pd.DataFrame, keys: list[str], counts: list[str]) -> pd.DataFrame:
    agg = {c: ("max" if c == "max_abs_error" else "sum") for c in counts}
    return df.groupby(keys, sort=False, as_index=False, dropna=False).agg(agg)


def validation_table(counts: pd.DataFrame | None, problems: pd.DataFrame | None = None,
                     year: int | None = None) -> pd.DataFrame:
    """One row per area x booklet x item set that was scored, and per area x booklet x problem whose rows
    could not be used (status = the problem: absent from item file, key mismatch, ...; shares NaN).

    status of scored rows: "ok", or "undetermined: scored under each item set" when nothing told a booklet's
    item sets apart (its candidates then appear once per set). Shares are over candidates with a NU_NOTA.
    """
    rows = []
    if counts is not None and len(counts):
        c = counts
        n = c["n_compared"].where(c["n_compared"] > 0)
        rows.append(pd.DataFrame({
            "area": c["area"], "CO_PROVA": c["CO_PROVA"], "item_set": c["item_set"].astype("Int64"),
            "item_set_rule": c["item_set_rule"],
            "status": np.where(c["item_set_rule"] == "undetermined", "undetermined: scored under each item set", "ok"),
            "n_candidates": c["n_scored"], "n_compared": c["n_compared"],
            "share_exact": c["n_exact"] / n, "share_within_1": c["n_within_1"] / n,
            "share_within_2": c["n_within_2"] / n,
            "max_abs_error": c["max_abs_error"], "mean_abs_error": c["sum_abs_error"] / n, "detail": ""}))
    if problems is not None and len(problems):
        p = problems
        rows.append(pd.DataFrame({"area": p["area"], "CO_PROVA": p["CO_PROVA"], "item_set": pd.NA,
                                  "item_set_rule": "", "status": p["problem"], "n_candidates": p["n_rows"],
                                  "n_compared": 0, "detail": p["detail"]}))
    if not rows:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    table = pd.concat(rows, ignore_index=True).assign(year=year).reindex(columns=TABLE_COLUMNS)
    table["item_set"] = table["item_set"].astype("Int64")
    for col in ("n_candidates", "n_compared"):
        table[col] = table[col].astype("int64")
    order = pd.to_numeric(table["CO_PROVA"], errors="coerce")
    return (table.assign(_o=order, _u=table["status"] != "ok")
            .sort_values(["area", "_u", "_o", "CO_PROVA", "item_set"], kind="stable")
            .drop(columns=["_o", "_u"]).reset_index(drop=True))


def area_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per year x area: candidates scored (undetermined booklets count once per set), the shares over all of
    them, the largest error, and how many rows could not be used."""
    shares = ["share_exact", "share_within_1", "share_within_2"]
    scored = table["item_set_rule"] != ""
    w = table["n_compared"].where(scored, 0)
    parts = pd.DataFrame({"year": table["year"], "area": table["area"],
                          "n_candidates": table["n_candidates"].where(scored, 0), "n_compared": w,
                          **{c: table[c].fillna(0.0) * w for c in shares}, "max_abs_error": table["max_abs_error"],
                          "n_unusable": table["n_candidates"].where(~scored, 0)})
    agg = {c: ("max" if c == "max_abs_error" else "sum") for c in parts.columns if c not in ("year", "area")}
    out = parts.groupby(["year", "area"], dropna=False, as_index=False).agg(agg)
    for c in shares:
        out[c] = out[c] / out["n_compared"].where(out["n_compared"] > 0)
    return out[["year", "area", "n_candidates", "n_compared", *shares, "max_abs_error", "n_unusable"]]


def reproducibility_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The validation table as a reproducibility table (`enem.reproducibility.TABLE_COLUMNS` but the as-published
    count and the cause): per year x area x booklet, and per year x area (booklet "all"), the candidates
    compared and how many are exact / within 1 point. A booklet whose item sets nothing told apart counts under
    set 1 (what `score_answers` returns); rows that could not be scored are left out (see the table)."""
    scored = table[table["item_set_rule"] != ""]
    scored = scored[(scored["item_set_rule"] != "undetermined") | (scored["item_set"] == 1)]
    n = scored["n_compared"]
    per = pd.DataFrame({"year": scored["year"], "area": scored["area"], "booklet": scored["CO_PROVA"].astype(str),
                        "n_cases": n, "n_exact": (scored["share_exact"].fillna(0) * n).round().astype(int),
                        "n_within_1": (scored["share_within_1"].fillna(0) * n).round().astype(int),
                        "max_abs_error": scored["max_abs_error"]})
    keys = ["year", "area", "booklet"]
    agg = {"n_cases": "sum", "n_exact": "sum", "n_within_1": "sum", "max_abs_error": "max"}
    per = per.groupby(keys, as_index=False, sort=False).agg(agg)
    area = per.groupby(["year", "area"], as_index=False, sort=False).agg(agg).assign(booklet="all")
    out = pd.concat([area, per], ignore_index=True)
    out = out[out["n_cases"] > 0]
    out["share_exact"] = out["n_exact"] / out["n_cases"]
    out["max_abs_error"] = out["max_abs_error"].round(1)
    out["status"] = out["share_exact"].map(status_of)
    order = pd.to_numeric(out["booklet"], errors="coerce").fillna(-1)
    out = out.assign(_o=order).sort_values(["year", "area", "_o"], kind="stable").drop(columns="_o")
    return out[["year", "area", "booklet", "n_cases", "n_exact", "share_exact", "n_within_1", "max_abs_error",
                "status"]].reset_index(drop=True)
