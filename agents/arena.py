"""Games between agents: single games, matches, round-robin tournaments, in parallel if asked.

>>> from agents import GreedyAgent, RandomAgent
>>> match = play_match(GreedyAgent(), RandomAgent(), "gardner", games=10, seed=0)
>>> match.tally("greedy").score                         # doctest: +SKIP
0.9

Rules of a game
    Each ply the side to move's agent gets ``act(observation, action_mask,
    position)``: the default observation encoding of the variant, the legal-
    action mask, and the position itself (a copy, so an agent cannot change the
    game). The game ends when the rules end it (``position.outcome()``) or at
    the ply limit (the variant's ``ply_limit`` by default). The environments
    *truncate* there; the arena must score every game, so it adjudicates a
    draw and labels it ``"ply limit"`` (the PGN ``Termination`` tag and
    :attr:`GameRecord.termination`).

Illegal moves
    By default an illegal action raises :class:`IllegalMoveError` naming the
    agent, the action and the position: an agent that ignores its mask has a
    bug worth seeing. With ``illegal="forfeit"`` the offender loses the game
    instead (termination ``"illegal move"``), so one broken checkpoint cannot
    stop a leaderboard.

Seeds
    Game ``i`` of a match with seed ``s`` has seed ``game_seed(s, i)``; at its
    start each agent gets ``reset(seed)`` with a seed derived from it and its
    color. Every game depends only on its seed, so results are reproducible
    and do not depend on the number of worker processes.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.util
import os
import pickle
import sys
import zlib
from typing import Callable, Iterable, Sequence

import numpy as np

from agents.ratings import wilson_interval
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, WHITE, IllegalMoveError, Position
from minichess_envs.pgn import game_pgn
from minichess_envs.players import check_player, legal_action, player_choice, player_name
from minichess_envs.variants import get_variant

RESULTS = ("1-0", "1/2-1/2", "0-1")
PLY_LIMIT = "ply limit"
ILLEGAL_MOVE = "illegal move"


def termination_name(outcome) -> str:
    """How a game ended, for records and PGN: ``"checkmate"``, ``"insufficient material"``, ...;
    ``"ply limit"`` when ``outcome`` is ``None`` (the game was stopped)."""
    return PLY_LIMIT if outcome is None else outcome.termination.name.lower().replace("_", " ")


def game_seed(match_seed: int, index: int) -> int:
    """The seed of game ``index`` of a match (a 63-bit integer)."""
    return int(np.random.SeedSequence([match_seed, index]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _agent_seed(seed: int, color: int) -> int:
    return int(np.random.SeedSequence([seed, color]).generate_state(1, np.uint64)[0] >> np.uint64(1))


@dataclasses.dataclass(frozen=True)
class GameRecord:
    """One finished game: of the arena (:func:`play_game`) or of AlphaZero's self-play."""

    variant: str
    white: str
    black: str
    result: str  # "1-0", "1/2-1/2" or "0-1"
    termination: str  # see termination_name: "checkmate", ..., "ply limit", "illegal move"
    plies: int  # moves played from start_fen
    moves: tuple[str, ...]  # UCI, from start_fen
    start_fen: str
    seed: int | None = None  # the game's own seed (arena games have one)
    round: str = "?"  # PGN round
    pgn: str | None = None

    def score(self, player: str) -> float:
        """Points of ``player`` (1, 0.5 or 0)."""
        white_points = {"1-0": 1.0, "1/2-1/2": 0.5, "0-1": 0.0}[self.result]
        if player == self.white:
            return white_points
        if player == self.black:
            return 1.0 - white_points
        raise ValueError(f"{player!r} did not play this game ({self.white} vs {self.black})")


