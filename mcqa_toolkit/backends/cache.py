"""On-disk request cache for API backends: a killed or re-run evaluation never pays twice, and a re-run gives
byte-identical records.

The key is sha256 of (backend kind, model, server identity, endpoint, request body) as canonical JSON, never
the API key or headers. The server identity (`server_id` of an API backend; by default the sorted base URLs
without credentials) is shared by replicas of one deployment, which share answers, and differs between
deployments serving the same model id (another quantisation, another provider), which never do. One
JSON file per response under `<root>/<key[:2]>/<key>.json`: {"key", "sha256" of the response's canonical JSON,
"response"}, written to a temporary name, forced to disk and renamed, so a kill or a power cut never leaves
half a file.
The batch APIs use the same key as their `custom_id`, so a fetched batch simply fills this cache.

An entry that is not what was written (cut short, bytes changed, another key's file) is never used: it is
reported (a warning naming its path, `corrupt` lists it, the backends count it as `cache_corrupt` in usage),
moved aside to `<key>.json.corrupt` for inspection, and the request is sent again. Entries written before the
checksum (a bare response object) are used as they are; they are valid JSON or they are reported likewise.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

__all__ = ["default_cache_dir", "request_key", "RequestCache"]

_LOG = logging.getLogger("mcqa_toolkit.backends")


def default_cache_dir() -> Path:
    """`$MCQA_CACHE`, else `$XDG_CACHE_HOME/mcqa_toolkit`, else `~/.cache/mcqa_toolkit`."""
    if os.environ.get("MCQA_CACHE"):
        return Path(os.environ["MCQA_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcqa_toolkit"


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_key(kind: str, model: str, endpoint: str, body: dict[str, Any], server: str = "") -> str:
    """The cache key (and batch custom_id: 64 hex digits, within Anthropic's ^[a-zA-Z0-9_-]{1,64}$) of one
    request to `server` (a server identity; "" for none)."""
    ident = {"backend": kind, "model": model, "endpoint": endpoint, "body": body}
    if server:
        ident["server"] = server
    blob = _canonical(ident)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _digest(response: Any) -> str:
    return hashlib.sha256(_canonical(response).encode("utf-8")).hexdigest()


class RequestCache:
    """Responses (JSON-able dicts) by request key. `enabled=False` makes every lookup a miss and stores nothing."""

    def __init__(self, root: str | Path | None = None, enabled: bool = True):
        self.root = Path(root) if root is not None else default_cache_dir() / "requests"
        self.enabled = enabled
        self.corrupt: list[Path] = []  # entries found damaged (and moved aside) by this object

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        response, problem = _verified(raw, key)
        if problem is None:
            return response
        self._set_aside(path, problem)
        return None

    def _set_aside(self, path: Path, problem: str) -> None:
        """Report a damaged entry and move it out of the way (the request is sent again and stored anew)."""
        aside = path.with_name(path.name + ".corrupt")
        try:
            path.replace(aside)
            where = f"moved to {aside.name}"
        except OSError as e:
            where = f"could not be moved aside ({e.strerror})"
        self.corrupt.append(path)
        _LOG.warning("request cache entry %s is damaged (%s) and was not used; %s, the request is sent again",
                     path, problem, where)

    def put(self, key: str, response: dict[str, Any]) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "sha256": _digest(response), "response": response}
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                # the response as received, key order included: legacy top_logprobs is an object ordered by
                # probability, and on ties its order picks the top token (the checksum is order-free)
                data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def __contains__(self, key: str) -> bool:
        return self.enabled and self._path(key).exists()


def _verified(raw: bytes, key: str) -> tuple[dict[str, Any] | None, str | None]:
    """(response, None) for a sound entry of `key`, else (None, what is wrong)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        reason = e.msg if isinstance(e, json.JSONDecodeError) else e.reason
        return None, f"not valid JSON: {reason}" + (" (empty file)" if not raw else "")
    if not isinstance(data, dict):
        return None, f"holds a JSON {type(data).__name__}, not a response"
    if "sha256" not in data and "response" not in data:  # written before entries carried a checksum
        return data, None
    if data.get("key") != key:
        return None, f"written for another request (key {str(data.get('key'))[:16]}...)"
    response = data.get("response")
    if not isinstance(response, dict) or data.get("sha256") != _digest(response):
        return None, "checksum mismatch: the response is not what was stored"
    return response, None
