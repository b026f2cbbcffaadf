"""One pool of persistent workers for all long work (self-play, arena games, engine games): local processes or Ray
actors. A worker builds ``make_player(settings)`` once (importable at module level, as spawn and Ray need) and
answers jobs with ``player.play(shared, job)``; ``shared`` is sent with every submission (network weights, or
``None``). A worker that dies is replaced and its job sent again, so a job's result must depend on the job alone."""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import multiprocessing.connection
import re
import signal
import socket
import sys
import time
import traceback
from typing import Callable, Iterator, Sequence


class ClusterError(RuntimeError):
    """The Ray cluster cannot run the workers: unreachable, another Ray, Python or minichess-envs on a node, the
    package missing there, or no room left for any worker. Its message names the problem and what to do."""


class WorkerPool:
    """``workers`` workers, local processes or Ray actors (``ray_address``: a cluster's address or ``"local"``). Jobs go
    to idle workers in order; at most ``max_restarts`` workers are replaced per submission; a player's exception ends
    the collection as a ``RuntimeError`` with its traceback.

    Ray actors take one CPU each, spread over the cluster's nodes. A lost actor (its node gone) is replaced by one that
    joins when the cluster has room for it; meanwhile its job goes to the next idle worker, so a lost node costs the
    games it was playing and nothing more. No worker running for ``start_timeout`` seconds is an error that says what
    the cluster has."""

    def __init__(self, make_player: Callable, settings, workers: int, ray_address: str | None = None,
                 max_restarts: int = 3, start_timeout: float = 300.0):
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        self.make_player, self.settings, self.max_restarts = make_player, settings, max_restarts
        self.restarts = 0  # workers replaced since the pool started
        self.ray, self.start_timeout = ray_address is not None, start_timeout
        if self.ray:
            import ray
            connect_ray(ray_address)
            self._actor_class = ray.remote(num_cpus=1, scheduling_strategy="SPREAD")(RayWorker)
            self._starting: dict = {}  # worker -> its versions() future, until the actor answers it
            self._futures: dict = {}  # worker -> its job's future
        else:
            self._context = multiprocessing.get_context("spawn")  # no fork of torch's threads or engine pipes
            self._connections: list = [None] * workers
        self.workers: list = [None] * workers  # processes or actor handles
        self.nodes: set[str] = set()  # the addresses of the Ray nodes this pool's workers have started on
        self._jobs = None  # the jobs submitted and not yet collected
        for k in range(workers):
            self._start(k)

    def _start(self, k: int) -> None:
        if self.ray:
            self.workers[k] = self._actor_class.remote(self.make_player, self.settings)
            self._starting[k] = self.workers[k].versions.remote()
            self._waiting_since = time.monotonic()
            return
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=worker_loop, args=(theirs, self.make_player, self.settings), daemon=True,
                                        name=f"worker {k}")
        process.start()
        theirs.close()  # only the worker holds its end now: its exit reads as EOF here
        self.workers[k], self._connections[k] = process, ours

    def _replace(self, k: int, cause: str) -> None:
        if self.ray:  # the actor may linger (a node that is only unreachable): never use it again
            import ray
            ray.kill(self.workers[k])
        else:  # a lost process: its exit code says why
            self.workers[k].join(timeout=5)
            cause += f"worker {k} exited with code {self.workers[k].exitcode}"
        self._failures += 1
        if self._failures > self.max_restarts:
            error = ClusterError if self.ray else RuntimeError  # Ray: lost nodes, most likely
            raise error(f"{self._failures} worker failures in one submission, more than "
                        f"max_restarts={self.max_restarts}: giving up (last: {cause})")
        if not self.ray:
            self._connections[k].close()
        self._start(k)
        self.restarts += 1
        # said where the run's progress is: a lost node is not silent
        print(f"worker {k} lost ({cause.strip() or 'no answer'}): its job goes to the next idle worker"
              + ("; a new actor joins when the cluster has room" if self.ray else "; a new process replaces it"),
              flush=True)

    def play(self, shared, jobs: Sequence) -> list:
        """Every job played with ``shared``; the results in job order."""
        self.submit(shared, jobs)
        return self.collect()

    def submit(self, shared, jobs: Sequence) -> None:
        """Start the jobs (in order, on the idle workers) and return at once; one submission at a time:
        :meth:`collect` or :meth:`results` takes its results."""
        if self._jobs is not None:
            raise RuntimeError("jobs are in flight: collect them before submitting more")
        self._shared, self._jobs, self._failures = shared, list(jobs), 0
        self._todo = collections.deque(range(len(self._jobs)))  # job indices not yet sent (a lost one goes first)
        self._running = {}  # worker -> the job index it plays
        if self.ray:
            import ray
            self._shared_ref = ray.put(shared)
        self._dispatch()

    def collect(self) -> list:
        """The results of the submitted jobs, in job order, once all are done."""
        done = dict(self.results())
        return [done[i] for i in range(len(done))]

    def results(self) -> Iterator[tuple[int, object]]:
        """``(job index, result)`` of the submitted jobs as each ends; idle workers take the next jobs."""
        if self._jobs is None:
            raise RuntimeError("no jobs in flight: submit some first")
        errors = []
        try:
            while self._running or (self._todo and not errors):
                for k, status, value in self._finished():
                    if status == "started":
                        continue
                    i = self._running.pop(k)
                    if status == "lost":  # replaced; the job goes to the next idle worker
                        self._todo.appendleft(i)
                        self._replace(k, value)
                    elif status == "error":  # the others are still collected: no stale answer stays in a pipe
                        errors.append(f"worker {k} failed:\n{value}")
                    else:
                        yield i, value
                if not errors:
                    self._dispatch()
            if errors:
                raise RuntimeError("\n".join(errors))
        finally:
            self._jobs = None

    def _dispatch(self) -> None:
        """The next jobs to the idle workers (a Ray actor once it has started)."""
        for k in range(len(self.workers)):
            if not self._todo:
                return
            if k not in self._running and not (self.ray and k in self._starting):
                self._send(k, self._todo.popleft())

    def _send(self, k: int, i: int) -> None:
        """Job ``i`` to worker ``k``."""
        self._running[k] = i
        if self.ray:
            self._futures[k] = self.workers[k].play.remote(self._shared_ref, self._jobs[i])
            return
        while True:
            try:
                self._connections[k].send((self._shared, self._jobs[i]))
                return
            except OSError as exc:  # the worker is gone (a broken pipe)
                self._replace(k, f"{type(exc).__name__}, ")

    def _finished(self) -> list[tuple[int, str, object]]:
        """``(worker, status, value)`` of the workers done (waiting for one): ``"ok"`` and the result, ``"error"`` and
        the player's traceback, ``"lost"`` and the cause, or (Ray) ``"started"``."""
        if self.ray:
            return self._ray_finished()
        waiting = {self._connections[k]: k for k in self._running}
        out = []
        for connection in multiprocessing.connection.wait(list(waiting)):
            try:
                out.append((waiting[connection], *connection.recv()))
            except (EOFError, OSError):  # the worker died before it answered
                out.append((waiting[connection], "lost", ""))
        return out

    def _ray_finished(self) -> list[tuple[int, str, object]]:
        import ray
        from ray.exceptions import RayActorError, RayTaskError
        owners = {future: ("job", k) for k, future in self._futures.items() if k in self._running}
        owners |= {future: ("start", k) for k, future in self._starting.items()}
        while True:
            ready, _ = ray.wait(list(owners), num_returns=1, timeout=min(10.0, self.start_timeout))
            if ready:
                break
            if not self._running and time.monotonic() - self._waiting_since > self.start_timeout:
                raise ClusterError(f"no Ray worker has started in {self.start_timeout:.0f} s: the cluster has "
                                   f"{_cluster_state()}; each worker needs 1 CPU (a node lost for good, or a "
                                   f"cluster smaller than workers={len(self.workers)})")
        kind, k = owners[ready[0]]
        try:
            value = ray.get(ready[0])
        except RayActorError as exc:  # the actor died, its node was lost, or it could not be built there
            if kind == "start":
                del self._starting[k]
            else:
                del self._futures[k]
            if exc.actor_init_failed:  # Ray's remote traceback says where: the last error line says what
                node = re.search(r"ip=([0-9a-fA-F.:]+)", str(exc))
                cause = [line.strip() for line in str(exc).splitlines() if re.match(r"\s*\w+(Error|Exception): ", line)]
                raise ClusterError(f"a Ray worker could not be built on its node {node.group(1) if node else '?'}: "
                                   f"{cause[-1] if cause else type(exc).__name__}. Every node of the cluster needs "
                                   f"minichess-envs {_version()} and its extras installed, as in the driver's "
                                   f"environment (docs/scale.md)") from None
            if kind == "start":  # it never ran a job: only the actor to replace
                self._replace(k, type(exc).__name__)
                return []
            return [(k, "lost", type(exc).__name__)]
        except RayTaskError as exc:  # the player raised
            del self._futures[k]
            return [(k, "error", str(exc))]
        if kind == "job":
            del self._futures[k]
            return [(k, "ok", value)]
        del self._starting[k]
        status, info = value
        if status == "error":
            raise RuntimeError(f"a Ray worker's player failed on node {info['node']}:\n{info['traceback']}")
        if info["minichess-envs"] != _version():
            raise ClusterError(f"the Ray node {info['node']} runs minichess-envs {info['minichess-envs']}, this "
                               f"process {_version()}: install the same version on every node (docs/scale.md)")
        self.nodes.add(info["node"])
        return [(k, "started", None)]

    def stop(self) -> None:
        """End the workers (a pool cannot be used afterwards); jobs in flight are abandoned."""
        if self.ray:
            import ray
            for actor in self.workers:
                ray.kill(actor)
            return
        for connection in self._connections:
            with contextlib.suppress(OSError):
                connection.send(None)
        for process, connection in zip(self.workers, self._connections):
            process.join(timeout=5 if self._jobs is None else 0)
            if process.is_alive():
                process.terminate()
                process.join()
            connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class RayWorker:
    """A Ray actor around ``make_player(settings)``: :meth:`versions` says that it started (and what its node runs),
    :meth:`play` answers a job."""

    def __init__(self, make_player: Callable, settings):
        try:
            self.player, self.failure = make_player(settings), None
        except Exception:  # reported by versions(): a broken player must not look like a lost worker
            self.player, self.failure = None, traceback.format_exc()

    def versions(self) -> tuple[str, dict]:
        import ray
        info = {"node": ray.util.get_node_ip_address(), "minichess-envs": _version(), "traceback": self.failure}
        return ("error" if self.failure else "ok"), info

    def play(self, shared, job):
        return self.player.play(shared, job)


