"""Games between agents, for every game: single games, matches, round-robin tournaments.

>>> from agents import GreedyAgent, RandomAgent
>>> match = play_match(GreedyAgent(), RandomAgent(), "gardner", games=10, seed=0)
>>> match.tally("greedy").score                         # doctest: +SKIP
0.9
>>> match = play_match(ConnectFourAlphaBeta(4), RandomAgent(0), "connect_four", 50, seats="first")  # doctest: +SKIP

Games and players
    A game is any name of :func:`agents.games.new_game`: a chess variant or a
    board game. Players are agents (or functions ``position -> move``), asked
    through :mod:`minichess_envs.players`: ``act(observation, action_mask,
    position)`` gets the position itself (a copy, so an agent cannot change the
    game): a chess :class:`~minichess_envs.Position` with the variant's default
    observation encoding, or the board game's :class:`~agents.games.Game` with
    its own observation. The player moving first is recorded as ``white``
    (White in chess), the other as ``black``.

Rules of a game
    The game ends when the rules end it or, in chess, at the ply limit (the
    variant's ``ply_limit`` by default). The environments *truncate* there; the
    arena must score every game, so it adjudicates a draw and labels it
    ``"ply limit"`` (the PGN ``Termination`` tag and :attr:`GameRecord.termination`).

Lockstep
    With ``lockstep`` (the default for board games) all games of a pairing are
    played at once: each ply, every player is asked once for all the games
    where it is to move (one ``act_batch`` call: one batched search), which is
    what makes judging a search affordable. One agent then plays every game of
    the match, so it cannot be reseeded per game: it is reset once, unseeded,
    and its own seed decides its random choices. Otherwise games are played one
    by one (in worker processes if asked), each agent reset with a seed of its
    own per game.

Illegal moves
    By default an illegal action raises :class:`IllegalMoveError` naming the
    agent, the action and the position: an agent that ignores its mask has a
    bug worth seeing. With ``illegal="forfeit"`` the offender loses the game
    instead (termination ``"illegal move"``), so one broken checkpoint cannot
    stop a leaderboard.

Seeds
    Game ``i`` of a match with seed ``s`` has seed ``game_seed(s, i)``; it
    draws the game's random opening plies (``opening_plies``) and, played one
    by one, each agent's ``reset(seed)`` (derived from it and the agent's
    color). Every game depends only on its seed, so results are reproducible
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

from agents.games import BOARD_GAMES, ChessGame, Game, new_game
from agents.arena.ratings import wilson_interval
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, IllegalMoveError, Position
from minichess_envs.pgn import game_pgn
from minichess_envs.players import check_player, legal_action, player_choice, player_choices, player_name
from minichess_envs.variants import get_variant

RESULTS = ("1-0", "1/2-1/2", "0-1")
PLY_LIMIT = "ply limit"
ILLEGAL_MOVE = "illegal move"
#: How a board game's records name its seats (chess: ``COLOR_NAMES``, white and black).
SEAT_NAMES = ("first", "second")


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
    """One finished game of the arena (:func:`play_game`, :func:`play_match`), of any game."""

    game: str  # a chess variant's name or a board game's (agents.games.new_game)
    white: str  # the player who moved first (White in chess)
    black: str
    result: str  # "1-0", "1/2-1/2" or "0-1" (first player's points first)
    termination: str  # chess: see termination_name, "ply limit", "illegal move"; board games: "win", "draw"
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


# -- one game ----------------------------------------------------------------------------


@dataclasses.dataclass
class _Board:
    """A game in play: the game, its seed and round, the actions' names so far and a forfeit, if any."""

    game: Game
    seed: int
    round: str
    moves: list[str]
    forfeit: str | None = None  # the result when a player forfeited

    @property
    def finished(self) -> bool:
        return self.forfeit is not None or self.game.is_over()

    def view(self):
        """What a player is shown: a chess game's Position, any other game itself."""
        return self.game.position if isinstance(self.game, ChessGame) else self.game

    def label(self, names: Sequence[str]) -> str:
        mover = self.game.to_play()
        seats = COLOR_NAMES if isinstance(self.game, ChessGame) else SEAT_NAMES
        return f"{names[mover]} ({seats[mover]})"

    def play(self, choice, label: str, mask, illegal: str) -> None:
        """Play ``choice`` if it is legal; else raise, or forfeit the game for the mover."""
        try:
            action = legal_action(self.view(), choice, label, mask)
        except IllegalMoveError:
            if illegal == "raise":
                raise
            self.forfeit = "0-1" if self.game.to_play() == 0 else "1-0"
            return
        self.moves.append(self.game.action_name(action))
        self.game.step(action)


