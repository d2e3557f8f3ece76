"""Every item-level detector in one long frame (contamination.detectors): each detector the given tables allow, the
frame's columns, and the one-strategy rule of the records."""
import numpy as np
import pandas as pd
import pytest
from contamination_runs import exam, letters_records

from mcqa_toolkit.contamination.detectors import DETECTORS, contamination_scores
from mcqa_toolkit.contamination.key_pull import key_pull


def test_contamination_scores_gathers_every_detector_the_tables_allow():
    items = exam(10)
    records = letters_records(items, shuffles=3)
    fam = pd.DataFrame({"model": "m", "language": "pt", "item_id": items.ids, "parallel_id": [i.parallel_id
                        for i in items], "n_tokens": 10, "n_bytes": 40, "zlib_bytes": 30, "loglik_sum": -20.0,
                        "min_k_prob": 5.0, "min_k_pp": -1.0})
    probe = fam[["model", "language", "item_id", "parallel_id"]].assign(probe_logprob=-2.0)
    long = contamination_scores(fam, probe, records, items, reference=fam.assign(model="base"))
    assert set(long["detector"]) == set(DETECTORS)
    assert list(long.columns) == ["model", "language", "item_id", "parallel_id", "detector", "score"]
    assert (long.groupby("detector").size() == 10).all()
    only_text = contamination_scores(fam)
    assert set(only_text["detector"]) == {"min_k", "min_k_pp", "zlib"}
    with pytest.raises(ValueError, match="at least one table"):
        contamination_scores()
    two = pd.concat([records, letters_records(items, shuffles=3, strategy="other").assign(shuffle=lambda d:
                                                                                              d["shuffle"] + 3)])
    with pytest.raises(ValueError, match="one strategy"):
        key_pull(two.assign(answer=np.where(two["strategy"] == "other", (two["answer"] + 1) % 5, two["answer"])))
