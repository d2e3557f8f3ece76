"""Splitting an echoed prompt's log-probs into context and continuation, for every server's idea of `text_offset`.

An echo (`/v1/completions` with `echo=True, logprobs=1`) returns one entry per prompt token (`tokens`,
`token_logprobs`, `text_offset`), then the generated token. Servers disagree on what an offset is:

- characters of the prompt (OpenAI; llama-cpp-python, which drops the BOS token and counts the characters of
  the re-decoded prefix);
- UTF-8 bytes of the prompt (some llama.cpp builds);
- a running sum of the lengths of the decoded token strings, starting with the BOS token's text (vLLM: the
  first token is "<bos>" with no log-prob, so the prompt's first character sits at offset 5 for Gemma,
  3 for "<s>", 17 for "<|begin_of_text|>"). A byte-fallback piece decodes to "" there.

So offsets are never trusted as they come: each reading (characters or bytes; the first token part of the
prompt or a leading special token outside it) is checked against the prompt itself. A reading holds when every
token whose text is whole (non-empty, no U+FFFD) is found at its offset, consecutive whole tokens tile the prompt,
the first prompt token starts it and the last one ends it. The split is made under every reading that holds; none
holding, or two giving different splits, is an error naming the token where it failed, never a silent
mis-split. A token starting in the context and ending in the continuation (a merge across the boundary) is the
continuation's; the generated token starts at the prompt's end and is left out; a first prompt token without a
log-prob (nothing before it) is skipped, as a local model without BOS does.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcqa_toolkit.backends.base import ContinuationLogprobs

__all__ = ["Reading", "align", "split_echo", "parse_echo"]

READINGS = (("characters", 0), ("UTF-8 bytes", 0), ("characters", 1), ("UTF-8 bytes", 1))


@dataclass(frozen=True)
class Reading:
    """Offsets read as `unit`, the first `lead` tokens outside the prompt; `starts[i]` is token i's start in
    prompt units (None for the lead tokens), `length` the prompt's length in those units."""

    unit: str
    lead: int
    starts: tuple[int | None, ...]
    length: int

    def describe(self) -> str:
        lead = " after a leading special token" if self.lead else ""
        return f"{self.unit}{lead}"


def _units(text: str, unit: str) -> str | bytes:
    return text if unit == "characters" else text.encode("utf-8")


def _whole(token: str) -> bool:
    return bool(token) and "\ufffd" not in token


def align(tokens: Sequence[str], offsets: Sequence[int], values: Sequence[float | None], prompt: str,
          unit: str, lead: int) -> Reading:
    """The reading (unit, lead) of an echo, or ValueError naming the first token that contradicts it."""
    if lead and (len(tokens) < 2 or values[0] is not None):
        raise ValueError("no leading token without a log-prob")
    text = _units(prompt, unit)
    shift = offsets[lead]
    starts: list[int | None] = [None] * lead
    last_whole_end = None
    for i in range(lead, len(tokens)):
        pos = offsets[i] - shift
        if pos < 0 or (starts and starts[-1] is not None and pos < starts[-1]):
            raise ValueError(f"offset {offsets[i]} of token {i} {tokens[i]!r} goes backwards")
        starts.append(pos)
        piece = _units(tokens[i], unit)
        if pos >= len(text) or not _whole(tokens[i]):
            continue
        if text[pos:pos + len(piece)] != piece:
            raise ValueError(f"token {i} {tokens[i]!r} at offset {offsets[i]} does not match the prompt there "
                             f"({text[pos:pos + len(piece)]!r})")
        nxt = offsets[i + 1] - shift if i + 1 < len(tokens) else None
        if nxt is not None and nxt < len(text) and nxt != pos + len(piece):
            raise ValueError(f"token {i} {tokens[i]!r} at offset {offsets[i]} is followed at offset "
                             f"{offsets[i + 1]}, not where it ends")
        last_whole_end = pos + len(piece)
    inside = [s for s in starts if s is not None and s < len(text)]
    if not inside or inside[0] != 0:
        raise ValueError("no token starts at the prompt's first character")
    if last_whole_end is None:
        raise ValueError("no whole token to check the offsets against")
    last = max(i for i, s in enumerate(starts) if s is not None and s < len(text))
    if _whole(tokens[last]) and last_whole_end != len(text):
        raise ValueError(f"the last prompt token {tokens[last]!r} ends at {last_whole_end}, not at the prompt's end "
                         f"({len(text)})")
    return Reading(unit, lead, tuple(starts), len(text))


def split_echo(reading: Reading, values: Sequence[float | None], context: str) -> tuple[tuple[int, ...], int]:
    """(indices of the continuation's tokens, number of context tokens) under `reading`; a leading special token
    (vLLM's echoed <bos>) is a context token, as the local backends count it."""
    start = len(_units(context, reading.unit))
    picked: list[int] = []
    n_context = reading.lead
    starts = reading.starts
    for i in range(reading.lead, len(starts)):
        pos = starts[i]
        assert pos is not None  # None only for the lead tokens (Reading.starts)
        if pos >= reading.length:
            break  # the generated token
        following = next((s for s in starts[i + 1:] if s is not None and s > pos), reading.length)
        if pos < start and following <= start:
            n_context += 1
            continue
        if values[i] is None:
            if picked or pos > start or i > reading.lead:
                raise ValueError(f"the echo has no log-prob for continuation token {i} at offset {pos}")
            continue
        picked.append(i)
    return tuple(picked), n_context


def parse_echo(response: dict[str, Any] | None, context: str, continuation: str) -> ContinuationLogprobs:
    """Per-token log-probs of `continuation` in an echo of context + continuation (see the module docstring).
    None (a request recorded for a batch, not sent) gives a placeholder."""
    if response is None:
        return ContinuationLogprobs(np.zeros(1), continuation, 0)
    choices = response.get("choices") or []
    lp = (choices[0].get("logprobs") if choices else None) or {}
    tokens, values, offsets = lp.get("tokens") or [], lp.get("token_logprobs") or [], lp.get("text_offset") or []
    if not values or not (len(tokens) == len(values) == len(offsets)):
        raise ValueError("echo response lacks tokens / token_logprobs / text_offset of equal length (server ignored "
                         "echo?)")
    prompt = context + continuation
    splits, errors = {}, []
    for unit, lead in READINGS:
        try:
            reading = align(tokens, offsets, values, prompt, unit, lead)
        except ValueError as e:
            errors.append(f"as {unit}{' after a leading special token' if lead else ''}: {e}")
            continue
        splits[reading.describe()] = split_echo(reading, values, context)
    if not splits:
        raise ValueError(f"the echoed tokens cannot be aligned with the prompt {prompt[:60]!r}: " + "; ".join(errors))
    if len(set(splits.values())) > 1:
        raise ValueError(f"the echo's offsets fit several readings that split {prompt[:60]!r} differently: {splits}")
    picked, n_context = next(iter(splits.values()))
    if not picked:
        raise ValueError(f"no continuation token found for {continuation[:40]!r} in the echo")
    out = [float(values[i]) for i in picked]
    if not all(math.isfinite(v) and v <= 0 for v in out):
        raise ValueError("echo log-probs must be finite and <= 0")
    return ContinuationLogprobs(np.array(out), continuation, n_context)