def _start(game: str, seed: int, round: str, start_fen: str | None, ply_limit: int | None, opening_plies: int,
           encoding: ObservationEncoding | None) -> _Board:
    """Game ``game`` set up (from ``start_fen`` in chess) after ``opening_plies`` random plies of the seed."""
    if game in BOARD_GAMES:
        if start_fen is not None or ply_limit is not None or encoding is not None:
            raise ValueError(f"{game} starts from its empty board, has no ply limit and its own observation")
        board = _Board(new_game(game), seed, round, [])
    else:
        v = get_variant(game)
        position = Position(v, start_fen)
        board = _Board(ChessGame(position, encoding or ObservationEncoding(v), ply_limit), seed, round, [])
    opening = np.random.default_rng(_agent_seed(seed, 2))
    while board.game.plies < opening_plies and not board.game.is_over():
        actions = board.game.legal_actions()
        board.play(actions[opening.integers(len(actions))], "opening", None, "raise")
    return board


def _record(board: _Board, names: Sequence[str], opening_plies: int, pgn: bool, event: str | None) -> GameRecord:
    game = board.game
    winner = game.winner()
    result = board.forfeit or ("1/2-1/2" if winner is None else RESULTS[2 * winner])
    if board.forfeit:
        termination = ILLEGAL_MOVE
    elif isinstance(game, ChessGame):
        termination = termination_name(game.position.outcome())
    else:
        termination = "draw" if winner is None else "win"
    start_fen = final = text = None
    if isinstance(game, ChessGame):
        position = game.position
        start_fen, final = position.root_fen, position.fen()
        if pgn:
            text = game_pgn(position, {
                "Event": event or f"minichess-envs arena: {game.name}",
                "Round": board.round,
                "White": names[0],
                "Black": names[1],
                "Result": result,
                "Termination": termination,
                "PlyCount": str(position.ply),
                "Seed": str(board.seed),
                **({"OpeningPlies": str(opening_plies)} if opening_plies else {}),
            })
    else:
        final = repr(game)
    return GameRecord(game.name, names[0], names[1], result, termination, game.plies, tuple(board.moves),
                      start_fen, board.seed, board.round, text, final)


def play_game(
    white,
    black,
    game: str = "gardner",
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
    names: Sequence[str] | None = None,
) -> GameRecord:
    """Play one game of ``game`` (a chess variant or a board game); ``white`` moves first.

    ``white`` and ``black`` are agents (or functions ``position -> move``), each
    reset with a seed of its own derived from ``seed``. ``opening_plies`` first
    plays that many uniformly random moves (from the game's seed) for both
    sides, so that deterministic agents (engines at a fixed node count) do not
    repeat one game over and over. ``start_fen``, ``ply_limit``, ``encoding``
    (the agents' observation) and PGN are chess's; ``names`` label the players (default: their own).
    """
    _check_illegal(illegal)
    players = (white, black)
    for player in players:
        check_player(player)
    names = tuple(names or (player_name(p) for p in players))
    board = _start(game, seed, round, start_fen, ply_limit, opening_plies, encoding)
    for color, player in enumerate(players):
        if hasattr(player, "reset"):
            player.reset(_agent_seed(seed, color))
    encoding = getattr(board.game, "encoding", None)
    while not board.finished:
        mask = board.game.legal_mask()
        choice = player_choice(players[board.game.to_play()], board.view(), encoding, mask)
        board.play(choice, board.label(names), mask, illegal)
    return _record(board, names, opening_plies, pgn, event)


def _check_illegal(illegal: str) -> None:
    if illegal not in ("raise", "forfeit"):
        raise ValueError(f"illegal must be 'raise' or 'forfeit', not {illegal!r}")


