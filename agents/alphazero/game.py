"""The game interface AlphaZero's generic search plays through, and its adapters.

A :class:`Game` is one position of a two-player, zero-sum, turn-based game that
can copy itself, list its legal actions, take an action, and say when the game
is over and who won. Adapters:

- :class:`TicTacToe` and :class:`ConnectFour`: the PettingZoo classic games
  ``tictactoe_v3`` and ``connect_four_v3`` on a plain board array, with
  PettingZoo's rules, observation planes and action masks (tests check them
  against the real environments move by move). Copying is a list copy, about a
  hundred times cheaper than ``copy.deepcopy`` of the environment.
- :class:`AECGame`: any turn-based two-player PettingZoo AEC environment with
  an ``action_mask``, copied by deep copies of its attributes (slow but needs
  nothing from the game).
- :class:`ChessGame`: our chess variants (:class:`~minichess_envs.engine.Position`),
  so that the generic search can be checked against the C search.

Players are numbered 0 (moves first) and 1.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Protocol

import numpy as np


class Game(Protocol):
    """One position of a two-player zero-sum game, mutable by :meth:`step`."""

    num_actions: int
    observation_shape: tuple[int, int, int]

    def copy(self) -> Game: ...

    def to_play(self) -> int:
        """The player to move, 0 or 1."""

    def legal_actions(self) -> list[int]:
        """The legal actions in the game's own order (the search's children and root noise follow it)."""

    def legal_mask(self) -> np.ndarray:
        """int8 ``(num_actions,)``: 1 for every legal action."""

    def step(self, action: int) -> None: ...

    def is_over(self) -> bool: ...

    def winner(self) -> int | None:
        """The winning player of a finished game, ``None`` for a draw (or a game going on)."""

    def observation(self) -> np.ndarray:
        """float32 ``observation_shape``, from the view of the player to move."""

    def key(self) -> int:
        """A 64-bit hash of everything :meth:`observation` shows (the network cache's key)."""


def terminal_value(game: Game) -> float:
    """A finished game's value for the player to move: 1 win, -1 loss, 0 draw."""
    w = game.winner()
    return 0.0 if w is None else (1.0 if w == game.to_play() else -1.0)


def _zobrist(cells: int, seed: int) -> list[list[int]]:
    """Fixed 64-bit random numbers per (cell, player): keys that are the same in every process."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 2**63, size=(cells, 2), dtype=np.int64)
    return [[int(a) * 2 + 1, int(b) * 2] for a, b in table]


class _BoardGame:
    """Shared parts of the board-array games: ``board`` (0 empty, 1 and 2 the players' marks,
    row-major as PettingZoo keeps it), ``moves`` played and ``result`` (None going on, -1 draw, 0 or 1)."""

    height: int
    width: int
    num_actions: int
    lines: list  # per cell, the winning lines through it
    zobrist: list

    __slots__ = ("board", "moves", "result", "hash")

    def __init__(self):
        self.board = [0] * (self.height * self.width)
        self.moves = 0
        self.result = None
        self.hash = 0

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        return (self.height, self.width, 2)

    def copy(self):
        other = object.__new__(type(self))
        other.board = self.board[:]
        other.moves, other.result, other.hash = self.moves, self.result, self.hash
        return other

    def to_play(self) -> int:
        return self.moves & 1

    def legal_mask(self) -> np.ndarray:
        mask = np.zeros(self.num_actions, np.int8)
        mask[self.legal_actions()] = 1
        return mask

    def is_over(self) -> bool:
        return self.result is not None

    def winner(self) -> int | None:
        return None if self.result is None or self.result < 0 else self.result

    def observation(self) -> np.ndarray:
        """PettingZoo's planes: the mover's marks, then the opponent's."""
        b = np.frombuffer(bytes(self.board), np.int8).reshape(self.height, self.width)
        me = 1 + self.to_play()
        out = np.empty((self.height, self.width, 2), np.float32)
        out[..., 0] = b == me
        out[..., 1] = b == 3 - me
        return out

    def key(self) -> int:
        return self.hash

    @classmethod
    def from_observation(cls, observation: np.ndarray):
        """The position PettingZoo's observation shows (the mover's marks, then the opponent's):
        the marks' count says who moves, so the board is all there is."""
        planes = np.asarray(observation).reshape(cls.height, cls.width, 2) > 0
        mover_first = planes[..., 0].sum() == planes[..., 1].sum()
        first, second = (planes[..., 0], planes[..., 1]) if mover_first else (planes[..., 1], planes[..., 0])
        game = cls()
        game.board = (first.astype(np.int8) + 2 * second.astype(np.int8)).ravel().tolist()
        game.moves = int(first.sum() + second.sum())
        for cell, mark in enumerate(game.board):
            if mark:
                game.hash ^= cls.zobrist[cell][mark - 1]
        for mark in (1, 2):
            if any(all(game.board[c] == mark for c in line) for lines in cls.lines for line in lines):
                game.result = mark - 1
        if game.result is None and game.moves == len(game.board):
            game.result = -1
        return game

    def _place(self, cell: int) -> None:
        player = self.moves & 1
        mark = player + 1
        self.board[cell] = mark
        self.hash ^= self.zobrist[cell][player]
        self.moves += 1
        board = self.board
        for line in self.lines[cell]:
            for c in line:
                if board[c] != mark:
                    break
            else:
                self.result = player
                return
        if self.moves == len(board):
            self.result = -1

    def __repr__(self) -> str:
        rows = ["".join(".XO"[v] for v in self.board[r * self.width:(r + 1) * self.width]) for r in range(self.height)]
        return f"{type(self).__name__}({'/'.join(rows)})"


def _lines(height: int, width: int, length: int) -> list[list[tuple[int, ...]]]:
    """For every cell, the winning lines (``length`` in a row, any direction) that pass through it."""
    through: list[list[tuple[int, ...]]] = [[] for _ in range(height * width)]
    for r in range(height):
        for c in range(width):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (-1, 1)):
                cells = [(r + i * dr, c + i * dc) for i in range(length)]
                if all(0 <= rr < height and 0 <= cc < width for rr, cc in cells):
                    line = tuple(rr * width + cc for rr, cc in cells)
                    for cell in line:
                        through[cell].append(line)
    return through


