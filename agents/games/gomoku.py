"""Gomoku, freestyle (``length`` or more stones in a row win, as OpenSpiel's ``gomoku`` and ``mnk``), on a square
board of any size (:meth:`Gomoku.sized`), and its judges: :class:`GomokuSolver` (exact, for small boards) and
:class:`GomokuAlphaBeta` (depth-limited, with a stated evaluation). Named games: ``"gomoku"`` (9x9, five in a row: it
trains on 2 CPU cores), ``"gomoku15"`` (15x15, five: the standard board, the seed report's and OpenSpiel's),
``"gomoku4k4"`` (4x4, four in a row: small enough for the exact solver), any ``"gomoku<size>[k<length>]"``."""

from __future__ import annotations

import random
import re

import numpy as np

from agents.games.base import GridGame, Judge, judged_positions

#: Board sizes Gomoku.sized takes (OpenSpiel's gomoku goes to 19, the largest Go board).
SIZES = range(3, 20)
#: Random plies opening each game of a match: the search and alpha-beta are nearly deterministic, and from the
#: empty board 50 games against alpha-beta depth 2 were 4 different games (docs/results/boardgames.md).
MATCH_OPENING_PLIES = 2
#: The threat planes' number: for the mover, then the opponent, where a stone makes five and where it makes fours.
THREAT_PLANES = 4
_WINDOWS: dict[type, np.ndarray] = {}
_SIZED: dict[tuple[int, int], type] = {}


