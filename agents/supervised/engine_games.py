"""Engine self-play games for supervised learning, written in chunks as dataset shards that an interrupted run
completes (docs/supervised.md, "Engine games").

>>> generate_games("data/gardner", "gardner", games=1000, nodes=100)   # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import time
from typing import Iterator

import numpy as np

from agents.runs import Progress, read_json
from agents.workers import WorkerPool
from agents.players.uci import UCIEngineAgent, default_engine, find_engine
from minichess_envs.dataset import RESULT_CODES, ShardWriter, list_shards, score_to_int, write_shard
from minichess_envs.engine import Position
from minichess_envs.positions import random_plies
from minichess_envs.variants import get_variant


@dataclasses.dataclass(frozen=True)
class GenerationSettings:
    """What to generate.

    :param opening_plies: random plies before the engine takes over; an opening is kept only when the engine
        scores it within ``balance_cp`` centipawns of equal (up to ``opening_tries`` draws per game).
    :param random_opponent: share of the games in which one side (chosen per game) plays uniformly random moves."""

    variant: str = "gardner"
    games: int = 1000
    nodes: int | None = 100
    depth: int | None = None
    engine: str | None = None  # default: stockfish for chess, else fairy-stockfish
    opening_plies: int = 4
    balance_cp: int = 150
    opening_tries: int = 20
    games_per_chunk: int = 50
    seed: int = 0
    ply_limit: int | None = None  # default: the variant's
    random_opponent: float = 0.0

    def __post_init__(self):
        get_variant(self.variant)
        if (self.nodes is None) == (self.depth is None):
            raise ValueError("give exactly one search budget: nodes or depth")
        if self.games < 1 or self.games_per_chunk < 1 or self.opening_plies < 0:
            raise ValueError("games and games_per_chunk must be positive, opening_plies not negative")
        if not 0.0 <= self.random_opponent <= 1.0:
            raise ValueError(f"random_opponent is a share in [0, 1], not {self.random_opponent}")

    @property
    def chunks(self) -> int:
        return -(-self.games // self.games_per_chunk)

    def chunk_games(self, chunk: int) -> range:
        """The indices of the games in chunk ``chunk``."""
        return range(chunk * self.games_per_chunk, min((chunk + 1) * self.games_per_chunk, self.games))


def balanced_opening(engine: UCIEngineAgent, variant: str, plies: int, rng: np.random.Generator,
                     balance_cp: int, tries: int) -> Position:
    """A position after ``plies`` random moves that ``engine`` scores within ``balance_cp`` of equal: the first of up
    to ``tries`` openings that is, else the most balanced; openings that end the game are never kept."""
    best, best_score = Position(variant), None
    for _ in range(tries):
        position = random_plies(variant, plies, rng)
        if position.outcome() is not None:
            continue
        result = engine.search(position)
        score = abs(score_to_int(result.cp, result.mate))
        if best_score is None or score < best_score:
            best, best_score = position, score
        if score <= balance_cp:
            break
    return Position(variant, best.fen())


def engine_game(engine: UCIEngineAgent, settings: GenerationSettings, index: int):
    """One game: ``(root_fen, actions, scores, result, targets)``; ``targets[i]``: whether ply ``i`` is the engine's
    move (a random mover's plies get score 0 and ``False``)."""
    rng = np.random.default_rng([settings.seed, index])
    engine.reset()
    position = balanced_opening(engine, settings.variant, settings.opening_plies, rng,
                                settings.balance_cp, settings.opening_tries)
    random_side = int(rng.integers(2)) if rng.random() < settings.random_opponent else None
    root_fen = position.fen()
    limit = settings.ply_limit or position.variant.ply_limit
    actions, scores, targets = [], [], []
    while position.outcome() is None and len(actions) < limit:
        if position.turn == random_side:
            legal = position.legal_actions()
            action, score = int(legal[rng.integers(len(legal))]), 0
        else:
            result = engine.search(position)
            action, score = position.move_to_action(result.move), score_to_int(result.cp, result.mate)
        actions.append(action)
        scores.append(score)
        targets.append(position.turn != random_side)
        position.push_action(action)
    outcome = position.outcome()
    return root_fen, actions, scores, outcome.result() if outcome is not None else "*", targets


_ENGINE: dict = {}  # one engine per process, started on its first chunk


@atexit.register
def close_engines() -> None:
    """Quit the engines this process started (before interpreter shutdown, so their reader threads end cleanly)."""
    while _ENGINE:
        _ENGINE.popitem()[1].close()


def _engine_for(settings: GenerationSettings) -> UCIEngineAgent:
    key = (settings.variant, settings.engine, settings.nodes, settings.depth)
    if key not in _ENGINE:
        budget = {"nodes": settings.nodes} if settings.nodes else {"depth": settings.depth}
        _ENGINE[key] = UCIEngineAgent(settings.variant, settings.engine, **budget)
    return _ENGINE[key]


def play_chunk(settings: GenerationSettings, chunk: int) -> tuple[int, list]:
    """The games of one chunk (game indices ``chunk * games_per_chunk`` onwards)."""
    engine = _engine_for(settings)
    return chunk, [engine_game(engine, settings, i) for i in settings.chunk_games(chunk)]


chunk_file = "games-{:06d}.npz".format


def generate_games(directory: str, settings: GenerationSettings, workers: int | None = None,
                   ray_address: str | None = None, progress: bool = True) -> dict:
    """Generate (or finish generating) ``settings.games`` games into ``directory``. Chunks already listed in the
    directory's manifest are skipped, so calling this again after an interruption completes the run. Returns a summary:
    games, positions (plies) and training examples (``targets``: the engine's moves) written now, seconds, and games/s
    and positions/s per worker; under ``"total"`` the same over every shard in ``directory`` (each manifest entry holds
    its shard's ``worker_seconds``)."""
    variant = get_variant(settings.variant)
    todo, workers = _chunks_to_do(directory, settings, [chunk_file(c) for c in range(settings.chunks)], workers)
    start, games, positions, targets = time.perf_counter(), 0, 0, 0
    done = settings.games - sum(len(settings.chunk_games(c)) for c in todo)
    bar = Progress(settings.games, "engine games", done, "game", progress)
    last = start
    for chunk, played in _run_jobs(play_chunk, [(settings, c) for c in todo], workers, ray_address):
        now = time.perf_counter()
        write_shard(os.path.join(directory, chunk_file(chunk)), variant,
                    [(fen, np.asarray(a, np.uint16), np.asarray(s, np.int16), RESULT_CODES[r], np.asarray(t, bool))
                     for fen, a, s, r, t in played], worker_seconds=(now - last) * workers)
        last = now
        games += len(played)
        positions += sum(len(a) for _, a, _, _, _ in played)
        targets += sum(int(np.sum(t)) for _, _, _, _, t in played)
        bar.update(done + games, f"{positions / (now - start):.0f} positions/s")
    bar.close()
    seconds = time.perf_counter() - start
    return {"games": games, "positions": positions, "targets": targets, "seconds": seconds, "workers": workers,
            "games_per_s_per_worker": games / seconds / workers if seconds and games else 0.0,
            "positions_per_s_per_worker": positions / seconds / workers if seconds and games else 0.0,
            "total": generation_total(directory)}


def generation_total(directory: str) -> dict:
    """Games, positions, targets and worker-seconds over every generated shard in ``directory``. The throughput
    (``games_per_s_per_worker``, ``positions_per_s_per_worker``) is ``None`` where some shard's cost is unknown (written
    before shards carried their cost, without a ``generation.json`` covering them)."""
    shards = [e for e in list_shards(directory) if e["file"].startswith("games-")]
    total = {"games": sum(e["games"] for e in shards), "positions": sum(e["positions"] for e in shards),
             "targets": sum(e.get("targets", e["positions"]) for e in shards)}
    costed = [e for e in shards if "worker_seconds" in e]
    seconds = sum(e["worker_seconds"] for e in costed)
    known = len(costed) == len(shards)
    # where generate_games kept its cost before each manifest entry carried it; read only for such folders
    old_path = os.path.join(directory, "generation.json")
    if not known and os.path.exists(old_path):
        old = read_json(old_path)
        uncosted = [e for e in shards if "worker_seconds" not in e]
        if old.get("complete") and old.get("games") == sum(e["games"] for e in uncosted):
            seconds, known = seconds + old["worker_seconds"], True
    known = known and seconds > 0
    return {**total, "worker_seconds": seconds if known else None,
            "games_per_s_per_worker": total["games"] / seconds if known else None,
            "positions_per_s_per_worker": total["positions"] / seconds if known else None}


def label_chunk(settings: GenerationSettings, chunk: int, fens: list[str]) -> tuple[int, list]:
    """The engine's ``(action, score)`` for each of ``fens`` (one chunk of :func:`label_positions`)."""
    engine = _engine_for(settings)
    engine.reset()
    labels = []
    for fen in fens:
        position = Position(settings.variant, fen)
        result = engine.search(position)
        labels.append((position.move_to_action(result.move), score_to_int(result.cp, result.mate)))
    return chunk, labels


def label_positions(directory: str, fens: list[str], results: list[str], settings: GenerationSettings,
                    prefix: str, workers: int | None = None, ray_address: str | None = None,
                    progress: bool = True) -> dict:
    """Label each position of ``fens`` with the engine's move and score, into ``directory`` as one-ply games. DAgger's
    labelling step (Ross, Gordon and Bagnell, AISTATS 2011): the positions are those a learnt policy reached, the labels
    the expert's. ``results[i]`` is the PGN result of the game through ``fens[i]`` (for the value target). Chunks of
    ``settings.games_per_chunk`` positions are written whole as shards ``{prefix}-NNNNNN.npz`` and skipped when already
    listed, so a repeated call completes an interrupted set. Returns the positions labelled now and the seconds
    taken."""
    if len(fens) != len(results):
        raise ValueError(f"{len(fens)} positions but {len(results)} results")
    variant = get_variant(settings.variant)
    size = settings.games_per_chunk
    name = f"{prefix}-{{:06d}}.npz".format
    todo, workers = _chunks_to_do(directory, settings, [name(c) for c in range(-(-len(fens) // size))], workers)
    jobs = [(settings, c, fens[c * size:(c + 1) * size]) for c in todo]
    start, labelled = time.perf_counter(), 0
    done = len(fens) - sum(len(j[2]) for j in jobs)
    bar = Progress(len(fens), "engine labels", done, "position", progress)
    for chunk, labels in _run_jobs(label_chunk, jobs, workers, ray_address):
        chunk_fens, chunk_results = fens[chunk * size:(chunk + 1) * size], results[chunk * size:(chunk + 1) * size]
        write_shard(os.path.join(directory, name(chunk)), variant,
                    [(fen, np.array([action], np.uint16), np.array([score], np.int16), RESULT_CODES[result])
                     for fen, result, (action, score) in zip(chunk_fens, chunk_results, labels)])
        labelled += len(labels)
        bar.update(done + labelled)
    bar.close()
    return {"positions": labelled, "seconds": time.perf_counter() - start, "workers": workers}


def _chunks_to_do(directory: str, settings: GenerationSettings, files: list[str], workers: int | None):
    """``(indices of the shard files not yet written, workers to run them)``, after checking the engine is installed
    (with how to install it) and removing half-written shards of a killed run."""
    find_engine(settings.engine or default_engine(settings.variant))
    os.makedirs(directory, exist_ok=True)
    ShardWriter(directory, get_variant(settings.variant))
    done = {e["file"] for e in list_shards(directory)}
    todo = [c for c, file in enumerate(files) if file not in done]
    return todo, max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))


class ChunkPlayer:
    """A worker of :class:`~agents.workers.WorkerPool` for :func:`_run_jobs`: runs ``job(*arguments)`` for each
    ``arguments`` it is sent, and quits its engines when the pool stops."""

    def __init__(self, job):
        self.job = job

    def play(self, shared, arguments: tuple):
        return self.job(*arguments)

    def close(self) -> None:
        close_engines()


def _run_jobs(job, arguments: list[tuple], workers: int, ray_address: str | None) -> Iterator:
    """``job(*a)`` for each ``a`` of ``arguments``: in this process, or on ``workers`` local processes or Ray actors
    (a lost one is replaced and its job run again); results in the order they finish."""
    if not arguments:
        return
    if workers == 1 and ray_address is None:
        try:
            for a in arguments:
                yield job(*a)
        finally:
            close_engines()
        return
    with WorkerPool(ChunkPlayer, job, workers, ray_address) as pool:  # engines are subprocesses: spawned, not forked
        pool.submit(None, arguments)
        for _, result in pool.results():
            yield result
