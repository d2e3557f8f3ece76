"""Anchor items (tinyBenchmarks, Polo et al. 2024): a model's full-benchmark accuracy and theta from its
answers to k anchor items only.

Anchors: k-means (numpy, seeded k-means++ start, Lloyd iterations) on one feature row per item: its IRF
P_i(theta) on a theta grid ("irf", default: items that predict accuracy alike cluster together), its
information profile ("information") or its standardised (a, b, c) ("parameters"); in every cluster the
member nearest the centre (or, with pick="informative", the most informative member) is the anchor,
weighted by the cluster's share of the items.

Estimates from a person's anchor answers y_j (what `anchor_estimate` implements):
- theta: EAP from the anchors only (`ability_eap`, item parameters fixed);
- irt: sum_i P_i(theta) / n_items, the expected proportion correct over all items;
- pirt (tinyBenchmarks p-IRT): (sum_j y_j + sum of P_i(theta) over the other items) / n_items;
- weighted: sum_j w_j y_j, the anchors' observed accuracy with cluster-size weights;
- gpirt(lam) (tinyBenchmarks gp-IRT): lam * weighted + (1 - lam) * pirt. tinyBenchmarks tunes lam on
  its training models; `anchor_evaluate` fits it by least squares on the calibration persons (in
  sample: their answers also calibrated the items, which flatters pirt).
`anchor_evaluate` measures the errors out of sample: every group of persons (default: each person) is
left out, the items are calibrated without it (`twopl_mml` / `threepl_mml`), anchors chosen from that
calibration, and the left-out persons' anchor-based estimates compared with their observed accuracy
and their full-response EAP theta under the same calibration.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability import ability_eap, normal_grid
from mcqa_toolkit.irt.calibrate import Calibration, threepl_mml, twopl_mml
from mcqa_toolkit.irt.models import check_items, irf, item_information

PROFILE_GRID = np.linspace(-3.0, 3.0, 25)
ESTIMATORS = ("irt", "pirt", "weighted", "gpirt")


def kmeans(x: ArrayLike, k: int, seed: int = 0, init: ArrayLike | None = None,
           max_iter: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means: points (n, f) -> centres (k, f), labels (n,).

    init: starting centres (k, f); default k-means++ with default_rng(seed). An emptied cluster takes the
    point farthest from its centre among clusters with several members, so no cluster stays empty.
    """
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    if not 1 <= int(k) <= n:
        raise ValueError(f"k = {k}: need 1 <= k <= {n} points")
    if init is None:
        rng = np.random.default_rng(seed)
        picked = [x[rng.integers(n)]]
        for _ in range(1, k):        # k-means++: next centre drawn with probability ~ squared distance
            d2 = ((x[:, None, :] - np.array(picked)[None]) ** 2).sum(axis=2).min(axis=1)
            picked.append(x[rng.choice(n, p=d2 / d2.sum())] if d2.sum() > 0 else x[rng.integers(n)])
        centres = np.array(picked)
    else:
        centres = np.array(init, dtype=float)
    labels = np.full(n, -1)
    for _ in range(max_iter):
        d2 = ((x[:, None, :] - centres[None]) ** 2).sum(axis=2)
        new = d2.argmin(axis=1)
        size = np.bincount(new, minlength=k)
        for j in np.flatnonzero(size == 0):       # rare: take the worst-fitting point of a shared cluster
            far = int(np.where(size[new] > 1, d2[np.arange(n), new], -1.0).argmax())
            size[new[far]] -= 1
            size[j] += 1
            new[far] = j
        if np.array_equal(new, labels):
            break
        labels = new
        onehot = labels[:, None] == np.arange(k)
        centres = (onehot.T @ x) / onehot.sum(axis=0)[:, None]
    return centres, labels


@dataclass(frozen=True, eq=False)
class AnchorSet:
    """Anchor item indices (k,), their weights (k,) summing to 1, and each item's cluster (items,)."""

    items: np.ndarray
    weights: np.ndarray
    labels: np.ndarray
    method: str

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"item": self.items, "weight": self.weights})
        df.attrs["method"] = self.method
        return df


