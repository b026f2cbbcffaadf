"""Games between agents, for every game of :func:`agents.games.new_game`: single games, matches, tournaments.

>>> match = play_match(GreedyAgent(), RandomAgent(), "gardner", games=10, seed=0)   # doctest: +SKIP
>>> match.tally("greedy").score                                                       # doctest: +SKIP

Players are agents or functions ``position -> move`` (:mod:`minichess_envs.players`); the first to move is recorded
as ``white``. A chess game stopped at the ply limit is a draw (``"ply limit"``); with ``illegal="forfeit"`` an
illegal move loses the game (``"illegal move"``) instead of raising. Game ``i`` of a match seeded ``s`` has seed
``game_seed(s, i)``, which draws its random opening plies and its agents' seeds (in ``lockstep``, see
:func:`run_tournament`, those of the agents that do not batch): results do not depend on the number of worker
processes, but for a batching agent that draws its moves at random.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import json
import os
import sys
import zlib
from typing import Callable, Iterable, Sequence

import numpy as np

from agents.base import Agent
from agents.games import SEAT_NAMES, ChessGame, Game, board_game, new_game
from agents.arena.ratings import wilson_interval
from agents.workers import WorkerPool
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, IllegalMoveError, Position
from minichess_envs.pgn import game_pgn
from minichess_envs.players import check_player, legal_action, player_choice, player_choices, player_name
from minichess_envs.variants import get_variant

WIN_RESULTS = ("1-0", "0-1")  # by the winner: the first player (White) or the second
PLY_LIMIT = "ply limit"
ILLEGAL_MOVE = "illegal move"
#: Games a lockstep part plays at once: enough positions for an efficient network call, few engine processes.
LOCKSTEP_GAMES = 32


def game_seed(*entropy: int) -> int:
    """A 63-bit seed drawn from ``entropy``: ``game_seed(s, i)`` is the seed of game ``i`` of a match seeded ``s``."""
    return int(np.random.SeedSequence(list(entropy)).generate_state(1, np.uint64)[0] >> np.uint64(1))


def pairing_seed(seed: int, a: str, b: str) -> int:
    """Seed of the match between the agents named ``a`` and ``b`` (independent of who else plays)."""
    return game_seed(seed, zlib.crc32(a.encode()), zlib.crc32(b.encode()))


@dataclasses.dataclass(frozen=True)
class GameRecord:
    """One finished game of the arena (:func:`play_game`, :func:`play_match`), of any game."""

    game: str  # a chess variant's name or a board game's (agents.games.new_game)
    white: str  # the player who moved first (White in chess)
    black: str
    result: str  # "1-0", "1/2-1/2" or "0-1" (first player's points first)
    termination: str  # chess: "checkmate", "insufficient material", ..., "ply limit"; board games: "win", "draw"
    plies: int  # moves played from the start
    moves: tuple[str, ...]  # chess: UCI from start_fen; board games: Game.action_name from the empty board
    start_fen: str | None  # chess: the FEN the game started from; board games: None
    seed: int | None = None  # the game's own seed (arena games have one)
    round: str = "?"  # PGN round
    pgn: str | None = None  # chess only
    final: str | None = None  # the final position: chess its FEN, a board game its repr

    def score(self, player: str) -> float:
        """Points of ``player`` (1, 0.5 or 0)."""
        white_points = {"1-0": 1.0, "1/2-1/2": 0.5, "0-1": 0.0}[self.result]
        if player == self.white:
            return white_points
        if player == self.black:
            return 1.0 - white_points
        raise ValueError(f"{player!r} did not play this game ({self.white} vs {self.black})")


# -- games -------------------------------------------------------------------------------


@dataclasses.dataclass
class _Board:
    """A game in play: its seed and round, who plays it, the actions' names so far and a forfeit, if any."""

    game: Game
    seed: int
    round: str
    names: tuple[str, str]  # the first player's and the second's
    seats: tuple[int, int]  # who moves first and second, as indices of the players asked
    moves: list[str] = dataclasses.field(default_factory=list)
    forfeit: str | None = None  # the result when a player forfeited

    @property
    def finished(self) -> bool:
        return self.forfeit is not None or self.game.is_over()

    @property
    def mover(self) -> int | None:
        """Which of the players asked is to move (``None`` once the game is over)."""
        return None if self.finished else self.seats[self.game.to_play()]

    def play(self, choice, mask, illegal: str, label: str | None = None) -> None:
        """Play ``choice`` if it is legal; else raise, or forfeit the game for the mover."""
        mover = self.game.to_play()
        seats = COLOR_NAMES if isinstance(self.game, ChessGame) else SEAT_NAMES
        try:
            action = legal_action(self.game.view(), choice, label or f"{self.names[mover]} ({seats[mover]})", mask)
        except IllegalMoveError:
            if illegal == "raise":
                raise
            self.forfeit = "0-1" if mover == 0 else "1-0"
            return
        self.moves.append(self.game.action_name(action))
        self.game.step(action)