def play_game(
    white,
    black,
    variant: str = "gardner",
    seed: int = 0,
    *,
    start_fen: str | None = None,
    ply_limit: int | None = None,
    opening_plies: int = 0,
    illegal: str = "raise",
    pgn: bool = True,
    event: str | None = None,
    round: str = "1",
    encoding: ObservationEncoding | None = None,
) -> GameRecord:
    """Play one game; ``white`` and ``black`` are agents (or functions ``position -> move``).

    ``opening_plies`` first plays that many uniformly random moves (from the
    game's seed) for both sides, so that deterministic agents (engines at a
    fixed node count) do not repeat one game over and over.
    """
    if illegal not in ("raise", "forfeit"):
        raise ValueError(f"illegal must be 'raise' or 'forfeit', not {illegal!r}")
    v = get_variant(variant)
    players = (white, black)
    for player in players:
        check_player(player)
    names = tuple(player_name(p) for p in players)
    limit = v.ply_limit if ply_limit is None else int(ply_limit)
    encoding = encoding or ObservationEncoding(v)
    position = Position(v, start_fen)
    for color, player in enumerate(players):
        if hasattr(player, "reset"):
            player.reset(_agent_seed(seed, color))
    opening = np.random.default_rng(_agent_seed(seed, 2))
    while position.ply < min(opening_plies, limit) and position.outcome() is None:
        actions = position.legal_actions()
        position.push_action(actions[opening.integers(len(actions))])
    outcome, result, termination = position.outcome(), None, None
    while outcome is None and position.ply < limit:
        mover = position.turn
        mask = position.action_mask()
        choice = player_choice(players[mover], position, encoding, mask)
        try:
            action = legal_action(position, choice, f"{names[mover]} ({COLOR_NAMES[mover]})", mask)
        except IllegalMoveError:
            if illegal == "raise":
                raise
            result, termination = ("0-1" if mover == WHITE else "1-0"), ILLEGAL_MOVE
            break
        position.push_action(action)
        outcome = position.outcome()
    if termination is None:
        result, termination = ("1/2-1/2" if outcome is None else outcome.result()), termination_name(outcome)
    text = None
    if pgn:
        text = game_pgn(position, {
            "Event": event or f"minichess-envs arena: {v.name}",
            "Round": round,
            "White": names[0],
            "Black": names[1],
            "Result": result,
            "Termination": termination,
            "PlyCount": str(position.ply),
            "Seed": str(seed),
            **({"OpeningPlies": str(opening_plies)} if opening_plies else {}),
        })
    return GameRecord(v.name, names[0], names[1], result, termination, position.ply,
                      tuple(m.uci() for m in position.move_stack), position.root_fen, seed, round, text)


# -- matches and tournaments -----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Tally:
    """Wins, draws and losses of one player, with its score and the score's Wilson interval."""

    wins: int
    draws: int
    losses: int
    confidence: float = 0.95

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson interval of the score (draws as half points)."""
        return wilson_interval(self.wins + 0.5 * self.draws, self.games, self.confidence)

    def rate_interval(self, which: str) -> tuple[float, float]:
        """Wilson interval of the ``"wins"``, ``"draws"`` or ``"losses"`` rate."""
        return wilson_interval(getattr(self, which), self.games, self.confidence)

    def __str__(self) -> str:
        low, high = self.interval
        return f"+{self.wins} ={self.draws} -{self.losses} ({100 * self.score:.1f}% [{100 * low:.1f}, {100 * high:.1f}])"


def tally(games: Iterable[GameRecord], player: str, opponent: str | None = None, color: str | None = None) -> Tally:
    """``player``'s results over ``games`` (only against ``opponent`` / as ``color``, if given)."""
    if color not in (None, "white", "black"):
        raise ValueError(f"color must be 'white', 'black' or None, not {color!r}")
    w = d = l = 0
    for g in games:
        if player not in (g.white, g.black) or (opponent and opponent not in (g.white, g.black)):
            continue
        if color and (g.white if color == "white" else g.black) != player:
            continue
        s = g.score(player)
        w, d, l = w + (s == 1), d + (s == 0.5), l + (s == 0)
    return Tally(w, d, l)


def color_tally(games: Iterable[GameRecord]) -> Tally:
    """White's results over ``games`` (wins = White wins, losses = Black wins): the color balance."""
    w = d = l = 0
    for g in games:
        w, d, l = w + (g.result == "1-0"), d + (g.result == "1/2-1/2"), l + (g.result == "0-1")
    return Tally(w, d, l)


@dataclasses.dataclass
class MatchResult:
    """The games of one pairing; player ``a`` has White in the even-numbered games."""

    a: str
    b: str
    games: list[GameRecord]

    def tally(self, player: str | None = None, color: str | None = None) -> Tally:
        return tally(self.games, player or self.a, color=color)

    def summary(self) -> str:
        lines = [f"{self.a} vs {self.b}: {self.tally()}"]
        for color in ("white", "black"):
            lines.append(f"  {self.a} as {color}: {self.tally(color=color)}")
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class _Task:
    pairing: int
    index: int
    white: int  # indices into the agent list
    black: int
    seed: int
    round: str
    start_fen: str | None = None  # an opening of the tournament's list (else game_options decide)


def pairing_seed(seed: int, a: str, b: str) -> int:
    """Seed of the match between the agents named ``a`` and ``b`` (independent of who else plays)."""
    return int(np.random.SeedSequence([seed, zlib.crc32(a.encode()), zlib.crc32(b.encode())])
               .generate_state(1, np.uint64)[0] >> np.uint64(1))


