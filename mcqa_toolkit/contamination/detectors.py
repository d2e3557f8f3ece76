"""Every item-level detector in one long frame: per model x item, one score per detector, higher = more likely seen.

  min_k        minus Min-K% prob (contamination.min_k_prob)
  min_k_pp     Min-K%++ (contamination.min_k_pp; needs a local model)
  zlib         mean token log-prob / zlib bytes of the text (contamination.zlib_ratio)
  reference    log-prob per byte minus a reference model's (contamination.reference_ratio): needs the reference
  probe        the masked-option probe's mean log-prob per token of the hidden option (contamination.probe)
  key_pull     the pull of the published key letter under option shuffles (contamination.key_pull)
  fit_residual observed minus expected share correct under the human 3PL (contamination.fit_residual)
The first four read the audit's familiarity table, probe its probe table, the last two a run's records.
"""
from __future__ import annotations

import pandas as pd

from mcqa_toolkit.contamination.fit_residual import fit_residual
from mcqa_toolkit.contamination.key_pull import KEYS, key_pull
from mcqa_toolkit.contamination.min_k_pp import min_k_pp_score
from mcqa_toolkit.contamination.min_k_prob import min_k_score
from mcqa_toolkit.contamination.probe import probe_score
from mcqa_toolkit.contamination.reference_ratio import reference_score
from mcqa_toolkit.contamination.zlib_ratio import zlib_score
from mcqa_toolkit.items import ItemSet

__all__ = ["DETECTORS", "DETECTOR_NAMES", "contamination_scores"]

DETECTORS = ("min_k", "min_k_pp", "zlib", "reference", "probe", "key_pull", "fit_residual")
DETECTOR_NAMES = {"min_k": "Min-K% prob", "min_k_pp": "Min-K%++", "zlib": "zlib ratio",
                  "reference": "reference ratio", "probe": "masked-option probe", "key_pull": "key pull",
                  "fit_residual": "3PL residual"}


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