def _start(game: str, seed: int, round: str, names: Sequence[str], seats: tuple[int, int], start_fen: str | None,
           ply_limit: int | None, opening_plies: int, encoding: ObservationEncoding | None) -> _Board:
    """Game ``game`` set up (from ``start_fen`` in chess) after ``opening_plies`` random plies of the seed."""
    if board_game(game):
        if start_fen is not None or ply_limit is not None or encoding is not None:
            raise ValueError(f"{game} starts from its empty board, has no ply limit and its own observation")
        played = new_game(game)
    else:
        v = get_variant(game)
        played = ChessGame(Position(v, start_fen), encoding or ObservationEncoding(v), ply_limit)
    board = _Board(played, seed, round, tuple(names), seats)
    opening = np.random.default_rng(game_seed(seed, 2))
    while board.game.plies < opening_plies and not board.game.is_over():
        actions = board.game.legal_actions()
        board.play(actions[opening.integers(len(actions))], None, "raise", "opening")
    return board


def chess_outcome(position: Position, ply_limit: int) -> tuple[str, str | None]:
    """``(result, termination)`` by the rules, a draw at ``ply_limit``; ``("*", None)`` while the game goes on."""
    outcome = position.outcome()
    if outcome is not None:
        return outcome.result(), outcome.termination.name.lower().replace("_", " ")
    if position.ply >= ply_limit:
        return "1/2-1/2", PLY_LIMIT
    return "*", None


def board_outcome(game) -> tuple[str, str | None]:
    """``(result, termination)`` of a board game: ``"win"`` or ``"draw"``; ``("*", None)`` while it goes on."""
    if not game.is_over():
        return "*", None
    winner = game.winner()
    return ("1/2-1/2", "draw") if winner is None else (WIN_RESULTS[winner], "win")


def _record(board: _Board, opening_plies: int, pgn: bool, event: str | None) -> GameRecord:
    game, names = board.game, board.names
    if board.forfeit:
        result, termination = board.forfeit, ILLEGAL_MOVE
    elif isinstance(game, ChessGame):
        result, termination = chess_outcome(game.position, game.ply_limit)
    else:
        result, termination = board_outcome(game)
    start_fen = text = None
    if not isinstance(game, ChessGame):
        final = repr(game)
    else:
        position = game.position
        start_fen, final = position.root_fen, position.fen()
        if pgn:
            text = game_pgn(position, {
                "Event": event or f"minichess-envs arena: {game.name}", "Round": board.round, "White": names[0],
                "Black": names[1], "Result": result, "Termination": termination, "PlyCount": str(position.ply),
                "Seed": str(board.seed), **({"OpeningPlies": str(opening_plies)} if opening_plies else {})})
    return GameRecord(game.name, names[0], names[1], result, termination, game.plies, tuple(board.moves),
                      start_fen, board.seed, board.round, text, final)


def play_game(white, black, game: str = "gardner", seed: int = 0, *, start_fen: str | None = None,
              ply_limit: int | None = None, opening_plies: int = 0, illegal: str = "raise", pgn: bool = True,
              event: str | None = None, round: str = "1", encoding: ObservationEncoding | None = None,
              names: Sequence[str] | None = None) -> GameRecord:
    """Play one game of ``game`` (a chess variant or a board game); ``white`` moves first.

    Each player is reset with a seed of its own derived from ``seed``, which also draws the ``opening_plies``
    uniformly random plies played first (so that deterministic agents do not repeat one game). ``start_fen``,
    ``ply_limit``, ``encoding`` (the agents' observation) and PGN are chess's; ``names`` label the players.
    """
    players = (white, black)
    for player in players:
        check_player(player)
    names = tuple(names or (player_name(p) for p in players))
    return next(_play_games(players, names, game, [_Task(0, 0, 0, 1, seed, round, start_fen)], False,
                            opening_plies=opening_plies, illegal=illegal, pgn=pgn, event=event, ply_limit=ply_limit,
                            encoding=encoding))[1]


