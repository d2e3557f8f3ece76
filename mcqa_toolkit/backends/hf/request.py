"""What the scoring engine is asked and what it counts: `Request` (one sequence to score) and `EngineStats`.

Kept apart from the engine (engine.py) so the modules that plan and run a block's forward calls (block.py,
heads.py, static.py) share these without importing the engine; engine.py re-exports both.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    """One sequence to score.

    `tokens[:n_context]` is the context. With `candidates` set (first-token scoring), `n_context` must equal
    len(tokens) and the result is the log-probability of each candidate id as the next token. Otherwise the
    result is the per-token log-probability of `tokens[n_context:]` (the continuation).
    """

    tokens: tuple[int, ...]
    n_context: int
    candidates: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.tokens or not 1 <= self.n_context <= len(self.tokens):
            raise ValueError(f"Request needs 1 <= n_context <= len(tokens); got {self.n_context}, {len(self.tokens)}")
        if self.candidates is not None and self.n_context != len(self.tokens):
            raise ValueError("a candidates Request scores the next token: n_context must equal len(tokens)")
        if self.candidates is None and self.n_context == len(self.tokens):
            raise ValueError("a continuation Request needs at least one continuation token")

    @property
    def first_scored(self) -> int:
        """Index of the first position whose output logits are needed."""
        return self.n_context - 1

    @property
    def needed(self) -> int:
        """Tokens that must be forwarded: up to the last scored position (a continuation's last token is only a
        target, never an input)."""
        return len(self.tokens) if self.candidates is not None else len(self.tokens) - 1

    @property
    def n_scored(self) -> int:
        """Positions whose logits the request reads: one for candidates, one per continuation token."""
        return 1 if self.candidates is not None else len(self.tokens) - self.n_context


@dataclass
class EngineStats:
    """Token accounting for benchmarks: what was forwarded vs the naive cost vs the unique-token floor."""

    forwarded: int = 0          # real (non-pad) tokens pushed through the model
    padded: int = 0             # pad tokens pushed through the model
    naive: int = 0              # sum of sequence lengths (cost without sharing)
    unique: int = 0             # distinct token-prefix nodes (cost floor with perfect sharing)
    scored_positions: int = 0
    calls: int = 0              # forward calls of the model body (each streams every weight once)
    items: int = 0              # items (groups of requests sharing an item prefix) scored
    seconds: float = 0.0
    body_seconds: float = 0.0   # inside forward calls of the model body (host time only on an asynchronous GPU)
    fused_calls: int = 0        # tree calls through the compiled layers (fused.py)
    compile_seconds: float = 0.0  # the compiler's own time inside them (tracing and inductor)

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)
