"""Self-play in worker processes: local processes, or Ray actors on a cluster.

The AlphaZero loop splits an iteration's games into one share per worker,
each share with its own seed drawn by the loop (:func:`share_jobs`), and get the results back in share
order. A run is therefore the same for a given number of workers, and a share played again after its
worker was lost gives the same games. A worker is a persistent process (or Ray actor) that builds its
player once, gets the learner's weights with every share, and runs torch on one thread: the search is
Python and C between small network calls, so one process per core is what uses the cores
(docs/alphazero.md, Devices).

A player is built in the worker as ``make_player(settings)`` (``make_player`` importable at module
level) and plays with ``player.play(weights, *job)``; ``weights`` is a state dict of numpy arrays.
"""

from __future__ import annotations

import copy
import dataclasses
import multiprocessing
import multiprocessing.connection
import signal
import time
import traceback
from typing import Callable, Sequence

import numpy as np


def check_workers(workers: int, ray_address: str | None, overlap: bool = False) -> None:
    """``ValueError`` unless ``workers`` is an integer >= 0 (0: self-play in the loop's process),
    ``ray_address`` None or an address, and ``overlap`` only with workers."""
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
        raise ValueError(f"workers must be an integer >= 0 (0: self-play in this process), got {workers!r}")
    if ray_address is not None and (not isinstance(ray_address, str) or not ray_address):
        raise ValueError(f"ray_address must be a Ray address, \"local\" or None, got {ray_address!r}")
    if overlap and workers == 0:
        raise ValueError("overlap needs workers > 0: the games of the next iteration are played in workers")


def share_jobs(items: Sequence, workers: int, rng: np.random.Generator) -> list[tuple[list, int]]:
    """``items`` in up to ``workers`` contiguous shares, each with a seed from ``rng``; the seeds are drawn
    before any share is played, so a replayed share does not change the loop's random stream."""
    shares = [share for share in np.array_split(np.arange(len(items)), max(1, workers)) if len(share)]
    return [([items[i] for i in share], int(rng.integers(2**31))) for share in shares]


class SelfPlaySchedule:
    """When a loop's self-play games are played on a :class:`SelfPlayPool`.

    Without ``overlap`` an iteration submits its games and waits for them. With ``overlap`` the next
    iteration's games are submitted as soon as this iteration's are collected, before the learner
    trains, so workers play while it trains (and while the loop evaluates and checkpoints); those games
    use the weights of one iteration before. ``draw_jobs(rng)`` draws an iteration's start positions and
    share seeds (:func:`share_jobs`). Games in flight at a checkpoint are saved as the generator state
    they were drawn from and the weights they are played with (:meth:`checkpoint`), so a resumed run
    submits the same games again (:meth:`resume`) and continues as the run that went straight through.
    """

    def __init__(self, pool: SelfPlayPool, draw_jobs: Callable[[np.random.Generator], list], overlap: bool):
        self.pool, self.draw_jobs, self.overlap = pool, draw_jobs, overlap
        self.in_flight = None  # (generator state before the draw, weights) of the submitted games
        self.submitted = 0.0

    @classmethod
    def start(cls, make_player: Callable, config, draw_items: Callable[[np.random.Generator], Sequence],
              saved: dict | None = None) -> SelfPlaySchedule:
        """A loop's schedule on a new pool of ``config.scale.workers`` players
        (``make_player(asdict(config))``, on ``config.scale.ray_address``): ``draw_items(rng)`` draws an iteration's items, split by
        :func:`share_jobs`; the games a checkpoint's tensors ``saved`` had in flight are submitted again."""
        scale = config.scale
        pool = SelfPlayPool(make_player, dataclasses.asdict(config), scale.workers, scale.ray_address)
        schedule = cls(pool, lambda rng: share_jobs(draw_items(rng), scale.workers, rng), scale.overlap)
        if saved is not None:
            schedule.resume(saved)
        return schedule

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

    def resume(self, tensors: dict) -> None:
        """Submit the games a checkpoint had in flight (if any): the same draws, the same weights."""
        if "in_flight_rng" in tensors and self.overlap:
            draw = np.random.default_rng()  # a copy: the loop's generator has moved past these draws
            draw.bit_generator.state = tensors["in_flight_rng"]
            self._submit({k: v.numpy() for k, v in tensors["in_flight_weights"].items()}, draw)


def numpy_weights(net) -> dict:
    """A copy of the network's state dict as numpy arrays (what workers are sent); a copy, because the
    arrays of a CPU tensor share its memory and training goes on while the games are in flight."""
    return {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}


def load_numpy_weights(net, weights: dict) -> None:
    import torch

    net.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in weights.items()})


class SelfPlayPool:
    """``workers`` self-play workers: local processes (``ray_address=None``) or Ray actors (``ray_address``
    an address, or ``"local"`` for a new local Ray instance).

    :meth:`play` sends job ``k`` to worker ``k`` and returns the results in job order (:meth:`submit`
    and :meth:`collect` do the same in two steps, so the caller can work while the games are played). A
    worker that dies (killed, out of memory, its node lost) is replaced and its job sent again, at most
    ``max_restarts`` times for one submission, then ``RuntimeError``. An exception raised by a player
    is not retried: it ends the collection as a ``RuntimeError`` carrying the worker's traceback.
    """

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
            self._actor_class = ray.remote(num_cpus=1)(RayPlayer)
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
            self.workers[k] = self._actor_class.remote(self.make_player, self.settings)
            return
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=worker_loop, args=(theirs, self.make_player, self.settings), daemon=True,
                                        name=f"self-play worker {k}")
        process.start()
        theirs.close()  # only the worker holds its end now: its exit reads as EOF here
        self.workers[k], self._connections[k] = process, ours

    def _replace(self, k: int, cause: str) -> None:
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
        """Start job ``k`` on worker ``k`` with ``weights`` and return at once; :meth:`collect` waits for
        the results. One submission is in flight at a time."""
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
                self.workers[k].join(timeout=5)
                self._replace(k, f"{type(exc).__name__}, worker {k} exited with code {self.workers[k].exitcode}")

    def _collect_local(self) -> None:
        errors = []
        while self._waiting:
            for connection in multiprocessing.connection.wait(list(self._waiting)):
                k = self._waiting.pop(connection)
                try:
                    status, value = connection.recv()
                except (EOFError, OSError):  # the worker died before it answered
                    self.workers[k].join(timeout=5)
                    self._replace(k, f"worker {k} exited with code {self.workers[k].exitcode}")
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
            try:
                connection.send(None)
            except OSError:
                pass
        for process, connection in zip(self.workers, self._connections):
            process.join(timeout=5 if self._in_flight is None else 0)
            if process.is_alive():
                process.terminate()
                process.join()
            connection.close()


def _player(make_player: Callable, settings: dict):
    import torch

    torch.set_num_threads(1)  # one process per core
    return make_player(settings)


def worker_loop(connection, make_player: Callable, settings: dict) -> None:
    """A local worker's loop: build the player, then answer ``(weights, job)`` messages with
    ``("ok", result)`` or ``("error", traceback)`` until ``None`` or the pool's end of the pipe closes.
    Ctrl-C is left to the pool's process, which stops the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        player, failure = _player(make_player, settings), None
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
            reply = ("ok", player.play(weights, *job))
        except Exception:
            reply = ("error", traceback.format_exc())
        connection.send(reply)


class RayPlayer:
    """A Ray actor holding one player."""

    def __init__(self, make_player: Callable, settings: dict):
        self.player = _player(make_player, settings)

    def play(self, weights: dict, job: tuple):
        return self.player.play(weights, *job)
