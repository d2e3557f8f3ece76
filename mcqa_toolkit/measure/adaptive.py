"""Adaptive testing analyses (notebooks/15_adaptive): how many items a CAT needs for a given precision, how
close its theta is to the full test's, what it saves on real model runs, and how well k anchor items estimate
a person's accuracy and theta.

Population side (a simulated or real human population with complete 0/1 answers): `population_sample` draws a
seeded subsample, `cat_length_curve` runs a post-hoc CAT (`irt.cat_simulate`) per SE target next to a
random-order test with the same stopping rule (CatConfig(randomesque=n_items) picks uniformly among all items
left), `cat_vs_full` compares each person's CAT theta with the EAP from all items on the same grid and prior.
`anchor_curve` is `irt.anchor_evaluate` (out-of-sample by leave-one-group-out) summarised by k.

Model side: an adaptive run (records with extra["cat"], see run.adaptive) is paired with a fixed-form run by
this rule: same model, dataset and language, and the fixed-form run's strategy_hash equals the adaptive
records' extra["cat"]["full_form_hash"], the hash of the adaptive strategy without `adaptive`. So the partner
has every other strategy field equal (shots, seed, style, shuffles, ...) whatever the strategies are named,
and shuffle k shows the same option orders in both runs. `model_cat_vs_full` then gives, per shuffle, the
CAT's final theta and SE next to the full run's EAP theta, and the items and forwarded tokens of both.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit import irt
from mcqa_toolkit.irt.cat import CatBank, CatConfig
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.abilities import item_parameters, model_abilities

RUN_KEYS = ("model", "dataset", "language")
ORDERS = ("adaptive", "random")


def population_sample(population: Any, items: ItemSet, n: int | None, seed: int = 0,
                      item_key: str = "parallel_id") -> tuple[CatBank, np.ndarray, np.ndarray]:
    """(bank, responses (n, items), theta_true (n,)): the population's items that have IRT parameters in
    `items`, and the persons `default_rng(seed).permutation(N)[:n]` (n None: everybody, in order). A
    permutation prefix, so a smaller n takes the first persons of a larger sample with the same seed."""
    params = item_parameters(items, item_key)
    ids = np.asarray(population.item_ids, dtype=str)
    keep = np.isin(ids, params.index)
    if not keep.any():
        raise ValueError("no item of the population has IRT parameters in `items`")
    u = np.asarray(population.responses)[:, keep]
    rows = np.arange(u.shape[0]) if n is None else np.random.default_rng(seed).permutation(u.shape[0])[:int(n)]
    p = params.loc[ids[keep]]
    bank = CatBank(p["a"].to_numpy(), p["b"].to_numpy(), p["c"].to_numpy())
    return bank, u[rows], np.asarray(population.theta, dtype=float)[rows]


def cat_length_curve(bank: CatBank, responses: ArrayLike, se_targets: Sequence[float], max_items: int | None,
                     seed: int = 0) -> pd.DataFrame:
    """Test length needed per SE target, adaptive (maximum information) and in random order, both stopping
    at posterior SD <= target or at max_items. One row per target x order: se_target, order, n_persons,
    mean_length, median_length, share_reached (psd <= target), mean_psd."""
    rows = []
    for target in se_targets:
        for order in ORDERS:
            config = CatConfig(se_target=float(target), max_items=max_items,
                               randomesque=bank.n_items if order == "random" else 1)
            sim = irt.cat_simulate(bank, responses, config, seed)
            rows.append({"se_target": float(target), "order": order, "n_persons": int(sim.length.size),
                         "mean_length": float(sim.length.mean()), "median_length": float(np.median(sim.length)),
                         "share_reached": float((sim.psd <= target).mean()), "mean_psd": float(sim.psd.mean())})
    return pd.DataFrame(rows)


def cat_vs_full(bank: CatBank, responses: ArrayLike, config: CatConfig, seed: int = 0,
                theta_true: ArrayLike | None = None) -> pd.DataFrame:
    """One row per person: length, stop, theta_cat, psd_cat (the CAT's final EAP), theta_full, psd_full (EAP
    from every item, on the CAT's grid and prior) and theta_true when given."""
    sim = irt.cat_simulate(bank, responses, config, seed)
    points, prior = irt.normal_grid(config.grid_points, *config.grid_bounds)
    full = irt.ability_eap(responses, bank.a, bank.b, bank.c, bank.D, grid=points, prior=prior)
    out = pd.DataFrame({"person": np.arange(sim.length.size), "length": sim.length, "stop": sim.stop.astype(str),
                        "theta_cat": sim.theta, "psd_cat": sim.psd, "theta_full": full.theta,
                        "psd_full": full.psd})
    if theta_true is not None:
        out["theta_true"] = np.asarray(theta_true, dtype=float)
    return out


def agreement(x: ArrayLike, y: ArrayLike) -> pd.Series:
    """How y (e.g. the CAT's theta) agrees with x (the full test's): n, Pearson r (NaN for n < 3 or a
    constant), bias = mean(y - x), RMSE and MAE."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-d of one length, got {x.shape} and {y.shape}")
    d = y - x
    r = float(np.corrcoef(x, y)[0, 1]) if x.size >= 3 and x.std() > 0 and y.std() > 0 else float("nan")
    return pd.Series({"n": float(x.size), "correlation": r, "bias": float(d.mean()),
                      "rmse": float(np.sqrt((d ** 2).mean())), "mae": float(np.abs(d).mean())})


def anchor_curve(responses: ArrayLike, ks: Sequence[int], folds: int | None = None, model: str = "3pl",
                 seed: int = 0, **calibrate_kw: Any) -> pd.DataFrame:
    """`irt.anchor_evaluate` by k: one row per k x selection (k-means "nearest", "informative", "random")
    with mae_theta and mae_<estimator> for irt, pirt, weighted, gpirt. folds None leaves each person out
    (one calibration per person); folds = f leaves out persons i with i % f == g together (f calibrations)."""
    u = np.asarray(responses, dtype=float)
    groups = None if folds is None else np.arange(u.shape[0]) % int(folds)
    ev = irt.anchor_evaluate(u, ks, model=model, groups=groups, seed=seed, **calibrate_kw)
    return ev.summary().reset_index()


def _cat_info(extra: pd.Series) -> list[dict | None]:
    """extra["cat"] of each record (None for fixed-form records); only strings mentioning "cat" are parsed."""
    return [json.loads(e).get("cat") if isinstance(e, str) and '"cat"' in e else None for e in extra]


def is_adaptive(records: pd.DataFrame) -> pd.Series:
    """True for the records of adaptive runs (extra["cat"] set): their patterns are incomplete by design, and
    which items they hold depends on the answers."""
    if "extra" not in records.columns:
        return pd.Series(False, index=records.index)
    return pd.Series(_cat_info(records["extra"]), index=records.index, dtype=object).notna()


def pair_adaptive_runs(records: pd.DataFrame) -> pd.DataFrame:
    """One row per adaptive run (run_id): model, dataset, language, strategy, run_id, full_form_hash and its
    partner's full_strategy / full_run_id (None when no fixed-form run of the same model, dataset and
    language has strategy_hash == full_form_hash, e.g. a CAT run whose records carry no full_form_hash). Empty
    when no record carries extra["cat"]."""
    cols = [*RUN_KEYS, "strategy", "run_id", "full_form_hash", "full_strategy", "full_run_id"]
    cats = pd.Series(_cat_info(records["extra"]), index=records.index, dtype=object)
    is_cat = cats.notna()
    if not is_cat.any():
        return pd.DataFrame(columns=cols)
    cat = records.loc[is_cat, [*RUN_KEYS, "strategy", "run_id"]].assign(
        full_form_hash=[c.get("full_form_hash") for c in cats[is_cat]])
    if cat.groupby("run_id")["full_form_hash"].nunique(dropna=False).gt(1).any():
        raise ValueError("an adaptive run's records carry different full_form_hash values")
    fixed = records.loc[~is_cat, [*RUN_KEYS, "strategy", "run_id", "strategy_hash"]].drop_duplicates("run_id")
    fixed = fixed.rename(columns={"strategy": "full_strategy", "run_id": "full_run_id",
                                  "strategy_hash": "full_form_hash"})
    # two fixed-form runs of one strategy under different names: the first by name is the partner
    fixed = fixed.sort_values("full_strategy").drop_duplicates([*RUN_KEYS, "full_form_hash"])
    out = cat.drop_duplicates("run_id").merge(fixed, on=[*RUN_KEYS, "full_form_hash"], how="left",
                                              validate="many_to_one")
    out = out.astype({"full_strategy": object, "full_run_id": object})
    return out.where(out.notna(), None)[cols].sort_values(["model", "language", "strategy"]).reset_index(drop=True)


def model_cat_vs_full(records: pd.DataFrame, items: ItemSet, pairs: pd.DataFrame | None = None,
                      config: CatConfig = CatConfig()) -> pd.DataFrame:
    """Per shuffle of every paired adaptive run: model, dataset, language, strategy, full_strategy, shuffle,
    items_cat, items_full, stop, theta_cat, se_cat (the CAT's final EAP and posterior SD), theta_full,
    psd_full (EAP on the full run's answers, on `config`'s grid and prior: pass the CAT's config if it changed
    the grid), tokens_cat, tokens_full (forwarded tokens), prompt_tokens_cat, prompt_tokens_full (naive cost),
    and same_choice: the share of the CAT's items whose full-run record (same item, same shuffle) made the
    same choice. Only shuffles present in both runs."""
    pairs = pair_adaptive_runs(records) if pairs is None else pairs
    pairs = pairs[pairs["full_run_id"].notna()]
    frames = []
    points = irt.normal_grid(config.grid_points, *config.grid_bounds)[0]
    for p in pairs.itertuples(index=False):
        cat, full = records[records["run_id"] == p.run_id], records[records["run_id"] == p.full_run_id]
        info = pd.DataFrame(_cat_info(cat["extra"]), index=cat.index)
        cat = cat.assign(position=info["position"], theta_cat=info["theta"], se_cat=info["se"], stop=info["stop"])
        last = cat.sort_values("position").groupby("shuffle").tail(1).set_index("shuffle")
        g_cat, g_full = cat.groupby("shuffle"), full.groupby("shuffle")
        ab = model_abilities(full, items, by=("shuffle",), grid=points).set_index("shuffle")
        both = cat[["item_id", "shuffle", "choice"]].merge(full[["item_id", "shuffle", "choice"]],
                                                           on=["item_id", "shuffle"], suffixes=("_cat", "_full"))
        same = (both["choice_cat"] == both["choice_full"]).groupby(both["shuffle"]).mean()
        shuffles = sorted(set(last.index) & set(ab.index))
        frames.append(pd.DataFrame({
            "model": p.model, "dataset": p.dataset, "language": p.language, "strategy": p.strategy,
            "full_strategy": p.full_strategy, "shuffle": shuffles,
            "items_cat": g_cat.size().loc[shuffles].to_numpy(), "items_full": g_full.size().loc[shuffles].to_numpy(),
            "stop": last.loc[shuffles, "stop"].to_numpy(), "theta_cat": last.loc[shuffles, "theta_cat"].to_numpy(float),
            "se_cat": last.loc[shuffles, "se_cat"].to_numpy(float), "theta_full": ab.loc[shuffles, "theta"].to_numpy(),
            "psd_full": ab.loc[shuffles, "psd"].to_numpy(),
            "tokens_cat": g_cat["n_forwarded_tokens"].sum().loc[shuffles].to_numpy(float),
            "tokens_full": g_full["n_forwarded_tokens"].sum().loc[shuffles].to_numpy(float),
            "prompt_tokens_cat": g_cat["n_prompt_tokens"].sum().loc[shuffles].to_numpy(float),
            "prompt_tokens_full": g_full["n_prompt_tokens"].sum().loc[shuffles].to_numpy(float),
            "same_choice": same.reindex(shuffles).to_numpy(float)}))
    columns = [*RUN_KEYS, "strategy", "full_strategy", "shuffle", "items_cat", "items_full", "stop", "theta_cat",
               "se_cat", "theta_full", "psd_full", "tokens_cat", "tokens_full", "prompt_tokens_cat",
               "prompt_tokens_full", "same_choice"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def adaptive_savings(per_shuffle: pd.DataFrame, by: Sequence[str] = ("model", "language", "strategy")
                     ) -> pd.DataFrame:
    """Per adaptive run (`model_cat_vs_full` rows grouped by `by`): shuffles, items and forwarded tokens of the
    CAT and of the full test summed over the shuffles, items_saved_pct and tokens_saved_pct (100 x (1 -
    cat / full)), and the agreement of theta_cat with theta_full over the shuffles (`agreement`)."""
    rows = []
    for key, g in per_shuffle.groupby(list(by), sort=True):
        items_cat, items_full = g["items_cat"].sum(), g["items_full"].sum()
        tok_cat, tok_full = g["tokens_cat"].sum(), g["tokens_full"].sum()
        rows.append({**dict(zip(by, key, strict=True)), "shuffles": len(g), "items_cat": float(items_cat),
                     "items_full": float(items_full), "items_saved_pct": 100.0 * (1 - items_cat / items_full),
                     "tokens_cat": float(tok_cat), "tokens_full": float(tok_full),
                     "tokens_saved_pct": 100.0 * (1 - tok_cat / tok_full) if tok_full > 0 else float("nan"),
                     **agreement(g["theta_full"], g["theta_cat"]).drop("n").add_prefix("theta_").to_dict()})
    return pd.DataFrame(rows)
