"""BatchClient: the one interface of every provider's batch client, and what they all do the same way.

run.batch (the `--batch-submit` / `--batch-fetch` mode) uses only this interface:

- `submit(requests, folder)`: {custom_id: (endpoint, body)} -> one entry (a JSON-able dict: api, id,
  input_file, n_requests, status, ...) per batch made. The requests are checked (custom_ids against the
  provider's pattern), written as JSONL lines (`line`), split at the provider's documented per-batch limits
  (backends.providers.BatchLimits), each part kept in the run folder (what was submitted) and handed to
  the provider (`create`);
- `poll(entry)`: the entry updated: `status`, `ended`, and the provider's `reason` when a batch failed,
  expired or was cancelled;
- `results(entry)`: ({custom_id: response} of the requests that succeeded, {custom_id: reason} of the others);
- `submitted(folder, entry)`: {custom_id: (endpoint, body)} as submitted, read back from the part's file
  (`request_of` is the inverse of `line`);
- `cache_key(endpoint, body)`: the backend's request-cache key (backends.cache.request_key), which is also the
  custom_id, so fetching a batch only fills the request cache.

A provider's client declares `api` (the name in the batch state), `stem` (the part files' name) and the margins
its wire adds, and writes `line`, `request_of`, `create`, `poll` and `results`.
"""
from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from mcqa_toolkit.backends.providers import BatchLimits

__all__ = ["BatchClient", "Requests", "Results", "split_lines", "read_jsonl", "write_jsonl"]

Requests = dict[str, tuple[str, dict[str, Any]]]  # custom_id (= request-cache key) -> (endpoint, body)
Results = tuple[dict[str, dict[str, Any]], dict[str, str]]  # (succeeded: custom_id -> response, failed: -> reason)


def split_lines(lines: list[str], limits: BatchLimits, overhead: int = 0, per_line: int = 0) -> list[list[str]]:
    """Consecutive parts of `lines` (JSONL, one request each) within `limits`: at most max_requests lines and
    max_bytes bytes (UTF-8, newlines, a per-part `overhead` and a `per_line` margin for what the wire adds
    counted). A single line over the byte limit is an error: no batch could carry it."""
    parts: list[list[str]] = [[]]
    size = overhead
    for line in lines:
        n = len(line.encode("utf-8")) + 1 + per_line
        if n + overhead > limits.max_bytes:
            raise ValueError(f"one batch request is {n} bytes, over the provider's {limits.max_bytes}-byte batch limit")
        full = limits.max_requests is not None and len(parts[-1]) >= limits.max_requests
        if parts[-1] and (full or size + n > limits.max_bytes):
            parts.append([])
            size = overhead
        parts[-1].append(line)
        size += n
    return [p for p in parts if p]


def write_jsonl(path: Path, lines: list[str]) -> bytes:
    """Write JSONL lines (one request each, newline-terminated) and return the bytes written."""
    data = "".join(x + "\n" for x in lines).encode("utf-8")
    path.write_bytes(data)
    return data


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


class BatchClient(ABC):
    """A provider's batch API (or `vllm run-batch` files) for one backend: submit, poll, results, submitted."""

    api: ClassVar[str]  # recorded in every entry of the batch state
    stem: ClassVar[str]  # part files are <stem>.jsonl, or <stem>_<n>.jsonl when split
    overhead: ClassVar[int] = 0  # bytes the wire adds per batch (split_lines)
    per_line: ClassVar[int] = 0  # bytes the wire adds per request (split_lines)
    limits: BatchLimits | None  # None: no documented limit, one part

    def __init__(self, backend: Any):
        self.cache_key: Callable[[str, dict[str, Any]], str] = backend.sender.key

    @abstractmethod
    def line(self, key: str, endpoint: str, body: dict[str, Any]) -> str:
        """One request as the JSONL line kept in the run folder (and, where the provider reads files, sent)."""

    @abstractmethod
    def request_of(self, row: dict[str, Any]) -> tuple[str, tuple[str, dict[str, Any]]]:
        """(custom_id, (endpoint, body)) of one line read back: the inverse of `line`."""

    @abstractmethod
    def create(self, name: str, lines: list[str], data: bytes, folder: Path) -> dict[str, Any]:
        """Hand one part (its file `name` in `folder`, its lines and bytes) to the provider: its entry."""

    @abstractmethod
    def poll(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The entry with the batch's `status`, `ended` and the provider's `reason` for a batch that failed."""

    @abstractmethod
    def results(self, entry: dict[str, Any]) -> Results:
        """An ended batch's answers: ({custom_id: response}, {custom_id: reason} of the requests that failed)."""

    def check(self, requests: Requests) -> None:
        """Refuse requests the provider would refuse at creation: custom_ids outside its documented pattern."""
        pattern = self.limits.custom_id if self.limits is not None else None
        bad = [k for k in requests if pattern is not None and not re.fullmatch(pattern, k)]
        if bad:
            raise ValueError(f"{self.api}: custom_id {bad[0]!r} does not match {pattern}")

    def groups(self, requests: Requests) -> dict[str, list[str]]:
        """{file stem: lines} of the batches to make; one provider batch never mixes two groups."""
        return {self.stem: [self.line(k, e, b) for k, (e, b) in sorted(requests.items())]}

    def submit(self, requests: Requests, folder: Path) -> list[dict[str, Any]]:
        self.check(requests)
        entries = []
        for stem, lines in self.groups(requests).items():
            parts = split_lines(lines, self.limits, self.overhead, self.per_line) if self.limits else [lines]
            for n, part in enumerate(parts):
                name = stem + (f"_{n + 1}" if len(parts) > 1 else "") + ".jsonl"
                data = write_jsonl(folder / name, part)  # kept beside the batch state: what was submitted
                entries.append(self.create(name, part, data, folder))
        return entries

    def submitted(self, folder: Path, entry: dict[str, Any]) -> Requests:
        return dict(self.request_of(row) for row in read_jsonl(folder / entry["input_file"]))

