"""One pool of persistent workers for all long work (self-play, arena games, engine games): local processes or Ray
actors. A worker builds ``make_player(settings)`` once (importable at module level, as spawn and Ray need) and
answers jobs with ``player.play(shared, job)``; ``shared`` is sent with every submission (network weights, or
``None``). A worker that dies is replaced and its job sent again, so a job's result must depend on the job alone."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import signal
import traceback
from typing import Callable, Iterator, Sequence


class WorkerPool:
    """``workers`` workers, local processes or Ray actors (``ray_address``: an address or ``"local"``). Jobs go to
    idle workers in order; at most ``max_restarts`` workers are replaced per submission; a player's exception ends
    the collection as a ``RuntimeError`` with its traceback."""

    def __init__(self, make_player: Callable, settings, workers: int, ray_address: str | None = None,
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
        self._jobs = None  # the jobs submitted and not yet collected
        for k in range(workers):
            self._start(k)

    def _start(self, k: int) -> None:
        if self.ray:
            self.workers[k] = self._actor_class.remote(self.settings)
            return
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=worker_loop, args=(theirs, self.make_player, self.settings), daemon=True,
                                        name=f"worker {k}")
        process.start()
        theirs.close()  # only the worker holds its end now: its exit reads as EOF here
        self.workers[k], self._connections[k] = process, ours

    def _replace(self, k: int, cause: str) -> None:
        if not self.ray:  # a lost process: its exit code says why
            self.workers[k].join(timeout=5)
            cause += f"worker {k} exited with code {self.workers[k].exitcode}"
        self._failures += 1
        if self._failures > self.max_restarts:
            raise RuntimeError(f"{self._failures} worker failures in one submission, more than "
                               f"max_restarts={self.max_restarts}: giving up (last: {cause})")
        if not self.ray:
            self._connections[k].close()
        self._start(k)
        self.restarts += 1

    def play(self, shared, jobs: Sequence) -> list:
        """Every job played with ``shared``; the results in job order."""
        self.submit(shared, jobs)
        return self.collect()

    def submit(self, shared, jobs: Sequence) -> None:
        """Start the jobs (job ``k`` on worker ``k`` while there are idle workers) and return at once; one
        submission at a time: :meth:`collect` or :meth:`results` takes its results."""
        if self._jobs is not None:
            raise RuntimeError("jobs are in flight: collect them before submitting more")
        self._shared, self._jobs, self._failures = shared, list(jobs), 0
        self._next, self._running = 0, {}  # worker -> the job index it plays
        if self.ray:
            import ray
            self._shared_ref, self._futures = ray.put(shared), {}
        for k in range(min(len(self.workers), len(self._jobs))):
            self._send(k)

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
            while self._running:
                for k, status, value in self._finished():
                    i = self._running.pop(k)
                    if status == "lost":  # replaced: the same job again
                        self._replace(k, value)
                        self._send(k, i)
                        continue
                    if status == "error":  # the others are still collected: no stale answer stays in a pipe
                        errors.append(f"worker {k} failed:\n{value}")
                    else:
                        yield i, value
                    if not errors and self._next < len(self._jobs):
                        self._send(k)
            if errors:
                raise RuntimeError("\n".join(errors))
        finally:
            self._jobs = None

    def _send(self, k: int, i: int | None = None) -> None:
        """Job ``i`` (default: the next one) to worker ``k``."""
        if i is None:
            i, self._next = self._next, self._next + 1
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
        the player's traceback, or ``"lost"`` and the cause."""
        if self.ray:
            import ray
            from ray.exceptions import RayActorError
            owners = {future: k for k, future in self._futures.items()}
            ready, _ = ray.wait(list(owners), num_returns=1)
            k = owners[ready[0]]
            del self._futures[k]
            try:
                return [(k, "ok", ray.get(ready[0]))]
            except RayActorError as exc:  # the actor died or its node was lost
                return [(k, "lost", type(exc).__name__)]
        waiting = {self._connections[k]: k for k in self._running}
        out = []
        for connection in multiprocessing.connection.wait(list(waiting)):
            try:
                out.append((waiting[connection], *connection.recv()))
            except (EOFError, OSError):  # the worker died before it answered
                out.append((waiting[connection], "lost", ""))
        return out

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
