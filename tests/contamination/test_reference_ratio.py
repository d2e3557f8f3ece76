"""The reference-ratio detector (contamination.reference_ratio) by hand: log-prob per byte minus the reference's."""
import pandas as pd
import pytest

from mcqa_toolkit.contamination.reference_ratio import reference_score

FAM = pd.DataFrame({"model": "m", "language": "pt", "item_id": ["a", "b"], "parallel_id": ["a", "b"],
                    "n_tokens": [10, 20], "n_bytes": [40, 100], "zlib_bytes": [30, 50], "loglik_sum": [-20.0, -10.0],
                    "min_k_prob": [5.0, 3.0], "min_k_pp": [-1.0, 0.5]})


def test_reference_score_by_hand():
    ref = FAM.assign(model="base", loglik_sum=[-40.0, -5.0])
    assert list(reference_score(FAM, ref)) == pytest.approx([-20 / 40 + 40 / 40, -10 / 100 + 5 / 100])
    assert reference_score(ref, ref).isna().all()          # the reference against itself compares nothing
    partial = reference_score(FAM, ref.iloc[:1])            # an item the reference did not read: NaN
    assert partial.iloc[0] == pytest.approx(0.5) and pd.isna(partial.iloc[1])
    with pytest.raises(ValueError, match="one model"):
        reference_score(FAM, pd.concat([ref, FAM]))
