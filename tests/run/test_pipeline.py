"""run.pipeline.ahead: blocks are worked in order by the caller, the next block's preparation runs meanwhile in a
background thread (every block but the first is prepared before its work starts), and a failed preparation is
not raised out of order (the block's own work meets the error in its place)."""
import threading

import pytest

from mcqa_toolkit.run.pipeline import ahead


def test_the_next_block_is_prepared_while_this_one_is_worked():
    log, lock = [], threading.Lock()
    started = {}

    def prepare(b):
        started[b] = threading.current_thread().name
        with lock:
            log.append(("prepare", b))

    def work(b):
        with lock:
            log.append(("work", b))
        return b * 10

    assert list(ahead(work, prepare, [1, 2, 3])) == [10, 20, 30]
    assert sorted(started) == [2, 3] and all(name.startswith("mcqa-prepare") for name in started.values())
    for b in (2, 3):  # prepared before its own work began
        assert log.index(("prepare", b)) < log.index(("work", b))
    assert list(ahead(work, prepare, [])) == []


def test_a_failed_preparation_is_met_by_the_block_itself():
    def prepare(b):
        raise ValueError(f"bad block {b}")

    def work(b):
        if b == 3:
            raise ValueError(f"bad block {b}")
        return b

    out = ahead(work, prepare, [1, 2, 3])
    assert next(out) == 1 and next(out) == 2
    with pytest.raises(ValueError, match="bad block 3"):
        next(out)
