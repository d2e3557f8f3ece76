"""Position bias from shuffled runs (BPC): where the chosen options sit, how accuracy depends on where the key
sits, and how consistently an item gets the same original option across shuffles.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from mcqa_toolkit.measure.frames import _ALL, DEFAULT_BY, check_status, finish, prepare, single_answer, status_flags
from mcqa_toolkit.records.columns import ANSWERED


def _single(f: pd.DataFrame) -> pd.DataFrame:
    out = single_answer(f)
    if out.empty:
        raise ValueError("no single-answer records: positions are defined for one chosen option among k")
    return out


def position_distribution(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Chosen shown positions per group x n_options: count, share of answered records and the uniform share
    1/k, with every position 0..k-1 present (zero-filled). Unanswered/refused records are not positions;
    only single-answer items are counted (a multi-answer response is a set, not a position)."""
    f, by = prepare(frame, by, ("n_options", "choice_position", "status"))
    f = _single(f)
    answered = check_status(f).isin(ANSWERED)
    pos = f.loc[answered, "choice_position"]
    if ((pos < 0) | (pos >= f.loc[answered, "n_options"])).any():
        raise ValueError("answered records need 0 <= choice_position < n_options")
    strata = f[[*by, "n_options"]].drop_duplicates().reset_index(drop=True)
    full = strata.loc[strata.index.repeat(strata["n_options"])]
    full = full.assign(position=full.groupby(level=0).cumcount()).reset_index(drop=True)
    counts = f[answered].groupby([*by, "n_options", "choice_position"], dropna=False).size()
    counts = counts.rename("count").rename_axis(index={"choice_position": "position"}).reset_index()
    out = full.merge(counts, on=[*by, "n_options", "position"], how="left").fillna({"count": 0})
    out["count"] = out["count"].astype(int)
    total = out.groupby([*by, "n_options"], dropna=False)["count"].transform("sum")
    out["share"] = out["count"] / total.where(total > 0)
    out["uniform"] = 1.0 / out["n_options"]
    return finish(out.sort_values([*by, "n_options", "position"]))


def position_bias(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Position bias (BPC) per group x n_options, from the distribution of chosen shown positions.

    Stratified by n_options because uniform means 1/k. Reported: tvd = total-variation distance from uniform,
    0.5 x sum_j |share_j - 1/k| (0 = no bias, 1 - 1/k = always the same position; `tvd_max`), and the chi2
    goodness-of-fit of the position counts against uniform (dof = k - 1) with its p-value. Run it on
    shuffled runs, where the key is uniform over positions, so any departure is the model's, not the key's.
    Columns: by..., n_options, n_records, n_answered, n_unanswered, n_refused, tvd, tvd_max, chi2, dof,
    p_value, note.
    """
    f, by = prepare(frame, by, ("n_options", "choice_position", "status"))
    f = _single(f)
    keys = [*by, "n_options"]
    d = position_distribution(f, by)
    if _ALL in by:  # position_distribution's finish() dropped the constant key
        d = d.assign(**{_ALL: "all"})
    d["n"] = d.groupby(keys, dropna=False)["count"].transform("sum")
    d["dev"] = (d["share"] - d["uniform"]).abs()
    d["chi2_term"] = (d["count"] - d["n"] * d["uniform"]) ** 2 / (d["n"] * d["uniform"]).where(d["n"] > 0)
    g = d.groupby(keys, sort=True, dropna=False)
    out = pd.DataFrame({"n_answered": g["count"].sum(), "tvd": 0.5 * g["dev"].sum(min_count=1),
                        "chi2": g["chi2_term"].sum(min_count=1), "min_expected": g["n"].first() / g["count"].size()})
    status = check_status(f)
    flags = pd.DataFrame({s: (status == s).astype(int) for s in ("unanswered", "refused")})
    counts = pd.concat([f[keys], flags], axis=1).groupby(keys, sort=True, dropna=False)
    out = out.join(counts[["unanswered", "refused"]].sum().add_prefix("n_")).join(counts.size().rename("n_records"))
    out = out.reset_index()
    out["tvd_max"] = 1 - 1 / out["n_options"]
    out["dof"] = out["n_options"] - 1
    out["p_value"] = sps.chi2.sf(out["chi2"], out["dof"])
    out["note"] = np.select([out["n_answered"] == 0, out["min_expected"] < 5],
                            ["no answered records", "expected count < 5 per position: chi2 p-value approximate"], "")
    cols = [*keys, "n_records", "n_answered", "n_unanswered", "n_refused", "tvd", "tvd_max", "chi2", "dof",
            "p_value", "note"]
    return finish(out[cols])


def accuracy_by_position(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Accuracy per group x n_options x shown position of the key (correct_position; annulled rows dropped).
    Columns: by..., n_options, correct_position, n_records, n_correct, n_unanswered, n_refused, accuracy."""
    f, by = prepare(frame, by, ("n_options", "correct_position", "correct", "status"))
    f = f[f["correct_position"] >= 0]
    if f.empty:
        raise ValueError("no record has a key position (all annulled)")
    keys = [*by, "n_options", "correct_position"]
    flags = status_flags(f)[["correct", "unanswered", "refused"]].astype(int)
    g = pd.concat([f[keys], flags], axis=1).groupby(keys, sort=True, dropna=False)
    out = g.sum().add_prefix("n_")
    out.insert(0, "n_records", g.size())
    out["accuracy"] = out["n_correct"] / out["n_records"]
    return finish(out.reset_index())


def shuffle_consistency(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Per group x item: the share of its shuffles that chose the modal ORIGINAL option (`choice`, not the
    shown position), over all its records (an unanswered shuffle did not choose the mode). Ties between
    modes go to the lowest option index. Columns: by..., item_id, n_shuffles, modal_choice, modal_correct,
    n_distinct, consistency, note (NaN with a reason for a single shuffle or no answered record)."""
    f, by = prepare(frame, by, ("item_id", "choice", "status"))
    f = _single(f)
    keys = [*by, "item_id"]
    answered = check_status(f).isin(ANSWERED)
    n = f.groupby(keys, sort=True, dropna=False).size().rename("n_shuffles")
    c = f[answered].groupby([*keys, "choice"], dropna=False).size().rename("k").reset_index()
    c["n_distinct"] = c.groupby(keys, dropna=False)["choice"].transform("size")
    top = c.sort_values([*keys, "k", "choice"], ascending=[True] * len(keys) + [False, True])
    top = top.drop_duplicates(keys).set_index(keys).rename(columns={"choice": "modal_choice"})
    out = n.to_frame().join(top[["modal_choice", "k", "n_distinct"]])
    out["modal_choice"] = out["modal_choice"].astype("Int64")
    if "answer" in f.columns:
        out = out.join(f.groupby(keys, dropna=False)["answer"].first())
        out["modal_correct"] = (out["modal_choice"] == out.pop("answer")).astype("boolean")
    out["consistency"] = (out.pop("k") / out["n_shuffles"]).where(out["n_shuffles"] > 1)
    out["note"] = np.select([out["n_shuffles"] < 2, out["modal_choice"].isna()],
                            ["one shuffle: consistency undefined", "no answered shuffle"], "")
    out.loc[out["modal_choice"].isna(), "consistency"] = np.nan
    out["n_distinct"] = out["n_distinct"].fillna(0).astype(int)
    return finish(out.reset_index())