def _play_lockstep(players: Sequence, names: Sequence[str], game: str, tasks: Sequence[_Task],
                   done: Callable[[_Task, GameRecord], None], *, opening_plies: int = 0, illegal: str = "raise",
                   pgn: bool = True, event: str | None = None, start_fen: str | None = None,
                   ply_limit: int | None = None, encoding: ObservationEncoding | None = None) -> None:
    """The games of ``tasks`` at once, ``players[task.white]`` moving first in each: every round, each
    player in turn chooses in all the games where it is to move (one :func:`player_choices` call);
    ``done(task, record)`` as each game ends."""
    _check_illegal(illegal)
    boards = [_start(game, t.seed, t.round, t.start_fen or start_fen, ply_limit, opening_plies, encoding)
              for t in tasks]
    for player in players:
        if hasattr(player, "reset"):
            player.reset()
    encoding = getattr(boards[0].game, "encoding", None) if boards else None
    seated = [(t.white, t.black) for t in tasks]
    pairs = [(names[white], names[black]) for white, black in seated]
    active = list(range(len(boards)))
    while active:
        for who, player in enumerate(players):
            todo = [k for k in active if not boards[k].finished and seated[k][boards[k].game.to_play()] == who]
            if todo:
                choices, masks = player_choices(player, [boards[k].view() for k in todo], encoding, name=names[who])
                for k, choice, mask in zip(todo, choices, masks):
                    boards[k].play(choice, boards[k].label(pairs[k]), mask, illegal)
        for k in active:
            if boards[k].finished:
                done(tasks[k], _record(boards[k], pairs[k], opening_plies, pgn, event))
        active = [k for k in active if not boards[k].finished]


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
    def not_lost(self) -> int:
        return self.wins + self.draws

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson interval of the score (draws as half points)."""
        return wilson_interval(self.wins + 0.5 * self.draws, self.games, self.confidence)

    def rate_interval(self, which: str) -> tuple[float, float]:
        """Wilson interval of the ``"wins"``, ``"draws"``, ``"losses"`` or ``"not_lost"`` rate."""
        return wilson_interval(getattr(self, which), self.games, self.confidence)

    def __str__(self) -> str:
        low, high = self.interval
        return f"+{self.wins} ={self.draws} -{self.losses} ({100 * self.score:.1f}% [{100 * low:.1f}, {100 * high:.1f}])"


#: A seat by either of its names: chess's colors or a board game's order of play.
SEATS = {"white": "white", "black": "black", "first": "white", "second": "black"}


def tally(games: Iterable[GameRecord], player: str, opponent: str | None = None, color: str | None = None) -> Tally:
    """``player``'s results over ``games`` (only against ``opponent`` / in seat ``color``, if given:
    ``"white"`` or ``"first"``, ``"black"`` or ``"second"``)."""
    if color is not None and color not in SEATS:
        raise ValueError(f"color must be 'white' ('first'), 'black' ('second') or None, not {color!r}")
    seat = SEATS.get(color)
    w = d = l = 0
    for g in games:
        if player not in (g.white, g.black) or (opponent and opponent not in (g.white, g.black)):
            continue
        if seat and (g.white if seat == "white" else g.black) != player:
            continue
        s = g.score(player)
        w, d, l = w + (s == 1), d + (s == 0.5), l + (s == 0)
    return Tally(w, d, l)


def color_tally(games: Iterable[GameRecord]) -> Tally:
    """The first player's results over ``games`` (wins = White wins, losses = Black wins): the color balance."""
    w = d = l = 0
    for g in games:
        w, d, l = w + (g.result == "1-0"), d + (g.result == "1/2-1/2"), l + (g.result == "0-1")
    return Tally(w, d, l)


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
        """How many different games were played, by their final positions."""
        return len({g.final for g in self.games})

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
    game: str = "gardner",
    games: int = 50,
    seed: int = 0,
    *,
    pairings: Sequence[tuple[int, int]] | None = None,
    openings: Sequence[str] | None = None,
    seats: str = "alternate",
    lockstep: bool | None = None,
    names: Sequence[str] | None = None,
    workers: int = 1,
    progress: Callable[[GameRecord, int, int], None] | None = None,
    **game_options,
) -> list[MatchResult]:
    """Play ``games`` games of ``game`` for every pairing (default: round-robin).

    :param agents: agents with distinct names.
    :param pairings: ``(i, j)`` index pairs to play (default: all ``i < j``).
    :param openings: chess start FENs; games ``2m`` and ``2m + 1`` of every pairing start from
        opening ``m`` (cycling), one with each color, so an unbalanced opening favours nobody.
    :param seats: ``"alternate"``: ``i`` moves first in the even-numbered games of a pairing, ``j`` in
        the others; ``"first"`` / ``"second"``: ``i`` moves first / second in every game.
    :param lockstep: play each pairing's games at once (see the module's notes); default: for board games.
    :param names: the agents' names in records and results (default: :func:`player_name` of each).
    :param workers: processes to spread the games over (1: play here; not with ``lockstep``). Each
        worker gets its own copy of every agent (engines start their own process).
    :param progress: called as ``progress(record, done, total)`` after each game.
    :param game_options: passed to :func:`play_game` (``ply_limit``, ``opening_plies``, ``illegal``,
        ``pgn``, ``start_fen``).
    :returns: one :class:`MatchResult` per pairing, games in order.
    """
    agents = list(agents)
    for agent in agents:
        check_player(agent)
    names = list(names) if names is not None else [player_name(a) for a in agents]
    if len(set(names)) < len(names) or len(names) != len(agents):
        raise ValueError(f"agent names must be distinct, one per agent (they label games and ratings): {names}")
    if seats not in ("alternate", "first", "second"):
        raise ValueError(f"seats must be 'alternate', 'first' or 'second', not {seats!r}")
    lockstep = game in BOARD_GAMES if lockstep is None else lockstep
    if lockstep and workers > 1:
        raise ValueError("lockstep games are played in this process: workers must be 1")
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
    name = game if game in BOARD_GAMES else get_variant(game).name
    game_options = {"event": f"minichess-envs arena: {name}", **game_options}
    records: dict[tuple[int, int], GameRecord] = {}

    def done(task: _Task, record: GameRecord) -> None:
        records[task.pairing, task.index] = record
        if progress:
            progress(record, len(records), len(tasks))

    if lockstep:
        for p, (i, j) in enumerate(pairings):
            mine = [dataclasses.replace(t, white=int(t.white == j), black=int(t.black == j))
                    for t in tasks if t.pairing == p]
            _play_lockstep((agents[i], agents[j]), (names[i], names[j]), game, mine, done, **game_options)
    elif workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            done(task, _play_task(agents, names, game, game_options, task))
    else:
        # Agents travel pickled, so a copy never shares an engine process with the parent.
        blob = pickle.dumps(agents)
        ctx = multiprocessing.get_context()
        with ctx.Pool(min(workers, len(tasks)), _init_worker, (blob, names, game, game_options)) as pool:
            chunk = max(1, min(8, len(tasks) // (4 * workers)))
            for task, record in pool.imap_unordered(_worker_play, tasks, chunksize=chunk):
                done(task, record)
            pool.close()
            pool.join()
    return [
        MatchResult(names[i], names[j], [records[p, k] for k in range(games)], seats)
        for p, (i, j) in enumerate(pairings)
    ]


def play_match(agent_a, agent_b, game: str = "gardner", games: int = 50, seed: int = 0, *,
               seats: str = "alternate", lockstep: bool | None = None, names: Sequence[str] | None = None,
               workers: int = 1, progress=None, **game_options) -> MatchResult:
    """``games`` games of ``game`` between two agents, ``agent_a`` moving first in the even-numbered ones
    (``seats="alternate"``) or in every game (``"first"``) or none (``"second"``); see :func:`run_tournament`."""
    return run_tournament([agent_a, agent_b], game, games, seed, seats=seats, lockstep=lockstep, names=names,
                          workers=workers, progress=progress, **game_options)[0]


def _play_task(agents, names, game, game_options, task: _Task) -> GameRecord:
    if task.start_fen is not None:
        game_options = {**game_options, "start_fen": task.start_fen}
    return play_game(agents[task.white], agents[task.black], game, task.seed, round=task.round,
                     names=(names[task.white], names[task.black]), **game_options)


_WORKER: dict = {}


def _init_worker(blob: bytes, names: list[str], game: str, game_options: dict) -> None:
    if "torch" in sys.modules:  # one thread per worker: the workers already use every core
        sys.modules["torch"].set_num_threads(1)
    agents = pickle.loads(blob)
    _WORKER.update(agents=agents, names=names, game=game, game_options=game_options)
    # Close engines when the pool shuts the worker down (atexit does not run in pool workers).
    multiprocessing.util.Finalize(None, close_agents, args=(agents,), exitpriority=10)


def _worker_play(task: _Task) -> tuple[_Task, GameRecord]:
    w = _WORKER
    return task, _play_task(w["agents"], w["names"], w["game"], w["game_options"], task)


def close_agents(agents: Iterable) -> None:
    """Call ``close()`` on every agent that has one (engines)."""
    for agent in agents:
        close = getattr(agent, "close", None)
        if callable(close):
            close()


def all_games(matches: Iterable[MatchResult]) -> list[GameRecord]:
    return [g for m in matches for g in m.games]


def write_pgn(games: Iterable[GameRecord], path: str) -> int:
    """Write the games' PGN (chess games recorded with ``pgn=True``) to ``path``; returns how many."""
    n = 0
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        for g in games:
            if g.pgn:
                f.write(g.pgn + "\n")
                n += 1
    return n


def rating_results(games: Iterable[GameRecord]) -> list[tuple[str, str, float]]:
    """``(white, black, white's score)`` per game, the input of :func:`agents.arena.ratings.elo_mle`."""
    return [(g.white, g.black, g.score(g.white)) for g in games]
