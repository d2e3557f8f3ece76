"""Batch APIs: OpenAI Batch (JSONL of {custom_id, method, url, body}: upload, create, poll, download the output
and error files) and Anthropic Message Batches (create, poll until ended, stream results; they come back
unordered and are matched by custom_id). Gemini Batch Mode is backends.google_batch.

Every API object has the same four calls, which run.batch uses: `submit(requests, folder)` (split at the
provider's documented per-batch limits, backends.providers; each part's input kept in the run folder),
`poll(entry)` (status, `ended`, and the provider's `reason` when a batch failed, expired or was cancelled),
`results(entry)` ({custom_id: response} of the requests that succeeded, {custom_id: reason} of those that did
not) and `submitted(folder, entry)` ({custom_id: (endpoint, body)} as submitted). `custom_id` is the
request-cache key (backends.cache.request_key), so fetching a batch only fills the request cache: a later
ordinary run then finds every answer there and makes no request. `import_results` also reads the output file
of `vllm run-batch` (which accepts chat-completions lines only).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

from mcqa_toolkit.backends.cache import RequestCache
from mcqa_toolkit.backends.providers import ANTHROPIC, BatchLimits

__all__ = ["openai_batch_lines", "split_lines", "import_results", "OpenAIBatches", "AnthropicBatches"]

OPENAI_URLS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
OPENAI_ENDED = {"completed", "failed", "expired", "cancelled"}  # not: validating, in_progress, finalizing, cancelling
Results = tuple[dict[str, dict[str, Any]], dict[str, str]]


def openai_batch_lines(requests: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, list[str]]:
    """JSONL lines per endpoint URL (one OpenAI batch holds one endpoint)."""
    out: dict[str, list[str]] = {}
    for key, (endpoint, body) in sorted(requests.items()):
        url = OPENAI_URLS[endpoint]
        out.setdefault(url, []).append(json.dumps({"custom_id": key, "method": "POST", "url": url, "body": body},
                                                  ensure_ascii=False, sort_keys=True))
    return out


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


def _check_ids(keys: Iterable[str], limits: BatchLimits, api: str) -> None:
    bad = [k for k in keys if not re.fullmatch(limits.custom_id, k)]
    if bad:
        raise ValueError(f"{api}: custom_id {bad[0]!r} does not match {limits.custom_id}")


def _openai_failure(rec: dict[str, Any]) -> str:
    """The reason of one OpenAI batch output/error line that did not succeed."""
    error, response = rec.get("error"), rec.get("response") or {}
    if isinstance(error, dict):
        return f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip()
    body = response.get("body") if isinstance(response.get("body"), dict) else {}
    message = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else body.get("error")
    return f"HTTP {response.get('status_code')}: {message or error or 'no body'}"


def import_results(lines: Iterable[str], cache: RequestCache | None = None) -> tuple[int, list[dict[str, Any]]]:
    """Store OpenAI-format batch output lines (also vLLM run-batch's) in `cache`: (stored, failures)."""
    ok, failed = read_openai_lines(lines)
    for key, body in ok.items():
        if cache is not None:
            cache.put(key, body)
    return len(ok), [{"custom_id": k, "error": v} for k, v in failed.items()]


def read_openai_lines(lines: Iterable[str]) -> Results:
    """({custom_id: response body} of lines with status 200 and no error, {custom_id: reason} of the others)."""
    ok: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"batch output line {n} is not JSON: {e.msg}") from None
        response = rec.get("response") or {}
        if rec.get("error") is None and response.get("status_code") == 200 and isinstance(response.get("body"), dict):
            ok[rec["custom_id"]] = response["body"]
        else:
            failed[rec.get("custom_id")] = _openai_failure(rec)
    return ok, failed


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