def connect_ray(address: str) -> None:
    """Join the Ray cluster at ``address`` (``host:port``, ``"auto"``, or ``"local"``: start one in this process)
    unless this process has; a :class:`ClusterError` that names the problem when the address is malformed or cannot
    be reached, the cluster refuses this process's token, or it runs another Ray or Python."""
    import ray
    if ray.is_initialized():
        return
    if not isinstance(address, str) or not address:
        raise ClusterError(f"ray_address must be a Ray address (host:port), \"auto\" or \"local\", not {address!r}")
    if address not in ("local", "auto") and not address.startswith("ray://"):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ClusterError(f"ray_address {address!r} is not host:port (a head's address, e.g. 10.0.0.1:6379)")
        try:  # Ray itself retries for minutes before it gives up on an address
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
        except OSError as exc:
            raise ClusterError(f"cannot reach a Ray cluster at {address} ({exc.strerror or exc}): start its head "
                               f"with `ray start --head --port {port}` there, or check the address and that the "
                               f"port is open (docs/scale.md)") from None
    import logging
    try:
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
    except (ConnectionError, RuntimeError) as exc:  # Ray wraps its reasons in "Failed to connect to Ray cluster"
        causes = []
        while exc is not None and exc not in causes:
            causes.append(exc)
            exc = exc.__cause__ or exc.__context__
        text = " ".join(" ".join(str(c).split()) for c in causes)
        if any(isinstance(c, ray.exceptions.AuthenticationError) for c in causes) or "InvalidAuthToken" in text:
            raise ClusterError(f"the Ray cluster at {address} refused this process's token: set RAY_AUTH_MODE=token "
                               f"and RAY_AUTH_TOKEN_PATH to the cluster's token file (docs/scale.md)") from None
        mismatch = [" ".join(str(c).split()) for c in causes if "Version mismatch" in str(c)]
        if mismatch:  # Ray's own check of the head against this process
            raise ClusterError(f"the Ray cluster at {address} runs another Ray or Python than this process: "
                               f"{mismatch[0]}. Install ray=={ray.__version__} on Python {sys.version.split()[0]} "
                               f"on every node (docs/scale.md)") from None
        raise ClusterError(f"cannot join the Ray cluster at {address}: {' '.join(str(causes[-1]).split())}") from None


