"""interop.simulated: the simulated models' answers and the tools they are run through refuse items they cannot use."""
import numpy as np
import pytest

from mcqa_toolkit.interop.simulated import run_inspect, simulate_answers
from mcqa_toolkit.items import Item


def _item(**changes):
    base = dict(item_id="q1", source="t", exam="E", stem="?", options=("a", "b"), answer=1, irt=(1.0, 0.0, 0.2))
    return Item(**{**base, **changes})


def test_simulate_answers_needs_irt_parameters():
    with pytest.raises(ValueError, match="IRT parameters"):
        simulate_answers([_item(irt=None)], [0.0])


def test_run_inspect_needs_keyed_single_answer_items(tmp_path):
    with pytest.raises(ValueError, match="keyed single-answer items"):
        run_inspect([_item(answer=None)], np.zeros((1, 2)), np.zeros(1, dtype=int), "m", tmp_path)
