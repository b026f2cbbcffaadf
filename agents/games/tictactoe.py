"""Tic-Tac-Toe (PettingZoo ``tictactoe_v3``) as a :class:`~agents.games.Game`, and its exact judge.

Action = square index 0..8 of PettingZoo's board list (observation ``[r, c]`` is
square ``3 r + c``). :func:`solve_tictactoe` is our own exhaustive minimax over
every position reachable from the empty board (5,478 of them);
:class:`TicTacToeSolver` plays by it, an agent like any other.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from agents.base import Agent
from agents.games.base import GridGame, terminal_value, winning_lines, zobrist_keys


class TicTacToe(GridGame):
    """Three in a row on a 3x3 board; the first player marks 1, the second 2."""

    height = width = 3
    num_actions = 9
    name = "tictactoe"
    lines = winning_lines(3, 3, 3)
    zobrist = zobrist_keys(9, 3)
    __slots__ = ()

    def legal_actions(self) -> list[int]:
        if self.result is not None:
            return []
        return [i for i, v in enumerate(self.board) if v == 0]

    def step(self, action: int) -> None:
        if self.result is not None:
            raise ValueError(f"{self!r}: the game is over")
        if not (0 <= action < 9) or self.board[action]:
            raise ValueError(f"illegal Tic-Tac-Toe action {action!r} in {self!r}")
        self._place(action)

    @classmethod
    def symmetries(cls) -> list[tuple[int, bool, np.ndarray]]:
        """The square's eight: four turns, with and without a reflection."""
        cells = np.arange(9).reshape(3, 3)
        return [(k, flip, np.rot90(np.fliplr(cells) if flip else cells, k).ravel().copy())
                for flip in (False, True) for k in range(4)]


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


class TicTacToeSolver(Agent):
    """A perfect player: a best move by the solved table (default: :func:`solve_tictactoe`), ties
    broken at random by its own generator, seeded (``reset(seed)`` reseeds)."""

    name = "perfect minimax"

    def __init__(self, table: TicTacToeTable | None = None, seed: int = 0):
        self.table = table or solve_tictactoe()
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask, position=None) -> int:
        game = TicTacToe.from_observation(observation) if position is None else position
        values = self.table.move_values(game)
        best = max(values.values())
        return int(self.rng.choice([a for a, v in values.items() if v == best]))
