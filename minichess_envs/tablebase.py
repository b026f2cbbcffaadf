"""Exact values of every position of a small variant, by retrograde analysis.

>>> tb = Tablebase.load("3x3")          # built on first use (under a second), then cached
>>> tb.probe("kqr/3/KQR w - - 0 1")
(0, None)
>>> tb.probe("1k1/r1R/QKq w - - 0 1")   # White mates in 5 (9 plies)
(1, 9)
>>> [m.uci() for m in tb.optimal_moves("kqr/3/KQR w - - 0 1")]
['b1b3', 'c1c2']

Values are from the side to move: 1 win, 0 draw, -1 loss. DTM is the
distance to mate in plies: the fastest forced mate for the winner, the longest
resistance for the loser (0 for a checkmated side to move, ``None`` for
draws). Stalemate and insufficient material are draws; repetition and move
counters do not change values (a drawn-by-repetition game position keeps its
table value).

The table covers the positions of :func:`minichess_envs.positions.legal_positions`
for a pair of armies (default: one of each piece type of the variant), so more
pieces are a parameter: ``Tablebase.load(variant, white="KQRN", black="kqrn")``.
It is cached on disk (see :func:`default_cache_dir`) with a format version and a
checksum; a stale or corrupt file is rebuilt with a warning, never trusted.

:func:`score_agent` measures any agent against the table.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
import time
import warnings
import zipfile
from array import array
from typing import Callable, NamedTuple, Sequence

import numpy as np

from minichess_envs import _core
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, Move, Position, Termination, _decode, square_names
from minichess_envs.players import choose_actions
from minichess_envs.positions import (
    PROBE_POSITIONS, ORDER, _check, _legal_positions, canonical_army, default_army, make_position, placement_count,
)
from minichess_envs.variants import Variant, get_variant

FORMAT_VERSION = 1
#: Peak memory of a build per legal position, with a margin (measured 380-470 bytes on 3x3 and on
#: Gardner armies of 16 thousand to 1.8 million positions).
BUILD_BYTES_PER_POSITION = 600
VALUE_NAMES = {1: "win", 0: "draw", -1: "loss"}
_ARRAYS = ("pieces", "turn", "value", "dtm", "outcome")


class CacheWarning(UserWarning):
    """A cached table was stale or corrupt (and is rebuilt), or could not be written."""


class MoveValue(NamedTuple):
    """A legal move with its exact result for the side that plays it.

    ``value`` is the mover's value after the move (1, 0, -1); ``dtm`` the plies to
    mate from the position *before* the move along optimal play after it
    (``None`` for a draw); ``action`` the move's index in the action encoding.
    """

    move: Move
    action: int
    value: int
    dtm: int | None


def default_cache_dir() -> str:
    """``$MINICHESS_CACHE``, else ``$XDG_CACHE_HOME/minichess-envs``, else ``~/.cache/minichess-envs``."""
    if os.environ.get("MINICHESS_CACHE"):
        return os.environ["MINICHESS_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "minichess-envs")


def rules_key(variant: Variant) -> dict:
    """The fields of a variant that decide table values (not repetition, clocks or names)."""
    return {
        "width": variant.width, "height": variant.height, "pieces": variant.pieces.upper(),
        "promotion": variant.promotion.upper(), "double_step": variant.double_step,
        "en_passant": variant.en_passant, "castling": [list(c) for c in variant.castling],
        "win_rule": variant.win_rule, "stalemate": variant.stalemate,
        "insufficient_material": variant.insufficient_material,
    }


# -- size before building ------------------------------------------------------


class TablebaseTooLarge(ValueError):
    """A table that would not fit in memory; ``fits`` lists army pairs of the variant that would."""

    def __init__(self, message: str, fits: Sequence[tuple[str, str]] = ()):
        super().__init__(message)
        self.fits = list(fits)


class BuildEstimate(NamedTuple):
    """Size of a table before it is built: an upper bound on its positions and the memory to build it."""

    positions: int
    memory: int  # bytes


def estimate(variant: str | Variant = "3x3", white: str | None = None, black: str | None = None) -> BuildEstimate:
    """Positions (at most) and bytes a build needs, counted from the armies and the board alone (fast)."""
    v = get_variant(variant)
    positions = 2 * placement_count(v, white, black)  # each board with either side to move
    return BuildEstimate(positions, positions * BUILD_BYTES_PER_POSITION)


def available_memory() -> int:
    """Bytes this process can still use: the kernel's MemAvailable, capped by a cgroup limit (4 GiB if unknown)."""
    found = []
    try:
        with open("/proc/meminfo") as f:
            found += [int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as f, open(usage_file) as g:
                limit, usage = f.read().strip(), int(g.read())
            if limit != "max" and int(limit) < 2**60:
                found.append(max(0, int(limit) - usage))
        except (OSError, ValueError):
            pass
    return min(found) if found else 4 * 2**30


def fitting_armies(variant: str | Variant, max_memory: int) -> list[tuple[str, str]]:
    """The largest army pairs (parts of the default army) whose build fits in ``max_memory`` bytes.

    Largest first; each pair fits and adding any piece to either side would not.
    A pair and its colour mirror are listed once, the bigger army as White.
    """
    v = get_variant(variant)
    extras = default_army(v)[1:]
    fits, seen, frontier = {}, {("K", "K")}, [("K", "K")]
    while frontier:  # grow from bare kings: a pair that does not fit has no superset that fits
        grown = []
        for white, black in frontier:
            size = estimate(v, white, black)
            if size.memory > max_memory:
                continue
            fits[white, black] = size.positions
            for side in (0, 1):
                for piece in extras:
                    pair = [white, black]
                    if piece not in pair[side]:
                        pair[side] = canonical_army(pair[side] + piece)
                        if tuple(pair) not in seen:
                            seen.add(tuple(pair))
                            grown.append(tuple(pair))
        frontier = grown
    maximal = [
        (w, b) for w, b in fits
        if not any((canonical_army(w + p), b) in fits or (w, canonical_army(b + p)) in fits for p in extras)
        and (len(w), [-ORDER.index(c) for c in w]) >= (len(b), [-ORDER.index(c) for c in b])
    ]
    return sorted(maximal, key=lambda pair: -fits[pair])


def check_fits(variant: Variant, white: str, black: str, max_memory: int | None = None) -> BuildEstimate:
    """The build's estimate; :class:`TablebaseTooLarge` naming the pairs that fit when it needs more memory."""
    size = estimate(variant, white, black)
    limit = available_memory() if max_memory is None else max_memory
    if size.memory <= limit:
        return size
    fits = fitting_armies(variant, limit)
    message = (f"the {variant.name} tablebase for white {white}, black {black.lower()} would have up to "
               f"{size.positions:.3g} positions and need about {_bytes(size.memory)} of memory to build; "
               f"{_bytes(limit)} {'is available' if max_memory is None else 'allowed'}.")
    if not fits:
        raise TablebaseTooLarge(message + " No army pair fits, not even bare kings.")
    groups: dict[int, list[str]] = {}
    for w, b in fits:
        groups.setdefault(estimate(variant, w, b).positions, []).append(f"{w} v {b.lower()}")
    lines = [f"  up to {n:,} positions: " + ", ".join(pairs[:8]) + (f", ... ({len(pairs)} pairs)" * (len(pairs) > 8))
             for n, pairs in list(groups.items())[:4]]
    first_white, first_black = fits[0]
    raise TablebaseTooLarge(
        message + f"\nArmy pairs of {variant.name} that fit, largest first (choose one with --white/--black or "
        f"white=/black=, e.g. --white {first_white} --black {first_black.lower()}; a build solves roughly "
        "3 million positions a minute):\n" + "\n".join(lines), fits)


def _bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:,.0f} PB"