class TicTacToe(_BoardGame):
    """PettingZoo ``tictactoe_v3``: action = square index 0..8 of its board list
    (observation ``[r, c]`` is square ``3 r + c``)."""

    height = width = 3
    num_actions = 9
    name = "tictactoe"
    lines = _lines(3, 3, 3)
    zobrist = _zobrist(9, 3)
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


class ConnectFour(_BoardGame):
    """PettingZoo ``connect_four_v3``: action = column 0..6; the board's row 0 is the top."""

    height, width = 6, 7
    num_actions = 7
    name = "connect_four"
    lines = _lines(6, 7, 4)
    zobrist = _zobrist(42, 4)
    __slots__ = ()

    def legal_actions(self) -> list[int]:
        if self.result is not None:
            return []
        return [c for c in range(7) if self.board[c] == 0]

    def step(self, action: int) -> None:
        if self.result is not None:
            raise ValueError(f"{self!r}: the game is over")
        if not (0 <= action < 7) or self.board[action]:
            raise ValueError(f"illegal Connect Four action {action!r} in {self!r}")
        cell = 35 + action
        while self.board[cell]:
            cell -= 7
        self._place(cell)


def play(game_class, actions) -> _BoardGame:
    """A board game after the given actions from the empty board."""
    game = game_class()
    for a in actions:
        game.step(int(a))
    return game


