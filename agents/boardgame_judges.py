"""Judges for the PettingZoo board games: exact values, move scores and matches.

- Tic-Tac-Toe: :func:`solve_tictactoe`, our own exhaustive minimax over every
  position reachable from the empty board (5,478 of them).
- Connect Four: :class:`ConnectFourSolver`, the perfect solver ``bitbully``
  (optional extra ``[games]``), and :class:`ConnectFourAlphaBeta`, a
  depth-limited alpha-beta on bitboards with a threat-counting heuristic.
- :func:`score_moves`: the share of positions where a player's move keeps the
  game's value (a win stays a win, a draw a draw), with the blunders counted.
- :func:`play_match`: games between two players in lockstep, both colours, with
  Wilson intervals on the score.

Players here are batched: ``choose(games) -> actions``, one action per
:class:`~agents.alphazero.game.Game`.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Callable, Sequence

import numpy as np

from agents.alphazero.game import ConnectFour, TicTacToe, new_game, terminal_value
from agents.ratings import wilson_interval

Choose = Callable[[list], Sequence[int]]
LABELS = {1: "win", 0: "draw", -1: "loss"}

# -- Tic-Tac-Toe: every position solved ------------------------------------------------


@dataclasses.dataclass
class TicTacToeTable:
    """Every position reachable from the empty board: ``values[board] = -1, 0, 1`` for the player
    to move under perfect play (``board`` a tuple of the 9 squares, 0 empty, 1 first, 2 second player)."""

    values: dict[tuple, int]
    games: dict[tuple, TicTacToe]

    def non_terminal(self) -> list[TicTacToe]:
        return [g for g in self.games.values() if not g.is_over()]

    def move_values(self, game: TicTacToe) -> dict[int, int]:
        """Each legal action's value for the player to move (the value after it, negated)."""
        out = {}
        for a in game.legal_actions():
            child = game.copy()
            child.step(a)
            out[a] = -self.values[tuple(child.board)]
        return out


def solve_tictactoe() -> TicTacToeTable:
    """Negamax over the whole game tree, each position solved once."""
    values: dict[tuple, int] = {}
    games: dict[tuple, TicTacToe] = {}

    def solve(game: TicTacToe) -> int:
        key = tuple(game.board)
        if key in values:
            return values[key]
        games[key] = game
        if game.is_over():
            value = int(terminal_value(game))
        else:
            value = -1
            for a in game.legal_actions():
                child = game.copy()
                child.step(a)
                value = max(value, -solve(child))
        values[key] = value
        return value

    solve(TicTacToe())
    return TicTacToeTable(values, games)


# -- scoring moves against exact values ------------------------------------------------


def score_moves(games: list, chosen: Sequence[int], move_values: list[dict[int, int]]) -> dict:
    """How often the chosen moves keep each position's value.

    ``move_values[i]`` maps every legal action of ``games[i]`` to its exact value
    class (1 win, 0 draw, -1 loss) for the player to move. Returns
    ``value_preserving`` (the share of positions), ``positions`` and the
    blunder counts ``win->draw``, ``win->loss``, ``draw->loss``, also per player to move.
    """
    def tally(rows):
        out = {"positions": len(rows), "value_preserving": float("nan"), "win->draw": 0, "win->loss": 0,
               "draw->loss": 0}
        if rows:
            out["value_preserving"] = float(np.mean([best == got for best, got in rows]))
            for best, got in rows:
                if got < best:
                    out[f"{LABELS[best]}->{LABELS[got]}"] += 1
        return out

    rows, by_side = [], {0: [], 1: []}
    for game, action, values in zip(games, chosen, move_values):
        if int(action) not in values:
            raise ValueError(f"illegal action {action} chosen in {game!r}")
        row = (max(values.values()), values[int(action)])
        rows.append(row)
        by_side[game.to_play()].append(row)
    result = tally(rows)
    result["first player to move"] = tally(by_side[0])
    result["second player to move"] = tally(by_side[1])
    return result


def choose_in_batches(choose: Choose, games: list, batch: int = 256) -> list[int]:
    """``choose`` over ``games`` in batches (one batched search or network call each)."""
    out: list[int] = []
    for i in range(0, len(games), batch):
        out.extend(int(a) for a in choose(games[i:i + batch]))
    return out


# -- Connect Four: bitboards, alpha-beta ----------------------------------------------

H1 = 7  # bits per column: 6 cells and a sentinel
BOTTOM = sum(1 << (c * H1) for c in range(7))
BOARD = BOTTOM * ((1 << 6) - 1)
CENTER = 0b111111 << (3 * H1)
ORDER = (3, 2, 4, 1, 5, 0, 6)  # centre first: better cut-offs, and the ties the root breaks
WIN = 1_000_000


