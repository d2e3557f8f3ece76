"""The half-precision yardsticks (precision.py) against direct computations: the padded naive layout equals the
one-sequence naive loop in fp32 (1e-5), margins and choice agreement on hand-made arrays."""
import numpy as np
from engine_requests import long_requests, requests_for

from mcqa_toolkit.backends.hf.engine import naive_scores
from mcqa_toolkit.backends.hf.precision import choice_agreement, max_delta, naive_padded_scores, top2_margins


def test_padded_naive_layout_equals_one_by_one_in_fp32(tiny_lm):
    reqs = requests_for(tiny_lm, stems=("What colour is the sky?",)) + long_requests(tiny_lm)
    naive = naive_scores(tiny_lm, reqs)
    for batch in (1, 3, len(reqs)):
        padded = naive_padded_scores(tiny_lm, reqs, batch)
        assert [a.shape for a in padded] == [a.shape for a in naive]
        assert max_delta(padded, naive) <= 1e-5


def test_margins_and_agreement():
    ref = [np.array([-1.0, -1.5, -3.0]), np.array([-2.0, -2.01]), np.array([-0.5])]
    other = [np.array([-1.2, -1.1, -3.0]), np.array([-2.02, -2.0]), np.array([-0.7])]
    assert np.allclose(top2_margins(ref)[:2], [0.5, 0.01]) and np.isinf(top2_margins(ref)[2])
    assert abs(max_delta(ref, other) - 0.4) < 1e-12  # |-1.5 - -1.1|
    # the near tie (margin 0.01) is compared only when the noise is below it; the single value always agrees
    assert choice_agreement(ref, other, noise=0.05) == (1, 2)
    assert choice_agreement(ref, other, noise=0.001) == (1, 3)
    assert choice_agreement(ref, other, noise=1.0) == (1, 1)
