"""Anthropic Message Batches for one AnthropicBackend: create with the requests inline ({custom_id, params}), poll
until the batch has ended, then stream its results, which come back unordered and are matched by custom_id.
At most 100,000 requests / 256 MB per batch (backends.providers.ANTHROPIC).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mcqa_toolkit.backends.batch.base import BatchClient, Results
from mcqa_toolkit.backends.providers import ANTHROPIC

__all__ = ["AnthropicBatches"]


class AnthropicBatches(BatchClient):
    """Anthropic Message Batches for one AnthropicBackend."""

    api = "anthropic"
    stem = "batch_messages"
    overhead = len('{"requests":[]}')  # the requests are sent inline, in one JSON body

    def __init__(self, backend: Any):
        import anthropic

        from mcqa_toolkit.backends.secrets import with_credentials

        super().__init__(backend)
        self.limits = ANTHROPIC.batch
        url = with_credentials(backend.base_url) if backend.base_url else None
        self.client = anthropic.Anthropic(api_key=os.environ.get(backend.api_key_env), base_url=url, max_retries=3)

    def line(self, key: str, endpoint: str, body: dict[str, Any]) -> str:
        return json.dumps({"custom_id": key, "params": body}, ensure_ascii=False)

    def request_of(self, row: dict[str, Any]) -> tuple[str, tuple[str, dict[str, Any]]]:
        return row["custom_id"], ("messages", row["params"])

    def create(self, name: str, lines: list[str], data: bytes, folder: Path) -> dict[str, Any]:
        batch = self.client.messages.batches.create(requests=[json.loads(x) for x in lines])
        return {"api": self.api, "id": batch.id, "input_file": name, "n_requests": len(lines),
                "status": batch.processing_status}

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