def bitboards(game: ConnectFour) -> tuple[int, int]:
    """``(stones of the player to move, all stones)``; column ``c``, height ``h`` is bit ``7 c + h``."""
    mine, mask = 0, 0
    me = 1 + game.to_play()
    for cell, mark in enumerate(game.board):
        if mark:
            r, c = divmod(cell, 7)
            bit = 1 << (c * H1 + 5 - r)
            mask |= bit
            if mark == me:
                mine |= bit
    return mine, mask


def _is_win(p: int) -> bool:
    for s in (1, H1, H1 - 1, H1 + 1):
        m = p & (p >> s)
        if m & (m >> (2 * s)):
            return True
    return False


def _threats(p: int, mask: int) -> int:
    """Empty cells that would complete four for the stones ``p``."""
    r = (p << 1) & (p << 2) & (p << 3)
    for s in (H1, H1 - 1, H1 + 1):
        q = (p << s) & (p << 2 * s)
        r |= q & (p << 3 * s)
        r |= q & (p >> s)
        q = (p >> s) & (p >> 2 * s)
        r |= q & (p << s)
        r |= q & (p >> 3 * s)
    return r & (BOARD ^ mask)


def heuristic(mine: int, mask: int) -> int:
    """For the player to move: open threats (4 each) and centre-column stones (1 each), theirs subtracted."""
    theirs = mine ^ mask
    return (4 * (bin(_threats(mine, mask)).count("1") - bin(_threats(theirs, mask)).count("1"))
            + bin(mine & CENTER).count("1") - bin(theirs & CENTER).count("1"))


def _negamax(mine: int, mask: int, depth: int, alpha: int, beta: int, ply: int) -> int:
    if mask == BOARD:
        return 0
    if depth == 0:
        return heuristic(mine, mask)
    best = -WIN - 100
    for c in ORDER:
        if mask & (1 << (c * H1 + 5)):
            continue  # the column is full
        move = (mask + (1 << (c * H1))) & (0b111111 << (c * H1))
        if _is_win(mine | move):
            return WIN - ply  # sooner wins score higher
        value = -_negamax((mine | move) ^ (mask | move), mask | move, depth - 1, -beta, -alpha, ply + 1)
        if value > best:
            best = value
        if best > alpha:
            alpha = best
        if alpha >= beta:
            break
    return best


def alpha_beta_values(game: ConnectFour, depth: int, exact: bool = False) -> dict[int, int]:
    """Every legal column's depth-``depth`` negamax value (``WIN - plies`` for a found win): exact for
    the best columns, an upper bound below the best for the others (``exact=True``: exact for all)."""
    mine, mask = bitboards(game)
    out: dict[int, int] = {}
    best = -WIN - 100
    for c in ORDER:
        if mask & (1 << (c * H1 + 5)):
            continue
        move = (mask + (1 << (c * H1))) & (0b111111 << (c * H1))
        if _is_win(mine | move):
            out[c] = WIN
        else:
            # a window just below the best so far: equal values come out exact, worse ones as bounds
            alpha = -WIN - 100 if exact else best - 1
            out[c] = -_negamax((mine | move) ^ (mask | move), mask | move, depth - 1, -WIN - 100, -alpha, 1)
        best = max(best, out[c])
    return out


class ConnectFourAlphaBeta:
    """Depth-limited alpha-beta (negamax) with :func:`heuristic`; ties between the best columns
    broken at random (seeded), so that games against a deterministic player differ."""

    def __init__(self, depth: int = 4, seed: int = 0):
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.depth = depth
        self.rng = random.Random(seed)
        self.name = f"alpha-beta depth {depth}"

    def choose(self, game: ConnectFour) -> int:
        values = alpha_beta_values(game, self.depth)
        best = max(values.values())
        return self.rng.choice(sorted(c for c, v in values.items() if v == best))

    def __call__(self, games: list) -> list[int]:
        return [self.choose(g) for g in games]


# -- Connect Four: the perfect solver -------------------------------------------------


class ConnectFourSolver:
    """bitbully (``pip install bitbully``, extra ``[games]``): exact move scores, and a perfect
    player that breaks ties between equally scored columns at random (seeded)."""

    def __init__(self, seed: int = 0):
        try:
            import bitbully
        except ImportError as exc:  # an optional extra
            raise ImportError("the Connect Four solver needs bitbully: pip install 'minichess-envs[games]' "
                              "(or pip install bitbully)") from exc
        self.bitbully = bitbully
        self.engine = bitbully.BitBully()
        self.rng = random.Random(seed)
        self.name = "perfect solver (bitbully)"

    def board(self, game: ConnectFour):
        return self.bitbully.Board.from_array([game.board[r * 7:(r + 1) * 7] for r in range(6)])

    def scores(self, game: ConnectFour) -> dict[int, int]:
        """bitbully's score of every legal column: > 0 the player to move wins (sooner: larger), 0 draw, < 0 loses."""
        if game.is_over():
            raise ValueError(f"{game!r}: the game is over")
        return {int(c): int(s) for c, s in self.engine.score_all_moves(self.board(game)).items()}

    def move_values(self, game: ConnectFour) -> dict[int, int]:
        """Each legal column's value class: 1 win, 0 draw, -1 loss."""
        return {c: int(np.sign(s)) for c, s in self.scores(game).items()}

    def value(self, game: ConnectFour) -> int:
        return max(self.move_values(game).values())

    def choose(self, game: ConnectFour) -> int:
        scores = self.scores(game)
        best = max(scores.values())
        return self.rng.choice(sorted(c for c, s in scores.items() if s == best))

    def __call__(self, games: list) -> list[int]:
        return [self.choose(g) for g in games]


