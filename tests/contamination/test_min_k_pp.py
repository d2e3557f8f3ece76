"""The Min-K%++ detector (contamination.min_k_pp): the formula on a hand example, and the score read as measured.
Against the reference implementation on a model: tests/contamination/test_familiarity.py."""
import pandas as pd
import pytest

from mcqa_toolkit.contamination.min_k_pp import min_k_plus_plus, min_k_pp_score


def test_min_k_plus_plus_by_hand():
    lp, mu, var = [-1.0, -3.0, -2.0, -0.5, -4.0], [-1.5, -1.0, -2.0, -1.0, -2.0], [0.25, 4.0, 1.0, 0.0, 1.0]
    # z = (0.5/0.5, -2/2, 0/1, 0 (sigma 0), -2/1) = (1, -1, 0, 0, -2); k = 0.4 keeps the 2 lowest: (-2 - 1) / 2
    assert min_k_plus_plus(lp, mu, var, 0.4) == pytest.approx(-1.5)
    assert min_k_plus_plus(lp, mu, var, 0.1) == pytest.approx(-2.0)     # at least one token
    assert min_k_plus_plus(lp, mu, var, 1.0) == pytest.approx(-0.4)
    with pytest.raises(ValueError, match="equal"):
        min_k_plus_plus(lp, mu[:3], var)
    with pytest.raises(ValueError, match="negative variance"):
        min_k_plus_plus(lp, mu, [-1.0] * 5)


def test_min_k_pp_score_is_the_measured_column():
    fam = pd.DataFrame({"min_k_pp": [-1.0, 0.5, float("nan")]})
    got = min_k_pp_score(fam)
    assert list(got[:2]) == [-1.0, 0.5] and pd.isna(got.iloc[2])