# -- matches and tournaments -----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Tally:
    """Wins, draws and losses of one player, with its score and the score's Wilson interval."""

    wins: int
    draws: int
    losses: int

    @classmethod
    def count(cls, points: Iterable[float]) -> Tally:
        """The tally of one player's points per game (1, 0.5 or 0)."""
        counts = collections.Counter(points)
        return cls(counts[1], counts[0.5], counts[0])

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def not_lost(self) -> int:
        return self.wins + self.draws

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson interval of the score (draws as half points)."""
        return wilson_interval(self.wins + 0.5 * self.draws, self.games)

    def rate_interval(self, which: str) -> tuple[float, float]:
        """Wilson interval of the ``"wins"``, ``"draws"``, ``"losses"`` or ``"not_lost"`` rate."""
        return wilson_interval(getattr(self, which), self.games)

    def __str__(self) -> str:
        low, high = self.interval
        return (f"+{self.wins} ={self.draws} -{self.losses} "
                f"({100 * self.score:.1f}% [{100 * low:.1f}, {100 * high:.1f}])")


#: A seat by either of its names: chess's colors or a board game's order of play.
SEAT_ALIASES = {"white": "white", "black": "black", "first": "white", "second": "black"}


def tally(games: Iterable[GameRecord], player: str, opponent: str | None = None, color: str | None = None) -> Tally:
    """``player``'s results over ``games`` (only against ``opponent`` / in seat ``color``, if given:
    ``"white"`` or ``"first"``, ``"black"`` or ``"second"``)."""
    if color is not None and color not in SEAT_ALIASES:
        raise ValueError(f"color must be 'white' ('first'), 'black' ('second') or None, not {color!r}")
    seat = SEAT_ALIASES.get(color)
    return Tally.count(g.score(player) for g in games if player in (g.white, g.black)
                       and (not opponent or opponent in (g.white, g.black))
                       and (not seat or getattr(g, seat) == player))


def color_tally(games: Iterable[GameRecord]) -> Tally:
    """The first player's results over ``games`` (wins = White wins, losses = Black wins): the color balance."""
    return Tally.count(g.score(g.white) for g in games)


@dataclasses.dataclass
class MatchResult:
    """The games of one pairing; ``seats`` says where ``a`` sat: ``"alternate"`` (first in the even-numbered
    games: White in chess), ``"first"`` or ``"second"`` (in every game)."""

    a: str
    b: str
    games: list[GameRecord]
    seats: str = "alternate"

    def tally(self, player: str | None = None, color: str | None = None) -> Tally:
        return tally(self.games, player or self.a, color=color)

    @property
    def distinct(self) -> int:
        """How many different games were played: by their start and moves (two games may end alike)."""
        return len({(g.start_fen, g.moves) for g in self.games})

    def summary(self) -> str:
        lines = [f"{self.a} vs {self.b}: {self.tally()}"]
        chess = any(g.start_fen is not None for g in self.games)
        for color in (COLOR_NAMES if chess else SEAT_NAMES):
            lines.append(f"  {self.a} as {color}: {self.tally(color=color)}")
        return "\n".join(lines)

    def row(self) -> dict:
        """A CSV row: ``a``'s results, rates and scores with their Wilson intervals, distinct games."""
        t = self.tally()
        (lo, hi), (slo, shi) = t.rate_interval("wins"), t.interval
        return {"player": self.a, "opponent": self.b, "player moves": self.seats, "games": t.games,
                "wins": t.wins, "draws": t.draws, "losses": t.losses, "win_rate": t.wins / max(t.games, 1),
                "win_low": lo, "win_high": hi, "score": t.score, "score_low": slo, "score_high": shi,
                "distinct_games": self.distinct}