def random_player(seed: int = 0) -> Choose:
    rng = np.random.default_rng(seed)
    return lambda games: [int(rng.choice(g.legal_actions())) for g in games]


def sample_positions(count: int, seed: int = 0, depth: int = 2, epsilon: float = 0.3) -> list[ConnectFour]:
    """A seeded sample of ``count`` distinct non-terminal Connect Four positions from real games:
    alpha-beta at ``depth`` against itself, each move random with probability ``epsilon``
    (so that the games spread), every position of every game a candidate."""
    rng = np.random.default_rng(seed)
    player = ConnectFourAlphaBeta(depth, seed)
    seen: dict[tuple, ConnectFour] = {}
    while len(seen) < 4 * count:
        game = ConnectFour()
        while not game.is_over():
            seen.setdefault(tuple(game.board), game.copy())
            if rng.random() < epsilon:
                game.step(int(rng.choice(game.legal_actions())))
            else:
                game.step(player.choose(game))
    keys = sorted(seen)
    picked = rng.choice(len(keys), size=count, replace=False)
    return [seen[keys[i]] for i in sorted(picked)]



def judged_sample(count: int, seed: int = 0,
                  progress: Callable[[int], None] | None = None) -> tuple[list[ConnectFour], list[dict[int, int]]]:
    """The Connect Four experiments' judged positions: :func:`sample_positions` and the solver's
    :meth:`ConnectFourSolver.move_values` of each (``progress(done)`` after each). ``ImportError``
    without bitbully."""
    solver = ConnectFourSolver(seed=seed)
    positions = sample_positions(count, seed=seed)
    move_values = []
    for i, game in enumerate(positions):
        move_values.append(solver.move_values(game))
        if progress is not None:
            progress(i + 1)
    return positions, move_values

# -- matches --------------------------------------------------------------------------


@dataclasses.dataclass
class MatchResult:
    """Games of ``player`` against ``opponent``, ``player`` moving first (``first=True``) or second."""

    player: str
    opponent: str
    first: bool
    wins: int
    draws: int
    losses: int
    distinct: int = 0  # different games among them (by their final boards)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    def interval(self, what: str = "wins") -> tuple[float, float]:
        """95% Wilson interval of the win rate (``"wins"``), the score (``"score"``) or non-losses (``"not_lost"``)."""
        successes = {"wins": self.wins, "score": self.wins + 0.5 * self.draws,
                     "not_lost": self.wins + self.draws}[what]
        return wilson_interval(successes, self.games)

    def row(self) -> dict:
        lo, hi = self.interval("wins")
        slo, shi = self.interval("score")
        return {"player": self.player, "opponent": self.opponent, "player moves": "first" if self.first else "second",
                "games": self.games, "wins": self.wins, "draws": self.draws, "losses": self.losses,
                "win_rate": self.wins / max(self.games, 1), "win_low": lo, "win_high": hi,
                "score": self.score, "score_low": slo, "score_high": shi, "distinct_games": self.distinct}


def play_match(game: str, player: Choose, opponent: Choose, games: int, first: bool, names=("player", "opponent"),
               progress: Callable[[int], None] | None = None) -> MatchResult:
    """``games`` games from the empty board in lockstep, ``player`` moving first if ``first``."""
    boards = [new_game(game) for _ in range(games)]
    mover_is_player = (lambda g: g.to_play() == 0) if first else (lambda g: g.to_play() == 1)
    active = list(range(games))
    while active:
        for who, choose in ((True, player), (False, opponent)):
            todo = [i for i in active if not boards[i].is_over() and mover_is_player(boards[i]) == who]
            if todo:
                for i, a in zip(todo, choose([boards[i] for i in todo])):
                    boards[i].step(int(a))
        active = [i for i in active if not boards[i].is_over()]
        if progress is not None:
            progress(games - len(active))
    me = 0 if first else 1
    wins = sum(b.winner() == me for b in boards)
    losses = sum(b.winner() == 1 - me for b in boards)
    distinct = len({tuple(b.board) for b in boards})
    return MatchResult(names[0], names[1], first, wins, games - wins - losses, losses, distinct)
