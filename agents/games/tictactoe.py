"""Tic-Tac-Toe (PettingZoo ``tictactoe_v3``; action = square ``3 r + c``) and its exact judge: :func:`solve_tictactoe`
solves all 5,478 positions reachable from the empty board, :class:`TicTacToeSolver` plays by it."""

from __future__ import annotations

import dataclasses

from agents.games.base import GridGame, Judge, terminal_value


class TicTacToe(GridGame, length=3, zobrist_seed=3):
    """Three in a row on a 3x3 board; the first player marks 1, the second 2."""

    height = width = 3
    title = "Tic-Tac-Toe"
    num_actions = 9
    name = "tictactoe"
    __slots__ = ()


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


class TicTacToeSolver(Judge):
    """A perfect player: a best move by the solved table (default: :func:`solve_tictactoe`), ties at random."""

    name = "perfect minimax"
    game_class = TicTacToe

    def __init__(self, table: TicTacToeTable | None = None, seed: int = 0):
        self.table = table or solve_tictactoe()
        super().__init__(seed)

    def scores(self, game: TicTacToe) -> dict[int, int]:
        return self.table.move_values(game)
