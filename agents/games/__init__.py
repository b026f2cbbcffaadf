"""Games: the one :class:`Game` interface (``new_game("connect_four")``, ``"checkers"``, ``"gomoku"``, ``"tictactoe"``
or a chess variant). A board game is one file here implementing :class:`Game`, added to :data:`BOARD_GAMES`."""

from __future__ import annotations

from agents.games.base import SEAT_NAMES, Game, GridGame, terminal_value
from agents.games.checkers import Checkers
from agents.games.chess import ChessGame
from agents.games.connect_four import ConnectFour
from agents.games.gomoku import Gomoku
from agents.games.tictactoe import TicTacToe
from minichess_envs.variants import VARIANTS

#: The board games by name (chess variants are named by the variant table).
BOARD_GAMES: dict[str, type[Game]] = {cls.name: cls for cls in (
    TicTacToe, ConnectFour, Checkers, Gomoku.sized(9), Gomoku.sized(15), Gomoku.sized(4, 4))}

#: What a game shows without options: a board game takes these values of options it has not got.
PLAIN = {"history": 1, "last_move": False, "threats": False, "ply_limit": None, "fen": None}
#: The options of a chess variant's game (:meth:`ChessGame.start`).
CHESS_OPTIONS = ("history", "last_move", "ply_limit", "fen")


def board_game(name: str) -> type[Game] | None:
    """The class of board game ``name``: one of :data:`BOARD_GAMES` or Gomoku of another size
    (:meth:`Gomoku.named`); None for other names."""
    return BOARD_GAMES.get(name) or Gomoku.named(name)


def new_game(name: str, **options) -> Game:
    """The start of game ``name``: a chess variant (``options``: ``history``, ``last_move``, ``ply_limit``, ``fen``
    of :meth:`ChessGame.start`) or a board game (the options its class names in ``options``)."""
    cls = ChessGame if name in VARIANTS else board_game(name)
    if cls is None:
        raise ValueError(f"unknown game {name!r}; known: {', '.join([*BOARD_GAMES, *sorted(VARIANTS)])}, "
                         "gomoku<size>[k<length>]")
    taken = CHESS_OPTIONS if cls is ChessGame else cls.options
    other = {k: v for k, v in options.items() if k not in taken and (k not in PLAIN or PLAIN[k] != v)}
    if other:
        raise ValueError(f"{name} takes {', '.join(taken) or 'no options'}, got {other}")
    options = {k: v for k, v in options.items() if k in taken}
    return ChessGame.start(name, **options) if cls is ChessGame else cls(**options)


__all__ = ["BOARD_GAMES", "SEAT_NAMES", "Checkers", "ChessGame", "ConnectFour", "Game", "Gomoku", "GridGame",
           "TicTacToe", "board_game", "new_game", "terminal_value"]
