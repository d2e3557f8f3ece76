"""PriDe against the paper's equations (Zheng et al., ICLR 2024) and hand-computed cases.

The paper's decomposition P_obs(d_i | x^I) ∝ P_prior(d_i) P_content(o_I(i)) is used to build observations from a
known prior and known content probabilities; over the k cyclic permutations the estimated prior must be that
prior exactly (the content terms cancel in the log-average), and debiasing must recover the content's argmax.
"""
import numpy as np
import pytest

from mcqa_toolkit.items import Item
from mcqa_toolkit.measure.circular import rotations
from mcqa_toolkit.measure.pride import debias, item_prior, permutation_debiased, pride
from mcqa_toolkit.records.columns import records_frame
from mcqa_toolkit.records.factory import make_record, run_fields


def _observed(prior, content, perms):
    """Rows by shown position: P_obs(pos) ∝ prior[pos] * content[perm[pos]]."""
    obs = np.array([[prior[pos] * content[p] for pos, p in enumerate(perm)] for perm in perms])
    return obs / obs.sum(axis=1, keepdims=True)


def test_prior_is_exact_under_the_papers_decomposition():
    prior = np.array([0.7, 0.1, 0.1, 0.1])
    content = np.array([0.2, 0.4, 0.2, 0.2])
    perms = rotations([0, 1, 2, 3])
    obs = _observed(prior, content, perms)
    np.testing.assert_allclose(item_prior(obs), prior, atol=1e-9)
    # the permutation average favours the content's best option (1), not the favoured position
    assert int(np.argmax(permutation_debiased(obs, perms))) == 1
    # a biased observation in the original order picks position 0; debiased by the prior it picks option 1
    assert int(np.argmax(obs[0])) == 0 and int(np.argmax(debias(obs[:1], prior)[0])) == 1


def test_hand_computed_three_options():
    """obs rows (cyclic perms of 3): log-mean per position then softmax, by hand:
    pos0: (ln .6 + ln .5 + ln .7)/3 = -0.5202, pos1: (ln .3 + ln .2 + ln .2)/3 = -1.4743,
    pos2: (ln .1 + ln .3 + ln .1)/3 = -1.9364 -> softmax = (0.6143, 0.2366, 0.1491)."""
    obs = np.array([[0.6, 0.3, 0.1], [0.5, 0.2, 0.3], [0.7, 0.2, 0.1]])
    np.testing.assert_allclose(item_prior(obs), [0.6143, 0.2366, 0.1491], atol=5e-4)
    # permutation average per original option with rotations (0,1,2), (1,2,0), (2,0,1):
    # option 0 at pos 0, 2, 1 -> (.6 + .3 + .2)/3; option 1 at pos 1, 0, 2 -> (.3 + .5 + .1)/3; option 2 -> (.1+.2+.7)/3
    np.testing.assert_allclose(permutation_debiased(obs, rotations([0, 1, 2])), [1.1 / 3, 0.9 / 3, 1.0 / 3], atol=1e-12)
    # debias by prior (0.5, 0.3, 0.2): (.2/.5, .5/.3, .3/.2) -> argmax position 1
    assert int(np.argmax(debias([[0.2, 0.5, 0.3]], [0.5, 0.3, 0.2])[0])) == 1


def _frame(prior, contents, keys, perms_of):
    recs = []
    run = run_fields(model="m", strategy="S", run_id="r")
    for i, (content, key) in enumerate(zip(contents, keys, strict=True)):
        item = Item(item_id=f"q{i:02d}", source="t", exam="e", stem="?", options=("a", "b", "c", "d"), answer=key,
                    language="en")
        for s, perm in enumerate(perms_of(i)):
            p = _observed(prior, content, [perm])[0]
            scores = np.log(p)[np.argsort(perm)]            # back to ORIGINAL order
            recs.append(make_record(item, run, shuffle=s, permutation=perm, choice=int(perm[int(np.argmax(p))]),
                                    option_scores=scores))
    return records_frame(recs)


def test_pride_on_records_recovers_the_content_answers():
    """20 items; the model's content always ranks the key first by a little, its position prior favours A
    strongly, so observed answers are mostly position 0. Estimation items carry the 4 rotations, the others
    one shown order (rotated so the key is never first)."""
    prior = np.array([0.7, 0.1, 0.1, 0.1])
    keys = [i % 4 for i in range(20)]
    contents = [np.where(np.arange(4) == k, 0.4, 0.2) for k in keys]
    est = {0}   # with share 0.05 and one item with several shuffles, that item is the estimation item

    def perms(i):
        return rotations([0, 1, 2, 3]) if i in est else [rotations([0, 1, 2, 3])[(keys[i] + 1) % 4]]

    f = _frame(prior, contents, keys, perms)
    res = pride(f, by=(), share=0.05)
    row = res.summary.iloc[0]
    assert row["n_items"] == 20 and row["n_estimation"] == 1
    np.testing.assert_allclose(row["prior"], prior, atol=1e-6)
    assert row["accuracy_rest"] == 0.0           # every observed answer is the favoured position, never the key
    assert row["debiased_accuracy_rest"] == 1.0 and row["debiased_accuracy"] == 1.0
    assert res.records["debiased_correct"].all()


def test_needs_shuffled_items():
    f = _frame(np.full(4, 0.25), [np.full(4, 0.25)], [0], lambda i: [(0, 1, 2, 3)])
    with pytest.raises(ValueError, match="no item has 2 or more shuffles"):
        pride(f, by=())
