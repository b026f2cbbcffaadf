"""A real two-node Ray cluster on this machine for the tests: a head and a second node, each a raylet of its own in
its own network namespace (its own address, as on two machines), joined by a veth pair, with Ray's token
authentication on. Needs root and iproute2 (``ip netns``); :func:`cluster_unavailable` says why not otherwise.

Drivers run inside the head's namespace (:meth:`RayCluster.run`, :meth:`RayCluster.popen`); :meth:`kill_node`
kills every process of the second node's namespace at once (raylet, object store, workers: a machine lost)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAY = os.path.join(os.path.dirname(sys.executable), "ray")
PORT = 6379


def cluster_unavailable() -> str | None:
    """Why a cluster cannot be made here, or ``None``."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "needs iproute2's ip (apt install iproute2)"
    if not os.path.exists(RAY):
        return "needs ray[rllib]: pip install -e '.[rllib]'"
    probe = f"mceprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return None


class RayCluster:
    """Head (1 CPU) at ``head_ip`` and a second node (1 CPU) at ``node_ip``; ``address`` is the head's."""

    def __init__(self, tmp: str):
        tag = f"{os.getpid() % 100000}"
        self.head_ns, self.node_ns = f"mce{tag}h", f"mce{tag}n"
        subnet = f"10.213.{os.getpid() % 200 + 20}"
        self.head_ip, self.node_ip = f"{subnet}.1", f"{subnet}.2"
        self.address = f"{self.head_ip}:{PORT}"
        self.tmp = tmp
        token = os.path.join(tmp, "ray_token")
        with open(token, "w") as f:
            f.write(secrets.token_hex(32))
        # token auth as `ray start --head` sets it up; node deaths noticed within seconds, not the default 30
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token,
                    "RAY_USAGE_STATS_ENABLED": "0", "RAY_health_check_period_ms": "1000",
                    "RAY_health_check_failure_threshold": "3", "RAY_health_check_timeout_ms": "1000"}
        self.env.pop("RAY_ADDRESS", None)
        veth_head, veth_node = f"mce{tag}a", f"mce{tag}b"
        for command in (["netns", "add", self.head_ns], ["netns", "add", self.node_ns],
                        ["link", "add", veth_head, "type", "veth", "peer", "name", veth_node],
                        ["link", "set", veth_head, "netns", self.head_ns],
                        ["link", "set", veth_node, "netns", self.node_ns],
                        ["-n", self.head_ns, "addr", "add", f"{self.head_ip}/24", "dev", veth_head],
                        ["-n", self.node_ns, "addr", "add", f"{self.node_ip}/24", "dev", veth_node],
                        ["-n", self.head_ns, "link", "set", veth_head, "up"],
                        ["-n", self.node_ns, "link", "set", veth_node, "up"],
                        ["-n", self.head_ns, "link", "set", "lo", "up"],
                        ["-n", self.node_ns, "link", "set", "lo", "up"]):
            subprocess.run(["ip", *command], check=True, capture_output=True)
        self.log: list[str] = []
        # Ray's files of its own, the cluster's address among them: /tmp/ray's would lead a later ray.init() on this
        # machine to this cluster (a short path: Ray's socket paths must stay under 108 bytes)
        self.ray_dir = tempfile.mkdtemp(prefix="mce-ray-", dir="/tmp")
        self._ray_start(self.head_ns, ["--head", "--node-ip-address", self.head_ip, "--port", str(PORT),
                                       "--num-cpus", "1", "--include-dashboard", "false", "--disable-usage-stats",
                                       "--temp-dir", self.ray_dir])
        self.start_node()

    def _ray_start(self, namespace: str, arguments: list[str], python: str | None = None,
                   env: dict | None = None) -> None:
        command = [python, "-c", "from ray.scripts.scripts import main; main()"] if python else [RAY]
        run = subprocess.run(["ip", "netns", "exec", namespace, *command, "start", *arguments], env=env or self.env,
                             capture_output=True, text=True, timeout=180, cwd=self.tmp)
        self.log.append(f"$ ray start {' '.join(arguments)}  # in {namespace}\n" + _tail(run.stdout + run.stderr, 4))
        if run.returncode != 0:
            raise RuntimeError(f"ray start failed in {namespace}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")

    def start_node(self, python: str | None = None, extra_env: dict | None = None) -> None:
        """The second node (again), with this Python (default: the tests') and environment; waits until it has
        joined."""
        self._ray_start(self.node_ns, ["--address", self.address, "--node-ip-address", self.node_ip, "--num-cpus", "1",
                                       "--disable-usage-stats"], python, {**self.env, **(extra_env or {})})
        self.wait_for_nodes(2)

    def wait_for_nodes(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            alive = self.alive_nodes()
            if alive == count:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{alive} live nodes after {timeout:.0f} s, waiting for {count}")
            time.sleep(1.0)

    def alive_nodes(self) -> int:
        code = ("import ray; ray.init(address='%s', log_to_driver=False); "
                "print('alive nodes:', sum(n['Alive'] for n in ray.nodes()))")
        run = self.run([sys.executable, "-c", code % self.address], timeout=60)
        counts = [line.split(":")[1] for line in run.stdout.splitlines() if line.startswith("alive nodes:")]
        if not counts:
            raise RuntimeError(f"cannot count the cluster's nodes:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
        return int(counts[-1])

    def kill_node(self) -> int:
        """Every process of the second node at once (SIGKILL): its raylet, object store and workers; their count."""
        pids = _pids(self.node_ns)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        while _pids(self.node_ns) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.log.append(f"killed the node at {self.node_ip}: {len(pids)} processes (SIGKILL)")
        return len(pids)

    def popen(self, command: list[str], cwd: str, **kwargs) -> subprocess.Popen:
        """``command`` as a driver in the head's namespace."""
        return subprocess.Popen(["ip", "netns", "exec", self.head_ns, *command], cwd=cwd, env=self.env, text=True,
                                **kwargs)

    def run(self, command: list[str], cwd: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.head_ns, *command], cwd=cwd or self.tmp, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def close(self) -> None:
        for namespace in (self.node_ns, self.head_ns):
            for pid in _pids(namespace):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.5)
        for namespace in (self.node_ns, self.head_ns):  # deleting a namespace deletes its end of the veth pair
            subprocess.run(["ip", "netns", "delete", namespace], capture_output=True)
        shutil.rmtree(self.ray_dir, ignore_errors=True)


def _pids(namespace: str) -> list[int]:
    run = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return [int(p) for p in run.stdout.split()]


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