def item_features(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, D: float = 1.0,
                  features: str = "irf") -> np.ndarray:
    """One row per item to cluster: (items, 25) IRF or information on PROFILE_GRID, or (items, 3) z-scored
    (a, b, c)."""
    a, b, c, D = check_items(a, b, c, D)
    if features == "irf":
        return irf(PROFILE_GRID, a, b, c, D).T
    if features == "information":
        return item_information(PROFILE_GRID, a, b, c, D).T
    if features == "parameters":
        p = np.column_stack([a, b, c])
        sd = p.std(axis=0)
        return (p - p.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    raise ValueError(f"features = {features!r}: expected 'irf', 'information' or 'parameters'")


def select_anchors(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, k: int, seed: int = 0,
                   features: str = "irf", pick: str = "nearest", D: float = 1.0) -> AnchorSet:
    """k anchors by k-means on `item_features`, one per cluster, weighted by the cluster's share of items.

    pick "nearest": the member nearest the centre (tinyBenchmarks), a typical item of its cluster.
    "informative": the member with the most information averaged over a N(0, 1) ability prior, which
    keeps the coverage of the clusters but sharpens the anchors' theta (see tests/irt/test_anchors.py).
    """
    x = item_features(a, b, c, D, features)
    centres, labels = kmeans(x, k, seed)
    if pick == "nearest":
        score = ((x - centres[labels]) ** 2).sum(axis=1)
    elif pick == "informative":
        points, w = normal_grid(41, -4.0, 4.0)
        score = -(w @ item_information(points, a, b, c, D))
    else:
        raise ValueError(f"pick = {pick!r}: expected 'nearest' or 'informative'")
    items = np.array([np.flatnonzero(labels == j)[score[labels == j].argmin()] for j in range(k)])
    return AnchorSet(items, np.bincount(labels, minlength=k) / labels.size, labels, f"kmeans:{features}:{pick}")


def random_anchors(n_items: int, k: int, seed: int | Sequence[int] = 0) -> AnchorSet:
    """k distinct items drawn uniformly (default_rng(seed)), equal weights: the baseline."""
    if not 1 <= int(k) <= int(n_items):
        raise ValueError(f"k = {k}: need 1 <= k <= n_items = {n_items}")
    items = np.sort(np.random.default_rng(seed).choice(int(n_items), int(k), replace=False))
    return AnchorSet(items, np.full(int(k), 1.0 / k), np.full(int(n_items), -1), "random")


@dataclass(frozen=True, eq=False)
class AnchorEstimate:
    """Per person (n,): EAP theta and psd from the anchors, and the accuracy estimates irt, pirt and
    weighted (see module docstring); gpirt(lam) blends weighted and pirt."""

    theta: np.ndarray
    psd: np.ndarray
    irt: np.ndarray
    pirt: np.ndarray
    weighted: np.ndarray

    def gpirt(self, lam: float) -> np.ndarray:
        return lam * self.weighted + (1.0 - lam) * self.pirt

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"theta": self.theta, "psd": self.psd, "irt": self.irt, "pirt": self.pirt,
                             "weighted": self.weighted})


def anchor_estimate(anchor_responses: ArrayLike, anchors: AnchorSet, a: ArrayLike, b: ArrayLike,
                    c: ArrayLike | None = None, D: float = 1.0) -> AnchorEstimate:
    """Estimates from answers to the anchors only: anchor_responses (n, k) 0/1, NaN = not answered,
    columns in the order of anchors.items; a, b, c are the whole benchmark's (items,)."""
    a, b, c, D = check_items(a, b, c, D)
    y = np.asarray(anchor_responses, dtype=float)
    y = y[None, :] if y.ndim == 1 else y
    if y.ndim != 2 or y.shape[1] != anchors.items.size:
        raise ValueError(f"anchor_responses must be (n, {anchors.items.size}) for the anchors, got {y.shape}")
    idx = anchors.items
    est = ability_eap(y, a[idx], b[idx], c[idx], D)
    p = irf(est.theta, a, b, c, D)                                  # (n, items)
    seen = ~np.isnan(y)
    filled = np.where(seen, y, p[:, idx])                           # an unanswered anchor counts as predicted
    pirt = (p.sum(axis=1) - p[:, idx].sum(axis=1) + filled.sum(axis=1)) / b.size
    w = anchors.weights * seen
    with np.errstate(invalid="ignore"):                             # no anchor answered: NaN
        weighted = (w * np.where(seen, y, 0.0)).sum(axis=1) / w.sum(axis=1)
    return AnchorEstimate(est.theta, est.psd, p.mean(axis=1), pirt, weighted)


def gpirt_lambda(estimate: AnchorEstimate, accuracy: ArrayLike) -> float:
    """Least-squares blend weight lam in [0, 1] of weighted vs pirt against known accuracies (n,)."""
    t = np.asarray(accuracy, dtype=float)
    dw, dt = estimate.weighted - estimate.pirt, t - estimate.pirt
    ok = np.isfinite(dw) & np.isfinite(dt)
    denom = float((dw[ok] ** 2).sum())
    return float(np.clip((dw[ok] * dt[ok]).sum() / denom, 0.0, 1.0)) if denom > 0 else 0.0


