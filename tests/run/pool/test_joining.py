"""Joining an existing Ray cluster (run.pool.joining): the driver's node address and its token. The real joins
are tests/run/pool/test_driver.py's namespace test; these check each decision on its own, Ray's GCS faked."""
import os
import sys

import pytest

from mcqa_toolkit.run.pool import PoolError
from mcqa_toolkit.run.pool.joining import auth_refused, node_ip, on_this_machine, use_local_token


@pytest.mark.parametrize("registered,expected", [(["127.0.0.1"], "127.0.0.1"), ([], "127.0.0.1"),
                                                 (["203.0.113.9"], "no node on this machine")])
def test_a_loopback_address_joins_where_this_machines_nodes_registered(monkeypatch, registered, expected):
    """The driver's node address for a loopback HOST:PORT comes from the GCS's list of alive nodes (a fake here):
    loopback when a node registered there; a cluster with no node on this machine is one clear PoolError (nothing
    is sent anywhere: an address is tried for binding only)."""
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]')")
    import ray._raylet


    class Node:
        def __init__(self, ip):
            self.node_manager_address = ip

    class FakeGcs:
        def __init__(self, address):
            assert address == "127.0.0.1:6390"

        def get_all_node_info(self, timeout, state_filter):
            return {i: Node(ip) for i, ip in enumerate(registered)}

    monkeypatch.setattr(ray._raylet, "GcsClient", FakeGcs)
    if expected.startswith("no node"):
        with pytest.raises(PoolError, match=r"127.0.0.1:6390 has no node on this machine \(its nodes registered at "
                                            r"203.0.113.9\).*ray://"):
            node_ip("127.0.0.1:6390")
    else:
        assert node_ip("127.0.0.1:6390") == expected


@pytest.mark.parametrize("address,expected", [("127.0.0.1:6379", True), ("localhost:6379", True),
                                              ("ray://127.0.0.1:10001", True), ("[::1]:6379", True),
                                              ("203.0.113.9:6379", False), ("ray://head-node:10001", False),
                                              ("auto", False)])
def test_an_address_on_this_machine_is_told_from_one_elsewhere(address, expected):
    """Loopback names and IPs, and IPs that bind here, are this machine; 203.0.113.9 (TEST-NET-3) and host names
    other than localhost are not (nothing is resolved or sent)."""
    assert on_this_machine(address) is expected


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home of the test's own with no Ray token, and no Ray auth variables set; Ray's own switch hidden, so that
    token mode is set through the environment only (undone after the test) and Ray's cached configuration in this
    process is left alone."""
    monkeypatch.setitem(sys.modules, "ray._private.authentication.authentication_token_setup", None)
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.setenv(key, "")  # recorded as it was (delenv of an absent variable records nothing to undo),
        monkeypatch.delenv(key)      # so that what use_local_token sets for this process is unset afterwards
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _token(home):
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text("0123456789abcdef")


def test_a_cluster_on_this_machine_gets_this_machines_token(home, monkeypatch):
    """Fails before the fix: with ~/.ray/auth_token present (any earlier local ray.init writes it), `ray start
    --head` requires a token and Ray sends it only for `auto`; joining 127.0.0.1:PORT was refused (InvalidAuthToken).
    Now token mode is turned on for an address on this machine whose GCS requires a token (faked here), as Ray does
    for `auto`; a cluster here that requires none is joined as before (token mode in the driver would refuse its
    workers)."""
    requires = {"127.0.0.1:6379": True, "127.0.0.1:6380": False}
    monkeypatch.setattr("mcqa_toolkit.run.pool.joining.gcs_requires_token", requires.__getitem__)
    assert use_local_token("127.0.0.1:6379") is False              # no token here: nothing changes
    assert "RAY_AUTH_MODE" not in os.environ
    _token(home)
    assert use_local_token("203.0.113.9:6379") is False            # a cluster elsewhere: the user decides
    assert "RAY_AUTH_MODE" not in os.environ
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")                # the user's setting is left as it is
    assert use_local_token("127.0.0.1:6379") is False and os.environ["RAY_AUTH_MODE"] == "disabled"
    monkeypatch.delenv("RAY_AUTH_MODE")
    assert use_local_token("127.0.0.1:6380") is False and "RAY_AUTH_MODE" not in os.environ
    assert use_local_token("127.0.0.1:6379") is True and os.environ["RAY_AUTH_MODE"] == "token"


def test_a_token_given_in_the_environment_counts(home, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_TOKEN", "fedcba9876543210")
    assert use_local_token("ray://127.0.0.1:10001") is True and os.environ["RAY_AUTH_MODE"] == "token"


def test_a_refused_token_is_one_clear_error_other_failures_keep_theirs():
    """ray.init wraps the GCS's refusal (ray.exceptions.AuthenticationError, 'InvalidAuthToken') in a
    ConnectionError 'Failed to connect to Ray cluster at ...': the cause chain is read."""
    class AuthenticationError(Exception):
        pass

    try:
        try:
            raise AuthenticationError("RPC error: InvalidAuthToken: Authentication token is missing or incorrect")
        except AuthenticationError as inner:
            raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:6390") from inner
    except ConnectionError as e:
        err = auth_refused(e, "127.0.0.1:6390")
    assert isinstance(err, PoolError)
    assert "127.0.0.1:6390 requires token authentication" in str(err) and "RAY_AUTH_TOKEN" in str(err)
    assert auth_refused(ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:6390"), "x:1") is None


def test_whether_a_gcs_requires_a_token_is_asked_of_it(monkeypatch):
    """The GCS's refusal (ray.exceptions.AuthenticationError from Ray's GcsClient, faked here) means a token is
    required; any other failure (nothing there, a timeout) does not."""
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]')")
    import ray._raylet

    from mcqa_toolkit.run.pool.joining import gcs_requires_token

    class AuthenticationError(Exception):
        pass

    class FakeGcs:
        def __init__(self, address):
            if address.endswith(":1"):
                raise AuthenticationError("RPC error: InvalidAuthToken: Authentication token is missing or incorrect")
            if address.endswith(":2"):
                raise TimeoutError("no GCS answered")

        def get_all_node_info(self, timeout):
            return {}

    monkeypatch.setattr(ray._raylet, "GcsClient", FakeGcs)
    assert [gcs_requires_token(f"127.0.0.1:{p}") for p in (1, 2, 3)] == [True, False, False]
