"""The one game interface every learner, search and arena plays through: :class:`Game`, a position of a
two-player, zero-sum, turn-based game (players 0, who moves first, and 1), and :class:`GridGame` for marks on a
grid (Tic-Tac-Toe, Connect Four)."""

from __future__ import annotations

import itertools

import numpy as np

from agents.base import Agent

#: How a board game names its players (chess: ``COLOR_NAMES``, white and black).
SEAT_NAMES = ("first", "second")


class Game:
    """One position of a two-player zero-sum game, changed in place by :meth:`step`; subclasses set ``name``,
    ``num_actions`` and ``observation_shape`` and write the methods that raise ``NotImplementedError`` here."""

    name: str
    num_actions: int
    observation_shape: tuple[int, int, int]
    options: tuple[str, ...] = ()  # new_game's options the constructor takes and keeps as attributes (how it is seen)

    def copy(self) -> Game:
        raise NotImplementedError

    def view(self):
        """What a player is shown to choose a move (``minichess_envs.players``): the game itself."""
        return self

    def to_play(self) -> int:
        """The player to move, 0 or 1."""
        raise NotImplementedError

    def legal_actions(self) -> list[int]:
        """The legal actions in the game's own order (the search's children and root noise follow it)."""
        raise NotImplementedError

    def step(self, action: int) -> None:
        """Play ``action``; ``ValueError`` if it is illegal or the game is over."""
        raise NotImplementedError

    # is_over, winner and plies read ``result`` (None going on, -1 a draw, else the winner) and ``moves`` where a
    # game keeps them (the board games); chess overrides them
    def is_over(self) -> bool:
        return self.result is not None

    def winner(self) -> int | None:
        """The winning player of a finished game, ``None`` for a draw (or a game going on)."""
        return None if self.result is None or self.result < 0 else self.result

    def observation(self) -> np.ndarray:
        """float32 ``observation_shape`` planes, from the view of the player to move."""
        raise NotImplementedError

    def key(self) -> int:
        """A 64-bit hash of everything :meth:`observation` shows (the network cache's key)."""
        raise NotImplementedError

    @property
    def plies(self) -> int:
        """Moves played since the game began (the empty board, or the position it was set up from)."""
        return self.moves

    def random_start(self, rng: np.random.Generator, plies: int) -> Game:
        """A start for self-play: this game after 1 to ``plies`` uniformly random moves, never a finished one."""
        game = self
        for _ in range(int(rng.integers(1, plies + 1))):
            after = game.copy()
            after.step(int(rng.choice(game.legal_actions())))
            if after.is_over():
                break
            game = after
        return game

    def legal_mask(self) -> np.ndarray:
        """int8 ``(num_actions,)``: 1 for every legal action."""
        mask = np.zeros(self.num_actions, np.int8)
        mask[self.legal_actions()] = 1
        return mask

    def action_name(self, action: int) -> str:
        """An action as records and people read it (chess: UCI)."""
        return str(action)

    def cells(self) -> list[list[str]]:
        """The board for people, rows top to bottom: each cell a piece's letter or ``""`` (how the terminal and
        the web app draw it)."""
        raise NotImplementedError

    def action_cells(self, action: int) -> tuple[tuple[int, int] | None, tuple[int, int]]:
        """Where ``action`` moves on :meth:`cells`' grid: ``(from, to)`` as ``(row, column)``, ``from`` ``None``
        for a piece put on the board (how a click on the web app's board becomes an action)."""
        raise NotImplementedError

    @classmethod
    def symmetries(cls) -> list[tuple[int, bool, np.ndarray]]:
        """The board's symmetries as ``(quarter_turns, flip, action_permutation)``, the identity first: the
        image of an observation ``o`` (``(H, W, C)``) is ``np.rot90(np.fliplr(o) if flip else o, quarter_turns)``
        and of a policy ``p``, ``p[action_permutation]``. The identity alone unless a game says more."""
        return [(0, False, np.arange(cls.num_actions))]

    def tree_root(self) -> tuple[dict, object]:
        """``_core.Search``'s keyword arguments and the root to set: a copy of a Python game (``rules=None``);
        chess variants override this so that the tree plays their moves in C."""
        return {"rules": None}, self.copy()


def terminal_value(game: Game) -> float:
    """A finished game's value for the player to move: 1 win, -1 loss, 0 draw."""
    w = game.winner()
    return 0.0 if w is None else (1.0 if w == game.to_play() else -1.0)


