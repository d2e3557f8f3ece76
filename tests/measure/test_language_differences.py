"""language_differences: the absolute difference from the reference language, equal to the difference of
`kappa` (and to `paired_bootstrap` for accuracy) on paired items, signed > 0 for better, with CIs."""
import numpy as np
import pytest
from builders import records

from mcqa_toolkit import measure


def _two_languages(en_right, pt_right, subjects=("bio", "chem")):
    """Items q0.. in two subjects (alternating), answered right (choice 0) or wrong (1) in en and pt."""
    rows = []
    for lang, right in (("en", en_right), ("pt", pt_right)):
        for i, r in enumerate(right):
            rows.append({"item_id": f"q{i}-{lang}", "parallel_id": f"q{i}", "language": lang,
                         "subject": subjects[i % len(subjects)], "choice": 0 if r else 1})
    return records(rows)


def test_kappa_difference_equals_the_difference_of_kappas():
    f = _two_languages([1, 1, 0, 1, 0, 0, 1, 1], [1, 0, 0, 0, 1, 0, 0, 1])
    d = measure.language_differences(f, "en", "kappa", by="model", n_boot=500).iloc[0]
    k = measure.kappa(f, by=("model", "language"), n_boot=0).set_index("language")["kappa"]
    assert d["score_ref"] == pytest.approx(k["en"]) and d["score_other"] == pytest.approx(k["pt"])
    assert d["diff"] == pytest.approx(k["pt"] - k["en"]) and d["diff"] < 0       # worse in pt: negative
    assert d["ci_low"] <= d["diff"] <= d["ci_high"] and (d["n_items"], d["n_unpaired"]) == (8, 0)


def test_accuracy_difference_is_the_paired_bootstrap():
    f = _two_languages([1, 0, 0, 1, 0, 1], [1, 1, 1, 1, 0, 1])
    d = measure.language_differences(f, "en", "accuracy", by="model", n_boot=400, seed=2).iloc[0]
    pb = measure.paired_bootstrap(f, "language", "pt", "en", pair_on="parallel_id", by="model", n_boot=400,
                                  seed=2).iloc[0]
    assert d["diff"] == pytest.approx(2 / 6) == pytest.approx(pb["diff"])
    assert (d["ci_low"], d["ci_high"], d["p_value"]) == pytest.approx((pb["ci_low"], pb["ci_high"], pb["p_value"]))


def test_defined_when_the_reference_score_is_near_zero_and_without_bootstrap():
    """A reference kappa of 0 makes gap % undefined; the difference is still a number (n_boot=0: no CI)."""
    f = _two_languages([1, 0, 0, 0, 1, 0, 0, 0], [1, 1, 0, 0, 1, 1, 0, 0], subjects=("bio",))
    d = measure.language_differences(f, "en", "kappa", by="model", n_boot=0).iloc[0]
    assert d["score_ref"] == pytest.approx(0.0) and d["diff"] == pytest.approx(1 / 3)
    assert np.isnan(d["ci_low"]) and d["note"] == "n_boot=0: no CI"
    gap = measure.language_gap(measure.kappa(f, by=("model", "language"), n_boot=0), "en", by="model").iloc[0]
    assert np.isnan(gap["gap_pct"])


def test_unpaired_items_and_errors():
    f = _two_languages([1, 0, 1], [1, 1])
    d = measure.language_differences(f, "en", "accuracy", by="model", n_boot=10).iloc[0]
    assert (d["n_items"], d["n_unpaired"]) == (2, 1)
    with pytest.raises(ValueError, match="reference language 'es'"):
        measure.language_differences(f, "es")
    with pytest.raises(ValueError, match="'kappa' or 'accuracy'"):
        measure.language_differences(f, score="gap")
    with pytest.raises(ValueError, match="cannot also be in `by`"):
        measure.language_differences(f, by=("model", "language"))
