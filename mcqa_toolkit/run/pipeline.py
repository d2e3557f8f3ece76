"""Blocks of a run in a pipeline: the next block's preparation (a PreparingBackend's `prepare`: rendering and
tokenisation) runs in a background thread while this block is scored, so a device that waits for its host
(a GPU) gets its next calls sooner. The blocks are still scored one at a time and in order, by the calling
thread, so records are those of the plain loop; only where the host work happens changes.

A preparation is a cache warm-up: if it fails, the block's own call repeats the work and raises the error in its
place in the run (the background failure is not raised out of order).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

Block = TypeVar("Block")


def _quietly(prepare: Callable[[Any], None], block: Any) -> BaseException | None:
    try:
        prepare(block)
    except Exception as e:  # noqa: BLE001 - the block's own call raises it in order (module docstring)
        return e
    return None


def ahead(work: Callable[[Block], Any], prepare: Callable[[Block], None], blocks: Sequence[Block]) -> Iterator[Any]:
    """work(block) for every block, in order, each yielded as it is done; prepare(next block) runs in one
    background thread meanwhile (waited for before the next block's work starts; the first block is not
    prepared apart: nothing runs before it)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcqa-prepare") as pool:
        pending: Future | None = None
        for i, block in enumerate(blocks):
            if pending is not None:
                pending.result()
            pending = pool.submit(_quietly, prepare, blocks[i + 1]) if i + 1 < len(blocks) else None
            yield work(block)
