"""ApiBackend: what the backends behind a provider's API (openai, anthropic, google) have in common, written once.

Their requests all go through `self.sender` (backends.http.RequestSender: retries, concurrency, the request
cache) and the tokens billed through `self.meter` (backends.http.TokenMeter), so the optional
backends.base.BatchBackend part (`request_cache`, `collecting()`, `batch_api()`), `usage()` and the keys of
`provenance()` they share live here. A backend declares `sdk` (the distribution recorded with its version) and
`batch_client` (the `api` of its batch client in backends.batch.CLIENTS; a property where it depends on the
provider), and adds its own provenance keys through two hooks: `_route_provenance` (where the requests go,
recorded before `server_id`) and `_own_provenance` (its settings, after `api_key_env`). The keys keep one fixed
order, since provenance is written to every run folder.
"""
from __future__ import annotations

import contextlib
import importlib.metadata as md
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from mcqa_toolkit.backends.base import Capabilities
from mcqa_toolkit.backends.cache import RequestCache
from mcqa_toolkit.backends.http import RequestSender, TokenMeter

if TYPE_CHECKING:
    from mcqa_toolkit.backends.batch import BatchClient

__all__ = ["ApiBackend"]


class ApiBackend(ABC):
    """The shared part of the API backends: request cache, collection, batch client, usage and provenance."""

    kind: ClassVar[str]
    sdk: ClassVar[str]
    model: str
    name: str
    server_id: str
    api_key_env: str | None
    meter: TokenMeter
    sender: RequestSender

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What the model behind the API can do (some backends probe the server on first use)."""

    @property
    def batch_client(self) -> str:
        """The `api` of the provider's batch client in backends.batch.CLIENTS (a class attribute or a property)."""
        raise NotImplementedError

    @property
    def request_cache(self) -> RequestCache:
        return self.sender.cache

    def collecting(self) -> contextlib.AbstractContextManager[dict[str, tuple[str, dict[str, Any]]]]:
        return self.sender.collect()

    def batch_api(self) -> BatchClient:
        """The provider's batch client for this backend (backends.batch)."""
        from mcqa_toolkit.backends.batch import CLIENTS

        return CLIENTS[self.batch_client](self)

    def usage(self) -> dict[str, float]:
        return self.meter.usage(self.sender.counters)

    def _route_provenance(self) -> dict[str, Any]:
        """Provenance keys saying where the requests go besides `server_id` (none unless a backend says)."""
        return {}

    def _own_provenance(self) -> dict[str, Any]:
        """The backend's own provenance keys: its settings."""
        return {}

    def provenance(self) -> dict[str, Any]:
        try:
            version = md.version(self.sdk)
        except md.PackageNotFoundError:
            version = None
        return {"backend": self.kind, "model": self.name, "source": f"{self.kind}:{self.model}",
                "served_model": self.model, **self._route_provenance(), "server_id": self.server_id,
                "api_key_env": self.api_key_env, **self._own_provenance(),
                "capabilities": self.capabilities.as_dict(), "packages": {self.sdk: version}}