def __getattr__(name: str):
    """``Gomoku<size>k<length>``: the sized class, made on first use (so that pickle finds it in any process)."""
    found = re.fullmatch(r"Gomoku(\d{1,2})k(\d{1,2})", name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return Gomoku.sized(int(found[1]), int(found[2]))


class Gomoku(GridGame):
    """Stones on a square board, ``length`` or more in a row win (an overline too), a full board is a draw; action
    = cell ``size * row + column``, as OpenSpiel's. Observed with ``history`` (1 to 3) as in the seed report's
    input study: 1, its three planes (the mover's stones, the opponent's, and 1 everywhere if the mover moved
    first); 2, also the last move; 3, also the move before it (the mover's own last move), each a one-hot plane:
    the same information as that many positions. With ``threats``, also :meth:`threats`' planes."""

    title = "Gomoku"
    options = ("history", "threats")
    recent_keys: list[list[int]]  # Zobrist keys of the last move's cell and the one before's
    __slots__ = ("history", "threats", "recent")

    def __init_subclass__(cls, length: int | None = None, zobrist_seed: int = 0, **kwargs):
        super().__init_subclass__(length=length, zobrist_seed=zobrist_seed, **kwargs)
        if length is not None:
            table = np.random.default_rng([zobrist_seed, 1]).integers(0, 2**63, size=(2, cls.height ** 2))
            cls.recent_keys = [[int(k) for k in row] for row in table]

    @staticmethod
    def sized(size: int, length: int = 5) -> type[Gomoku]:
        """The class of Gomoku on a ``size`` x ``size`` board, ``length`` in a row (one class per pair)."""
        if size not in SIZES or not (isinstance(length, int) and 3 <= length <= size):
            raise ValueError(f"Gomoku needs a size in 3..19 and a length in 3..size, got {size!r}, {length!r}")
        if (size, length) not in _SIZED:
            name = "gomoku" if (size, length) == (9, 5) else f"gomoku{size}" + (f"k{length}" if length != 5 else "")
            namespace = {"height": size, "width": size, "num_actions": size * size, "name": name, "__slots__": (),
                         "__doc__": f"Gomoku on {size}x{size}, {length} in a row."}
            _SIZED[size, length] = type(f"Gomoku{size}k{length}", (Gomoku,), namespace, length=length,
                                        zobrist_seed=size * 100 + length)
        return _SIZED[size, length]

    @staticmethod
    def named(name: str) -> type[Gomoku] | None:
        """The class of ``"gomoku"``, ``"gomoku<size>"`` (five in a row) or ``"gomoku<size>k<length>"``; None for
        a name of no such form."""
        found = re.fullmatch(r"gomoku(?:(\d{1,2})(?:k(\d{1,2}))?)?", name)
        if not found:
            return None
        return Gomoku.sized(int(found[1] or 9), int(found[2] or 5))

    def __init__(self, history: int = 1, threats: bool = False):
        if history not in (1, 2, 3):
            raise ValueError(f"Gomoku's history is 1, 2 or 3 (positions shown), got {history!r}")
        if not isinstance(threats, bool):
            raise ValueError(f"Gomoku's threats is True or False, got {threats!r}")
        super().__init__()
        self.history, self.threats, self.recent = history, threats, (-1, -1)  # recent: the last move, the one before

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        return self.height, self.width, 2 + self.history + THREAT_PLANES * self.threats

    def copy(self) -> Gomoku:
        other = super().copy()
        other.history, other.threats, other.recent = self.history, self.threats, self.recent
        return other

    def step(self, action: int) -> None:
        super().step(action)
        self.recent = (int(action), self.recent[0])

    def observation(self) -> np.ndarray:
        out = np.zeros(self.observation_shape, np.float32)
        out[..., :2] = super().observation()
        out[..., 2] = self.to_play() == 0
        for plane, cell in enumerate(self.recent[:self.history - 1]):
            if cell >= 0:
                out[cell // self.width, cell % self.width, 3 + plane] = 1
        if self.threats:
            out[..., 2 + self.history:] = self.threat_planes()
        return out

    def threat_planes(self) -> np.ndarray:
        """float32 ``(size, size, 4)``, for the mover then the opponent: 1 on the empty cells where a stone of theirs
        makes ``length`` in a row; on each empty cell, a quarter of the windows of ``length`` cells through it that a
        stone there fills to ``length - 1`` with none of the other player's (a four; two or more: a double threat)."""
        W = _window_matrix(type(self))
        board = np.asarray(self.board)
        mover = self.to_play() + 1
        mine, theirs, empty = board == mover, (board != 0) & (board != mover), board == 0
        m, t = W @ mine.astype(np.float32), W @ theirs.astype(np.float32)
        planes = []
        for own, other in ((m, t), (t, m)):
            open_ = other == 0
            planes.append(((open_ & (own == self.length - 1)).astype(np.float32) @ W > 0) & empty)
            planes.append(((open_ & (own == self.length - 2)).astype(np.float32) @ W) * empty / 4)
        return np.stack(planes, -1).astype(np.float32).reshape(self.height, self.width, THREAT_PLANES)

    def key(self) -> int:
        key = self.hash
        for plane, cell in enumerate(self.recent[:self.history - 1]):
            if cell >= 0:
                key ^= self.recent_keys[plane][cell]
        return key

    @classmethod
    def from_observation(cls, observation: np.ndarray) -> Gomoku:
        """The position the planes show (its ``history`` and ``threats`` read from their number: 3-5 or 7-9)."""
        planes = np.asarray(observation)
        planes = planes.reshape(cls.height, cls.width, planes.size // cls.height ** 2)
        threats = planes.shape[-1] > 2 + 3
        history = planes.shape[-1] - 2 - THREAT_PLANES * threats
        mover, other = planes[..., 0] > 0, planes[..., 1] > 0
        first, second = (mover, other) if planes[0, 0, 2] else (other, mover)
        game = cls.from_stones(first, second, history, threats)
        cells = [int(np.argmax(planes[..., 3 + k])) if planes[..., 3 + k].any() else -1 for k in range(history - 1)]
        game.recent = tuple(cells + [-1] * (2 - len(cells)))
        return game

    @classmethod
    def from_stones(cls, first, second, history: int = 1, threats: bool = False) -> Gomoku:
        """The position with the first player's stones where ``first`` is true and the second's where ``second``
        is (``(size, size)`` arrays); ``ValueError`` unless the counts say whose move it is."""
        game = cls(history, threats)
        game.board = (np.asarray(first, bool) + 2 * np.asarray(second, bool)).astype(int).ravel().tolist()
        counts = game.board.count(1), game.board.count(2)
        if 3 in game.board or counts[0] - counts[1] not in (0, 1):
            raise ValueError(f"not a Gomoku position: {counts[0]} first and {counts[1]} second stones, overlapping "
                             "or out of turn")
        game.moves = sum(counts)
        for cell, mark in enumerate(game.board):
            if mark:
                game.hash ^= cls.zobrist[cell][mark - 1]
                if any(all(game.board[c] == mark for c in line) for line in cls.lines[cell]):
                    game.result = mark - 1
        if game.result is None and game.moves == len(game.board):
            game.result = -1
        return game

    def openspiel_state(self):
        """OpenSpiel's ``gomoku`` (``mnk`` below five in a row) with these stones, played in this game's order
        where it is known (else first's and second's stones alternately)."""
        import pyspiel
        if self.length == 5:
            game = pyspiel.load_game("gomoku", {"size": self.height, "connect": self.length})
        else:
            game = pyspiel.load_game("mnk", {"m": self.height, "n": self.width, "k": self.length})
        state = game.new_initial_state()
        first = [c for c, v in enumerate(self.board) if v == 1 and c not in self.recent]
        second = [c for c, v in enumerate(self.board) if v == 2 and c not in self.recent]
        last = [c for c in reversed(self.recent) if c >= 0]
        ordered = first + second
        ordered[::2], ordered[1::2] = first, second  # alternate: counts differ by at most one
        for cell in ordered + last:
            state.apply_action(cell)
        return state

    @staticmethod
    def from_openspiel(action: int) -> int:
        return int(action)


# -- judges ------------------------------------------------------------------------


def _bitboards(game: GridGame) -> tuple[int, int]:
    """``(stones of the player to move, the opponent's)`` as bit masks, cell ``i`` bit ``i``."""
    me = 1 + game.to_play()
    mine = theirs = 0
    for cell, mark in enumerate(game.board):
        if mark == me:
            mine |= 1 << cell
        elif mark:
            theirs |= 1 << cell
    return mine, theirs


def _line_masks(cls: type[GridGame]) -> list[int]:
    return sorted({sum(1 << c for c in line) for lines in cls.lines for line in lines})


class GomokuSolver(Judge):
    """The exact value of every move: negamax with alpha-beta and a transposition table over the whole game,
    taking an immediate win and, facing one, blocking it (the only moves that can do as well). For small
    boards: 4x4 with four in a row takes about a second, 5x5 with four does not finish in ten minutes."""

    name = "perfect solver"
    game_class, new_rng = Gomoku.sized(4, 4), random.Random

    def __init__(self, game_class: type[GridGame] | None = None, seed: int = 0):
        super().__init__(seed)
        if game_class is not None:
            self.game_class = game_class
        cls = self.game_class
        self.lines = _line_masks(cls)
        self.full = (1 << (cls.height * cls.width)) - 1
        middle_r, middle_c = (cls.height - 1) / 2, (cls.width - 1) / 2
        self.order = sorted(range(cls.height * cls.width),
                            key=lambda i: abs(i // cls.width - middle_r) + abs(i % cls.width - middle_c))
        self.table: dict[tuple[int, int], tuple[int, int]] = {}

    def winning_cells(self, stones: int, empty: int) -> int:
        """The empty cells that complete a line of ``stones``."""
        out = 0
        for line in self.lines:
            missing = line & ~stones
            if missing & empty and not missing & (missing - 1):
                out |= missing
        return out

    def value(self, mine: int, theirs: int, alpha: int = -1, beta: int = 1) -> int:
        """1, 0 or -1 for the player to move with stones ``mine`` against ``theirs`` (neither has a line)."""
        empty = self.full & ~(mine | theirs)
        if not empty:
            return 0
        if self.winning_cells(mine, empty):
            return 1
        hit = self.table.get((mine, theirs))
        if hit is not None:
            found, bound = hit  # bound 0: exact, 1: at least found, -1: at most found
            if bound == 0 or (bound > 0 and found >= beta) or (bound < 0 and found <= alpha):
                return found
        threats = self.winning_cells(theirs, empty)
        cells = [threats & -threats] if threats else [1 << i for i in self.order if empty >> i & 1]
        start, best = alpha, -2
        for bit in cells:
            best = max(best, -self.value(theirs, mine | bit, -beta, -alpha))
            alpha = max(alpha, best)
            if alpha >= beta:
                break
        self.table[mine, theirs] = (best, 0 if start < best < beta else 1 if best >= beta else -1)
        return best

    def scores(self, game: GridGame) -> dict[int, int]:
        """Each legal action's exact value for the player to move: 1 win, 0 draw, -1 loss."""
        if game.is_over():
            raise ValueError(f"{game!r}: the game is over")
        mine, theirs = _bitboards(game)
        out = {}
        for a in game.legal_actions():
            child = game.copy()
            child.step(a)
            out[a] = 1 if child.winner() is not None else 0 if child.is_over() else -self.value(theirs, mine | 1 << a)
        return out

    move_values = scores


class GomokuAlphaBeta(Judge):
    """Alpha-beta (negamax) ``depth`` plies deep over the empty cells within two of a stone, with
    :func:`evaluate` at the leaves; it takes an immediate win, and facing one blocks it. Ties between the
    best moves are broken at random (seeded). Any board size."""

    game_class, new_rng = Gomoku.sized(9, 5), random.Random

    def __init__(self, depth: int = 2, seed: int = 0):
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        super().__init__(seed)
        self.depth = depth
        self.name = f"alpha-beta depth {depth}"

    def scores(self, game: GridGame) -> dict[int, int]:
        return alpha_beta_values(game, self.depth)


def _window_matrix(cls: type[Gomoku]) -> np.ndarray:
    """float32 ``(windows, cells)``: the windows of :func:`_line_masks` as rows of 0 and 1 (a matrix product counts
    each window's stones at once)."""
    if cls not in _WINDOWS:
        cells = range(cls.height * cls.width)
        _WINDOWS[cls] = np.array([[mask >> c & 1 for c in cells] for mask in _line_masks(cls)], np.float32)
    return _WINDOWS[cls]


WIN = 10**9
_TABLES: dict[type, tuple] = {}


def _tables(cls: type[GridGame]) -> tuple[list[int], list[list[int]], list[int]]:
    """The board's windows of ``length`` cells in a row (bit masks), those through each cell, and each cell's
    neighbourhood (the cells within two rows and two columns)."""
    if cls not in _TABLES:
        windows, w = _line_masks(cls), cls.width
        through = [[m for m in windows if m >> cell & 1] for cell in range(cls.height * w)]
        near = [sum(1 << (rr * w + cc) for rr in range(cls.height) for cc in range(w)
                    if max(abs(rr - r), abs(cc - c)) <= 2) for r in range(cls.height) for c in range(w)]
        _TABLES[cls] = windows, through, near
    return _TABLES[cls]


def evaluate(windows: list[int], mine: int, theirs: int) -> int:
    """For the player to move: over the windows holding stones of one player only, ``4 ** stones`` for each of
    the mover's and minus that for each of the opponent's."""
    score = 0
    for line in windows:
        m, t = mine & line, theirs & line
        if m and not t:
            score += 4 ** m.bit_count()
        elif t and not m:
            score -= 4 ** t.bit_count()
    return score


#: What a stone adds to :func:`evaluate` for its player through a window holding ``m`` of theirs and none of the
#: other's: ``4 ** (m + 1) - 4 ** m``, or 4 in an empty window.
_GAIN = [4] + [3 * 4**m for m in range(1, 20)]


def _gain(lines: list[int], mine: int, theirs: int) -> int | None:
    """How much a stone of the mover's on the cell that the windows ``lines`` pass through raises :func:`evaluate`
    for the mover, or ``None`` if it makes ``length`` in a row. Only those windows change, so the search keeps the
    score move by move instead of evaluating every window at each leaf."""
    gain, full = 0, lines[0].bit_count() - 1
    for line in lines:
        t = (theirs & line).bit_count()
        m = (mine & line).bit_count()
        if not t:
            if m == full:
                return None
            gain += _GAIN[m]
        elif not m:
            gain += 4**t  # the opponent's window is spoiled
    return gain


def _negamax(tables, mine: int, theirs: int, empty: int, near: int, depth: int, alpha: int, beta: int,
             score: int) -> int:
    """``score``: :func:`evaluate` of the position for the mover, kept up to date move by move."""
    _, through, around = tables
    if not empty:
        return 0
    if depth == 0:
        return score
    candidates, best = (near & empty) or empty, -2 * WIN
    while candidates:
        bit = candidates & -candidates
        candidates ^= bit
        cell = bit.bit_length() - 1
        gain = _gain(through[cell], mine, theirs)
        if gain is None:
            return WIN + depth  # sooner wins score higher
        best = max(best, -_negamax(tables, theirs, mine | bit, empty ^ bit, near | around[cell], depth - 1, -beta,
                                   -alpha, -score - gain))
        alpha = max(alpha, best)
        if alpha >= beta:
            break
    return best


def alpha_beta_values(game: GridGame, depth: int) -> dict[int, int]:
    """The depth-``depth`` value of each action searched, for the player to move: a win now (``WIN + depth``)
    if there is one, else the moves blocking the opponent's win now if there are any, else every empty cell
    within two of a stone; exact for the best, bounds below it for the others."""
    tables = windows, through, around = _tables(type(game))
    mine, theirs = _bitboards(game)
    empty = ((1 << len(game.board)) - 1) & ~(mine | theirs)
    legal = game.legal_actions()
    gains = {a: _gain(through[a], mine, theirs) for a in legal}
    wins = [a for a, gain in gains.items() if gain is None]
    if wins:
        return dict.fromkeys(wins, WIN + depth)
    blocks = [a for a in legal if _gain(through[a], theirs, mine) is None]
    near = 0
    for cell in range(len(game.board)):
        if (mine | theirs) >> cell & 1:
            near |= around[cell]
    out, best, score = {}, -2 * WIN, evaluate(windows, mine, theirs)
    for a in blocks or [a for a in legal if near >> a & 1] or legal:
        bit = 1 << a
        out[a] = -_negamax(tables, theirs, mine | bit, empty ^ bit, near | around[a], depth - 1, -2 * WIN, 1 - best,
                           -score - gains[a])
        best = max(best, out[a])
    return out


def judged_sample(cls: type[Gomoku], count: int, seed: int = 0, epsilon: float = 0.5,
                  progress=None) -> tuple[list[Gomoku], list[dict[int, int]]]:
    """Positions from games of alpha-beta depth 1 against itself, judged by :class:`GomokuSolver`
    (:func:`~agents.games.base.judged_positions`). For boards the solver settles."""
    return judged_positions(cls(), GomokuAlphaBeta(1, seed), GomokuSolver(cls), count, seed, epsilon, progress)
