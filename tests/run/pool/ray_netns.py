"""A Ray head registered at a non-loopback IP, driven through each address ray.init takes, all inside a network and
PID namespace of its own (run as `unshare --net --pid --fork --kill-child --mount-proc python ray_netns.py OUT TABLE
ADDR...` by tests/run/pool/test_driver.py).

The namespace holds loopback and one veth pair whose end carries HEAD_IP, with the default route through it: what
a machine with one outward interface looks like, so `ray start --head` registers the head at HEAD_IP as it does on
such a machine (even when told 127.0.0.1). No traffic leaves the namespace (the veth pair's other end is in it
too). This script's first process is the namespace's PID 1 and only its init (`init`): it runs the script again as
its one child and reaps every process that ends in the namespace until that child ends (orphans are re-parented to
PID 1, and a PID 1 that does not wait for them leaves them zombies), then exits with the child's status; when it
ends (or unshare is killed: --kill-child), whatever is left in the namespace ends with it (a `ray stop` inside
first sees only this namespace's processes).

The head runs with GRPC_ENABLE_FORK_SUPPORT=false. Ray Client's proxier starts each client's server with
subprocess.Popen(preexec_fn=...), a fork then exec, from a process whose gRPC threads are busy; gRPC's fork
handlers then abort a few percent of those children before their exec (SIGABRT; none with the variable set), and
the driver gets "Initialization failure from server" (psutil.ZombieProcess for the dead child, or "Starting Ray
client server failed"). The proxier only forks to exec, so it needs no fork handlers; docs/cluster.md gives users
the same setting.

The head requires token authentication, as Ray 2.60 makes it on a machine that holds a token (this script's own
HOME holds one): each driver must present it.

For each ADDR ("{port}" is the head's GCS port, "{head}" HEAD_IP, "{client}" Ray Client's port) a driver joins with
RayPool(ADDR, 1), runs the demo exam's pt items through the lookup backend into OUT/<n>/run and leaves (one driver
process for every address but ray://, one for ray://); one JSON line per address: the address and either the run
folder and the nodes its pool's provenance names, or the error.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HEAD_IP = "10.201.0.1"
PORT = 6390
CLIENT_PORT = 10001
AGENT_PORTS = 52365  # the first of the head's agent ports, fixed (the namespace's ports are all free)
AGENT_PORT_FLAGS = ("dashboard-agent-grpc-port", "dashboard-agent-listen-port", "runtime-env-agent-port",
                    "metrics-export-port")
DRIVER = """
import functools, json, sys
from pathlib import Path
from lookup_backend import LookupBackend
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.pool import RayPool
from mcqa_toolkit.run.recipe import BackendCache, run_job
out, table = sys.argv[1], json.load(open(sys.argv[2]))
for n, address in json.loads(sys.argv[3]):
    job = Job("lookup", "demo", {}, "pt", "enem_1shot", Path(out, n, "run"), shuffles=1, min_k=False)
    try:
        with RayPool(address, 1, stall_seconds=120) as pool:
            pool.put("lookup", functools.partial(LookupBackend, table))
            run_job(job, BackendCache(), progress=False, pool=pool)
        said = {"run_dir": str(job.run_dir.dir), "nodes": job.run_dir.provenance()["pool"]["nodes"]}
    except Exception as e:
        said = {"error": f"{type(e).__name__}: {e}"[-2000:]}
    print(json.dumps({"address": address, **said}), flush=True)
"""


def sh(*cmd: str, **kw) -> subprocess.CompletedProcess:
    """Run cmd; if it fails, raise with what it printed (a bare exit status says nothing about why)."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done


def network() -> None:
    """Loopback up; a veth pair, one end at HEAD_IP/24 and the default route through it."""
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "link", "add", "mcqa0", "type", "veth", "peer", "name", "mcqa1")
    sh("ip", "addr", "add", f"{HEAD_IP}/24", "dev", "mcqa0")
    for dev in ("mcqa0", "mcqa1"):
        sh("ip", "link", "set", dev, "up")
    sh("ip", "route", "add", "default", "dev", "mcqa0")


def main(out: Path, table: Path, addresses: list[str]) -> None:
    network()
    ray = str(Path(sys.executable).parent / "ray")
    # a home of its own holding a Ray token, as on any machine where a local ray.init() ran before: `ray start`
    # then requires token authentication (Ray >= 2.60), and each driver must present the token
    home = Path(tempfile.mkdtemp(prefix="rayhome", dir="/tmp"))
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    env = {**os.environ, "RAY_TMPDIR": tempfile.mkdtemp(prefix="ray", dir="/tmp"), "RAY_USAGE_STATS_ENABLED": "0",
           "HOME": str(home)}
    for key in ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        env.pop(key, None)
    try:
        # every port given (the namespace's own: all free): with one left to its agent to choose, the raylet waits
        # for the agent to write it into a file, and a loaded machine made that wait time out (raylet check failure)
        sh(ray, "start", "--head", f"--port={PORT}", f"--ray-client-server-port={CLIENT_PORT}", "--num-cpus=1",
           *[f"--{name}={AGENT_PORTS + n}" for n, name in enumerate(AGENT_PORT_FLAGS)],
           "--include-dashboard=false", "--disable-usage-stats", env={**env, "GRPC_ENABLE_FORK_SUPPORT": "false"},
           timeout=120)
        given = [(str(n), a.format(port=PORT, head=HEAD_IP, client=CLIENT_PORT)) for n, a in enumerate(addresses)]
        # one driver process joins (and leaves) through every address but Ray Client's, one more for ray://
        client = [g for g in given if g[1].startswith("ray://")]
        for batch in ([g for g in given if g not in client], client):
            if batch:
                done = subprocess.run([sys.executable, "-c", DRIVER, str(out), str(table), json.dumps(batch)], env=env,
                                      capture_output=True, text=True, timeout=240)
                print(done.stdout, end="", flush=True)
                if done.returncode:
                    print(json.dumps({"address": "driver", "error": done.stderr[-2000:]}), flush=True)
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(home, ignore_errors=True)


def init(argv: list[str]) -> int:
    """As the namespace's PID 1: run `python argv...` as the one child and reap whatever ends in the namespace until
    that child ends; its exit status (128 + N for a signal N, as a shell reports it)."""
    child = os.posix_spawn(sys.executable, [sys.executable, *argv], dict(os.environ))
    while True:
        pid, status = os.waitpid(-1, 0)  # any child: the script, or an orphan re-parented to PID 1
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


if __name__ == "__main__":
    if os.getpid() == 1:
        sys.exit(init(sys.argv))
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