def _version() -> str:
    import minichess_envs
    return minichess_envs.__version__


def cluster_cpus() -> int:
    """The CPUs of the Ray cluster this process has joined (a local one started with this machine's cores if none)."""
    import ray
    if not ray.is_initialized():
        connect_ray("local")
    return int(ray.cluster_resources().get("CPU", 0))


def _cluster_state() -> str:
    import ray
    alive = [n for n in ray.nodes() if n.get("Alive")]
    return (f"{len(alive)} live node(s) with {ray.cluster_resources().get('CPU', 0):g} CPUs, "
            f"{ray.available_resources().get('CPU', 0):g} free")


def worker_loop(connection, make_player: Callable, settings) -> None:
    """A local worker: build the player, then answer ``(shared, job)`` with ``("ok", result)`` or ``("error",
    traceback)`` until ``None`` or the pipe closes, then close the player (engines). Ctrl-C is left to the pool's
    process, which stops the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        player, failure = make_player(settings), None
    except Exception:  # reported with the first job: a broken player must not look like a lost worker
        player, failure = None, traceback.format_exc()
    try:
        while True:
            try:
                message = connection.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            if failure is not None:
                connection.send(("error", failure))
                continue
            try:
                reply = ("ok", player.play(*message))
            except Exception:
                reply = ("error", traceback.format_exc())
            connection.send(reply)
    finally:
        if callable(getattr(player, "close", None)):
            player.close()
