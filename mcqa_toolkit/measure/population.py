"""Population psychometrics: calibrate an item bank from many models' results (ours or imported from other
tools), check the fit, and measure a new model adaptively with a fraction of the items (tinyBenchmarks,
Fluid Benchmarking).

`population_responses` turns records of many runs into models x items of 0/1 (items matched across tools by
item_id, which interop gives our loaders' ids); a model with several shuffles answers an item correctly when
more than half of its shuffles are correct (rule "majority") or as on its first shuffle ("first").
`calibrate_bank` drops the items the population cannot identify (nobody or everybody right), warns with
`SmallPopulationWarning` when there are fewer persons than the model needs (MIN_PERSONS: common rules of
thumb, about 200 for the 2PL and 1,000 for the 3PL; with fewer, use priors: the default lognormal prior on a
keeps the MML fit finite), and calls irt.twopl_mml / irt.threepl_mml. `bank_fit` gives item outfit / infit
at the persons' EAP. `leave_one_model_out` measures each model with a bank calibrated on the others: its
CAT (maximum information) and random items of the same number, against its EAP on every item of that bank
and its observed accuracy (the accuracy predicted from theta is the mean of P_i(theta) over the bank).
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit import irt
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.abilities import response_matrix

__all__ = ["MIN_PERSONS", "SmallPopulationWarning", "population_responses", "calibrate_bank", "bank_fit",
           "bank_items", "leave_one_model_out", "lomo_summary"]

MIN_PERSONS = {"2pl": 200, "3pl": 1000}
DEFAULT_A_PRIOR = (0.0, 0.5)  # ln a ~ N(0, 0.5^2): a stays near 1 unless the data insist


class SmallPopulationWarning(UserWarning):
    """Fewer persons than the IRT model needs for stable item parameters."""


def population_responses(records: pd.DataFrame, person_by: Sequence[str] = ("model",), item_key: str = "item_id",
                         rule: str = "majority") -> tuple[pd.DataFrame, list[str], np.ndarray]:
    """(persons, items, responses): one person per `person_by` group (default: per model), responses 0/1 with
    NaN = not administered, annulled items left out. rule: "majority" (correct when > half of the person's
    shuffles of the item are) or "first" (the lowest shuffle only)."""
    if rule not in ("majority", "first"):
        raise ValueError(f"rule {rule!r}: expected 'majority' or 'first'")
    f = records[records["answer"] >= 0]
    keys = [*person_by, item_key]
    if rule == "first":
        f = f.sort_values("shuffle", kind="stable").drop_duplicates(keys)
    else:
        share = f.groupby(keys, sort=True, dropna=False)["correct"].mean()
        f = (share > 0.5).rename("correct").reset_index().assign(answer=0)
    return response_matrix(f, by=person_by, item_key=item_key)


def calibrate_bank(responses: ArrayLike, model: str = "2pl", a_prior: tuple[float, float] | None = DEFAULT_A_PRIOR,
                   **mml_kw: Any) -> tuple[irt.Calibration, np.ndarray]:
    """(calibration, kept): item parameters for the identifiable items (`kept`, indices into the columns of
    `responses`), by MML. Warns (SmallPopulationWarning) below MIN_PERSONS[model] persons, and says which
    items were dropped because every taker, or none, answered them correctly."""
    if model not in MIN_PERSONS:
        raise ValueError(f"model {model!r}: expected one of {sorted(MIN_PERSONS)}")
    u = np.asarray(responses, dtype=float)
    n_persons = int((~np.isnan(u)).any(axis=1).sum())
    if n_persons < MIN_PERSONS[model]:
        warnings.warn(f"{n_persons} persons calibrate a {model.upper()} bank: common rules of thumb ask for about "
                      f"{MIN_PERSONS[model]} for stable item parameters; item parameters and the thetas from them are "
                      "rough (a lognormal prior on a is used; prefer the 2PL, and check the results against "
                      "random items of the same number)", SmallPopulationWarning, stacklevel=2)
    taken = (~np.isnan(u)).sum(axis=0)
    right = np.nansum(u, axis=0)
    kept = np.flatnonzero((taken > 0) & (right > 0) & (right < taken))
    if kept.size < 2:
        raise ValueError(f"only {kept.size} of {u.shape[1]} items have both right and wrong answers: nothing to "
                         "calibrate")
    if kept.size < u.shape[1]:
        warnings.warn(f"{u.shape[1] - kept.size} of {u.shape[1]} items left out of the bank: every taker, or none, "
                      "answered them correctly, so their parameters are not identified", SmallPopulationWarning,
                      stacklevel=2)
    fit = irt.twopl_mml if model == "2pl" else irt.threepl_mml
    return fit(u[:, kept], a_prior=a_prior, **mml_kw), kept


def bank_fit(responses: ArrayLike, calibration: irt.Calibration) -> pd.DataFrame:
    """Per bank item: a, b, c, proportion correct, outfit and infit mean squares at the persons' EAP theta."""
    u = np.asarray(responses, dtype=float)
    cal = calibration
    theta = irt.ability_eap(u, cal.a, cal.b, cal.c, cal.D).theta
    fit = irt.item_fit(u, theta, cal.a, cal.b, cal.c, cal.D).to_frame()
    return pd.concat([cal.to_frame(), pd.Series(irt.proportion_correct(u), name="p_correct"), fit], axis=1)


