"""The Min-K% prob detector (contamination.min_k_prob): its score from a familiarity table, and in ordinary runs the
correlation of Min-K% prob with accuracy, against scipy called directly and the per-strategy computation."""
import numpy as np
import pandas as pd
import pytest
from builders import records as make_records

from mcqa_toolkit.contamination.min_k_prob import (
    contamination_correlation,
    contamination_frame,
    min_k_accuracy_correlation,
    min_k_score,
)
from mcqa_toolkit.records.results import load_min_k
from mcqa_toolkit.scoring.min_k import min_k_prob


def test_min_k_score_is_minus_min_k_prob():
    fam = pd.DataFrame({"model": "m", "item_id": ["a", "b"], "min_k_prob": [5.0, 3.0]})
    assert list(min_k_score(fam)) == [-5.0, -3.0]


def test_min_k_accuracy_correlation():
    lps = {f"q{i}": [-(i + 1.0)] * 5 for i in range(5)}  # q4 least familiar
    mk = pd.DataFrame({"model": "m", "item_id": list(lps), "min_k": [min_k_prob(v) for v in lps.values()]})
    assert mk["min_k"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    # accuracy over 4 shuffles falls as Min-K% rises: q0 4/4 ... q4 0/4
    rows = [{"item_id": f"q{i}", "shuffle": s, "choice": 0 if s < 4 - i else 1} for i in range(5) for s in range(4)]
    rows += [{"item_id": "q0", "model": "tiny", "choice": 0}, {"item_id": "q1", "model": "tiny", "choice": 1}]
    mk = pd.concat([mk, pd.DataFrame({"model": "tiny", "item_id": ["q0", "q1"], "min_k": [1.0, 2.0]})])
    out = min_k_accuracy_correlation(mk, make_records(rows)).set_index("model")
    assert out.loc["m", "spearman_rho"] == pytest.approx(-1.0) and out.loc["m", "pearson_r"] == pytest.approx(-1.0)
    assert out.loc["tiny", "n"] == 2 and "fewer than 3" in out.loc["tiny", "note"]
    with pytest.raises(ValueError, match="no item"):
        min_k_accuracy_correlation(mk.assign(item_id=[f"z{i}" for i in range(len(mk))]), make_records(rows))


def test_contamination_join_and_correlation_match_stats(records, synthetic_dir, tmp_path):
    min_k = load_min_k(synthetic_dir)
    assert len(min_k) == 2 * 2 * 66 and load_min_k(tmp_path / "empty") is None
    frame = contamination_frame(min_k, records)
    assert {"model", "strategy", "item_id", "min_k_prob", "accuracy"} <= set(frame.columns)
    corr = contamination_correlation(min_k, records)
    direct = min_k_accuracy_correlation(min_k, records[records.strategy == "S1"], value="min_k_prob")
    got = corr[corr.strategy == "S1"].set_index("model")["pearson_r"]
    np.testing.assert_allclose(got.loc[direct["model"]], direct["pearson_r"])
    assert (corr["pearson_r"] < 0).all()  # harder items are less familiar and less often right
