"""Item-level contamination detectors: per model x item, one score per detector, higher = more likely seen.

One pure function per detector, each from the table its signal lives in:
  min_k        minus Min-K% prob (Shi et al. 2024): the mean of the 20% lowest token log-probs of the question
  min_k_pp     Min-K%++ (Zhang et al. 2024): the same over log-probs standardised by the model's next-token
               distribution (needs a local model)
  zlib         mean token log-prob / zlib bytes of the text (Carlini et al. 2021), minus their ratio
  reference    log-prob per byte of the text minus a reference model's (the model before fine-tuning, or another
               model; per byte, so the two may tokenise differently): Carlini et al.'s reference ratio
  probe        the masked-option probe's mean log-prob per token of the hidden option (scoring.probe)
  key_pull     where the published key letter shows a wrong option (option shuffles), the probability on that
               letter minus the model's mean probability on that letter over all items: a memorised key pulls
               the choice to the published letter
  fit_residual observed minus expected share correct under the human 3PL at the model's theta (irt.item_residuals):
               an item much easier for the model than for a human of its ability
The first four read `scoring.familiarity` tables, probe a `scoring.probe` table, the last two a run's records.
`contamination_scores` puts them in one long frame: model, language, item_id, parallel_id, detector, score.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from mcqa_toolkit import irt
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.abilities import item_parameters, model_abilities, response_matrix
from mcqa_toolkit.measure.frames import prepare

__all__ = ["DETECTORS", "min_k_score", "min_k_pp_score", "zlib_score", "reference_score", "probe_score",
           "letter_probabilities", "key_pull", "fit_residual", "contamination_scores"]

DETECTORS = ("min_k", "min_k_pp", "zlib", "reference", "probe", "key_pull", "fit_residual")
KEYS = ["model", "language", "item_id", "parallel_id"]


def min_k_score(familiarity: pd.DataFrame) -> pd.Series:
    """-min_k_prob: the mean of the k% lowest token log-probs (higher = more familiar)."""
    return -familiarity["min_k_prob"].astype(float)


def min_k_pp_score(familiarity: pd.DataFrame) -> pd.Series:
    """Min-K%++ as measured (already higher = more familiar); NaN where the backend could not give it."""
    return familiarity["min_k_pp"].astype(float)


def zlib_score(familiarity: pd.DataFrame) -> pd.Series:
    """-(log-perplexity / zlib bytes) = (loglik_sum / n_tokens) / zlib_bytes."""
    return familiarity["loglik_sum"] / familiarity["n_tokens"] / familiarity["zlib_bytes"]


def reference_score(familiarity: pd.DataFrame, reference: pd.DataFrame) -> pd.Series:
    """Log-prob per byte minus the reference model's on the same item (matched on item_id); NaN for the
    reference model itself and for items it did not read."""
    models = set(reference["model"])
    if len(models) != 1:
        raise ValueError(f"the reference table must hold one model, it holds {sorted(models)}")
    ref = reference.drop_duplicates("item_id").set_index("item_id")
    per_byte = ref["loglik_sum"] / ref["n_bytes"]
    out = familiarity["loglik_sum"] / familiarity["n_bytes"] - familiarity["item_id"].map(per_byte)
    return out.where(familiarity["model"] != next(iter(models)))


def probe_score(probe: pd.DataFrame) -> pd.Series:
    """The masked-option probe's mean log-prob per token of the hidden option."""
    return probe["probe_logprob"].astype(float)


