"""Batch APIs: OpenAI Batch (JSONL of {custom_id, method, url, body}: upload, create, poll, download output and
error files) and Anthropic Message Batches (create, poll until ended, stream results; they come back
unordered and are matched by custom_id).

`custom_id` is the request-cache key (backends.cache.request_key), so fetching a batch only fills the request
cache: a later ordinary run then finds every answer there and produces records exactly as an online run
would, making no request. Fetching twice is harmless. Failed, errored and expired requests are returned so
they can be listed and resubmitted (a new submission collects only what the cache still lacks).
`import_results` also reads the output file of `vllm run-batch` (which accepts chat-completions lines only).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from mcqa_toolkit.backends.cache import RequestCache

__all__ = ["openai_batch_lines", "import_results", "OpenAIBatches", "AnthropicBatches"]

OPENAI_URLS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
ENDED = {"completed", "failed", "expired", "cancelled", "ended"}


def openai_batch_lines(requests: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, list[str]]:
    """JSONL lines per endpoint URL (one OpenAI batch holds one endpoint)."""
    out: dict[str, list[str]] = {}
    for key, (endpoint, body) in sorted(requests.items()):
        url = OPENAI_URLS[endpoint]
        out.setdefault(url, []).append(json.dumps({"custom_id": key, "method": "POST", "url": url, "body": body},
                                                  ensure_ascii=False, sort_keys=True))
    return out


def import_results(lines: Iterable[str], cache: RequestCache) -> tuple[int, list[dict[str, Any]]]:
    """Store OpenAI-format batch output lines (also vLLM run-batch's) in the cache: (stored, failures)."""
    stored, failed = 0, []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"batch output line {n} is not JSON: {e.msg}") from None
        response, error = rec.get("response") or {}, rec.get("error")
        if error is None and response.get("status_code") == 200 and isinstance(response.get("body"), dict):
            cache.put(rec["custom_id"], response["body"])
            stored += 1
        else:
            failed.append({"custom_id": rec.get("custom_id"), "error": error or response.get("body")})
    return stored, failed


class OpenAIBatches:
    """The OpenAI Batch API for one OpenAIBackend (its first base_url and API key)."""

    api = "openai"

    def __init__(self, backend: Any):
        import openai

        key = os.environ.get(backend.api_key_env) if backend.api_key_env else None
        self.client = openai.OpenAI(base_url=backend.base_urls[0], api_key=key or "EMPTY", max_retries=3)
        self.cache = backend.request_cache

    def submit(self, requests: dict[str, tuple[str, dict[str, Any]]], folder: Path) -> list[dict[str, Any]]:
        entries = []
        for url, lines in openai_batch_lines(requests).items():
            data = ("\n".join(lines) + "\n").encode("utf-8")
            name = f"batch_{url.strip('/').replace('/', '_')}.jsonl"
            (folder / name).write_bytes(data)  # kept beside the batch state: what was submitted
            uploaded = self.client.files.create(file=(name, data), purpose="batch")
            batch = self.client.batches.create(input_file_id=uploaded.id, endpoint=url, completion_window="24h")
            entries.append({"api": self.api, "id": batch.id, "endpoint": url, "input_file": name,
                            "n_requests": len(lines), "status": batch.status})
        return entries

    def poll(self, entry: dict[str, Any]) -> dict[str, Any]:
        batch = self.client.batches.retrieve(entry["id"])
        counts = batch.request_counts.model_dump() if batch.request_counts is not None else {}
        return {**entry, "status": batch.status, "counts": counts, "output_file_id": batch.output_file_id,
                "error_file_id": batch.error_file_id}

    def fetch(self, entry: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        """Store the results of an ended batch; (stored, failures incl. the error file's and expired ones)."""
        stored, failed = 0, []
        for field in ("output_file_id", "error_file_id"):
            if entry.get(field):
                text = self.client.files.content(entry[field]).text
                n, bad = import_results(text.splitlines(), self.cache)
                stored, failed = stored + n, failed + bad
        return stored, failed


class AnthropicBatches:
    """Anthropic Message Batches for one AnthropicBackend."""

    api = "anthropic"

    def __init__(self, backend: Any):
        import anthropic

        self.client = anthropic.Anthropic(api_key=os.environ.get(backend.api_key_env), base_url=backend.base_url,
                                          max_retries=3)
        self.cache = backend.request_cache

    def submit(self, requests: dict[str, tuple[str, dict[str, Any]]], folder: Path) -> list[dict[str, Any]]:
        items = [{"custom_id": key, "params": body} for key, (_, body) in sorted(requests.items())]
        (folder / "batch_messages.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items))
        batch = self.client.messages.batches.create(requests=items)
        return [{"api": self.api, "id": batch.id, "input_file": "batch_messages.jsonl", "n_requests": len(items),
                 "status": batch.processing_status}]

    def poll(self, entry: dict[str, Any]) -> dict[str, Any]:
        batch = self.client.messages.batches.retrieve(entry["id"])
        return {**entry, "status": batch.processing_status, "counts": batch.request_counts.model_dump()}

    def fetch(self, entry: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        stored, failed = 0, []
        for res in self.client.messages.batches.results(entry["id"]):
            rec = res.model_dump(mode="json")
            result = rec["result"]
            if result["type"] == "succeeded":
                self.cache.put(rec["custom_id"], result["message"])
                stored += 1
            else:  # errored | canceled | expired
                failed.append({"custom_id": rec["custom_id"], "error": result.get("error") or result["type"]})
        return stored, failed
