"""Games: the one :class:`Game` interface, and the games that implement it.

>>> from agents.games import new_game
>>> game = new_game("connect_four")   # or "tictactoe", or a chess variant: "gardner", "3x3", ...
>>> game.step(game.legal_actions()[0])

A board game is one file here implementing :class:`Game`, added to :data:`BOARD_GAMES`;
chess variants are games through :class:`~agents.games.chess.ChessGame`.
"""

from __future__ import annotations

from agents.games.base import Game, GridGame, play, terminal_value
from agents.games.chess import ChessGame
from agents.games.connect_four import ConnectFour
from agents.games.tictactoe import TicTacToe
from minichess_envs.variants import VARIANTS

#: The board games by name (chess variants are named by the variant table).
BOARD_GAMES: dict[str, type[Game]] = {"tictactoe": TicTacToe, "connect_four": ConnectFour}
#: The PettingZoo environment each board game follows, rules and encodings alike.
PETTINGZOO_NAMES = {"tictactoe": "tictactoe_v3", "connect_four": "connect_four_v3"}


def game_names() -> list[str]:
    """Every game :func:`new_game` knows: the board games, then the chess variants."""
    return [*BOARD_GAMES, *sorted(VARIANTS)]


def new_game(name: str, **options) -> Game:
    """The start of game ``name``: a board game, or a chess variant (``options``: ``history``,
    ``last_move``, ``ply_limit``, ``fen`` of :meth:`ChessGame.start`)."""
    if name in BOARD_GAMES:
        if options:
            raise ValueError(f"{name} takes no options, got {sorted(options)}")
        return BOARD_GAMES[name]()
    if name in VARIANTS:
        return ChessGame.start(name, **options)
    raise ValueError(f"unknown game {name!r}; known: {', '.join(game_names())}")


def pettingzoo_env(name: str):
    """The raw (unwrapped) PettingZoo env of a board game, reset."""
    if name == "tictactoe":
        from pettingzoo.classic.tictactoe import tictactoe as module
    elif name == "connect_four":
        from pettingzoo.classic.connect_four import connect_four as module
    else:
        raise ValueError(f"no PettingZoo env for {name!r}; known: {', '.join(PETTINGZOO_NAMES)}")
    env = module.raw_env()
    env.reset()
    return env


__all__ = ["BOARD_GAMES", "ChessGame", "ConnectFour", "Game", "GridGame", "PETTINGZOO_NAMES", "TicTacToe",
           "game_names", "new_game", "pettingzoo_env", "play", "terminal_value"]