class OpenAIBatches:
    """The OpenAI Batch API for one OpenAIBackend (its first base_url and API key), within its provider's limits."""

    api = "openai"

    def __init__(self, backend: Any):
        import openai

        from mcqa_toolkit.backends.secrets import with_credentials

        if backend.provider.batch is None:
            raise ValueError(f"backend {backend.name!r}: provider {backend.provider.name!r} has no batch API with "
                             "documented limits (vLLM: `vllm run-batch`, see docs/backends.md)")
        self.limits = backend.provider.batch
        key = os.environ.get(backend.api_key_env) if backend.api_key_env else None
        url = backend.base_urls[0]
        self.client = openai.OpenAI(base_url=with_credentials(url) if url else None, api_key=key or "EMPTY",
                                    max_retries=3)
        self.cache_key = backend.sender.key

    def submit(self, requests: dict[str, tuple[str, dict[str, Any]]], folder: Path) -> list[dict[str, Any]]:
        _check_ids(requests, self.limits, self.api)
        entries = []
        for url, lines in openai_batch_lines(requests).items():
            parts = split_lines(lines, self.limits)
            for n, part in enumerate(parts):
                data = ("\n".join(part) + "\n").encode("utf-8")
                name = f"batch_{url.strip('/').replace('/', '_')}" + (f"_{n + 1}" if len(parts) > 1 else "") + ".jsonl"
                (folder / name).write_bytes(data)  # kept beside the batch state: what was submitted
                uploaded = self.client.files.create(file=(name, data), purpose="batch")
                batch = self.client.batches.create(input_file_id=uploaded.id, endpoint=url, completion_window="24h")
                entries.append({"api": self.api, "id": batch.id, "endpoint": url, "input_file": name,
                                "n_requests": len(part), "status": batch.status})
        return entries

    def submitted(self, folder: Path, entry: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
        endpoints = {v: k for k, v in OPENAI_URLS.items()}
        return {r["custom_id"]: (endpoints[r["url"]], r["body"]) for r in _read_jsonl(folder / entry["input_file"])}

    def poll(self, entry: dict[str, Any]) -> dict[str, Any]:
        batch = self.client.batches.retrieve(entry["id"])
        counts = batch.request_counts.model_dump() if batch.request_counts is not None else {}
        reason = ""
        if batch.status == "failed":
            errors = batch.errors.data if batch.errors is not None and batch.errors.data else []
            reason = "; ".join(f"{'line ' + str(e.line) + ': ' if e.line else ''}{e.message or ''}"
                               f"{' (' + e.code + ')' if e.code else ''}" for e in errors) or "failed validation"
        elif batch.status == "expired":
            reason = "not finished within its 24h completion window"
        elif batch.status == "cancelled":
            reason = "cancelled"
        return {**entry, "status": batch.status, "ended": batch.status in OPENAI_ENDED, "reason": reason,
                "counts": counts, "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id}

    def results(self, entry: dict[str, Any]) -> Results:
        ok: dict[str, dict[str, Any]] = {}
        failed: dict[str, str] = {}
        for field in ("output_file_id", "error_file_id"):  # both may be null (a failed or an empty batch)
            if entry.get(field):
                good, bad = read_openai_lines(self.client.files.content(entry[field]).text.splitlines())
                ok.update(good)
                failed.update(bad)
        return ok, failed


class AnthropicBatches:
    """Anthropic Message Batches for one AnthropicBackend (at most 100,000 requests / 256 MB per batch)."""

    api = "anthropic"

    def __init__(self, backend: Any):
        import anthropic

        from mcqa_toolkit.backends.secrets import with_credentials

        self.limits = ANTHROPIC.batch
        url = with_credentials(backend.base_url) if backend.base_url else None
        self.client = anthropic.Anthropic(api_key=os.environ.get(backend.api_key_env), base_url=url, max_retries=3)
        self.cache_key = backend.sender.key

    def submit(self, requests: dict[str, tuple[str, dict[str, Any]]], folder: Path) -> list[dict[str, Any]]:
        _check_ids(requests, self.limits, self.api)
        lines = [json.dumps({"custom_id": key, "params": body}, ensure_ascii=False)
                 for key, (_, body) in sorted(requests.items())]
        parts = split_lines(lines, self.limits, overhead=len('{"requests":[]}'))
        entries = []
        for n, part in enumerate(parts):
            name = "batch_messages" + (f"_{n + 1}" if len(parts) > 1 else "") + ".jsonl"
            (folder / name).write_text("".join(x + "\n" for x in part), encoding="utf-8")
            batch = self.client.messages.batches.create(requests=[json.loads(x) for x in part])
            entries.append({"api": self.api, "id": batch.id, "input_file": name, "n_requests": len(part),
                            "status": batch.processing_status})
        return entries

    def submitted(self, folder: Path, entry: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
        return {r["custom_id"]: ("messages", r["params"]) for r in _read_jsonl(folder / entry["input_file"])}

    def poll(self, entry: dict[str, Any]) -> dict[str, Any]:
        batch = self.client.messages.batches.retrieve(entry["id"])
        counts = batch.request_counts.model_dump()
        ended = batch.processing_status == "ended"
        bad = {k: counts.get(k, 0) for k in ("errored", "canceled", "expired") if counts.get(k)}
        reason = ", ".join(f"{n} {k}" for k, n in bad.items()) if ended else ""
        return {**entry, "status": batch.processing_status, "ended": ended, "reason": reason, "counts": counts}

    def results(self, entry: dict[str, Any]) -> Results:
        ok: dict[str, dict[str, Any]] = {}
        failed: dict[str, str] = {}
        for res in self.client.messages.batches.results(entry["id"]):
            rec = res.model_dump(mode="json")
            result = rec["result"]
            if result["type"] == "succeeded":
                ok[rec["custom_id"]] = result["message"]
            else:  # errored | canceled | expired
                error = ((result.get("error") or {}).get("error") or {}) if result["type"] == "errored" else {}
                failed[rec["custom_id"]] = f"{result['type']}" + (f": {error.get('type')}: {error.get('message')}"
                                                                  if error else "")
        return ok, failed
