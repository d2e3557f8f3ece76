"""The key-pull detector (contamination.key_pull) against a record-by-record loop written again here: the
probability on each letter where it shows a wrong option, the key letter's pull beyond the model's bias for it."""
import numpy as np
import pytest
from contamination_runs import exam, letters_records

from mcqa_toolkit.contamination.key_pull import key_pull, letter_probabilities


def _letter_loop(records):
    """Record by record: the mean probability on each letter where it shows a wrong option (original order left
    out), by (item_id, letter)."""
    sums = {}
    for r in records.itertuples():
        if list(r.permutation) == sorted(r.permutation) or r.answer < 0:
            continue
        for letter, option in enumerate(r.permutation):
            if option != r.answer:
                sums.setdefault((r.item_id, letter), []).append(r.option_probs[option])
    return {key: np.mean(v) for key, v in sums.items()}


def _key_pull_loop(records):
    P = _letter_loop(records)
    keys = records.drop_duplicates("item_id").set_index("item_id")["answer"]
    p_key = {i: P.get((i, k), np.nan) for i, k in keys.items()}
    letter_mean = {L: np.nanmean([P.get((i, L), np.nan) for i in keys.index]) for L in range(5)}
    return {i: (p_key[i], p_key[i] - letter_mean[keys[i]]) for i in keys.index}


def test_key_pull_equals_a_record_by_record_loop_and_finds_the_pulled_items():
    items = exam(30)
    saw = {it.item_id for it in list(items)[:15]}
    records = letters_records(items, pull=2.0, saw=saw, shuffles=6)
    frame = key_pull(records)
    assert list(frame.columns) == ["model", "language", "item_id", "parallel_id", "answer", "n_options", "p_key",
                                   "key_pull"]
    got = frame.set_index("item_id")
    want = _key_pull_loop(records)
    for item_id, (p_key, pull) in want.items():
        assert got.loc[item_id, "p_key"] == pytest.approx(p_key) and got.loc[item_id, "key_pull"] == pytest.approx(pull)
    assert got.loc[list(saw), "key_pull"].min() > got.drop(index=list(saw))["key_pull"].max()


def test_letter_probabilities_equal_the_loop_letter_by_letter():
    items = exam(6)
    records = letters_records(items, shuffles=2)   # one shuffled order: the letter showing the key gets no value
    got, P = letter_probabilities(records)
    assert list(got["item_id"]) == sorted(items.ids) and P.shape == (6, 5)
    want = _letter_loop(records)
    for r, item_id in enumerate(got["item_id"]):
        for letter in range(5):
            assert P[r, letter] == pytest.approx(want.get((item_id, letter), np.nan), nan_ok=True)
    assert np.isnan(P).sum(axis=1).tolist() == [1] * 6
