"""Glue between per-record result frames and the pure `irt` module: the numbers behind the ENEM-paper figures.

A *person* is one model x strategy x language x shuffle (the ENEM paper treats every option shuffle as a
test taker), so `response_matrix` turns records into persons x items of 0/1 (NaN = not administered, e.g. a
few-shot example). Items are matched on `parallel_id` by default, so every translation of a question uses
the same human-calibrated 3PL parameters (`Item.irt`) and the human population's responses line up.

Conventions: annulled items (answer < 0) are never part of a response matrix; an unanswered or refused
record is a wrong answer (as on the real exam); every ability is the EAP on a 40-point N(0, 1) grid on
[-4, 4] unless `grid` says otherwise, and l_z is evaluated at that EAP. Formulas live in `irt` and the
other `measure` modules; this module only reshapes, aligns and calls them. No file access.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps
from scipy.spatial import ConvexHull, QhullError

from mcqa_toolkit import irt
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.frames import prepare
from mcqa_toolkit.measure.scores import item_scores

PERSON_BY = ("model", "strategy", "language", "shuffle")
GROUP_BY = ("model", "strategy", "language")


def eap_grid(grid: int | ArrayLike = 40) -> np.ndarray:
    """Quadrature points: an int n gives n equally spaced points on [-4, 4] (INEP's grid for n = 40)."""
    if np.ndim(grid) == 0:
        return irt.normal_grid(int(np.asarray(grid)))[0]
    return np.asarray(grid, dtype=float)


def response_matrix(records: pd.DataFrame, by: Sequence[str] = PERSON_BY,
                    item_key: str = "parallel_id") -> tuple[pd.DataFrame, list[str], np.ndarray]:
    """(persons, items, responses): persons frame (the `by` columns, one row per person, sorted), the sorted
    item keys, and responses (persons, items) of 0/1 with NaN = not administered. Annulled items are left out;
    several records for one person x item raise ValueError (add the column that tells them apart to `by`)."""
    by = list(by)
    prepare(records, (), [*by, item_key, "answer", "correct"])
    f = records[records["answer"] >= 0]
    if f.empty:
        raise ValueError("no single-answer item with a key (all annulled or of other types): no response matrix")
    dup = f.duplicated([*by, item_key])
    if dup.any():
        row = f.loc[dup, [*by, item_key]].iloc[0].to_dict()
        raise ValueError(f"several records for one person x {item_key} (e.g. {row}); add the column that tells "
                         "them apart (e.g. shuffle) to `by`")
    g = f.groupby(by, sort=True, dropna=False)
    persons = g.size().index.to_frame(index=False)
    items = sorted(f[item_key].astype(str).unique())
    col = pd.Categorical(f[item_key].astype(str), categories=items).codes
    u = np.full((len(persons), len(items)), np.nan)
    u[g.ngroup().to_numpy(), col] = f["correct"].astype(bool).to_numpy(float)
    return persons, items, u


def item_parameters(items: ItemSet, item_key: str = "parallel_id") -> pd.DataFrame:
    """3PL parameters a, b, c indexed by `item_key` (sorted), for the items that have `Item.irt`.
    Translations share a parallel_id; different parameters under one key raise ValueError."""
    rows = [(str(getattr(it, item_key)), *it.irt) for it in items if it.irt is not None]
    df = pd.DataFrame(rows, columns=[item_key, "a", "b", "c"])
    clash = df.groupby(item_key)[["a", "b", "c"]].nunique().gt(1).any(axis=1)
    if clash.any():
        raise ValueError(f"items sharing {item_key} {clash[clash].index[0]!r} have different IRT parameters")
    return df.drop_duplicates(item_key).set_index(item_key).sort_index()


def _person_scores(u: np.ndarray, params: pd.DataFrame, grid: np.ndarray, D: float) -> pd.DataFrame:
    a, b, c = (params[k].to_numpy() for k in ("a", "b", "c"))
    est = irt.ability_eap(u, a, b, c, D, grid=grid)
    n = (~np.isnan(u)).sum(axis=1) if u.dtype.kind == "f" else np.full(u.shape[0], u.shape[1])
    out = pd.DataFrame({"n_items": n, "accuracy": irt.total_score(u) / np.where(n > 0, n, np.nan),
                        "theta": est.theta, "psd": est.psd, "lz": irt.person_fit_lz(u, est.theta, a, b, c, D)})
    out.loc[n == 0, ["theta", "psd"]] = np.nan  # the prior, not a measurement
    return out


def model_abilities(records: pd.DataFrame, items: ItemSet, by: Sequence[str] = PERSON_BY,
                    item_key: str = "parallel_id", grid: int | ArrayLike = 40, D: float = 1.0,
                    human_theta: ArrayLike | None = None) -> pd.DataFrame:
    """One row per person: by..., n_items, accuracy, theta, psd, lz (+ percentile among `human_theta`).

    Only items with IRT parameters enter any column, so accuracy and theta describe the same items; the
    items dropped for lacking `Item.irt` are listed in `frame.attrs["items_without_irt"]` (and counted in
    `attrs["n_items_dropped"]`). A person with no calibrated item gets NaN.
    """
    persons, keys, u = response_matrix(records, by, item_key)
    params = item_parameters(items, item_key)
    keep = np.isin(keys, params.index)
    if not keep.any():
        raise ValueError(f"none of the {len(keys)} answered items has IRT parameters (matched on {item_key})")
    out = pd.concat([persons, _person_scores(u[:, keep], params.loc[np.asarray(keys)[keep]], eap_grid(grid), D)],
                    axis=1)
    if human_theta is not None:
        out["percentile"] = np.where(out["theta"].notna(),
                                     irt.percentile_of(out["theta"].fillna(0.0), human_theta), np.nan)
    out.attrs["items_without_irt"] = [k for k, ok in zip(keys, keep, strict=True) if not ok]
    out.attrs["n_items_dropped"] = int((~keep).sum())
    return out


def human_abilities(population: Any, items: ItemSet, item_key: str = "parallel_id",
                    grid: int | ArrayLike = 40, D: float = 1.0) -> pd.DataFrame:
    """The same columns as `model_abilities` for a human population (`item_ids`, `theta`, `responses`, e.g.
    `datasets.demo.load_population()`): person, theta_true, n_items, accuracy, theta, psd, lz, on the
    population's items that have parameters in `items`. One EAP pass over all persons (vectorised)."""
    params = item_parameters(items, item_key)
    ids = np.asarray(population.item_ids, dtype=str)
    keep = np.isin(ids, params.index)
    if not keep.any():
        raise ValueError("no item of the population has IRT parameters in `items`")
    scores = _person_scores(np.asarray(population.responses)[:, keep], params.loc[ids[keep]], eap_grid(grid), D)
    scores.insert(0, "theta_true", np.asarray(population.theta, dtype=float))
    scores.insert(0, "person", np.arange(len(scores)))
    return scores


def item_discrimination(data: Any, theta: Any, *, fraction: float = 0.25, by: Sequence[str] = PERSON_BY,
                        item_key: str = "parallel_id", group: str | None = None) -> pd.DataFrame:
    """Discrimination index per item (top minus bottom `fraction` of persons by theta): item_key, di,
    p_correct, n_persons (+ group when given, e.g. "models" / "humans").

    data and theta are either a records frame and its `model_abilities` frame (persons = every shuffle,
    as in the ENEM paper), a population (`item_ids`, `responses`) and its thetas (array or
    `human_abilities` frame), or the tuple of `response_matrix` and an array of thetas in its person order.
    """
    if isinstance(data, pd.DataFrame):
        if not isinstance(theta, pd.DataFrame):
            raise ValueError("with a records frame, theta must be the model_abilities() frame")
        persons, keys, u = response_matrix(data, by, item_key)
        t = persons.merge(theta[[*by, "theta"]], on=list(by), how="left")["theta"].to_numpy(float)
    else:
        keys, u = (list(data.item_ids), np.asarray(data.responses)) if hasattr(data, "responses") else data[1:]
        t = np.asarray(theta["theta"] if isinstance(theta, pd.DataFrame) else theta, dtype=float)
    if np.isnan(t).any():
        raise ValueError("some persons have no theta (no calibrated item or not in the abilities frame)")
    n = (~np.isnan(u)).sum(axis=0) if u.dtype.kind == "f" else np.full(u.shape[1], u.shape[0])
    out = pd.DataFrame({item_key: list(keys), "di": irt.discrimination_index(u, t, fraction),
                        "p_correct": irt.proportion_correct(u), "n_persons": n})
    if group is not None:
        out.insert(0, "group", group)
    return out


def discrimination_frame(records: pd.DataFrame, abilities: pd.DataFrame, population: Any = None,
                         humans: pd.DataFrame | None = None, split: str = "strategy", *, fraction: float = 0.25,
                         by: Sequence[str] = PERSON_BY, item_key: str = "parallel_id") -> pd.DataFrame:
    """Figure 5's data: model DI per `split` value (persons = every model x language x shuffle of that
    strategy, as in the ENEM paper) stacked with the human DI (population and its `human_abilities`),
    repeated for each split value so every panel compares with the humans. Split values with fewer than 2
    persons have no model DI (their panel shows the humans only). Columns: split, group, item_key, di,
    p_correct, n_persons."""
    frames = []
    for value, part in records.groupby(split, sort=True):
        ab = abilities[abilities[split] == value]
        if len(ab) >= 2:
            di = item_discrimination(part, ab, fraction=fraction, by=by, item_key=item_key, group="models")
            frames.append(di.assign(**{split: value}))
    if population is not None:
        h = item_discrimination(population, humans, fraction=fraction, item_key=item_key, group="humans")
        frames += [h.assign(**{split: value}) for value in sorted(records[split].unique())]
    if not frames:
        raise ValueError(f"no {split} has 2 or more persons and there are no humans: no discrimination index")
    out = pd.concat(frames, ignore_index=True)
    return out[[split, *[c for c in out.columns if c != split]]]


def has_discrimination(abilities: pd.DataFrame, population: Any = None, split: str = "strategy") -> bool:
    """Whether `discrimination_frame` has anything to show: a human population, or a `split` value with 2 or
    more persons (a single-shuffle run of one model, e.g. an imported one, has none)."""
    return population is not None or (not abilities.empty and int(abilities.groupby(split).size().max()) >= 2)


def share_correct(records: pd.DataFrame, items: ItemSet | None = None, by: Sequence[str] = GROUP_BY,
                  item_key: str = "parallel_id") -> pd.DataFrame:
    """Share of shuffles correct per group x item (`item_scores`), the response-pattern heatmap's data:
    by..., item_id, item_key, share_correct, n_records, b (the item's difficulty; NaN without `items`/irt)."""
    scores = item_scores(records, by).rename(columns={"accuracy": "share_correct"})
    keys = records[list(dict.fromkeys(["item_id", item_key]))].drop_duplicates("item_id")
    out = scores.merge(keys, on="item_id") if item_key != "item_id" else scores
    b = item_parameters(items, item_key)["b"] if items is not None else pd.Series(dtype=float)
    out["b"] = out[item_key].astype(str).map(b).astype(float)
    return out[list(dict.fromkeys([*by, "item_id", item_key, "share_correct", "n_records", "b"]))]


def information_curve(items: ItemSet, grid: ArrayLike | None = None, item_key: str = "parallel_id",
                      D: float = 1.0) -> pd.DataFrame:
    """Test information and SE = 1/sqrt(I) of the calibrated items (one per `item_key`) over theta:
    columns theta, information, se. Default grid: 161 points on [-4, 4]."""
    p = item_parameters(items, item_key)
    if p.empty:
        raise ValueError("no item has IRT parameters: no information curve")
    t = np.linspace(-4.0, 4.0, 161) if grid is None else np.asarray(grid, dtype=float)
    a, b, c = p["a"].to_numpy(), p["b"].to_numpy(), p["c"].to_numpy()
    return pd.DataFrame({"theta": t, "information": irt.test_information(t, a, b, c, D),
                         "se": irt.standard_error(t, a, b, c, D)})


def central_region(abilities: pd.DataFrame, q: float = 0.9, by: Sequence[str] = GROUP_BY, x: str = "theta",
                   y: str = "accuracy") -> pd.DataFrame:
    """Per group, a polygon around the central `q` of its persons (shuffles) in the (x, y) plane.

    Method: keep the points inside the central q-quantile range of x AND of y ((1-q)/2 to (1+q)/2), then
    take their convex hull (method "hull"). With fewer than 3 such points, or all on a line, the polygon is
    the rectangle of the two quantile ranges (method "box"; a single shuffle gives a zero-size box).
    Columns: by..., vertex, x, y, n_points, method; vertices in counter-clockwise order, not closed.
    """
    if not 0 < q <= 1:
        raise ValueError(f"q = {q}: must be in (0, 1]")
    prepare(abilities, (), [*by, x, y])
    rows = []
    lo_q, hi_q = (1 - q) / 2, (1 + q) / 2
    for key, g in abilities.dropna(subset=[x, y]).groupby(list(by), sort=True, dropna=False):
        pts = g[[x, y]].to_numpy(float)
        lo, hi = np.quantile(pts, [lo_q, hi_q], axis=0)
        inside = np.unique(pts[((pts >= lo) & (pts <= hi)).all(axis=1)], axis=0)
        poly, method = None, "hull"
        if len(inside) >= 3:
            try:
                poly = inside[ConvexHull(inside).vertices]
            except QhullError:  # collinear points: no 2-D hull
                poly = None
        if poly is None:
            poly, method = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]]), "box"
        key = key if isinstance(key, tuple) else (key,)
        rows += [{**dict(zip(by, key, strict=True)), "vertex": i, x: vx, y: vy, "n_points": len(pts), "method": method}
                 for i, (vx, vy) in enumerate(poly)]
    return pd.DataFrame(rows)