@dataclass(frozen=True, eq=False)
class AnchorEvaluation:
    """Out-of-sample anchor estimates, one entry per (left-out person, k, selection): arrays of equal length.

    selection is the `select_anchors` pick ("nearest", "informative") or "random" (`random_anchors`), all
    from the same calibration; theta_full is the person's EAP from all its responses and accuracy its
    observed proportion correct (answered items); lam is the gp-IRT weight fitted on that fold's
    calibration persons.
    """

    person: np.ndarray
    k: np.ndarray
    selection: np.ndarray
    theta_full: np.ndarray
    accuracy: np.ndarray
    theta: np.ndarray
    irt: np.ndarray
    pirt: np.ndarray
    weighted: np.ndarray
    gpirt: np.ndarray
    lam: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({name: getattr(self, name) for name in self.__dataclass_fields__})

    def summary(self) -> pd.DataFrame:
        """Mean absolute error by (k, selection): of theta vs theta_full and of each accuracy estimator."""
        err = pd.DataFrame({"k": self.k, "selection": self.selection, "theta": np.abs(self.theta - self.theta_full)})
        for name in ESTIMATORS:
            err[name] = np.abs(getattr(self, name) - self.accuracy)
        return err.groupby(["k", "selection"]).mean().add_prefix("mae_")


def anchor_evaluate(responses: ArrayLike, ks: Sequence[int], *, model: str = "3pl",
                    groups: ArrayLike | None = None, features: str = "irf",
                    picks: Sequence[str] = ("nearest", "informative"), seed: int = 0,
                    **calibrate_kw) -> AnchorEvaluation:
    """Leave-one-group-out error of anchor estimates for every k in ks: k-means anchors with each of
    `picks` (selection "nearest", "informative") and random anchors (selection "random").

    responses (n, items) 0/1 with NaN = not administered; groups (n,) labels of persons left out together
    (default: each person alone; give the model name when rows are option shuffles of one model, or fold
    numbers for k-fold). Each group costs one calibration (`model` "2pl" or "3pl", `calibrate_kw` passed
    on), which is why the outer loop is over groups.
    """
    u = np.asarray(responses, dtype=float)
    if u.ndim != 2:
        raise ValueError(f"responses must be persons x items, got shape {u.shape}")
    fits: dict[str, Callable[..., Calibration]] = {"2pl": twopl_mml, "3pl": threepl_mml}
    fit = fits.get(model)
    if fit is None:
        raise ValueError(f"model = {model!r}: expected '2pl' or '3pl'")
    n, n_items = u.shape
    g = np.arange(n) if groups is None else np.asarray(groups)
    if g.shape != (n,):
        raise ValueError(f"groups must have one label per person ({n}), got shape {g.shape}")
    answered = (~np.isnan(u)).sum(axis=1)
    if (answered == 0).any():
        raise ValueError(f"responses[{int(np.argmax(answered == 0))}] has no answered item")
    accuracy = np.nansum(u, axis=1) / answered
    parts = []
    for fold, label in enumerate(np.unique(g)):
        test = np.flatnonzero(g == label)
        train = np.flatnonzero(g != label)
        try:
            cal = fit(u[train], **calibrate_kw)
        except ValueError as e:   # typically an item everybody outside the group got right (or wrong)
            raise ValueError(f"calibrating without group {label}: {e}") from None
        full = ability_eap(u[test], cal.a, cal.b, cal.c, cal.D)
        for k in ks:
            chosen = [(pick, select_anchors(cal.a, cal.b, cal.c, k=k, seed=seed, features=features, pick=pick,
                                            D=cal.D)) for pick in picks]
            for selection, anchors in chosen + [("random", random_anchors(n_items, k, seed=[seed, fold, int(k)]))]:
                fitted = anchor_estimate(u[train][:, anchors.items], anchors, cal.a, cal.b, cal.c, cal.D)
                lam = gpirt_lambda(fitted, accuracy[train])
                est = anchor_estimate(u[test][:, anchors.items], anchors, cal.a, cal.b, cal.c, cal.D)
                m = test.size
                parts.append((test, np.full(m, int(k)), np.full(m, selection, dtype=object), full.theta,
                              accuracy[test], est.theta, est.irt, est.pirt, est.weighted, est.gpirt(lam),
                              np.full(m, lam)))
    return AnchorEvaluation(*(np.concatenate(col) for col in zip(*parts, strict=True)))
