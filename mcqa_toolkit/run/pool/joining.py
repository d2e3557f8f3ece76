"""How a driver joins an existing Ray cluster: the node address it registers at, and the token it authenticates with.

Node address: Ray registers a driver at this machine's outward IP unless told otherwise; a driver joining through
a loopback HOST:PORT must register where this machine's nodes of that cluster did (`node_ip`), and a local
cluster stays on 127.0.0.1 (`stay_on_loopback`).

Token: Ray 2.60 turns token authentication on for every cluster started on a machine that holds a token
(`ray start` with ~/.ray/auth_token present, which any earlier local `ray.init()` writes). Ray itself sends the
token only when it found the cluster on its own (`auto`); a driver given the same cluster's explicit address
(127.0.0.1:6379, this machine's IP, ray://127.0.0.1:10001) is refused ("InvalidAuthToken"). `use_local_token`
does for an address on this machine what Ray does for `auto`; a cluster elsewhere gets its token only when the
user says so (RAY_AUTH_MODE=token with RAY_AUTH_TOKEN or the token file), and a refusal is explained
(`auth_refused`). https://docs.ray.io/en/latest/ray-security/token-auth.html
"""
from __future__ import annotations

import ipaddress
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

from mcqa_toolkit.run.pool.scheduler import PoolError

__all__ = ["HOST_PORT", "loopback", "node_ip", "stay_on_loopback", "reachable", "on_this_machine",
           "local_token_available", "gcs_requires_token", "use_local_token", "auth_refused"]

HOST_PORT = re.compile(r"^(?:ray://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
AUTH_MODE = "RAY_AUTH_MODE"


def _host(address: str) -> str | None:
    m = HOST_PORT.match(address)
    return m.group(1).strip("[]") if m else None


def loopback(address: str) -> bool:
    """`local`, or HOST:PORT with a loopback host (a ray:// address goes through Ray Client: no local node)."""
    return address == "local" or not address.startswith("ray://") and (HOST_PORT.match(address)
                                                                       or [None, ""])[1] in LOOPBACK


def _binds(ip: str) -> bool:
    """Whether `ip` is an address of this machine (it binds; nothing is sent)."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET) as s:
            s.bind((ip, 0))
        return True
    except OSError:
        return False


def on_this_machine(address: str) -> bool:
    """Whether HOST:PORT or ray://HOST:PORT names this machine: a loopback name or an IP address of its own
    (host names other than localhost are not resolved: a cluster named by host name is treated as elsewhere)."""
    host = _host(address)
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or _binds(str(ip))


def node_ip(address: str) -> str:
    """The IP a driver here must register at to join the cluster whose GCS listens at loopback `address`: where
    the cluster's nodes on this machine registered. 127.0.0.1 for a cluster started on loopback (`ray start --head
    --node-ip-address 127.0.0.1` with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, ray.cluster_utils); the machine's own
    IP for a head that registered there (`ray start --head` does, even when told 127.0.0.1), which ray.init
    reaches through 127.0.0.1 too. Asked of the GCS; 127.0.0.1 when it cannot tell (Ray then says why)."""
    import ray._raylet
    from ray.core.generated.gcs_pb2 import GcsNodeInfo  # type: ignore[attr-defined]  # protobuf stubs lack it

    try:
        nodes = ray._raylet.GcsClient(address=address).get_all_node_info(  # type: ignore[attr-defined]  # Ray's stubs
            timeout=10, state_filter=GcsNodeInfo.GcsNodeState.ALIVE).values()
        ips = sorted({n.node_manager_address for n in nodes})
    except Exception:                # an older Ray, a GCS that does not answer: keep to loopback
        return "127.0.0.1"
    if not ips or any(ip.startswith("127.") or ip == "::1" for ip in ips):
        return "127.0.0.1"
    for ip in ips:                   # an address of this machine binds; another machine's does not
        if _binds(ip):
            return ip
    raise PoolError(f"the Ray cluster at {address} has no node on this machine (its nodes registered at "
                    f"{', '.join(ips)}): address its head as HEAD_IP:PORT from one of them, or use Ray Client "
                    "(ray://HEAD:10001)")


def stay_on_loopback() -> None:
    """Make this process's Ray use 127.0.0.1. Ray turns a loopback address (the one a local cluster, or a cluster
    started with --node-ip-address 127.0.0.1, listens on) into the machine's outward address before connecting
    (ray._private.services.resolve_ip_for_localhost), and a local cluster would listen there; on a single-machine
    cluster its documented switch, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, keeps it on loopback (read when ray is
    first imported, hence also set on its constants if that already happened)."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    constants: Any = sys.modules.get("ray._private.ray_constants")  # Ray's module of constants, if imported
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False


def reachable(address: str) -> None:
    """One clear PoolError when nothing listens at HOST:PORT (Ray itself retries for minutes)."""
    m = HOST_PORT.match(address)
    if m is None:
        raise ValueError(f"{address!r}: expected HOST:PORT (or ray://HOST:PORT)")
    host, port = m.group(1).strip("[]"), int(m.group(2))
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as e:
        raise PoolError(f"cannot reach the Ray cluster at {address} ({e.strerror or e}): start it first, e.g. "
                        "`ray start --head` (docs/cluster.md)") from None


def local_token_available() -> bool:
    """Whether this machine holds a Ray token where Ray looks for one: RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH
    names, or ~/.ray/auth_token."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return True
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    return Path(path).is_file() if path else (Path.home() / ".ray" / "auth_token").is_file()


def gcs_requires_token(address: str) -> bool:
    """Whether the GCS at HOST:PORT refuses a driver without a token (asked once, as this process is configured)."""
    import ray._raylet

    try:
        ray._raylet.GcsClient(address=address).get_all_node_info(timeout=10)  # type: ignore[attr-defined]  # Ray's stubs
    except Exception as e:
        return auth_refused(e, address) is not None
    return False


def use_local_token(address: str) -> bool:
    """Authenticate with this machine's token when joining a cluster on this machine that requires one (for
    HOST:PORT, asked of its GCS first: a driver in token mode beside a cluster without authentication would refuse
    that cluster's own workers), as Ray does for `auto`; for ray:// (Ray Client: this process only sends requests)
    whenever a token is here. RAY_AUTH_MODE, when set, is left as the user set it. True when token mode was turned
    on here."""
    if os.environ.get(AUTH_MODE) is not None or not local_token_available() or not on_this_machine(address):
        return False
    if not address.startswith("ray://") and not gcs_requires_token(address):
        return False
    try:          # Ray's own switch: sets RAY_AUTH_MODE=token and refreshes its cached configuration
        from ray._private.authentication.authentication_token_setup import _enable_token_auth
    except ImportError:
        os.environ[AUTH_MODE] = "token"
    else:
        _enable_token_auth()
    return True


def auth_refused(error: BaseException, address: str) -> PoolError | None:
    """One clear PoolError when ray.init failed because the cluster asked for a token it was not given; None for
    any other failure (its own message stands)."""
    seen: BaseException | None = error
    while seen is not None:
        if type(seen).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(seen):
            return PoolError(
                f"the Ray cluster at {address} requires token authentication and this driver was refused: set "
                f"RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN (or the file ~/.ray/auth_token, "
                f"or RAY_AUTH_TOKEN_PATH), as on its head node (docs/cluster.md)")
        seen = seen.__cause__ or seen.__context__
    return None
