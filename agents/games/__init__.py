"""Games: the one :class:`Game` interface (``new_game("connect_four")``, ``"checkers"``, ``"tictactoe"`` or a chess
variant).
A board game is one file here implementing :class:`Game`, added to :data:`BOARD_GAMES`."""

from __future__ import annotations

from agents.games.base import SEAT_NAMES, Game, GridGame, terminal_value
from agents.games.checkers import Checkers
from agents.games.chess import ChessGame
from agents.games.connect_four import ConnectFour
from agents.games.tictactoe import TicTacToe
from minichess_envs.variants import VARIANTS

#: The board games by name (chess variants are named by the variant table).
BOARD_GAMES: dict[str, type[Game]] = {"tictactoe": TicTacToe, "connect_four": ConnectFour, "checkers": Checkers}

#: What a game shows without options: a board game takes these values of options it has not got.
PLAIN = {"history": 1, "last_move": False, "ply_limit": None, "fen": None}


def new_game(name: str, **options) -> Game:
    """The start of game ``name``: a chess variant (``options``: ``history``, ``last_move``, ``ply_limit``, ``fen``
    of :meth:`ChessGame.start`) or a board game (the options its class names in ``options``)."""
    if name in VARIANTS:
        return ChessGame.start(name, **options)
    if name not in BOARD_GAMES:
        raise ValueError(f"unknown game {name!r}; known: {', '.join([*BOARD_GAMES, *sorted(VARIANTS)])}")
    cls = BOARD_GAMES[name]
    taken = getattr(cls, "options", ())
    other = {k: v for k, v in options.items() if k not in taken and (k not in PLAIN or PLAIN[k] != v)}
    if other:
        raise ValueError(f"{name} takes {', '.join(taken) or 'no options'}, got {other}")
    return cls(**{k: v for k, v in options.items() if k in taken})


__all__ = ["BOARD_GAMES", "SEAT_NAMES", "Checkers", "ChessGame", "ConnectFour", "Game", "GridGame", "TicTacToe",
           "new_game", "terminal_value"]
