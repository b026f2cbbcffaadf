"""Self-play in worker processes (local, or Ray actors): one share of an iteration's games per worker, each
with its own seed (:func:`share_jobs`), so a run is the same for a given number of workers and a share replayed
after its worker was lost gives the same games. A worker builds ``make_player(settings)`` once (importable at
module level) and calls ``player.play(weights, job)``, ``weights`` a state dict of numpy arrays."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import multiprocessing
import multiprocessing.connection
import signal
import time
import traceback
from typing import Callable, Sequence

import numpy as np


def share_jobs(items: Sequence, workers: int, rng: np.random.Generator) -> list[tuple[list, int]]:
    """``items`` in up to ``workers`` contiguous shares, each with a seed from ``rng``; the seeds are drawn
    before any share is played, so a replayed share does not change the loop's random stream."""
    shares = [share for share in np.array_split(np.arange(len(items)), max(1, workers)) if len(share)]
    return [([items[i] for i in share], int(rng.integers(2**31))) for share in shares]


class SelfPlaySchedule:
    """A loop's self-play on a :class:`SelfPlayPool` of ``make_player(asdict(config))``, the starts from
    ``draw_items(rng)``. With ``overlap`` the next iteration's games are submitted as soon as this one's are
    collected; games in flight are checkpointed and ``saved``'s submitted again, as if the run was never cut."""

    def __init__(self, make_player: Callable, config, draw_items: Callable[[np.random.Generator], Sequence],
                 saved: dict | None = None):
        scale = config.scale
        self.pool = SelfPlayPool(make_player, dataclasses.asdict(config), scale.workers, scale.ray_address)
        self.draw_jobs = lambda rng: share_jobs(draw_items(rng), scale.workers, rng)
        self.overlap = scale.overlap
        self.in_flight = None  # (generator state before the draw, weights) of the submitted games
        if saved is not None and "in_flight_rng" in saved and self.overlap:
            draw = np.random.default_rng()  # a copy: the loop's generator has moved past these draws
            draw.bit_generator.state = saved["in_flight_rng"]
            self._submit({k: v.numpy() for k, v in saved["in_flight_weights"].items()}, draw)

    def _submit(self, weights: dict, rng: np.random.Generator) -> None:
        state = copy.deepcopy(rng.bit_generator.state)
        self.pool.submit(weights, self.draw_jobs(rng))
        self.in_flight, self.submitted = (state, weights), time.perf_counter()

    def games(self, net, rng: np.random.Generator) -> tuple[list, float]:
        """This iteration's results from the pool (share order) and the seconds from their submission to
        their collection; with ``overlap``, the next iteration's games are submitted before returning."""
        if self.in_flight is None:
            self._submit(numpy_weights(net), rng)
        outcomes = self.pool.collect()
        seconds = time.perf_counter() - self.submitted
        self.in_flight = None
        if self.overlap:
            self._submit(numpy_weights(net), rng)
        return outcomes, seconds

    def checkpoint(self) -> dict:
        """The tensors a checkpoint needs to play the games in flight again (none without overlap)."""
        if self.in_flight is None:
            return {}
        import torch
        state, weights = self.in_flight
        return {"in_flight_rng": state, "in_flight_weights": {k: torch.from_numpy(v) for k, v in weights.items()}}


