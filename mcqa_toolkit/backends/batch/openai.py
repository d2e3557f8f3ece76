"""The OpenAI Batch API (OpenAI, and servers that offer it): JSONL of {custom_id, method, url, body}, uploaded as
a file with purpose "batch", one batch per endpoint URL; poll until completed, failed, expired or cancelled; the
answers come in an output file and the failures in an error file, both in the OpenAI batch output format,
which `vllm run-batch` writes too (`read_openai_lines`, `import_results`; backends.batch.vllm).
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcqa_toolkit.backends.batch.base import BatchClient, Requests, Results
from mcqa_toolkit.backends.cache import RequestCache

__all__ = ["OpenAIFormat", "OpenAIBatches", "read_openai_lines", "import_results", "URLS"]

URLS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
ENDED = {"completed", "failed", "expired", "cancelled"}  # not: validating, in_progress, finalizing, cancelling


def _failure(rec: dict[str, Any]) -> str:
    """The reason of one OpenAI batch output/error line that did not succeed."""
    response: dict[str, Any]
    error, response = rec.get("error"), rec.get("response") or {}
    if isinstance(error, dict):
        return f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip()
    body: dict[str, Any] = response["body"] if isinstance(response.get("body"), dict) else {}
    message = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else body.get("error")
    return f"HTTP {response.get('status_code')}: {message or error or 'no body'}"


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
            failed[rec.get("custom_id")] = _failure(rec)
    return ok, failed


def import_results(lines: Iterable[str], cache: RequestCache | None = None) -> tuple[int, list[dict[str, Any]]]:
    """Store OpenAI-format batch output lines (also vLLM run-batch's) in `cache`: (stored, failures)."""
    ok, failed = read_openai_lines(lines)
    for key, body in ok.items():
        if cache is not None:
            cache.put(key, body)
    return len(ok), [{"custom_id": k, "error": v} for k, v in failed.items()]


class OpenAIFormat(BatchClient):
    """The OpenAI batch input line {custom_id, method, url, body}, one endpoint URL per file."""

    def line(self, key: str, endpoint: str, body: dict[str, Any]) -> str:
        return json.dumps({"custom_id": key, "method": "POST", "url": URLS[endpoint], "body": body},
                          ensure_ascii=False, sort_keys=True)

    def request_of(self, row: dict[str, Any]) -> tuple[str, tuple[str, dict[str, Any]]]:
        endpoints = {v: k for k, v in URLS.items()}
        return row["custom_id"], (endpoints[row["url"]], row["body"])


class OpenAIBatches(OpenAIFormat):
    """The OpenAI Batch API for one OpenAIBackend (its first base_url and API key), within its provider's limits."""

    api = "openai"
    stem = "batch"

    def __init__(self, backend: Any):
        import openai

        from mcqa_toolkit.backends.secrets import with_credentials

        if backend.provider.batch is None:
            raise ValueError(f"backend {backend.name!r}: provider {backend.provider.name!r} has no batch API with "
                             "documented limits (vLLM: `vllm run-batch`, see docs/backends.md)")
        super().__init__(backend)
        self.limits = backend.provider.batch
        key = os.environ.get(backend.api_key_env) if backend.api_key_env else None
        url = backend.base_urls[0]
        self.client = openai.OpenAI(base_url=with_credentials(url) if url else None, api_key=key or "EMPTY",
                                    max_retries=3)

    def groups(self, requests: Requests) -> dict[str, list[str]]:
        """One group per endpoint URL (an OpenAI batch holds one endpoint): batch_v1_chat_completions, ..."""
        out: dict[str, list[str]] = {}
        for key, (endpoint, body) in sorted(requests.items()):
            stem = f"{self.stem}_{URLS[endpoint].strip('/').replace('/', '_')}"
            out.setdefault(stem, []).append(self.line(key, endpoint, body))
        return out

    def create(self, name: str, lines: list[str], data: bytes, folder: Path) -> dict[str, Any]:
        url = json.loads(lines[0])["url"]  # every line of a group has its endpoint
        uploaded = self.client.files.create(file=(name, data), purpose="batch")
        batch = self.client.batches.create(input_file_id=uploaded.id, endpoint=url, completion_window="24h")
        return {"api": self.api, "id": batch.id, "endpoint": url, "input_file": name, "n_requests": len(lines),
                "status": batch.status}

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
        return {**entry, "status": batch.status, "ended": batch.status in ENDED, "reason": reason,
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
