"""Gemini Batch Mode for one GoogleBackend, through google-genai's `batches` API.

Requests go inline (`src=[{contents, config, metadata: {key: custom_id}}]`), split so that each job's inline
requests stay under the documented 20 MB (measured as the SDK sends them); each part's requests are kept in the
run folder as JSONL lines {"key", "request"} (the documented file-input line). A job is pending or running until
its state is SUCCEEDED, FAILED, CANCELLED or EXPIRED (a job running over 48 hours expires without results);
results are mapped back by their `metadata.key`: a response is stored, an error is a failure with its message,
and a request without a result is a failure too (run.batch checks stored + failed == submitted).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mcqa_toolkit.backends.batch.base import BatchClient, Results
from mcqa_toolkit.backends.providers import GEMINI, GEMINI_URL
from mcqa_toolkit.backends.secrets import with_credentials

__all__ = ["GeminiBatches", "ENDED"]

ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"}
_WHY = {"JOB_STATE_CANCELLED": "cancelled", "JOB_STATE_EXPIRED": "expired: ran over 48 hours, no results"}
_VOLATILE = ("sdk_http_response", "automatic_function_calling_history")


def _state(job: Any) -> str:
    state = getattr(job.state, "value", job.state)
    return str(state)


class GeminiBatches(BatchClient):
    """Gemini Batch Mode (inline requests) for one GoogleBackend."""

    api = "gemini"
    stem = "batch_gemini"
    # sized as sent: the SDK escapes non-ASCII characters (\u00e7: 6 bytes, hence ensure_ascii in `line`) and wraps
    # each request in {"request": {..., "systemInstruction": {"parts": [...]}}, "metadata": {"key": ...}}
    overhead, per_line = 1024, 128

    def __init__(self, backend: Any):
        super().__init__(backend)
        self.limits = GEMINI.batch
        self.backend = backend
        self.client = backend.client()
        self.model = backend.model

    def _failure(self, name: str) -> str:
        """A failed job's reason: the Operation's `error`, which google-genai does not map for the Gemini API, read
        from the documented REST resource GET /{version}/batches/{id}."""
        import httpx

        b = self.backend
        url = f"{with_credentials(b.base_url or GEMINI_URL).rstrip('/')}/{b.api_version}/{name}"
        try:
            got = httpx.get(url, headers={"x-goog-api-key": os.environ.get(b.api_key_env, "")}, timeout=60)
            error = got.json().get("error") or {}
        except (httpx.HTTPError, ValueError):
            error = {}
        return error.get("message") or "failed (no reason given)"

    def line(self, key: str, endpoint: str, body: dict[str, Any]) -> str:
        return json.dumps({"key": key, "request": body}, ensure_ascii=True, sort_keys=True)

    def request_of(self, row: dict[str, Any]) -> tuple[str, tuple[str, dict[str, Any]]]:
        return row["key"], ("generate", row["request"])

    def create(self, name: str, lines: list[str], data: bytes, folder: Path) -> dict[str, Any]:
        from google.genai import types

        rows = [json.loads(x) for x in lines]
        src = [types.InlinedRequest.model_validate({**r["request"], "metadata": {"key": r["key"]}}) for r in rows]
        job = self.client.batches.create(model=self.model, src=src, config={"display_name": f"mcqa {name}"})
        return {"api": self.api, "id": job.name, "input_file": name, "n_requests": len(lines), "status": _state(job)}

    def poll(self, entry: dict[str, Any]) -> dict[str, Any]:
        job = self.client.batches.get(name=entry["id"])
        state = _state(job)
        reason = _WHY.get(state, "")
        if state == "JOB_STATE_FAILED":
            reason = job.error.message if job.error is not None and job.error.message else self._failure(entry["id"])
        return {**entry, "status": state, "ended": state in ENDED, "reason": reason}

    def results(self, entry: dict[str, Any]) -> Results:
        job = self.client.batches.get(name=entry["id"])
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        ok: dict[str, dict[str, Any]] = {}
        failed: dict[str, str] = {}
        for res in responses:
            key = (res.metadata or {}).get("key")
            if key is None:  # cannot be matched: the request counts as failed (no result)
                continue
            if res.response is not None:
                body = res.response.model_dump(mode="json", exclude_none=True)
                for field in _VOLATILE:
                    body.pop(field, None)
                ok[key] = body
            else:
                err = res.error
                failed[key] = f"{err.code}: {err.message}" if err is not None else "no response"
        return ok, failed
