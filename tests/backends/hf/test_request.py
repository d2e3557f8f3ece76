"""Requests and the engine's accounting (backends/hf/request.py)."""
import pytest

from mcqa_toolkit.backends.hf.packing import unique_tokens
from mcqa_toolkit.backends.hf.request import EngineStats, Request


def test_request_validation():
    with pytest.raises(ValueError):
        Request((1, 2, 3), 3)  # continuation request without continuation
    with pytest.raises(ValueError):
        Request((1, 2, 3), 2, (5, 6))  # candidates must score the next token
    assert unique_tokens([(1, 2, 3), (1, 2, 4), (1, 2, 3)]) == 4


def test_what_a_request_forwards_and_reads():
    letters, option = Request((1, 2, 3), 3, (7, 8)), Request((1, 2, 3, 4), 2)
    assert (letters.first_scored, letters.needed, letters.n_scored) == (2, 3, 1)
    assert (option.first_scored, option.needed, option.n_scored) == (1, 3, 2)
    assert set(EngineStats().as_dict()) >= {"forwarded", "unique", "calls", "items"}
