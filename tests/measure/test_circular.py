"""CircularEval against hand-computed cases: an item counts only when every rotation is answered right."""
import pytest
from builders import records

from mcqa_toolkit.measure.circular import circular_eval, is_rotation_set, rotations


def test_rotations_put_every_option_once_at_every_position():
    assert rotations([0, 1, 2]) == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    assert rotations([2, 0, 1, 3])[1] == (0, 1, 3, 2)
    assert is_rotation_set([(1, 2, 0), (0, 1, 2), (2, 0, 1)])
    assert not is_rotation_set([(0, 1, 2), (0, 2, 1), (2, 0, 1)])
    assert not is_rotation_set([(0, 1, 2), (1, 2, 0)])


def _rows(item, choices, answer=0):
    """One record per rotation of (0, 1, 2); `choices` are ORIGINAL option indices."""
    return [{"item_id": item, "n_options": 3, "answer": answer, "shuffle": r, "permutation": list(p), "choice": c}
            for r, (p, c) in enumerate(zip(rotations([0, 1, 2]), choices, strict=True))]


def test_circular_accuracy_hand_computed():
    # item a: right under all 3 rotations; item b: right twice (5/6 records right); item c: never right
    f = records(_rows("a", [0, 0, 0]) + _rows("b", [0, 1, 0]) + _rows("c", [2, 2, 1]))
    out = circular_eval(f, by=())
    row = out.iloc[0]
    assert row["n_items"] == 3 and row["n_records"] == 9 and row["n_rotation_sets"] == 3
    assert row["accuracy"] == pytest.approx(5 / 9, abs=1e-12)
    assert row["circular_accuracy"] == pytest.approx(1 / 3, abs=1e-12)


def test_position_only_model_scores_zero_circularly():
    # always picks shown position 0: right exactly once per item (when the key is shown first)
    f = records([{**r, "choice": r["permutation"][0]} for item in ("a", "b") for r in _rows(item, [0, 0, 0])])
    row = circular_eval(f, by=()).iloc[0]
    assert row["accuracy"] == pytest.approx(1 / 3) and row["circular_accuracy"] == 0.0


def test_missing_rotation_is_refused_naming_the_item_unless_allowed():
    f = records(_rows("a", [0, 0, 0])[:2] + _rows("b", [0, 0, 0]))
    with pytest.raises(ValueError, match="item 'a' has 2 shuffle"):
        circular_eval(f, by=())
    row = circular_eval(f, by=(), require_rotations=False).iloc[0]
    assert row["circular_accuracy"] == 1.0 and row["n_rotation_sets"] == 1
