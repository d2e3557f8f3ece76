"""On-disk request cache for API backends: a killed or re-run evaluation never pays twice, and a re-run gives
byte-identical records.

The key is sha256 of (backend kind, model, server identity, endpoint, request body) as canonical JSON, never
the API key or headers. The server identity (`server_id` of an API backend; by default the sorted base URLs
without credentials) is shared by replicas of one deployment, which share answers, and differs between
deployments serving the same model id (another quantisation, another provider), which never do. Keys made
before the server identity was part of them are not read any more (those requests are sent again once). One JSON file per response under
`<root>/<key[:2]>/<key>.json`, written to a temporary name and renamed, so a kill never leaves half a file.
The batch APIs use the same key as their `custom_id`, so a fetched batch simply fills this cache.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["default_cache_dir", "request_key", "RequestCache"]


def default_cache_dir() -> Path:
    """`$MCQA_CACHE`, else `$XDG_CACHE_HOME/mcqa_toolkit`, else `~/.cache/mcqa_toolkit`."""
    if os.environ.get("MCQA_CACHE"):
        return Path(os.environ["MCQA_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcqa_toolkit"


def request_key(kind: str, model: str, endpoint: str, body: dict[str, Any], server: str = "") -> str:
    """The cache key (and batch custom_id: 64 hex digits, within Anthropic's ^[a-zA-Z0-9_-]{1,64}$) of one
    request to `server` (a server identity; "" for none)."""
    ident = {"backend": kind, "model": model, "endpoint": endpoint, "body": body}
    if server:
        ident["server"] = server
    blob = json.dumps(ident, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class RequestCache:
    """Responses (JSON-able dicts) by request key. `enabled=False` makes every lookup a miss and stores nothing."""

    def __init__(self, root: str | Path | None = None, enabled: bool = True):
        self.root = Path(root) if root is not None else default_cache_dir() / "requests"
        self.enabled = enabled

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        path = self._path(key)
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:  # a file damaged outside our atomic writes: treat as a miss, rewrite later
            return None

    def put(self, key: str, response: dict[str, Any]) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(response, ensure_ascii=False, sort_keys=True), encoding="utf-8")
        tmp.replace(path)

    def __contains__(self, key: str) -> bool:
        return self.enabled and self._path(key).exists()