class GridGame(Game):
    """Marks on a grid, ``length`` in a row wins: ``board`` (0 empty, 1 and 2 the players' marks,
    row-major as PettingZoo keeps it), ``moves`` played and ``result`` (None going on, -1 draw, 0 or 1).
    Observation: PettingZoo's planes, the mover's marks then the opponent's."""

    height: int
    width: int
    length: int  # marks in a row that win (or more)
    title: str  # in error messages
    gravity = False  # True: an action is a column, its mark falls to the lowest empty cell
    lines: list[list[tuple[int, ...]]]
    zobrist: list[list[int]]

    __slots__ = ("board", "moves", "result", "hash")

    def __init_subclass__(cls, length: int | None = None, zobrist_seed: int = 0, **kwargs):
        """A game of ``length`` in a row on its ``height`` x ``width`` grid (no ``length``: a family of such games,
        as Gomoku of any size, whose sized subclasses give it)."""
        super().__init_subclass__(**kwargs)
        if length is None:
            return
        h, w = cls.height, cls.width
        cls.length = length
        if not isinstance(getattr(cls, "observation_shape", None), property):  # Gomoku's planes vary
            cls.observation_shape = (h, w, 2)
        cls.lines = [[] for _ in range(h * w)]  # per cell, the lines of ``length`` through it
        for r, c, (dr, dc) in itertools.product(range(h), range(w), ((0, 1), (1, 0), (1, 1), (-1, 1))):
            cells = [(r + i * dr, c + i * dc) for i in range(length)]
            if all(0 <= rr < h and 0 <= cc < w for rr, cc in cells):
                line = tuple(rr * w + cc for rr, cc in cells)
                for cell in line:
                    cls.lines[cell].append(line)
        # fixed 64-bit random numbers per (cell, player): keys that are the same in every process
        table = np.random.default_rng(zobrist_seed).integers(0, 2**63, size=(h * w, 2), dtype=np.int64)
        cls.zobrist = [[int(a) * 2 + 1, int(b) * 2] for a, b in table]

    def __init__(self):
        self.board = [0] * (self.height * self.width)
        self.moves, self.result, self.hash = 0, None, 0

    def copy(self):
        other = object.__new__(type(self))
        other.board = self.board[:]
        other.moves, other.result, other.hash = self.moves, self.result, self.hash
        return other

    def to_play(self) -> int:
        return self.moves & 1

    def legal_actions(self) -> list[int]:
        # an action's cell (with gravity: its column's top cell) is empty
        return [] if self.result is not None else [a for a in range(self.num_actions) if not self.board[a]]

    def step(self, action: int) -> None:
        if self.result is not None:
            raise ValueError(f"{self!r}: the game is over")
        if not (0 <= action < self.num_actions) or self.board[action]:
            raise ValueError(f"illegal {self.title} action {action!r} in {self!r}")
        board, cell = self.board, action
        while self.gravity and cell + self.width < len(board) and not board[cell + self.width]:
            cell += self.width
        player = self.moves & 1
        mark = player + 1
        board[cell] = mark
        self.hash ^= self.zobrist[cell][player]
        self.moves += 1
        for line in self.lines[cell]:
            for c in line:
                if board[c] != mark:
                    break
            else:
                self.result = player
                return
        if self.moves == len(board):
            self.result = -1

    @classmethod
    def symmetries(cls) -> list[tuple[int, bool, np.ndarray]]:
        """The square's eight (four turns, with and without a reflection); with gravity, the identity and the
        left-right mirror."""
        actions = np.arange(cls.num_actions).reshape(-1, cls.width)
        return [(k, flip, np.rot90(np.fliplr(actions) if flip else actions, k).ravel().copy())
                for flip in (False, True) for k in range(1 if cls.gravity else 4)]

    def observation(self) -> np.ndarray:
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

    def action_name(self, action: int) -> str:
        """The action's cell as ``"c3"``: column letter, row number counted from the bottom (with gravity: the
        column's letter alone)."""
        row, column = divmod(int(action), self.width)
        return "abcdefghijklmnopqrs"[column] + ("" if self.gravity else str(self.height - row))

    def cells(self) -> list[list[str]]:
        """``"X"`` the first player's marks, ``"O"`` the second's."""
        w = self.width
        return [[("", "X", "O")[v] for v in self.board[r * w:(r + 1) * w]] for r in range(self.height)]

    def action_cells(self, action: int) -> tuple[None, tuple[int, int]]:
        cell = int(action)
        while self.gravity and cell + self.width < len(self.board) and not self.board[cell + self.width]:
            cell += self.width
        return None, divmod(cell, self.width)

    def __repr__(self) -> str:
        rows = ["".join(".XO"[v] for v in self.board[r * self.width:(r + 1) * self.width]) for r in range(self.height)]
        return f"{type(self).__name__}({'/'.join(rows)})"


class Judge(Agent):
    """An agent playing a best-scored action (:meth:`scores`) in ``act``'s position (or the game PettingZoo's
    observation shows), ties broken by its own generator, ``new_rng(seed)`` (``reset(seed)`` reseeds)."""

    game_class: type[GridGame]
    new_rng = staticmethod(np.random.default_rng)

    def __init__(self, seed: int = 0):
        self.rng = self.new_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = self.new_rng(seed)

    def act(self, observation, action_mask, position=None) -> int:
        return self.choose(self.game_class.from_observation(observation) if position is None else position)

    def choose(self, game: GridGame) -> int:
        scores = self.scores(game)
        best = max(scores.values())
        return int(self.rng.choice(sorted(a for a, s in scores.items() if s == best)))

    def scores(self, game: GridGame) -> dict[int, int]:
        """Each legal action's score for the player to move, higher is better."""
        raise NotImplementedError


def judged_positions(start: GridGame, player: Judge, solver, count: int, seed: int = 0, epsilon: float = 0.3,
                  progress=None) -> tuple[list[GridGame], list[dict[int, int]]]:
    """``count`` distinct positions going on, drawn (seeded) from games of ``player`` against itself from ``start``,
    each move random with probability ``epsilon`` so that the games spread, and each position's exact move values
    ``solver.move_values(game)`` (1 win, 0 draw, -1 loss; ``progress(done)`` after each)."""
    rng = np.random.default_rng(seed)
    seen: dict[tuple, GridGame] = {}
    while len(seen) < 4 * count:
        game = start.copy()
        while not game.is_over():
            seen.setdefault(tuple(game.board), game.copy())
            game.step(int(rng.choice(game.legal_actions())) if rng.random() < epsilon else player.choose(game))
    keys = sorted(seen)
    positions = [seen[keys[i]] for i in sorted(rng.choice(len(keys), size=count, replace=False))]
    values = []
    for game in positions:
        values.append(solver.move_values(game))
        if progress is not None:
            progress(len(values))
    return positions, values