class GameJournal:
    """A JSON-lines file of finished games, one :class:`GameRecord` a line under its game's key, appended as each
    game ends: a tournament given one plays only the games it does not hold, so a stopped one goes on where it
    stopped. A last line cut short (the process stopped while writing it) is dropped; any other bad line is an
    error naming it. Read as JSON only."""

    def __init__(self, path: str):
        self.path = path
        self.games: dict[str, GameRecord] = {}
        if not os.path.exists(path):
            return
        with open(path, "rb") as f:
            data = f.read()
        if not data.endswith(b"\n"):
            data = data[:data.rfind(b"\n") + 1]
            with open(path, "r+b") as f:
                f.truncate(len(data))
        for n, line in enumerate(data.splitlines(), 1):
            try:
                entry = json.loads(line)
                record = GameRecord(**{**entry["record"], "moves": tuple(entry["record"]["moves"])})
                if record.result not in ("1-0", "1/2-1/2", "0-1") or not isinstance(entry["key"], str):
                    raise ValueError(f"result {record.result!r}")
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}, line {n}: not a game of a game journal ({exc})") from None
            self.games[entry["key"]] = record

    def add(self, key: str, record: GameRecord) -> None:
        """Append ``record`` under ``key``."""
        self.games[key] = record
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "record": dataclasses.asdict(record)}) + "\n")


@dataclasses.dataclass(frozen=True)
class _Task:
    pairing: int
    index: int
    white: int  # indices into the agent list
    black: int
    seed: int
    round: str
    start_fen: str | None = None  # an opening of the tournament's list (else game_options decide)


