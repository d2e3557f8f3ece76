"""scoring.methods: the one table of methods, read by every reader of a method (strategies, the grid's cost
estimate, the capability checks of a backend)."""
from __future__ import annotations

from pathlib import Path

import pytest

from mcqa_toolkit.run import grid
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.strategy import STRATEGIES, Strategy
from mcqa_toolkit.scoring.methods import METHODS, MIN_K_COST, check_method, record_cost


def test_every_reader_of_a_method_reads_the_table(tiny_backend):
    assert set(METHODS) == {"first_token", "loglik", "cloze", "generate", "cot"}
    assert {s.method for s in STRATEGIES.values()} <= set(METHODS)
    with pytest.raises(ValueError, match="not in"):
        Strategy(method="telepathy")
    with pytest.raises(ValueError, match="normalization applies to loglik/cloze"):
        Strategy(method="first_token", normalization="token")
    job = Job("m", "demo", {}, "pt", {"base": "S1", "max_new_tokens": 10}, Path("x"), shuffles=3)
    assert grid.estimated_cost(job) == 3 * record_cost("generate", 10) + MIN_K_COST
    assert record_cost("generate", 10) == METHODS["generate"].cost * 10
    assert record_cost("cloze", 10) == METHODS["cloze"].cost
    for name in METHODS:
        check_method(tiny_backend, name)  # the local model can do all of them
