"""run.pool.scheduler without Ray: workers are single-thread executors (one block at a time, like an actor), their
losses are exceptions. Every block is given back once and in order, through lost, dead and slow workers; the
window bounds what runs ahead; a block that kills its workers, a pool with no worker left and a stall each stop
with one PoolError; a real error is raised as it is."""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from mcqa_toolkit.run.pool.scheduler import DispatchStats, PoolError, dispatch

HANG_LIMIT = 300  # seconds a worker held back by a test waits at most: only bounds a hang, never decides a result


class Lost(Exception):
    """A worker process or node died (Ray: ActorUnavailableError)."""


class Dead(Exception):
    """A worker that will not come back (Ray: ActorDiedError after its last restart)."""


def failure(exc: BaseException) -> str | None:
    return "lost" if isinstance(exc, Lost) else "dead" if isinstance(exc, Dead) else None


class Workers:
    """`n` workers; `fail(w, i)` may raise in worker w before it computes block i; `probe` answers at once unless
    the worker is `gone`."""

    def __init__(self, n: int, fail=lambda w, i: None, delay=lambda w, i: 0.0):
        self.pools = [ThreadPoolExecutor(1) for _ in range(n)]
        self.fail, self.delay = fail, delay
        self.gone: set[int] = set()
        self.sent: list[tuple[int, int]] = []
        self.futures: dict[tuple[int, int], Future] = {}  # (worker, block) -> its latest submission
        self.lock = threading.Lock()

    def compute(self, w: int, i: int) -> str:
        self.fail(w, i)
        time.sleep(self.delay(w, i))
        return f"block {i}"

    def submit(self, w: int, i: int) -> Future:
        with self.lock:
            self.sent.append((w, i))
            f = self.futures[(w, i)] = self.pools[w].submit(self.compute, w, i)
        return f

    def probe(self, w: int) -> Future:
        f: Future = Future()
        f.set_exception(Dead("gone")) if w in self.gone else f.set_result("ready")
        return f

    def run(self, n_blocks: int, **kw) -> list[tuple[int, str]]:
        try:
            return list(dispatch(n_blocks, range(len(self.pools)), self.submit, self.probe, failure, **kw))
        finally:
            for p in self.pools:
                p.shutdown(wait=True, cancel_futures=True)


def test_every_block_is_given_back_once_in_order_whatever_order_they_finish_in():
    ws = Workers(3, delay=lambda w, i: 0.001 * ((7 * i) % 5))
    stats = DispatchStats()
    got = ws.run(40, stats=stats)
    assert got == [(i, f"block {i}") for i in range(40)]
    assert stats.blocks == 40 and stats.retried == 0 and {w for w, _ in ws.sent} == {0, 1, 2}


def test_a_lost_worker_s_blocks_are_retried_elsewhere_and_it_rejoins_once_probed():
    lost_once = {"done": False}

    def fail(w, i):
        if w == 1 and i >= 6 and not lost_once["done"]:
            lost_once["done"] = True
            raise Lost("worker 1's process was killed")

    ws = Workers(2, fail=fail, delay=lambda w, i: 0.002)
    stats = DispatchStats()
    assert ws.run(30, stats=stats) == [(i, f"block {i}") for i in range(30)]
    assert stats.workers_lost == 1 and stats.retried >= 1
    lost_block = next(i for w, i in ws.sent if w == 1 and i >= 6)
    assert sum(i == lost_block for _, i in ws.sent) >= 2  # sent again
    assert any(w == 1 and i > lost_block + 2 for w, i in ws.sent)  # worker 1 back in the pool after its probe


def test_a_dead_worker_is_dropped_and_the_others_finish():
    ws = Workers(3)
    ws.gone.add(2)

    def fail(w, i):
        if w == 2:
            raise Lost("node lost")

    ws.fail = fail
    stats = DispatchStats()
    assert [i for i, _ in ws.run(12, stats=stats)] == list(range(12))
    assert stats.workers_lost == 1 and not any(w == 2 for w, i in ws.sent[6:])


