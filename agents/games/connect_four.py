"""Connect Four (PettingZoo ``connect_four_v3``; action = column 0..6, row 0 the top) and its judges, agents
like any other: :class:`ConnectFourSolver` (``bitbully``, extra ``[games]``) and :class:`ConnectFourAlphaBeta`;
:func:`judged_sample`, the solver-judged positions the experiments score agents on."""

from __future__ import annotations

import random
from typing import Callable

import numpy as np

from agents.games.base import GridGame, Judge, judged_positions


class ConnectFour(GridGame, length=4, zobrist_seed=4):
    """Four in a row on 6 rows and 7 columns; a mark falls to the lowest empty cell of its column."""

    height, width = 6, 7
    title = "Connect Four"
    gravity = True
    num_actions = 7
    name = "connect_four"
    __slots__ = ()


H1 = 7  # bits per column: 6 cells and a sentinel
BOARD = sum(0b111111 << (c * H1) for c in range(7))
CENTER = 0b111111 << (3 * H1)
COLUMN_ORDER = (3, 2, 4, 1, 5, 0, 6)  # centre first: better cut-offs, and the ties the root breaks
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
    for c in COLUMN_ORDER:
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
    for c in COLUMN_ORDER:
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


class ConnectFourAlphaBeta(Judge):
    """Depth-limited alpha-beta (negamax) with :func:`heuristic`; ties between the best columns
    broken at random (seeded), so that games against a deterministic player differ."""

    game_class, new_rng = ConnectFour, random.Random

    def __init__(self, depth: int = 4, seed: int = 0):
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        super().__init__(seed)
        self.depth = depth
        self.name = f"alpha-beta depth {depth}"

    def scores(self, game: ConnectFour) -> dict[int, int]:
        return alpha_beta_values(game, self.depth)


class ConnectFourSolver(Judge):
    """bitbully (``pip install bitbully``, extra ``[games]``): exact move scores, and a perfect
    player that breaks ties between equally scored columns at random (seeded)."""

    game_class, new_rng = ConnectFour, random.Random

    def __init__(self, seed: int = 0):
        try:
            import bitbully
        except ImportError as exc:  # an optional extra
            raise ImportError("the Connect Four solver needs bitbully: pip install 'minichess-envs[games]' "
                              "(or pip install bitbully)") from exc
        super().__init__(seed)
        self.engine = bitbully.BitBully()
        self.name = "perfect solver (bitbully)"

    def __getstate__(self) -> dict:
        """Pickled without the solver (it does not pickle): an arena worker starts its own."""
        return {k: v for k, v in self.__dict__.items() if k != "engine"}

    def __setstate__(self, state: dict) -> None:
        import bitbully

        self.__dict__.update(state, engine=bitbully.BitBully())

    def scores(self, game: ConnectFour) -> dict[int, int]:
        """bitbully's score of every legal column: > 0 the player to move wins (sooner: larger), 0 draw, < 0 loses."""
        import bitbully

        if game.is_over():
            raise ValueError(f"{game!r}: the game is over")
        board = bitbully.Board.from_array([game.board[r * 7:(r + 1) * 7] for r in range(6)])
        return {int(c): int(s) for c, s in self.engine.score_all_moves(board).items()}

    def move_values(self, game: ConnectFour) -> dict[int, int]:
        """Each legal column's value class: 1 win, 0 draw, -1 loss."""
        return {c: int(np.sign(s)) for c, s in self.scores(game).items()}


def judged_sample(count: int, seed: int = 0,
                  progress: Callable[[int], None] | None = None) -> tuple[list[ConnectFour], list[dict[int, int]]]:
    """The Connect Four experiments' judged positions: from games of alpha-beta depth 2 against itself, each move
    random with probability 0.3, judged by :class:`ConnectFourSolver` (:func:`~agents.games.base.judged_positions`).
    ``ImportError`` without bitbully."""
    solver = ConnectFourSolver(seed=seed)
    return judged_positions(ConnectFour(), ConnectFourAlphaBeta(2, seed), solver, count, seed, 0.3, progress)