def run_tournament(
    agents: Sequence,
    variant: str = "gardner",
    games: int = 50,
    seed: int = 0,
    *,
    pairings: Sequence[tuple[int, int]] | None = None,
    openings: Sequence[str] | None = None,
    workers: int = 1,
    progress: Callable[[GameRecord, int, int], None] | None = None,
    **game_options,
) -> list[MatchResult]:
    """Play ``games`` games for every pairing (default: round-robin), colors alternating.

    :param agents: agents with distinct names.
    :param pairings: ``(i, j)`` index pairs to play (default: all ``i < j``).
    :param openings: start FENs; games ``2m`` and ``2m + 1`` of every pairing start from
        opening ``m`` (cycling), one with each color, so an unbalanced opening favours nobody.
    :param workers: processes to spread the games over (1: play here). Each
        worker gets its own copy of every agent (engines start their own process).
    :param progress: called as ``progress(record, done, total)`` after each game.
    :param game_options: passed to :func:`play_game` (``ply_limit``, ``opening_plies``, ``illegal``,
        ``pgn``, ``start_fen``).
    :returns: one :class:`MatchResult` per pairing, games in order.
    """
    agents = list(agents)
    for agent in agents:
        check_player(agent)
    names = [player_name(a) for a in agents]
    if len(set(names)) < len(names):
        raise ValueError(f"agent names must be distinct (they label games and ratings): {names}")
    if pairings is None:
        pairings = [(i, j) for i in range(len(agents)) for j in range(i + 1, len(agents))]
    tasks = []
    for p, (i, j) in enumerate(pairings):
        s = pairing_seed(seed, names[i], names[j])
        for k in range(games):
            white, black = (i, j) if k % 2 == 0 else (j, i)
            opening = openings[(k // 2) % len(openings)] if openings else None  # both colors per opening
            tasks.append(_Task(p, k, white, black, game_seed(s, k), f"{p + 1}.{k + 1}", opening))
    game_options = {"event": f"minichess-envs arena: {get_variant(variant).name}", **game_options}
    records: dict[tuple[int, int], GameRecord] = {}
    if workers <= 1 or len(tasks) <= 1:
        for n, task in enumerate(tasks, 1):
            records[task.pairing, task.index] = _play_task(agents, variant, game_options, task)
            if progress:
                progress(records[task.pairing, task.index], n, len(tasks))
    else:
        # Agents travel pickled, so a copy never shares an engine process with the parent.
        blob = pickle.dumps(agents)
        ctx = multiprocessing.get_context()
        with ctx.Pool(min(workers, len(tasks)), _init_worker, (blob, variant, game_options)) as pool:
            chunk = max(1, min(8, len(tasks) // (4 * workers)))
            for n, (task, record) in enumerate(pool.imap_unordered(_worker_play, tasks, chunksize=chunk), 1):
                records[task.pairing, task.index] = record
                if progress:
                    progress(record, n, len(tasks))
            pool.close()
            pool.join()
    return [
        MatchResult(names[i], names[j], [records[p, k] for k in range(games)])
        for p, (i, j) in enumerate(pairings)
    ]


def play_match(agent_a, agent_b, variant: str = "gardner", games: int = 50, seed: int = 0, *,
               workers: int = 1, progress=None, **game_options) -> MatchResult:
    """``games`` games between two agents, ``agent_a`` White in the even-numbered ones."""
    return run_tournament([agent_a, agent_b], variant, games, seed, workers=workers, progress=progress,
                          **game_options)[0]


def _play_task(agents, variant, game_options, task: _Task) -> GameRecord:
    if task.start_fen is not None:
        game_options = {**game_options, "start_fen": task.start_fen}
    return play_game(agents[task.white], agents[task.black], variant, task.seed, round=task.round, **game_options)


_WORKER: dict = {}


def _init_worker(blob: bytes, variant: str, game_options: dict) -> None:
    if "torch" in sys.modules:  # one thread per worker: the workers already use every core
        sys.modules["torch"].set_num_threads(1)
    agents = pickle.loads(blob)
    _WORKER.update(agents=agents, variant=variant, game_options=game_options)
    # Close engines when the pool shuts the worker down (atexit does not run in pool workers).
    multiprocessing.util.Finalize(None, close_agents, args=(agents,), exitpriority=10)


def _worker_play(task: _Task) -> tuple[_Task, GameRecord]:
    return task, _play_task(_WORKER["agents"], _WORKER["variant"], _WORKER["game_options"], task)


def close_agents(agents: Iterable) -> None:
    """Call ``close()`` on every agent that has one (engines)."""
    for agent in agents:
        close = getattr(agent, "close", None)
        if callable(close):
            close()


def all_games(matches: Iterable[MatchResult]) -> list[GameRecord]:
    return [g for m in matches for g in m.games]


def write_pgn(games: Iterable[GameRecord], path: str) -> int:
    """Write the games' PGN (those recorded with ``pgn=True``) to ``path``; returns how many."""
    n = 0
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        for g in games:
            if g.pgn:
                f.write(g.pgn + "\n")
                n += 1
    return n


def rating_results(games: Iterable[GameRecord]) -> list[tuple[str, str, float]]:
    """``(white, black, white's score)`` per game, the input of :func:`agents.ratings.elo_mle`."""
    return [(g.white, g.black, g.score(g.white)) for g in games]
