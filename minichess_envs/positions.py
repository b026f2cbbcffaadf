"""Every legal position of a small variant, for tablebases and random starts.

A side's *army* is its largest material, one letter per piece (``"KQR"``:
a king, at most one queen and at most one rook). The positions of an army
pair are all placements of every material the armies allow (the king always,
the other pieces each present or captured, pawns also promoted), with either
side to move, such that the side not to move is not in check and no pawn
stands on its first or last rank. Castling rights and en passant are not part
of these positions, so variants with either are not supported.

>>> len(legal_positions("3x3"))
32152
>>> random_position("3x3", seed=1).fen()
'Qk1/1Rq/K2 b - - 0 1'

This module is below the tablebase: environments import it for
``start="random"`` without building any table.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from minichess_envs import _core
from minichess_envs.engine import BLACK, KING, PIECE_SYMBOLS, WHITE, Position
from minichess_envs.variants import Variant, get_variant

# Canonical order of letters in a material string (the king first).
ORDER = "KQRBNP"

# Start positions of the environments, each with every piece on the board. The
# tablebase proves both drawn (docs/tablebase.md; tests/test_tablebase.py).
START_POSITIONS: dict[str, dict[str, str]] = {
    "3x3": {
        "white": "kqr/3/KQR w - - 0 1",  # the variant's start; only Qxb3 and Rc2 hold the draw
        "black": "kqr/3/KQR b - - 0 1",  # its color mirror: only Qxb1 and Rc2 hold
    },
}

# Probe positions for training diagnostics, as in AlphaZeroNano: the
# two drawn starts, a White win and a Black win, each with several wrong moves.
# Values and the value of every move are in docs/tablebase.md.
PROBE_POSITIONS: dict[str, dict[str, str]] = {
    "3x3": {
        "draw-white": START_POSITIONS["3x3"]["white"],
        "draw-black": START_POSITIONS["3x3"]["black"],
        "win-white": "kqr/2Q/KR1 w - - 0 1",  # only 1.Rxb3 wins (mate in 2); 3 moves draw, 4 lose
        "win-black": "r1k/QRq/K2 b - - 0 1",  # 1...Qxb2# mates; 1...Rxa2 wins slower; 2 draw, 2 lose
    },
}


def canonical_army(army: str) -> str:
    """Upper-case letters in canonical order (``"rkq"`` -> ``"KQR"``)."""
    if not isinstance(army, str) or set(army.upper()) - set(ORDER):
        raise ValueError(f"army {army!r} must be piece letters from {ORDER}")
    return "".join(sorted(army.upper(), key=ORDER.index))


def default_army(variant: str | Variant) -> str:
    """One of each piece type of the variant (``"KQR"`` for ``3x3``)."""
    return canonical_army(get_variant(variant).pieces)


def materials(army: str, promotion: str = "") -> list[str]:
    """Every material a side with ``army`` can have: sub-sets with the king, pawns also promoted.

    >>> materials("KQR")
    ['K', 'KQ', 'KR', 'KQR']
    """
    army = canonical_army(army)
    if army.count("K") != 1:
        raise ValueError(f"army {army!r} must have exactly one king")
    seen, todo = set(), [army]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for i, p in enumerate(m):
            if p != "K":
                todo.append(m[:i] + m[i + 1:])  # captured
            if p == "P":
                todo += [canonical_army(m[:i] + q + m[i + 1:]) for q in promotion.upper()]
    return sorted(seen, key=lambda m: (len(m), [ORDER.index(p) for p in m]))


def _check(variant: Variant, white: str | None, black: str | None) -> tuple[str, str]:
    """Validated (white army, black army) in canonical upper case."""
    if variant.castling or variant.en_passant:
        raise ValueError(f"{variant.name} has castling or en passant; positions are enumerated only for "
                         "variants without them")
    if variant.win_rule != "checkmate":
        raise ValueError(f"{variant.name} is won by {variant.win_rule.replace('_', ' ')}; positions are "
                         "enumerated only for checkmate variants")
    armies = []
    for color, army in (("white", white), ("black", black)):
        army = default_army(variant) if army is None else canonical_army(army)
        if army.count("K") != 1:
            raise ValueError(f"{color} army {army!r} must have exactly one king")
        unknown = set(army) - set(variant.pieces.upper())
        if unknown:
            raise ValueError(f"{color} army {army!r} uses {''.join(sorted(unknown))}, "
                             f"not in {variant.name} (pieces: {variant.pieces})")
        armies.append(army)
    return armies[0], armies[1]


def _code(letter: str, color: int) -> int:
    return PIECE_SYMBOLS.index(letter.lower()) | (8 * color)


def _placements(variant: Variant, white: str, black: str):
    """Boards (bytes) with kings on non-adjacent squares and the other pieces anywhere allowed."""
    W, H, n = variant.width, variant.height, variant.width * variant.height
    inner = [s for s in range(n) if 0 < s // W < H - 1]  # where pawns may stand
    groups = []
    for color, material in ((0, white[1:]), (1, black[1:])):
        for letter, count in sorted(((p, material.count(p)) for p in set(material)), key=lambda x: ORDER.index(x[0])):
            groups.append((_code(letter, color), count, inner if letter == "P" else range(n)))
    board = bytearray(n)

    def place(g):
        if g == len(groups):
            yield bytes(board)
            return
        code, count, squares = groups[g]
        for combo in itertools.combinations([s for s in squares if not board[s]], count):
            for s in combo:
                board[s] = code
            yield from place(g + 1)
            for s in combo:
                board[s] = 0

    for wk in range(n):
        for bk in range(n):
            if max(abs(wk % W - bk % W), abs(wk // W - bk // W)) <= 1:
                continue  # adjacent kings (or one square): the side to move would attack the other king
            board[wk], board[bk] = KING, KING | 8
            yield from place(0)
            board[wk] = board[bk] = 0


def placement_count(variant: str | Variant, white: str | None = None, black: str | None = None) -> int:
    """How many boards :func:`legal_positions` enumerates for these armies, counted without enumerating.

    Each board appears at most twice (once per side to move), so twice this
    count bounds the number of legal positions from above.
    """
    v = get_variant(variant)
    white, black = _check(v, white, black)
    W, H, n = v.width, v.height, v.width * v.height
    inner = {s for s in range(n) if 0 < s // W < H - 1}  # where pawns may stand
    king_pairs: dict[int, int] = {}  # non-adjacent king placements, by how many kings stand on inner squares
    for wk in range(n):
        for bk in range(n):
            if max(abs(wk % W - bk % W), abs(wk // W - bk // W)) > 1:
                on_inner = (wk in inner) + (bk in inner)
                king_pairs[on_inner] = king_pairs.get(on_inner, 0) + 1
    total = 0
    for wm in materials(white, v.promotion):
        for bm in materials(black, v.promotion):
            if len(wm) + len(bm) > n:
                continue
            pawns = wm.count("P"), bm.count("P")
            others = [m.count(p) for m in (wm, bm) for p in ORDER[1:-1]]
            for on_inner, pairs in king_pairs.items():
                free = len(inner) - on_inner
                ways = math.comb(free, pawns[0]) * math.comb(free - pawns[0], pawns[1])
                rest = n - 2 - sum(pawns)
                for count in others:
                    ways *= math.comb(rest, count)
                    rest -= count
                total += pairs * ways
    return total


def legal_positions(variant: str | Variant = "3x3", white: str | None = None,
                    black: str | None = None) -> tuple[tuple[bytes, int], ...]:
    """All legal positions as ``(pieces, turn)``: board bytes (engine piece codes) and side to move.

    ``white`` and ``black`` are the armies (default: one of each piece type of
    the variant, in either case). Ordered by material pair, then placement,
    then White to move first. Terminal positions (checkmate, stalemate,
    insufficient material) are included.
    """
    v = get_variant(variant)
    return _legal_positions(v, *_check(v, white, black))


@functools.lru_cache(maxsize=8)
def _legal_positions(v: Variant, white: str, black: str) -> tuple[tuple[bytes, int], ...]:
    scratch = _core.Position(v.rules)
    out = []
    for wm in materials(white, v.promotion):
        for bm in materials(black, v.promotion):
            if len(wm) + len(bm) > v.width * v.height:
                continue
            for board in _placements(v, wm, bm):
                scratch.set_board(board, WHITE, 0, -1, 0, 1)
                wk, bk = board.index(KING), board.index(KING | 8)
                # Legal: the side *not* to move is not in check.
                if not scratch.is_attacked_square(bk, WHITE):
                    out.append((board, WHITE))
                if not scratch.is_attacked_square(wk, BLACK):
                    out.append((board, BLACK))
    return tuple(out)


def make_position(variant: str | Variant, pieces: bytes, turn: int) -> Position:
    """A :class:`Position` (no history, clocks at zero) from board bytes and side to move."""
    v = get_variant(variant)
    pos = Position.__new__(Position)
    _core.Position.__init__(pos, v.rules, v)
    pos.set_board(bytes(pieces), turn, 0, -1, 0, 1)
    return pos


@functools.lru_cache(maxsize=8)
def _non_terminal(v: Variant, white: str, black: str) -> np.ndarray:
    """Indices into :func:`legal_positions` of the positions where the game goes on."""
    scratch = _core.Position(v.rules)
    keep = []
    for i, (pieces, turn) in enumerate(_legal_positions(v, white, black)):
        scratch.set_board(pieces, turn, 0, -1, 0, 1)
        if scratch.outcome_code()[0] == 0:
            keep.append(i)
    return np.array(keep, np.int64)


def non_terminal_positions(variant: str | Variant = "3x3", white: str | None = None,
                           black: str | None = None) -> list[tuple[bytes, int]]:
    """The legal positions where the game goes on (not mate, stalemate or insufficient material)."""
    v = get_variant(variant)
    white, black = _check(v, white, black)
    everything = _legal_positions(v, white, black)
    return [everything[i] for i in _non_terminal(v, white, black)]


def random_position(variant: str | Variant = "3x3", rng: np.random.Generator | None = None, *,
                    seed: int | None = None, white: str | None = None, black: str | None = None) -> Position:
    """A uniformly random non-terminal legal position (from ``rng``, or a new generator seeded ``seed``)."""
    v = get_variant(variant)
    white, black = _check(v, white, black)
    rng = np.random.default_rng(seed) if rng is None else rng
    indices = _non_terminal(v, white, black)
    if len(indices) == 0:
        raise ValueError(f"{v.name} has no non-terminal position with armies {white} / {black.lower()}")
    pieces, turn = _legal_positions(v, white, black)[int(indices[rng.integers(len(indices))])]
    return make_position(v, pieces, turn)


def random_plies(variant: str | Variant, plies: int, rng: np.random.Generator) -> Position:
    """The start position after ``plies`` uniformly random moves (fewer where the game ends first)."""
    position = Position(get_variant(variant))
    for _ in range(plies):
        actions = position.legal_actions()
        if position.outcome() is not None or not len(actions):
            break
        position.push_action(int(actions[rng.integers(len(actions))]))
    return position


def random_walk_positions(variant: str | Variant, count: int, rng: np.random.Generator,
                          max_plies: int = 6, min_plies: int = 0) -> list[Position]:
    """``count`` non-terminal positions, each reached from the start by a walk of ``min_plies`` to
    ``max_plies - 1`` uniformly random legal moves (the walk's length drawn uniformly); a walk that ends
    the game is dropped and drawn again."""
    v = get_variant(variant)
    out = []
    while len(out) < count:
        position = Position(v)
        for _ in range(int(rng.integers(min_plies, max_plies))):
            if position.is_game_over():
                break
            position.push_action(int(rng.choice(position.legal_actions())))
        if not position.is_game_over():
            out.append(position)
    return out