def bank_items(items: ItemSet, item_ids: Sequence[str], calibration: irt.Calibration) -> ItemSet:
    """The bank as items: `items` whose item_id is in `item_ids` (the calibrated columns, in order), their
    `Item.irt` replaced by the calibration's (a, b, c), so a new model takes a real CAT on the bank with an
    `adaptive` strategy (run.adaptive uses Item.irt). Items not in the bank are left out."""
    if len(item_ids) != calibration.b.size:
        raise ValueError(f"{len(item_ids)} item ids for a calibration of {calibration.b.size} items")
    params = dict(zip(map(str, item_ids), zip(calibration.a, calibration.b, calibration.c, strict=True), strict=True))
    missing = sorted(set(params) - set(items.ids))
    if missing:
        raise ValueError(f"bank items not in `items`: {missing[:5]}")
    return ItemSet([it.with_(irt=params[it.item_id]) for it in items if it.item_id in params], items.name)


def leave_one_model_out(responses: ArrayLike, lengths: Sequence[int], model: str = "2pl", n_random: int = 20,
                        seed: int = 0, **calibrate_kw: Any) -> pd.DataFrame:
    """For every person j (a model): calibrate the bank on the other persons, then give j the CAT and
    `n_random` random draws of each length L, all scored by EAP on that bank. One row per person x length x
    order ("cat" | "random"; random rows average their draws): theta, theta_full (EAP on j's answers to the
    whole bank), accuracy_full (j's observed accuracy on the bank), accuracy_hat (mean of P_i(theta) over the
    bank), abs_theta_error, abs_accuracy_error. Persons must have answered every item (post-hoc CAT)."""
    u = np.asarray(responses, dtype=float)
    if np.isnan(u).any():
        raise ValueError("leave_one_model_out needs complete responses (every model answered every item)")
    lengths = sorted({int(L) for L in lengths})
    config = irt.CatConfig(se_target=None, max_items=max(lengths))
    points, prior = irt.normal_grid(config.grid_points, *config.grid_bounds)  # one grid and prior for every EAP
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallPopulationWarning)  # the caller is warned once, by calibrate_bank
        for j in range(u.shape[0]):
            others = np.delete(u, j, axis=0)
            cal, kept = calibrate_bank(others, model, **calibrate_kw)
            bank = irt.CatBank(cal.a, cal.b, cal.c, cal.D)
            x = u[j, kept]
            if max(lengths) > kept.size:
                raise ValueError(f"length {max(lengths)} exceeds the {kept.size} items of the bank without person {j}")
            full = irt.ability_eap(x[None], cal.a, cal.b, cal.c, cal.D, grid=points, prior=prior).theta[0]
            acc = float(x.mean())
            sim = irt.cat_simulate(bank, x[None], config, seed)
            for L in lengths:
                rows.append(_row(j, L, "cat", [sim.theta_path[0, L - 1]], full, acc, cal))
                draws = irt.cat_random_baseline(bank, np.repeat(x[None], n_random, axis=0), [L] * n_random, config,
                                                seed=seed + 1 + j).theta  # n_random orders, one per row
                rows.append(_row(j, L, "random", draws, full, acc, cal))
    return pd.DataFrame(rows)


def _row(person: int, length: int, order: str, thetas: ArrayLike, full: float, acc: float,
         cal: irt.Calibration) -> dict[str, Any]:
    t = np.asarray(thetas, dtype=float)
    acc_hat = irt.irf(t, cal.a, cal.b, cal.c, cal.D).mean(axis=1)
    return {"person": person, "length": length, "order": order, "theta": float(t.mean()), "theta_full": float(full),
            "accuracy_full": acc, "accuracy_hat": float(acc_hat.mean()),
            "abs_theta_error": float(np.abs(t - full).mean()),
            "abs_accuracy_error": float(np.abs(acc_hat - acc).mean())}


def lomo_summary(per_person: pd.DataFrame) -> pd.DataFrame:
    """`leave_one_model_out` by length x order: persons, mean absolute theta error against the full bank's EAP,
    mean absolute error of the predicted accuracy against the observed one."""
    g = per_person.groupby(["length", "order"])
    return pd.DataFrame({"persons": g.size(), "mae_theta": g["abs_theta_error"].mean(),
                         "mae_accuracy": g["abs_accuracy_error"].mean()}).reset_index()
