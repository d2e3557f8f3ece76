"""The pool's scheduler: a run's blocks handed to workers as they free up, given back in block order, each once,
through lost workers.

Why not a static split or Ray's own retries: a static split (lm-evaluation-harness's `data_parallel_size`) waits
for its slowest replica and hangs on a lost one; Ray's task retries re-run a lost task on the same actor once it
has restarted, which never happens when its node is gone and nothing else can host it. Here:
- each ready worker holds at most `depth` blocks (one computing, the next already queued on it, so it never waits
  for this process), handed out in block order and at most `window` blocks ahead of the first block not given
  back yet, which bounds the results held for reordering;
- a block whose worker is lost (`failure(exc) == "lost"`: its process or node died; Ray restarts the actor) goes
  back to the front of the queue for whichever worker is ready; the lost worker gets blocks again once a probe
  (`probe(worker)`) answers, i.e. once Ray has restarted it; a worker Ray reports gone for good (`"dead"`) is
  dropped;
- when no new block can go out, an idle worker takes a backup copy of the oldest block still out elsewhere, so
  the end of a run never waits on one slow worker, or on a lost one whose loss Ray has not reported yet;
- a result is kept only for a block not given back yet: retries and copies never give a block twice (and the
  run folder's writer keeps only keys it lacks: exactly once holds twice over).
It stops with PoolError when every worker is dead, when one block has lost its worker `max_block_losses` times
(a block that kills whoever computes it), or when nothing has come back for `stall_seconds`. Generic over
concurrent.futures.Future: run.pool gives Ray's (`ObjectRef.future()`), the unit tests give threads'.
"""
from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["PoolError", "DispatchStats", "dispatch"]

PROBE_AGAIN_SECONDS = 0.5  # a lost worker that Ray is still restarting is probed again after this long


class PoolError(RuntimeError):
    """The pool cannot finish the run (one line saying why); the records written so far are kept."""


@dataclass
class DispatchStats:
    """What one dispatch did: blocks given back, submissions (first tries, retries and backup copies), retries
    of blocks whose worker was lost, backup copies, and worker losses (a worker may be lost more than once)."""

    blocks: int = 0
    sent: int = 0
    retried: int = 0
    copies: int = 0
    workers_lost: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


W = TypeVar("W", bound=Hashable)  # a worker's name


def dispatch(n_blocks: int, workers: Sequence[W], submit: Callable[[W, int], Future],
             probe: Callable[[W], Future], failure: Callable[[BaseException], str | None], *,
             probes: Mapping[W, Future] | None = None, depth: int = 2, window: int | None = None,
             stall_seconds: float = 1800.0, max_block_losses: int = 3,
             stats: DispatchStats | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (block index, result) for blocks 0..n_blocks-1, in order, each once (see the module docstring).

    `submit(worker, i)` starts block i on a worker; `probe(worker)` answers once the worker can take blocks;
    `failure(exc)` classifies an exception: "lost" (the worker may come back), "dead" (it will not), None (a
    real error, raised as it is). `probes`: workers not ready yet, with the future that says when they are."""
    stats = stats if stats is not None else DispatchStats()
    window = window or max(16, 4 * depth * len(workers))
    queue = list(range(n_blocks))  # a heap: retried blocks go back in front of later ones
    out: dict[Future, tuple[W, int]] = {}
    probing: dict[Future, W] = {f: w for w, f in (probes or {}).items()}
    ready = [w for w in workers if w not in (probes or {})]
    retry_at: dict[W, float] = {}
    dead: set[W] = set()
    load: Counter = Counter()
    copies_out: Counter = Counter()
    losses: Counter = Counter()
    results: dict[int, Any] = {}
    next_i, last_news, last_error = 0, time.monotonic(), ""

    def wanted(i: int) -> bool:
        return i >= next_i and i not in results

    def next_block(w: W) -> int | None:
        while queue and not wanted(queue[0]):
            heapq.heappop(queue)  # given back meanwhile (a copy or a retry finished first)
        if queue and queue[0] < next_i + window:
            return heapq.heappop(queue)
        if load[w]:
            return None
        others = [i for v, i in out.values() if v != w and copies_out[i] == 1 and wanted(i)]
        if others:
            stats.copies += 1
            return min(others)
        return None

    def feed() -> None:
        for w in list(ready):
            while load[w] < depth and (i := next_block(w)) is not None:
                out[submit(w, i)] = (w, i)
                load[w] += 1
                copies_out[i] += 1
                stats.sent += 1

    def lose(w: W, kind: str) -> None:
        if w in ready:
            ready.remove(w)
            stats.workers_lost += 1
        if kind == "dead":
            dead.add(w)
            retry_at.pop(w, None)
        elif w not in dead and w not in probing.values():
            retry_at.setdefault(w, time.monotonic())

    while next_i < n_blocks:
        now = time.monotonic()
        for w in [w for w, t in retry_at.items() if t <= now]:
            del retry_at[w]
            probing[probe(w)] = w
        feed()
        if not out and not probing and not retry_at:
            raise PoolError(f"every worker of the pool is dead ({len(dead)} of {len(workers)}); the last error: "
                            f"{last_error or 'none reported'}")
        timeout = max(0.0, stall_seconds - (now - last_news))
        if retry_at:
            timeout = min(timeout, max(0.0, min(retry_at.values()) - now))
        if out or probing:
            finished, _ = wait([*out, *probing], timeout=timeout, return_when=FIRST_COMPLETED)
        else:  # only workers waiting to be probed again
            time.sleep(timeout)
            finished = set()
        if not finished and time.monotonic() - last_news >= stall_seconds:
            raise PoolError(f"no worker has answered for {stall_seconds:.0f} s ({len(ready)} ready, "
                            f"{len(probing) + len(retry_at)} starting or restarting, {len(dead)} dead); "
                            f"the last error: {last_error or 'none reported'}")
        for f in finished:
            exc = f.exception()
            kind = None if exc is None else failure(exc)
            if exc is not None and kind is None:
                raise exc
            if exc is not None:
                last_error = " ".join(str(exc).split())[:300]
            if f in probing:
                w = probing.pop(f)
                if exc is None:
                    ready.append(w)
                    last_news = time.monotonic()
                elif kind == "dead":
                    dead.add(w)
                else:
                    retry_at[w] = time.monotonic() + PROBE_AGAIN_SECONDS
                continue
            w, i = out.pop(f)
            load[w] -= 1
            copies_out[i] -= 1
            if exc is None:
                last_news = time.monotonic()
                if wanted(i):
                    results[i] = f.result()
                continue
            assert kind is not None, "an error failure() does not classify was raised above"
            lose(w, kind)
            losses[i] += 1
            if losses[i] >= max_block_losses:
                raise PoolError(f"block {i} lost its worker {losses[i]} times (it may be what kills them); "
                                f"the last error: {last_error}")
            if wanted(i) and copies_out[i] == 0:
                heapq.heappush(queue, i)
                stats.retried += 1
        while next_i in results:
            stats.blocks += 1
            yield next_i, results.pop(next_i)
            next_i += 1