def run_tournament(agents: Sequence, game: str = "gardner", games: int = 50, seed: int = 0, *,
                   pairings: Sequence[tuple[int, int]] | None = None, openings: Sequence[str] | None = None,
                   seats: str = "alternate", lockstep: bool | None = None, names: Sequence[str] | None = None,
                   workers: int = 1, ray_address: str | None = None,
                   progress: Callable[[GameRecord, int, int], None] | None = None,
                   journal: str | None = None, **game_options) -> list[MatchResult]:
    """Play ``games`` games of ``game`` for every pairing (default: round-robin); one :class:`MatchResult` each.

    :param agents: agents with distinct names (``names``, default: :func:`player_name` of each).
    :param pairings: ``(i, j)`` index pairs to play (default: all ``i < j``).
    :param openings: chess start FENs; games ``2m`` and ``2m + 1`` of every pairing start from
        opening ``m`` (cycling), one with each color, so an unbalanced opening favours nobody.
    :param seats: ``"alternate"``: ``i`` moves first in the even-numbered games of a pairing, ``j`` in
        the others; ``"first"`` / ``"second"``: ``i`` moves first / second in every game.
    :param lockstep: play a pairing's games together, up to :data:`LOCKSTEP_GAMES` at once: a player that
        :func:`batches` chooses in all of them in one ``act_batch`` call (one batched search) and is reset once,
        unseeded; any other plays each game with its own copy, as one by one; default: for board games.
    :param workers: processes to spread the games over (in ``lockstep``, parts of each pairing's games); each
        gets its own copy of every agent (engines start their own process); a lost one is replaced and its games
        played again.
    :param ray_address: the workers as Ray actors on this cluster (``"local"``: a new local one), spread over its
        nodes; a lost node's games are played again on the others (:class:`~agents.workers.WorkerPool`).
    :param progress: called as ``progress(record, done, total)`` after each game.
    :param journal: a :class:`GameJournal` file: its games (the same game, players, seed, round, opening and
        ``game_options``) are read back, not played again, and each game played is added as it ends.
    :param game_options: passed to :func:`play_game` (``ply_limit``, ``opening_plies``, ``illegal``,
        ``pgn``, ``start_fen``).
    """
    agents = list(agents)
    for agent in agents:
        check_player(agent)
    names = list(names) if names is not None else [player_name(a) for a in agents]
    if len(set(names)) < len(names) or len(names) != len(agents):
        raise ValueError(f"agent names must be distinct, one per agent (they label games and ratings): {names}")
    if seats not in ("alternate", "first", "second"):
        raise ValueError(f"seats must be 'alternate', 'first' or 'second', not {seats!r}")
    lockstep = board_game(game) is not None if lockstep is None else lockstep
    if pairings is None:
        pairings = [(i, j) for i in range(len(agents)) for j in range(i + 1, len(agents))]
    tasks = []
    for p, (i, j) in enumerate(pairings):
        s = pairing_seed(seed, names[i], names[j])
        for k in range(games):
            first = {"alternate": k % 2 == 0, "first": True, "second": False}[seats]
            white, black = (i, j) if first else (j, i)
            opening = openings[(k // 2) % len(openings)] if openings else None  # both colors per opening
            tasks.append(_Task(p, k, white, black, game_seed(s, k), f"{p + 1}.{k + 1}", opening))
    records: dict[tuple[int, int], GameRecord] = {}
    journal = GameJournal(journal) if journal else None
    held = journal.games if journal else {}  # the games the journal holds are not played again
    options = json.dumps(game_options, sort_keys=True, default=repr)
    keys = {t: json.dumps([game, names[t.white], names[t.black], t.seed, t.round, t.start_fen, options])
            for t in tasks}

    def done(task: _Task, record: GameRecord) -> None:
        records[task.pairing, task.index] = record
        if journal is not None and keys[task] not in held:
            journal.add(keys[task], record)
        if progress:
            progress(record, len(records), len(tasks))

    for task in tasks:
        if keys[task] in held:
            done(task, held[keys[task]])
    todo = [task for task in tasks if keys[task] not in held]
    # jobs: (the agents' indices, their tasks, lockstep); with workers a lockstep pairing's games are played in parts
    # of half a worker's share: larger parts batch more positions in a search, smaller ones show progress sooner
    jobs = []
    if lockstep:
        for p, pairing in enumerate(pairings):
            mine = [t for t in todo if t.pairing == p]
            size = max(1, len(mine) if workers <= 1 else -(-len(mine) // (2 * workers)))
            jobs += [(pairing, mine[k:k + size], True) for k in range(0, len(mine), size)]
    else:
        jobs = [(tuple(range(len(agents))), [task], False) for task in todo]
    if (workers <= 1 and ray_address is None) or len(jobs) <= 1:
        for job in jobs:
            for task, record in _play_job(agents, names, game, job, game_options):
                done(task, record)
    else:
        # Each worker gets its own copy of the agents (sent pickled): none shares an engine process with the parent.
        with WorkerPool(ArenaPlayer, (agents, names, game, game_options), min(workers, len(jobs)),
                        ray_address) as pool:
            pool.submit(None, jobs)
            for _, played in pool.results():
                for task, record in played:
                    done(task, record)
    return [MatchResult(names[i], names[j], [records[p, k] for k in range(games)], seats)
            for p, (i, j) in enumerate(pairings)]


def play_match(agent_a, agent_b, game: str = "gardner", games: int = 50, seed: int = 0, *,
               seats: str = "alternate", lockstep: bool | None = None, names: Sequence[str] | None = None,
               workers: int = 1, ray_address: str | None = None, progress=None, journal: str | None = None,
               **game_options) -> MatchResult:
    """``games`` games of ``game`` between two agents, ``agent_a`` moving first in the even-numbered ones
    (``seats="alternate"``) or in every game (``"first"``) or none (``"second"``); see :func:`run_tournament`."""
    return run_tournament([agent_a, agent_b], game, games, seed, seats=seats, lockstep=lockstep, names=names,
                          workers=workers, ray_address=ray_address, progress=progress, journal=journal,
                          **game_options)[0]


def batches(player) -> bool:
    """Does ``player`` choose in many games at once: an ``act_batch`` of its own, not :class:`~agents.base.Agent`'s
    loop over ``act``?"""
    method = getattr(type(player), "act_batch", None)
    return method is not None and method is not Agent.act_batch


def _play_games(players: Sequence, names: Sequence[str], game: str, tasks: Sequence[_Task], lockstep: bool, *,
                opening_plies: int = 0, illegal: str = "raise", pgn: bool = True, event: str | None = None,
                start_fen: str | None = None, ply_limit: int | None = None,
                encoding: ObservationEncoding | None = None):
    """The games of ``tasks``, ``players[task.white]`` moving first in each; yields ``(task, record)`` as each ends.

    One by one, each game's players are reset with seeds of the game's. In ``lockstep`` (see :func:`run_tournament`)
    up to :data:`LOCKSTEP_GAMES` games are played at once, a finished game's place taken by the next task: a player
    that :func:`batches` chooses in all its games of a round in one :func:`player_choices` call and is reset once,
    unseeded; any other plays each game with a copy of its own (an engine: its own process), reset as one by one,
    so that its games are those it plays one by one."""
    if illegal not in ("raise", "forfeit"):
        raise ValueError(f"illegal must be 'raise' or 'forfeit', not {illegal!r}")
    shared = [lockstep and batches(player) for player in players]
    for player, one_for_all in zip(players, shared):
        if one_for_all and hasattr(player, "reset"):
            player.reset()
    pending = collections.deque(tasks)
    active: list[tuple[_Task, _Board, dict]] = []  # each game's players by index, copies where not shared
    while pending or active:
        while pending and len(active) < (LOCKSTEP_GAMES if lockstep else 1):
            t = pending.popleft()
            seated = {}
            for color, who in enumerate((t.white, t.black)):
                seated[who] = players[who] if shared[who] or not lockstep else copy.copy(players[who])
                if not shared[who] and hasattr(seated[who], "reset"):
                    seated[who].reset(game_seed(t.seed, color))
            active.append((t, _start(game, t.seed, t.round, (names[t.white], names[t.black]), (t.white, t.black),
                                     t.start_fen or start_fen, ply_limit, opening_plies, encoding), seated))
        for who, player in enumerate(players):
            todo = [(board, seated[who]) for _, board, seated in active if board.mover == who]
            if not todo:
                continue
            observation = getattr(todo[0][0].game, "encoding", None)  # chess's; None: the game's own
            if shared[who]:
                choices, masks = player_choices(player, [b.game.view() for b, _ in todo], observation,
                                                name=names[who])
            else:
                masks = [b.game.legal_mask() for b, _ in todo]
                choices = [player_choice(p, b.game.view(), observation, mask) for (b, p), mask in zip(todo, masks)]
            for (board, _), choice, mask in zip(todo, choices, masks):
                board.play(choice, mask, illegal)
        for t, board, seated in active:
            if board.finished:
                if lockstep:  # the game's own copies
                    close_agents(p for who, p in seated.items() if not shared[who])
                yield t, _record(board, opening_plies, pgn, event)
        active = [entry for entry in active if not entry[1].finished]


def _play_job(agents: Sequence, names: Sequence[str], game: str, job: tuple, game_options: dict):
    """The games of ``job``, ``(the agents' indices, tasks, lockstep)``, those agents seated as its players (in
    lockstep a pairing's two); yields ``(task, record)`` as :func:`_play_games` does."""
    seats, tasks, lockstep = job
    seated = {dataclasses.replace(t, white=seats.index(t.white), black=seats.index(t.black)): t for t in tasks}
    for task, record in _play_games([agents[s] for s in seats], [names[s] for s in seats], game, list(seated),
                                    lockstep, **game_options):
        yield seated[task], record


class ArenaPlayer:
    """An arena worker of :class:`~agents.workers.WorkerPool`: its own copy of the agents; a job is one game, or
    in lockstep part of a pairing's games."""

    def __init__(self, settings: tuple):
        self.players, self.names, self.game, self.options = settings
        if "torch" in sys.modules:  # one thread per worker: the workers already use every core
            sys.modules["torch"].set_num_threads(1)

    def play(self, shared, job: tuple) -> list[tuple[_Task, GameRecord]]:
        return list(_play_job(self.players, self.names, self.game, job, self.options))

    def close(self) -> None:
        close_agents(self.players)


def close_agents(agents: Iterable) -> None:
    """Call ``close()`` on every agent that has one (engines)."""
    for agent in agents:
        if callable(getattr(agent, "close", None)):
            agent.close()


def all_games(matches: Iterable[MatchResult]) -> list[GameRecord]:
    return [g for m in matches for g in m.games]


def write_pgn(games: Iterable[GameRecord], path: str) -> int:
    """Write the games' PGN (chess games recorded with ``pgn=True``) to ``path``; returns how many."""
    texts = [g.pgn for g in games if g.pgn]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(text + "\n" for text in texts)
    return len(texts)


def rating_results(games: Iterable[GameRecord]) -> list[tuple[str, str, float]]:
    """``(white, black, white's score)`` per game, the input of :func:`agents.arena.ratings.elo_mle`."""
    return [(g.white, g.black, g.score(g.white)) for g in games]
