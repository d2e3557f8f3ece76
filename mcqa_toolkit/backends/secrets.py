"""Credentials written into a base URL (`https://user:password@host/v1`) never reach a file.

`mcqa run` writes each run's backend entry into the executed notebook's parameters. So before that, the grid
moves a base URL's user:password into the environment of the `mcqa run` process (which the notebooks' kernel
inherits) under a name derived from the URL without them (`MCQA_URL_AUTH_<12 hex>`), and the entry keeps the
URL without credentials; the backend puts them back when it connects. Keys never appear in entries at all:
they are read from the variable named by `api_key_env`.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from mcqa_toolkit.backends.providers import public_url

__all__ = ["auth_env_name", "strip_credentials", "with_credentials"]


def auth_env_name(url: str) -> str:
    """The environment variable holding the credentials of `url` (a URL without credentials)."""
    return "MCQA_URL_AUTH_" + hashlib.sha256(public_url(url).encode()).hexdigest()[:12].upper()


def _strip(url: Any) -> Any:
    if not isinstance(url, str):
        return url
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    netloc = parts.hostname or ""
    netloc += f":{parts.port}" if parts.port else ""
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    os.environ[auth_env_name(clean)] = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    return clean


def strip_credentials(entry: dict[str, Any]) -> dict[str, Any]:
    """`entry` with every `base_url` (str or list) free of credentials; the credentials go to the environment."""
    if "base_url" not in entry:
        return entry
    url = entry["base_url"]
    return {**entry, "base_url": [_strip(u) for u in url] if isinstance(url, list) else _strip(url)}


def with_credentials(url: str) -> str:
    """`url` with the credentials `strip_credentials` moved to the environment put back (unchanged if none)."""
    auth = os.environ.get(auth_env_name(url))
    parts = urlsplit(url)
    if not auth or parts.username is not None:
        return url
    user, _, password = auth.partition(":")
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{parts.netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
