"""A backend that answers from a lookup table (no model at all): fast, exact, and proof that run() and the
scorers need nothing but the Backend protocol. Shared by the backend-seam, recipe and fault tests; the Ray pool
tests (tests/run/pool/) load it on a cluster's workers, where `delay` makes each call latency-bound, `KilledOnce`
SIGKILLs the worker process holding it, once per marker file, `Gated` holds a run back until the test has done
(and seen) what it does mid-run (a file the test creates is the handshake, so no fault lands after the run ended),
and `Together` shows workers computing at once."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np

from mcqa_toolkit.backends import Capabilities, ContinuationLogprobs, Generation, LetterLogprobs


class LookupBackend:
    """Scores from a table: item_id -> log-prob of each ORIGINAL option. Letters are scored in shown order,
    option texts by their table value, and generation answers "Resposta: <letter of the best option>"."""

    def __init__(self, table: dict[str, list[float]], capabilities: Capabilities | None = None, delay: float = 0.0):
        self.name = "lookup"
        self.table = table
        self.capabilities = capabilities or Capabilities(next_token_logprobs=True, continuation_logprobs=True,
                                                         generate=True)
        self.calls = 0
        self.delay = delay  # seconds each call takes (a latency-bound backend)

    def _called(self):
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)

    def provenance(self):
        return {"backend": "lookup", "source": "table"}

    def usage(self):
        return {"forwarded_tokens": 10 * self.calls}

    def letter_logprobs(self, prompts):
        self._called()
        return [LetterLogprobs(np.array([self.table[p.item_id][o] for o in p.permutation]), 7) for p in prompts]

    def loglikelihoods(self, requests):
        self._called()
        out = []
        for r in requests:
            if isinstance(r.context, str):  # neutral context (pmi) or Min-K%: a flat prior
                out.append(ContinuationLogprobs(np.array([-1.0]), r.continuation, 1))
                continue
            k = r.context.continuations.index(r.continuation)
            value = self.table[r.context.item_id][r.context.permutation[k]]
            out.append(ContinuationLogprobs(np.array([value, 0.0]), r.continuation, 5))
        return out

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, stop=(), seeds=None):
        self._called()
        out = []
        for p in prompts:
            best = int(np.argmax([self.table[p.item_id][o] for o in p.permutation]))
            out.append(Generation(f"Resposta: {p.letters[best]}", 7, 3, "stop"))
        return out


GATE_SECONDS = 300  # how long a held-back call waits for its gate at most: only bounds a hang


def wait_for_gate(gate: Path, seconds: float = GATE_SECONDS) -> None:
    """Return once the file `gate` exists; TimeoutError (the run fails, naming it) if it has not after `seconds`."""
    deadline = time.monotonic() + seconds
    while not gate.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the test did not open {gate} within {seconds} s")
        time.sleep(0.02)


class Gated(LookupBackend):
    """A LookupBackend whose calls after its `after`-th wait until the file `gate` exists."""

    def __init__(self, table, gate: str, after: int, delay: float = 0.0):
        super().__init__(table, delay=delay)
        self.gate, self.after = Path(gate), after

    def _called(self):
        super()._called()
        if self.calls > self.after:
            wait_for_gate(self.gate)


class Together(LookupBackend):
    """A LookupBackend whose first call in each process waits until `n` processes are inside their first call
    (each leaves a file in the folder `meeting`): n workers computing at once, or a TimeoutError."""

    def __init__(self, table, meeting: str, n: int):
        super().__init__(table)
        self.meeting, self.n = Path(meeting), n

    def _called(self):
        super()._called()
        if self.calls == 1:
            (self.meeting / str(os.getpid())).touch()
            deadline = time.monotonic() + GATE_SECONDS
            while (inside := len(list(self.meeting.iterdir()))) < self.n:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{inside} of {self.n} workers computed at once within {GATE_SECONDS} s")
                time.sleep(0.02)


class KilledOnce(LookupBackend):
    """A LookupBackend whose process is SIGKILLed at its `at`-th call, once: the first process to get there
    creates `marker` and dies; later ones (a restarted worker) carry on, after the file `gate` exists when one
    is given (every call once the marker exists waits for it)."""

    def __init__(self, table, marker: str, at: int, delay: float = 0.0, gate: str | None = None):
        super().__init__(table, delay=delay)
        self.marker, self.at = Path(marker), at
        self.gate = Path(gate) if gate else None

    def _called(self):
        super()._called()
        if self.calls == self.at:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                fd = None
            if fd is not None:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
        if self.gate is not None and self.marker.exists():
            wait_for_gate(self.gate)


def demo_table(language: str = "pt") -> dict[str, list[float]]:
    """A lookup table over the demo exam that prefers the option after the key (0.6 against 0.4 shared): a
    deterministic, imperfect model."""
    import math

    from mcqa_toolkit.datasets import load

    return {it.item_id: [math.log(0.6 if o == (it.answer + 1) % it.n_options else 0.4 / (it.n_options - 1))
                         for o in range(it.n_options)] for it in load("demo", language=language)}


def lookup_cache(table: dict[str, list[float]], capabilities: Capabilities | None = None):
    """A BackendCache whose model "lookup" is a LookupBackend over `table`."""
    from mcqa_toolkit.run.recipe import BackendCache

    cache = BackendCache()
    cache.put("lookup", LookupBackend(table, capabilities))
    return cache


def lookup_job(tmp_path, strategy="enem_1shot", **kw):
    """A Job of the "lookup" model on the Portuguese demo exam (2 shuffles, 4 items) in tmp_path / "run"."""
    from mcqa_toolkit.run.jobs import Job

    return Job("lookup", "demo", {}, "pt", strategy, tmp_path / "run", **{"shuffles": 2, "limit": 4, **kw})


def seeded_table(items, seed: int = 0) -> dict[str, list[float]]:
    """item_id -> log-probabilities of its ORIGINAL options from a seeded Dirichlet draw: an imperfect model
    without ties, for any item set (the new exams' run tests)."""
    rng = np.random.default_rng(seed)
    return {it.item_id: [float(x) for x in np.log(rng.dirichlet(np.ones(it.n_options)))] for it in items}
