"""Paired bootstrap of accuracy differences against cases whose bootstrap distribution is known exactly."""
import numpy as np
import pytest
from builders import records

from mcqa_toolkit.measure.paired import paired_bootstrap


def _two_runs(a_choices, b_choices, shuffles=1):
    rows = []
    for run, choices in (("A", a_choices), ("B", b_choices)):
        for i, c in enumerate(choices):
            for s in range(shuffles):
                rows.append({"item_id": f"q{i}", "choice": c, "run_id": run, "model": run, "shuffle": s})
    return records(rows)


def test_two_items_exact_distribution():
    """d = (1, 0): resampled means are 1, 0.5, 0 with probabilities 1/4, 1/2, 1/4, so the 95% interval is
    [0, 1] and |d* - 0.5| >= 0.5 has probability 1/2 (p ~ 0.5; tolerance 0.02 for 20,000 resamples)."""
    f = _two_runs([0, 0], [0, 1])           # key 0: A right on both, B right on q0 only
    row = paired_bootstrap(f, "run_id", "A", "B", n_boot=20_000, seed=1).iloc[0]
    assert row["n_items"] == 2 and row["diff"] == pytest.approx(0.5)
    assert (row["ci_low"], row["ci_high"]) == (0.0, 1.0)
    assert row["p_value"] == pytest.approx(0.5, abs=0.02)


def test_identical_runs_have_no_difference():
    f = _two_runs([0, 1, 2, 0], [0, 1, 2, 0])
    row = paired_bootstrap(f, "run_id", "A", "B", n_boot=500).iloc[0]
    assert (row["diff"], row["ci_low"], row["ci_high"], row["p_value"]) == (0.0, 0.0, 0.0, 1.0)


def test_shuffles_average_within_an_item_and_same_seed_same_result():
    f = _two_runs([0] * 30, [1] * 10 + [0] * 20, shuffles=3)
    a = paired_bootstrap(f, "run_id", "A", "B", n_boot=2000, seed=3)
    b = paired_bootstrap(f, "run_id", "A", "B", n_boot=2000, seed=3)
    assert a.equals(b)
    row = a.iloc[0]
    assert row["n_items"] == 30 and row["diff"] == pytest.approx(10 / 30)
    # the bootstrap SE of a mean of 0/1 differences with share 1/3: sqrt(p(1-p)/n) = 0.0861
    assert (row["ci_high"] - row["ci_low"]) / (2 * 1.96) == pytest.approx(np.sqrt(1 / 3 * 2 / 3 / 30), rel=0.15)
    assert row["p_value"] < 0.01


def test_bad_input_is_one_clear_error():
    f = _two_runs([0], [0])
    with pytest.raises(ValueError, match=r"run_id value\(s\) \['C'\] not in the frame"):
        paired_bootstrap(f, "run_id", "A", "C")