def numpy_weights(net) -> dict:
    """The network's state dict as numpy arrays, copied: a CPU tensor's array shares its memory (training goes on)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}


class SelfPlayPool:
    """``workers`` self-play workers, local processes or Ray actors (``ray_address``: an address or ``"local"``);
    job ``k`` goes to worker ``k``. A worker that dies is replaced and its job sent again, at most ``max_restarts``
    times a submission; a player's exception ends the collection as a ``RuntimeError`` with its traceback."""

    def __init__(self, make_player: Callable, settings: dict, workers: int, ray_address: str | None = None,
                 max_restarts: int = 3):
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        self.make_player, self.settings, self.max_restarts = make_player, settings, max_restarts
        self.restarts = 0  # workers replaced since the pool started
        self.ray = ray_address is not None
        if self.ray:
            import ray
            if not ray.is_initialized():
                ray.init(address=ray_address, ignore_reinit_error=True, include_dashboard=False,
                         log_to_driver=False)
            self._actor_class = ray.remote(num_cpus=1)(make_player)
        else:
            self._context = multiprocessing.get_context("spawn")  # no fork of torch's threads or engine pipes
            self._connections: list = [None] * workers
        self.workers: list = [None] * workers  # processes or actor handles
        self._in_flight = None  # (weights, jobs) submitted and not yet collected
        self._failures = 0  # workers lost while playing the jobs in flight
        for k in range(workers):
            self._start(k)

    @property
    def pids(self) -> list[int]:
        """The local worker processes' ids (empty for Ray actors)."""
        return [] if self.ray else [p.pid for p in self.workers]

    def _start(self, k: int) -> None:
        if self.ray:
            self.workers[k] = self._actor_class.remote(self.settings)
            return
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=worker_loop, args=(theirs, self.make_player, self.settings), daemon=True,
                                        name=f"self-play worker {k}")
        process.start()
        theirs.close()  # only the worker holds its end now: its exit reads as EOF here
        self.workers[k], self._connections[k] = process, ours

    def _replace(self, k: int, cause: str) -> None:
        if not self.ray:  # a lost process: its exit code says why
            self.workers[k].join(timeout=5)
            cause += f"worker {k} exited with code {self.workers[k].exitcode}"
        self._failures += 1
        if self._failures > self.max_restarts:
            raise RuntimeError(f"{self._failures} self-play worker failures in one iteration, more than "
                               f"max_restarts={self.max_restarts}: giving up (last: {cause})")
        if not self.ray:
            self._connections[k].close()
        self._start(k)
        self.restarts += 1

    def play(self, weights: dict, jobs: list[tuple]) -> list:
        """Each job played by its own worker with ``weights``; the results in job order."""
        self.submit(weights, jobs)
        return self.collect()

    def submit(self, weights: dict, jobs: list[tuple]) -> None:
        """Start job ``k`` on worker ``k`` and return at once (one submission at a time; :meth:`collect` waits)."""
        if self._in_flight is not None:
            raise RuntimeError("games are in flight: collect them before submitting more")
        if len(jobs) > len(self.workers):
            raise ValueError(f"{len(jobs)} jobs for {len(self.workers)} workers: at most one job per worker")
        self._in_flight, self._failures, self._results = (weights, jobs), 0, {}
        if self.ray:
            import ray
            self._shared = ray.put(weights)
            self._futures = {k: self.workers[k].play.remote(self._shared, job) for k, job in enumerate(jobs)}
        else:
            self._waiting = {}  # connection -> job index
            for k in range(len(jobs)):
                self._send(k)

    def collect(self) -> list:
        """The results of the submitted jobs, in job order, once all are done."""
        if self._in_flight is None:
            raise RuntimeError("no games in flight: submit some first")
        try:
            self._collect_ray() if self.ray else self._collect_local()
            return [self._results[k] for k in range(len(self._in_flight[1]))]
        finally:
            self._in_flight = None

    def _send(self, k: int) -> None:
        weights, jobs = self._in_flight
        while True:
            try:
                self._connections[k].send((weights, jobs[k]))
                self._waiting[self._connections[k]] = k
                return
            except OSError as exc:  # the worker is gone (a broken pipe)
                self._replace(k, f"{type(exc).__name__}, ")

    def _collect_local(self) -> None:
        errors = []
        while self._waiting:
            for connection in multiprocessing.connection.wait(list(self._waiting)):
                k = self._waiting.pop(connection)
                try:
                    status, value = connection.recv()
                except (EOFError, OSError):  # the worker died before it answered
                    self._replace(k, "")
                    self._send(k)
                    continue
                if status == "error":  # the others are still collected: no stale answer stays in a pipe
                    errors.append(f"self-play worker {k} failed:\n{value}")
                else:
                    self._results[k] = value
        if errors:
            raise RuntimeError("\n".join(errors))

    def _collect_ray(self) -> None:
        import ray
        from ray.exceptions import RayActorError
        while self._futures:
            for k, future in list(self._futures.items()):
                try:
                    self._results[k] = ray.get(future)
                    del self._futures[k]
                except RayActorError as exc:  # the actor died or its node was lost
                    self._replace(k, type(exc).__name__)
                    self._futures[k] = self.workers[k].play.remote(self._shared, self._in_flight[1][k])

    def stop(self) -> None:
        """End the workers (a pool cannot be used afterwards); games in flight are abandoned."""
        if self.ray:
            import ray
            for actor in self.workers:
                ray.kill(actor)
            return
        for connection in self._connections:
            with contextlib.suppress(OSError):
                connection.send(None)
        for process, connection in zip(self.workers, self._connections):
            process.join(timeout=5 if self._in_flight is None else 0)
            if process.is_alive():
                process.terminate()
                process.join()
            connection.close()


def worker_loop(connection, make_player: Callable, settings: dict) -> None:
    """A local worker: build the player, then answer ``(weights, job)`` with ``("ok", result)`` or ``("error",
    traceback)`` until ``None`` or the pipe closes. Ctrl-C is left to the pool's process, which stops the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        player, failure = make_player(settings), None
    except Exception:  # reported with the first job: a broken player must not look like a lost worker
        player, failure = None, traceback.format_exc()
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
        weights, job = message
        try:
            reply = ("ok", player.play(weights, job))
        except Exception:
            reply = ("error", traceback.format_exc())
        connection.send(reply)