def theta_ci(abilities: pd.DataFrame, by: Sequence[str] = GROUP_BY, level: float = 0.95,
             kind: str = "spread") -> pd.DataFrame:
    """theta over the shuffles of each group: by..., n, theta_mean, theta_sd, ci_low, ci_high, note.

    kind "spread": the central `level` percentile interval of the shuffles' thetas (how much the option
    order moves the score; the ENEM paper's Figure 4). kind "mean": the t-interval of the mean theta.
    """
    if kind not in ("spread", "mean"):
        raise ValueError(f"kind = {kind!r}: expected 'spread' or 'mean'")
    prepare(abilities, (), [*by, "theta"])
    g = abilities.dropna(subset=["theta"]).groupby(list(by), sort=True, dropna=False)["theta"]
    out = pd.DataFrame({"n": g.size(), "theta_mean": g.mean(), "theta_sd": g.std(ddof=1)})
    alpha = (1 - level) / 2
    if kind == "spread":
        out["ci_low"], out["ci_high"] = g.quantile(alpha), g.quantile(1 - alpha)
    else:
        half = sps.t.ppf(1 - alpha, out["n"].clip(lower=2) - 1) * out["theta_sd"] / np.sqrt(out["n"])
        out["ci_low"], out["ci_high"] = out["theta_mean"] - half, out["theta_mean"] + half
    out["note"] = np.where(out["n"] < 2, "one shuffle: no interval", "")
    return out.reset_index()