def letter_probabilities(records: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """(items, P): per (model, language, item) of keyed single-answer records with option probabilities (items:
    model, language, item_id, parallel_id, answer, n_options), P[i, L] = the mean
    probability on letter L over the item's shuffled records (the original order left out) in which letter L
    shows a wrong option (NaN when none does). Letters past an item's number of options are NaN."""
    prepare(records, (), ["model", "language", "item_id", "parallel_id", "answer", "shuffle", "permutation",
                          "option_probs", "n_options"])
    f = records[(records["answer"] >= 0) & records["option_probs"].map(lambda p: p is not None and len(p) > 0)]
    n_max = int(f["n_options"].max()) if len(f) else 0
    perm = np.full((len(f), n_max), -1)
    probs = np.full((len(f), n_max), np.nan)
    for r, (p, q) in enumerate(zip(f["permutation"], f["option_probs"])):
        perm[r, :len(p)], probs[r, :len(q)] = p, q
    shown = np.where(perm >= 0, np.take_along_axis(probs, np.maximum(perm, 0), axis=1), np.nan)
    identity = (perm == np.where(perm >= 0, np.arange(n_max), -1)).all(axis=1)
    usable = (perm >= 0) & (perm != f["answer"].to_numpy()[:, None]) & ~identity[:, None]
    frame = pd.DataFrame(np.where(usable, shown, np.nan), index=f.index)
    g = frame.groupby([f["model"], f["language"], f["item_id"], f["parallel_id"], f["answer"], f["n_options"]],
                      sort=True)
    mean = g.mean()
    items = mean.index.to_frame(index=False)
    if items.duplicated(KEYS).any():
        raise ValueError("records of one model x language x item disagree on the key, or hold several strategies: "
                         "pass one strategy's records")
    return items, mean.to_numpy(float)


def key_pull(records: pd.DataFrame) -> pd.DataFrame:
    """Per model x language x item: p_key, the mean probability on the published key letter where it shows a
    wrong option, and key_pull = p_key minus the mean of p_key's letter over the model's items (position bias
    taken out). Columns: model, language, item_id, parallel_id, answer, n_options, p_key, key_pull."""
    items, P = letter_probabilities(records)
    k = items["answer"].to_numpy(int)
    p_key = P[np.arange(len(k)), k]
    letter_mean = pd.DataFrame(P).groupby([items["model"], items["language"]]).transform("mean").to_numpy()
    base = letter_mean[np.arange(len(k)), k]
    return items.assign(p_key=p_key, key_pull=p_key - base)


def fit_residual(records: pd.DataFrame, items: ItemSet, by: Sequence[str] = ("model", "language")) -> pd.DataFrame:
    """Per model x language x item: observed minus expected share correct under the items' 3PL parameters at
    each shuffle's EAP theta (irt.item_residuals, persons = shuffles). Items without parameters are left out.
    Columns: by..., parallel_id, observed, expected, fit_residual."""
    by = list(by)
    params = item_parameters(items)
    out = []
    for key, g in records.groupby(by, sort=True):
        persons, ids, u = response_matrix(g, [*by, "shuffle"])
        keep = np.isin(ids, params.index)
        theta = model_abilities(g, items, [*by, "shuffle"])["theta"].to_numpy()
        p = params.loc[np.asarray(ids)[keep]]
        res = irt.item_residuals(u[:, keep], theta, p["a"], p["b"], p["c"])
        out.append(pd.DataFrame({**dict(zip(by, key if isinstance(key, tuple) else (key,))),
                                 "parallel_id": np.asarray(ids)[keep], "observed": res.observed,
                                 "expected": res.expected, "fit_residual": res.residual}))
    return pd.concat(out, ignore_index=True)


def _long(frame: pd.DataFrame, scores: dict[str, pd.Series]) -> pd.DataFrame:
    parts = [frame[KEYS].assign(detector=name, score=s.to_numpy(float)) for name, s in scores.items()]
    return pd.concat(parts, ignore_index=True)


def contamination_scores(familiarity: pd.DataFrame | None = None, probe: pd.DataFrame | None = None,
                         records: pd.DataFrame | None = None, items: ItemSet | None = None,
                         reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every detector the given tables allow, as one long frame (model, language, item_id, parallel_id,
    detector, score); `records` must be one strategy's (key_pull, and fit_residual when `items` carry IRT
    parameters); `reference`: a familiarity table of the reference model."""
    parts = []
    if familiarity is not None:
        text = {"min_k": min_k_score(familiarity), "min_k_pp": min_k_pp_score(familiarity),
                "zlib": zlib_score(familiarity)}
        if reference is not None:
            text["reference"] = reference_score(familiarity, reference)
        parts.append(_long(familiarity, text))
    if probe is not None:
        parts.append(_long(probe, {"probe": probe_score(probe)}))
    if records is not None:
        pull = key_pull(records)
        parts.append(_long(pull, {"key_pull": pull["key_pull"]}))
        if items is not None and any(it.irt is not None for it in items):
            res = fit_residual(records, items)
            ids = records.drop_duplicates(["model", "language", "parallel_id"])[KEYS]
            res = res.merge(ids, on=["model", "language", "parallel_id"])
            parts.append(_long(res, {"fit_residual": res["fit_residual"]}))
    if not parts:
        raise ValueError("contamination_scores needs at least one table")
    return pd.concat(parts, ignore_index=True)