# -- retrograde analysis ------------------------------------------------------


def retrograde(parents: np.ndarray, children: np.ndarray, terminal_value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and DTM of every node of a game graph, from the side to move.

    ``parents[e] -> children[e]`` are the moves; ``terminal_value[i]`` is the
    value of a game-over node (1, 0, -1) and 2 for every other node. Returns
    ``value`` (int8) and ``dtm`` (int16, -1 for draws). Works ply by ply from
    the decided terminal nodes: a node with a child lost at ply ``d - 1`` wins
    in ``d`` (the first such ply is the fastest win); a node whose last child
    still open turns out won for the opponent at ply ``d - 1`` loses in ``d``
    (the last one is the longest defence). Nodes never reached are draws.
    """
    n = len(terminal_value)
    terminal = terminal_value != 2
    value = np.where(terminal, terminal_value, 0).astype(np.int8)
    dtm = np.where(terminal & (value != 0), 0, -1).astype(np.int16)
    solved = terminal.copy()
    open_moves = np.bincount(parents, minlength=n)  # moves not yet known to lose for the mover
    frontier = np.flatnonzero(terminal & (value != 0))
    ply = 0
    while frontier.size:
        ply += 1
        is_new = np.zeros(n, bool)
        is_new[frontier] = True
        new_edge = is_new[children]
        winners = np.unique(parents[new_edge & (value[children] == -1)])
        winners = winners[~solved[winners]]
        open_moves -= np.bincount(parents[new_edge & (value[children] == 1)], minlength=n)
        losers = np.flatnonzero((open_moves == 0) & ~solved)
        value[winners], value[losers] = 1, -1
        dtm[winners] = dtm[losers] = ply
        solved[winners] = solved[losers] = True
        frontier = np.concatenate([winners, losers])
    return value, dtm


def _build_arrays(v: Variant, white: str, black: str) -> dict[str, np.ndarray]:
    """Enumerate, link every move to its child, solve. Returns the stored arrays."""
    positions = _legal_positions(v, white, black)
    n = len(positions)
    index = {pieces + bytes((turn,)): i for i, (pieces, turn) in enumerate(positions)}
    scratch = _core.Position(v.rules)
    parents, children = array("i"), array("i")
    terminal_value = np.full(n, 2, np.int8)
    outcome = np.zeros(n, np.int8)
    for i, (pieces, turn) in enumerate(positions):
        scratch.set_board(pieces, turn, 0, -1, 0, 1)
        reason, winner = scratch.outcome_code()
        if reason:
            outcome[i] = reason
            terminal_value[i] = 0 if winner < 0 else (1 if winner == turn else -1)
            continue
        for code in scratch.legal_move_codes():
            scratch.push_code(code)
            key = scratch.pieces + bytes((scratch.turn,))
            scratch.pop_code()
            j = index.get(key)
            if j is None:  # the armies are not closed under moves: a bug in positions.materials
                raise RuntimeError(f"move {code} from position {i} leaves the table")
            parents.append(i)
            children.append(j)
    value, dtm = retrograde(np.frombuffer(parents, np.int32), np.frombuffer(children, np.int32), terminal_value)
    pieces = np.frombuffer(b"".join(p for p, _ in positions), np.uint8).reshape(n, v.width * v.height)
    turn = np.array([t for _, t in positions], np.uint8)
    return {"pieces": pieces, "turn": turn, "value": value, "dtm": dtm, "outcome": outcome}


def _checksum(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in _ARRAYS:
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


class CacheError(ValueError):
    """A cache file that cannot be used: unreadable, corrupt or stale."""


# -- the table ----------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class Tablebase:
    """Value and DTM of every legal position of a variant for two armies.

    Arrays, one row per position (in :func:`~minichess_envs.positions.legal_positions`
    order): ``pieces`` board bytes (N, squares), ``turn`` side to move, ``value``
    from the side to move, ``dtm`` in plies (-1 for draws) and ``outcome`` the
    :class:`~minichess_envs.Termination` code of game-over positions (0 otherwise).
    """

    variant: Variant
    white: str
    black: str
    pieces: np.ndarray
    turn: np.ndarray
    value: np.ndarray
    dtm: np.ndarray
    outcome: np.ndarray
    build_seconds: float | None = None
    _index: dict = dataclasses.field(default=None, init=False, repr=False)

    def __post_init__(self):
        self._index = {p.tobytes() + bytes((t,)): i for i, (p, t) in enumerate(zip(self.pieces, self.turn))}
        self._scratch = _core.Position(self.variant.rules)  # for move_values; so one table per thread

    def __reduce__(self):
        # The arrays only: the index and the scratch position (a C object) are rebuilt.
        return (type(self), (self.variant, self.white, self.black, self.pieces, self.turn, self.value, self.dtm,
                             self.outcome, self.build_seconds))

    def __repr__(self) -> str:
        return (f"Tablebase({self.variant.name!r}, white={self.white!r}, black={self.black.lower()!r}, "
                f"positions={len(self)})")

    # -- building, saving, loading -------------------------------------------

    @classmethod
    def build(cls, variant: str | Variant = "3x3", white: str | None = None, black: str | None = None, *,
              max_memory: int | None = None) -> Tablebase:
        """Solve the table in memory (no cache).

        Raises :class:`TablebaseTooLarge` before building when the estimated memory
        exceeds ``max_memory`` bytes (default: the memory available now).
        """
        v = get_variant(variant)
        white, black = _check(v, white, black)
        check_fits(v, white, black, max_memory)
        start = time.perf_counter()
        arrays = _build_arrays(v, white, black)
        return cls(v, white, black, **arrays, build_seconds=time.perf_counter() - start)

    @classmethod
    def load(cls, variant: str | Variant = "3x3", white: str | None = None, black: str | None = None, *,
             cache_dir: str | None = None, verbose: bool = False, max_memory: int | None = None) -> Tablebase:
        """The table from the cache, built and cached first if missing, stale or corrupt.

        ``cache_dir`` overrides :func:`default_cache_dir`; ``max_memory`` is passed to
        :meth:`build`. A file that cannot be
        trusted is reported with a :class:`CacheWarning` and rebuilt; a cache
        that cannot be written leaves a working table in memory (with a warning).
        """
        v = get_variant(variant)
        white, black = _check(v, white, black)
        path = cache_path(v, white, black, cache_dir)
        if os.path.exists(path):
            try:
                return cls.read(path, v, white, black)
            except CacheError as exc:
                warnings.warn(f"tablebase cache {path}: {exc}; rebuilding it", CacheWarning, stacklevel=2)
        if verbose:
            print(f"building the {v.name} tablebase (white {white}, black {black.lower()}) ...", flush=True)
        tb = cls.build(v, white, black, max_memory=max_memory)
        try:
            tb.save(path)
        except OSError as exc:
            warnings.warn(f"cannot write tablebase cache {path}: {exc}", CacheWarning, stacklevel=2)
        if verbose:
            print(f"built {len(tb):,} positions in {tb.build_seconds:.2f} s, cached in {path}", flush=True)
        return tb

    def save(self, path: str) -> None:
        """Write the table to ``path`` (``.npz``) atomically: a temporary file, then a rename."""
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        meta = dict(_meta(self.variant, self.white, self.black), checksum=_checksum(arrays), positions=len(self))
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        remove_stale_temporaries(directory)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tablebase-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
            os.chmod(tmp, 0o644)  # mkstemp makes it private; a cache is not secret
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    @classmethod
    def read(cls, path: str, variant: str | Variant = "3x3", white: str | None = None,
             black: str | None = None) -> Tablebase:
        """Read a saved table; :class:`CacheError` says why it cannot be used."""
        v = get_variant(variant)
        white, black = _check(v, white, black)
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                arrays = {name: data[name] for name in _ARRAYS}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise CacheError(f"corrupt ({type(exc).__name__}: {exc})") from None
        if not isinstance(meta, dict):
            raise CacheError("corrupt (no metadata)")
        expected = _meta(v, white, black)
        for field, want in expected.items():
            if meta.get(field) != want:
                raise CacheError(f"stale ({field} is {meta.get(field)!r}, expected {want!r})")
        if meta.get("checksum") != _checksum(arrays):
            raise CacheError("corrupt (checksum mismatch)")
        n = len(arrays["turn"])
        if arrays["pieces"].shape != (n, v.width * v.height) or any(len(arrays[a]) != n for a in _ARRAYS):
            raise CacheError("corrupt (array shapes disagree)")
        return cls(v, white, black, **arrays)

    # -- probing ---------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.turn)

    def index(self, position: Position | str) -> int:
        """Row of a position (a :class:`Position` or a FEN) in the table.

        Raises ``ValueError`` for a bad FEN, a position of another variant, or one
        outside the table's armies.
        """
        if isinstance(position, str):
            position = Position(self.variant, position)
        elif not isinstance(position, _core.Position):
            raise TypeError(f"expected a Position or a FEN string, not {type(position).__name__}")
        elif position.variant is not self.variant and rules_key(position.variant) != rules_key(self.variant):
            raise ValueError(f"position is of variant {position.variant.name!r}, "
                             f"the tablebase is for {self.variant.name!r}")
        state = position.board_state()
        i = self._index.get(state.pieces + bytes((state.turn,)))
        if i is None or state.castling or state.ep_square >= 0:
            fen = position.fen() if isinstance(position, Position) else "the position"
            raise ValueError(f"{fen} is outside the {self.variant.name} tablebase "
                             f"(white {self.white}, black {self.black.lower()})")
        return i

    def probe(self, position: Position | str) -> tuple[int, int | None]:
        """``(value, dtm)`` from the side to move: value 1 / 0 / -1, dtm in plies (``None`` for draws)."""
        i = self.index(position)
        d = int(self.dtm[i])
        return int(self.value[i]), (None if d < 0 else d)

    def move_values(self, position: Position | str) -> list[MoveValue]:
        """Every legal move with the mover's value and DTM after it; empty when the game is over."""
        return self.row_move_values(self.index(position))

    def row_move_values(self, i: int) -> list[MoveValue]:
        """:meth:`move_values` of the position in row ``i``."""
        if self.outcome[i]:
            return []
        pos = self._scratch
        pos.set_board(self.pieces[i].tobytes(), int(self.turn[i]), 0, -1, 0, 1)
        names = square_names(self.variant.width, self.variant.height)
        out = []
        for code, action in zip(pos.legal_move_codes(), pos.legal_actions()):
            pos.push_code(code)
            key = pos.pieces + bytes((pos.turn,))
            pos.pop_code()
            j = self._index[key]
            d = int(self.dtm[j])
            out.append(MoveValue(_decode(code, names), action, -int(self.value[j]), None if d < 0 else d + 1))
        return out

    def optimal_moves(self, position: Position | str) -> list[Move]:
        """The value-preserving moves: every win that stays won, every draw that stays drawn, any move when lost."""
        value, _ = self.probe(position)
        return [m.move for m in self.move_values(position) if m.value == value]

    def fastest_moves(self, position: Position | str) -> list[Move]:
        """The DTM-optimal moves: fastest mate when winning, longest defence when losing, draws when drawn."""
        return [m.move for m in _fastest(self.probe(position), self.move_values(position))]

    # -- views -------------------------------------------------------------------

    def position(self, i: int) -> Position:
        """The position in row ``i`` (a fresh :class:`Position`, no history)."""
        return make_position(self.variant, self.pieces[i].tobytes(), int(self.turn[i]))

    def fen(self, i: int) -> str:
        return self.position(i).fen()

    def non_terminal(self) -> np.ndarray:
        """Rows of the positions where the game goes on."""
        return np.flatnonzero(self.outcome == 0)

    def stats(self) -> dict:
        """Counts by side to move and value, game ends, and the longest mate with a position attaining it."""
        by_side = {}
        for t, color in enumerate(COLOR_NAMES):
            mine = self.turn == t
            by_side[color] = {VALUE_NAMES[v]: int(np.sum(mine & (self.value == v))) for v in (1, 0, -1)}
        longest = int(self.dtm.max()) if len(self) else 0
        attaining = np.flatnonzero(self.dtm == longest)
        attaining = attaining[np.argsort(self.turn[attaining], kind="stable")]  # White to move first
        return {
            "variant": self.variant.name, "white": self.white, "black": self.black.lower(),
            "positions": len(self), "by_side": by_side,
            "checkmates": int(np.sum(self.outcome == Termination.CHECKMATE)),
            "stalemates": int(np.sum(self.outcome == Termination.STALEMATE)),
            "insufficient_material": int(np.sum(self.outcome == Termination.INSUFFICIENT_MATERIAL)),
            "longest_mate_plies": longest, "longest_mate_positions": len(attaining),
            "longest_mate_example": self.fen(int(attaining[0])) if len(attaining) else None,
        }


def _meta(variant: Variant, white: str, black: str) -> dict:
    """What a cache file must match: format, variant rules, armies, engine version."""
    from minichess_envs import __version__

    return {"format": FORMAT_VERSION, "variant": variant.name, "rules": rules_key(variant),
            "white": white, "black": black, "engine": __version__}


def remove_stale_temporaries(directory: str, older_than_s: float = 3600.0) -> list[str]:
    """Delete ``.tablebase-*.tmp`` files a killed save left in ``directory``; returns their paths.

    Only files untouched for ``older_than_s`` seconds: a younger one may be another process's save
    in progress (a save takes seconds).
    """
    removed = []
    now = time.time()
    for name in os.listdir(directory):
        file = os.path.join(directory, name)
        if name.startswith(".tablebase-") and name.endswith(".tmp"):
            try:
                if now - os.path.getmtime(file) > older_than_s:
                    os.remove(file)
                    removed.append(file)
            except OSError:  # gone already, or not ours to remove
                pass
    return removed


def cache_path(variant: str | Variant, white: str, black: str, cache_dir: str | None = None) -> str:
    """Where :meth:`Tablebase.load` keeps a table (one file per variant and army pair)."""
    v = get_variant(variant)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", v.name)
    return os.path.join(cache_dir or default_cache_dir(), f"tablebase-{name}-{white}-{black.lower()}.npz")


def probe_targets(tablebase: Tablebase) -> dict[str, dict]:
    """The named probe positions of the variant with their exact values, for training diagnostics.

    ``{name: {"fen", "value", "dtm", "moves": {uci: (value, dtm)}}}``, values from
    the side to move (see :data:`minichess_envs.positions.PROBE_POSITIONS`).
    """
    out = {}
    for name, fen in PROBE_POSITIONS.get(tablebase.variant.name, {}).items():
        value, dtm = tablebase.probe(fen)
        moves = {m.move.uci(): (m.value, m.dtm) for m in tablebase.move_values(fen)}
        out[name] = {"fen": fen, "value": value, "dtm": dtm, "moves": moves}
    return out


def _fastest(probe: tuple[int, int | None], moves: list[MoveValue]) -> list[MoveValue]:
    value, dtm = probe
    return [m for m in moves if m.value == value and m.dtm == dtm]


# -- scoring agents -----------------------------------------------------------


@dataclasses.dataclass
class AgentScore:
    """One agent's moves against the table, one entry per scored position.

    ``value`` is the true value from the side to move, ``move_value`` the
    mover's value after the agent's move, ``dtm_optimal`` whether the move is
    DTM-optimal (fastest win, longest defence, or any draw-keeping move when
    drawn), ``predicted`` the value head's output (or ``None``).
    """

    index: np.ndarray
    turn: np.ndarray
    value: np.ndarray
    move_value: np.ndarray
    dtm_optimal: np.ndarray
    predicted: np.ndarray | None = None
    draw_margin: float = 0.5

    def rates(self, side: int | None = None) -> dict:
        """Rates and blunder counts over all scored positions, or those with ``side`` to move.

        ``value_match``: the value head's prediction rounded to the nearest of
        -1 / 0 / 1 (``|v| < draw_margin`` reads as a draw) equals the true value.
        """
        keep = np.ones(len(self.index), bool) if side is None else self.turn == side
        n = int(keep.sum())
        v, mv = self.value[keep], self.move_value[keep]
        out = {
            "positions": n, "won": int(np.sum(v == 1)), "drawn": int(np.sum(v == 0)), "lost": int(np.sum(v == -1)),
            "value_preserving": float(np.mean(mv == v)) if n else float("nan"),
            "dtm_optimal": float(np.mean(self.dtm_optimal[keep])) if n else float("nan"),
            "win->draw": int(np.sum((v == 1) & (mv == 0))),
            "win->loss": int(np.sum((v == 1) & (mv == -1))),
            "draw->loss": int(np.sum((v == 0) & (mv == -1))),
            "value_match": None,
        }
        if self.predicted is not None:
            p = self.predicted[keep]
            predicted_class = np.where(np.abs(p) < self.draw_margin, 0, np.sign(p))
            out["value_match"] = float(np.mean(predicted_class == v)) if n else float("nan")
        return out

    def by_side(self) -> dict[str, dict]:
        """:meth:`rates` for White to move, Black to move, and all."""
        return {"white": self.rates(0), "black": self.rates(1), "all": self.rates()}

    def table(self) -> str:
        """A markdown table of :meth:`by_side`."""
        cols = ["positions", "value_preserving", "dtm_optimal", "win->draw", "win->loss", "draw->loss", "value_match"]
        lines = ["| to move | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for side, r in self.by_side().items():
            cells = [f"{r[c]:.3f}" if isinstance(r[c], float) else ("-" if r[c] is None else f"{r[c]:,}") for c in cols]
            lines.append(f"| {side} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def score_agent(agent, tablebase: Tablebase, *, sample: int | None = None, seed: int = 0,
                indices: Sequence[int] | None = None, encoding=None,
                value_fn: Callable[[list[Position]], Sequence[float]] | None = None,
                draw_margin: float = 0.5, batch_size: int = 512,
                progress: Callable[[int, int], None] | None = None) -> AgentScore:
    """Score an agent's move in every non-terminal position (or a seeded sample of ``sample`` of them).

    ``agent`` is a player (:mod:`minichess_envs.players`): anything with
    ``act(observation, action_mask, position)`` (and optionally ``act_batch``),
    or a callable ``position -> move``. Observations come from ``encoding``
    (default ``ObservationEncoding(variant)``). ``indices`` picks table rows
    instead. ``value_fn(positions) -> values`` (from the side to move) scores a
    value head too. ``progress(done, total)`` is called after every batch. An
    illegal move raises ``IllegalMoveError`` (a ``ValueError``).
    """
    tb = tablebase
    if indices is None:
        indices = tb.non_terminal()
        if sample is not None and sample < len(indices):
            indices = np.sort(np.random.default_rng(seed).choice(indices, size=sample, replace=False))
    indices = np.asarray(indices, np.int64)
    encoding = ObservationEncoding(tb.variant) if encoding is None else encoding
    move_value = np.zeros(len(indices), np.int8)
    dtm_optimal = np.zeros(len(indices), bool)
    predicted = None if value_fn is None else np.zeros(len(indices), np.float64)
    for start in range(0, len(indices), batch_size):
        chunk = indices[start:start + batch_size]
        positions = [tb.position(int(i)) for i in chunk]
        actions = choose_actions(agent, positions, encoding)
        for k, (i, action) in enumerate(zip(chunk, actions)):
            m = next(m for m in tb.row_move_values(int(i)) if m.action == action)
            move_value[start + k] = m.value
            dtm_optimal[start + k] = m.value == tb.value[i] and (-1 if m.dtm is None else m.dtm) == tb.dtm[i]
        if value_fn is not None:
            predicted[start:start + len(chunk)] = np.asarray(value_fn(positions), np.float64).reshape(-1)
        if progress is not None:
            progress(start + len(chunk), len(indices))
    return AgentScore(indices, tb.turn[indices].copy(), tb.value[indices].astype(np.int8), move_value,
                      dtm_optimal, predicted, draw_margin)

