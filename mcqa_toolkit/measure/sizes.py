"""Requested sizes against what the runs hold.

An analysis asks for sizes (k anchor items, persons for a simulation, the length of a CAT); the runs it is given may
hold fewer (the demo's 12 questions a language, a 1-question smoke run). A size the runs cannot give is left out
with one line saying so, and the analysis goes on with the others: never an error.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Sizes:
    """The requested sizes that fit (`kept`, in the order asked) and those left out, with the line to print."""

    kept: tuple[int, ...]
    left_out: tuple[int, ...]
    note: str        # "" when nothing was left out

    def __bool__(self) -> bool:
        return bool(self.kept)


def within(requested: Iterable[int], available: int, what: str, unit: str = "items", minimum: int = 1) -> Sizes:
    """The sizes of `requested` in [minimum, available]; `what` names them in the note ("anchor sizes k"), `unit`
    what `available` counts ("items with IRT parameters")."""
    asked = [int(k) for k in requested]
    kept = tuple(k for k in asked if minimum <= k <= available)
    out = tuple(k for k in asked if k not in kept)
    if not out:
        return Sizes(kept, out, "")
    values = ", ".join(map(str, out))
    why = f"the runs hold {available} {unit}" + (f" (at least {minimum} needed)" if any(k < minimum for k in out)
                                                  else "")
    rest = f"; kept {', '.join(map(str, kept))}" if kept else "; none is left, so this part is skipped"
    return Sizes(kept, out, f"{what} {values} left out: {why}{rest}")
