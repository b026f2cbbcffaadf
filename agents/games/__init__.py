"""Games: the one :class:`Game` interface (``new_game("connect_four")``, ``"tictactoe"`` or a chess variant).
A board game is one file here implementing :class:`Game`, added to :data:`BOARD_GAMES`."""

from __future__ import annotations

from agents.games.base import SEAT_NAMES, Game, GridGame, terminal_value
from agents.games.chess import ChessGame
from agents.games.connect_four import ConnectFour
from agents.games.tictactoe import TicTacToe
from minichess_envs.variants import VARIANTS

#: The board games by name (chess variants are named by the variant table).
BOARD_GAMES: dict[str, type[Game]] = {"tictactoe": TicTacToe, "connect_four": ConnectFour}


def new_game(name: str, **options) -> Game:
    """The start of game ``name``: a board game, or a chess variant (``options``: ``history``,
    ``last_move``, ``ply_limit``, ``fen`` of :meth:`ChessGame.start`)."""
    if name in BOARD_GAMES:
        if options:
            raise ValueError(f"{name} takes no options, got {sorted(options)}")
        return BOARD_GAMES[name]()
    if name in VARIANTS:
        return ChessGame.start(name, **options)
    raise ValueError(f"unknown game {name!r}; known: {', '.join([*BOARD_GAMES, *sorted(VARIANTS)])}")


__all__ = ["BOARD_GAMES", "SEAT_NAMES", "ChessGame", "ConnectFour", "Game", "GridGame", "TicTacToe",
           "new_game", "terminal_value"]