class AECGame:
    """Any two-player turn-based PettingZoo AEC env with an ``action_mask`` observation, as a :class:`Game`.

    Copies are deep copies of the (unwrapped) env's attributes; the key hashes the
    observation and the player to move. Slow, but it needs nothing from the game.
    """

    def __init__(self, env):
        self.env = env
        agent = env.possible_agents[0]
        space = env.observation_space(agent)["observation"]
        shape = space.shape if len(space.shape) == 3 else (1, 1, int(np.prod(space.shape)))
        self.observation_shape = tuple(shape)
        self.num_actions = int(env.action_space(agent).n)

    def copy(self) -> AECGame:
        other = object.__new__(AECGame)
        # copy the env's attributes: deepcopy of the env itself goes through EzPickle, which
        # rebuilds a fresh env from its constructor arguments and loses the game
        env = object.__new__(type(self.env))
        env.__dict__ = copy.deepcopy(self.env.__dict__)
        other.env = env
        other.observation_shape, other.num_actions = self.observation_shape, self.num_actions
        return other

    def to_play(self) -> int:
        return self.env.possible_agents.index(self.env.agent_selection)

    def _observe(self) -> dict:
        return self.env.observe(self.env.agent_selection)

    def legal_mask(self) -> np.ndarray:
        if self.is_over():
            return np.zeros(self.num_actions, np.int8)
        return np.asarray(self._observe()["action_mask"], np.int8)

    def legal_actions(self) -> list[int]:
        return [int(a) for a in np.flatnonzero(self.legal_mask())]

    def step(self, action: int) -> None:
        self.env.step(int(action))

    def is_over(self) -> bool:
        env = self.env
        return any(env.terminations.get(a, False) or env.truncations.get(a, False) for a in env.possible_agents)

    def winner(self) -> int | None:
        if not self.is_over():
            return None
        rewards = [self.env._cumulative_rewards.get(a, 0) for a in self.env.possible_agents]
        if rewards[0] == rewards[1]:
            return None
        return int(np.argmax(rewards))

    def observation(self) -> np.ndarray:
        return np.asarray(self._observe()["observation"], np.float32).reshape(self.observation_shape)

    def key(self) -> int:
        obs = np.asarray(self._observe()["observation"], np.int8)
        digest = hashlib.blake2b(obs.tobytes() + bytes([self.to_play()]), digest_size=8).digest()
        return int.from_bytes(digest, "little")


class ChessGame:
    """A chess-variant :class:`~minichess_envs.engine.Position` as a :class:`Game`, with the
    search's ply limit (reaching it ends the game drawn, as in the C search)."""

    __slots__ = ("position", "encoding", "ply_limit")

    def __init__(self, position, encoding, ply_limit: int | None = None):
        self.position = position
        self.encoding = encoding
        self.ply_limit = position.variant.ply_limit if ply_limit is None else ply_limit

    @property
    def num_actions(self) -> int:
        return self.position.variant.num_actions

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        return self.encoding.shape

    def copy(self) -> ChessGame:
        return ChessGame(self.position.copy(), self.encoding, self.ply_limit)

    def to_play(self) -> int:
        return self.position.turn

    def legal_actions(self) -> list[int]:
        return self.position.legal_actions()

    def legal_mask(self) -> np.ndarray:
        return self.position.action_mask()

    def step(self, action: int) -> None:
        self.position.push_action(int(action))

    def is_over(self) -> bool:
        return self.position.outcome_code()[0] != 0 or self.position.ply >= self.ply_limit

    def winner(self) -> int | None:
        reason, winner = self.position.outcome_code()
        return winner if reason and winner >= 0 else None

    def observation(self) -> np.ndarray:
        return self.encoding.encode(self.position)

    def key(self) -> int:
        digest = hashlib.blake2b(self.observation().tobytes(), digest_size=8).digest()
        return int.from_bytes(digest, "little")


GAMES = {"tictactoe": TicTacToe, "connect_four": ConnectFour}
PETTINGZOO_NAMES = {"tictactoe": "tictactoe_v3", "connect_four": "connect_four_v3"}


def new_game(name: str) -> _BoardGame:
    """The empty board of ``"tictactoe"`` or ``"connect_four"``."""
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; known: {', '.join(GAMES)}")
    return GAMES[name]()


def pettingzoo_env(name: str):
    """The raw (unwrapped) PettingZoo env of a board game, reset."""
    if name == "tictactoe":
        from pettingzoo.classic.tictactoe import tictactoe as module
    elif name == "connect_four":
        from pettingzoo.classic.connect_four import connect_four as module
    else:
        raise ValueError(f"unknown game {name!r}; known: {', '.join(GAMES)}")
    env = module.raw_env()
    env.reset()
    return env