def test_no_worker_left_is_one_pool_error():
    ws = Workers(2)
    ws.gone.update({0, 1})

    def fail(w, i):
        raise Lost("connection reset")

    ws.fail = fail
    with pytest.raises(PoolError, match=r"every worker of the pool is dead \(2 of 2\).*connection reset"):
        ws.run(5)


def test_a_block_that_kills_every_worker_stops_the_run_naming_it():
    def fail(w, i):
        if i == 3:
            raise Lost("out of memory")

    with pytest.raises(PoolError, match=r"block 3 lost its worker 3 times .*out of memory"):
        Workers(2, fail=fail).run(6, max_block_losses=3)


def test_a_real_error_is_raised_as_it_is():
    def fail(w, i):
        if i == 2:
            raise ValueError("bad item")

    with pytest.raises(ValueError, match="bad item"):
        Workers(2, fail=fail).run(5)


def test_nothing_answering_is_a_stall():
    """The worker hangs until the test releases it: the stall is reported while its block is still out."""
    hung = threading.Event()
    ws = Workers(1, delay=lambda w, i: 0.0)
    ws.fail = lambda w, i: hung.wait(HANG_LIMIT)
    try:
        with pytest.raises(PoolError, match=r"no worker has answered for 0 s \(1 ready"):
            list(dispatch(3, [0], ws.submit, ws.probe, failure, stall_seconds=0.3))
        assert not ws.futures[(0, 0)].done()  # given up on while the worker still hung, not after it answered
    finally:
        hung.set()
        ws.pools[0].shutdown(wait=True, cancel_futures=True)


def test_an_idle_worker_copies_the_oldest_block_out_and_it_is_given_back_once():
    slow = threading.Event()

    def delay(w, i):
        if w == 0 and i == 0:
            slow.wait(HANG_LIMIT)  # worker 0 hangs on block 0 until released (a lost node Ray has not reported)
        return 0.0

    ws = Workers(2, delay=delay)
    stats = DispatchStats()
    try:
        got = list(dispatch(8, [0, 1], ws.submit, ws.probe, failure, stats=stats))
        assert [i for i, _ in got] == list(range(8))
        assert not ws.futures[(0, 0)].done()  # every block given back while worker 0 still hung on block 0
        assert (1, 0) in ws.sent and stats.copies >= 1
    finally:
        slow.set()
        for p in ws.pools:
            p.shutdown(wait=True, cancel_futures=True)


def test_blocks_go_out_at_most_a_window_ahead_of_the_first_not_given_back():
    release = threading.Event()

    def delay(w, i):
        if i == 0 and w == 0:
            release.wait(HANG_LIMIT)  # block 0 holds everything back until the window is full
        return 0.0

    ws, given, window = Workers(3, delay=delay), [], 5

    def submit(w, i):
        assert i < len(given) + window, (i, len(given))
        if len(ws.sent) >= window:
            release.set()
        return ws.submit(w, i)

    for i, _ in dispatch(20, [0, 1, 2], submit, ws.probe, failure, window=window, depth=2):
        given.append(i)
    assert given == list(range(20))
    for p in ws.pools:
        p.shutdown(wait=True, cancel_futures=True)


def test_workers_not_ready_yet_join_when_their_probe_answers():
    """Worker 1's probe answers while worker 0 computes block 3, which then waits until worker 1 was given a
    block: worker 1 joins after its probe, and only then."""
    pending: Future = Future()
    joined = threading.Event()

    def delay(w, i):
        if w == 0 and i == 3:
            pending.set_result("loaded")
            assert joined.wait(HANG_LIMIT), "worker 1 was given nothing after its probe answered"
        return 0.0

    ws = Workers(2, delay=delay)

    def submit(w, i):
        if w == 1:
            joined.set()
        return ws.submit(w, i)

    try:
        got = list(dispatch(20, [0, 1], submit, ws.probe, failure, probes={1: pending}))
        assert [i for i, _ in got] == list(range(20))
        first_for_1 = next(n for n, (w, _) in enumerate(ws.sent) if w == 1)
        assert first_for_1 >= 4 and {i for w, i in ws.sent[:first_for_1]} >= {0, 1, 2, 3}  # none before its probe
    finally:
        joined.set()
        for p in ws.pools:
            p.shutdown(wait=True, cancel_futures=True)
