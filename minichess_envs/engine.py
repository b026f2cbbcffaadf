"""Positions, moves and outcomes on any board from 1x1 to 8x8.

The move generator, hashing and encodings run in C (:mod:`minichess_envs._core`);
this module adds FEN, UCI, validation with readable errors, and printing.

A move has three public names: a :class:`Move` (or its UCI string, ``"e2e3"``)
and an action index (the variant's action encoding, for learning code). Hot
loops use the engine's own integer *move code*; :func:`move_from`,
:func:`move_to`, :func:`move_promotion`, :func:`move_flags` and
:func:`captured_type` read one (:func:`captured_values` many). :data:`PIECE_VALUES` is the one table of
piece values.

>>> pos = Position("gardner")
>>> len(pos.legal_moves)
7
>>> pos.push_uci("e2e3")
>>> pos.fen()
'rnbqk/ppppp/5/PPPPP/RNBQK b - - 0 1'
"""

from __future__ import annotations

import enum
import functools
from typing import Iterable, NamedTuple

import numpy as np

from minichess_envs import _core
from minichess_envs.variants import FILES, Variant, get_variant

WHITE, BLACK = 0, 1
COLOR_NAMES = ("white", "black")
PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = range(1, 7)
PIECE_SYMBOLS = ".pnbrqk"  # index = piece type
UNICODE_PIECES = {
    "P": "♙", "N": "♘", "B": "♗", "R": "♖", "Q": "♕", "K": "♔",
    "p": "♟", "n": "♞", "b": "♝", "r": "♜", "q": "♛", "k": "♚",
}

#: Piece values in pawns by piece type (index: none, P, N, B, R, Q, K), read from
#: the C core. Material (:meth:`Position.material_balance`, the envs' material
#: reward) counts every piece but the king; the king's value (above any other
#: piece) only ranks captures: greedy's choice and minimax's move ordering.
PIECE_VALUES: tuple[int, ...] = _core.PIECE_VALUES

#: Raw fields of a position, a named tuple: ``Position.board_state(ply)``.
BoardState = _core.BoardState

# A move code is ``from | to << 6 | promotion << 12 | flags << 15`` (squares are
# indices ``rank * width + file``, promotion a piece type or 0); flag bits:
FLAG_DOUBLE_STEP: int = _core.FLAG_DOUBLE_STEP  # a pawn's two-square step
FLAG_EN_PASSANT: int = _core.FLAG_EN_PASSANT  # an en-passant capture
FLAG_CASTLING: int = _core.FLAG_CASTLING  # castling, coded as the king's move


def move_from(code: int) -> int:
    """Square index a move code starts from."""
    return code & 63


def move_to(code: int) -> int:
    """Square index a move code goes to (the king's destination when castling)."""
    return (code >> 6) & 63


def move_promotion(code: int) -> int:
    """Piece type a move code promotes to, 0 if none."""
    return (code >> 12) & 7


def move_flags(code: int) -> int:
    """Flag bits of a move code (``FLAG_DOUBLE_STEP | FLAG_EN_PASSANT | FLAG_CASTLING``)."""
    return code >> 15


def captured_type(pieces: bytes, code: int) -> int:
    """Type of the piece a move code captures on ``pieces`` (``Position.pieces``), 0 if none.

    An en-passant capture takes a pawn that is not on the to-square.
    """
    if (code >> 15) & FLAG_EN_PASSANT:
        return PAWN
    return pieces[(code >> 6) & 63] & 7


def captured_values(pieces: bytes, codes: Iterable[int]) -> list[int]:
    """:data:`PIECE_VALUES` of the piece each move code captures on ``pieces``, 0 for none.

    One call for all the moves of a position, for agents' and searches' inner loops.
    """
    values, ep, pawn = PIECE_VALUES, FLAG_EN_PASSANT << 15, PIECE_VALUES[PAWN]
    return [pawn if code & ep else values[pieces[(code >> 6) & 63] & 7] for code in codes]


class FenError(ValueError):
    """A FEN string that does not describe a legal position of the variant."""


IllegalMoveError = _core.IllegalMoveError  # a ValueError: a move or action not legal here


class ActionSpaceError(ValueError, TypeError):
    """An action that is not an element of the action space: not an integer, or out of range.

    A ``ValueError``, as every rejected action is; also a ``TypeError`` for
    callers that catch mistyped arguments that way.
    """


class Termination(enum.IntEnum):
    """Why a game ended (values match the C core)."""

    CHECKMATE = 1
    STALEMATE = 2
    KING_CAPTURE = 3
    INSUFFICIENT_MATERIAL = 4
    REPETITION = 5
    NO_PROGRESS = 6


class Outcome(NamedTuple):
    """The end of a game: how, and who won (``WHITE``, ``BLACK`` or ``None`` for a draw)."""

    termination: Termination
    winner: int | None

    def result(self) -> str:
        """``"1-0"``, ``"0-1"`` or ``"1/2-1/2"``."""
        return {WHITE: "1-0", BLACK: "0-1", None: "1/2-1/2"}[self.winner]


class Move(NamedTuple):
    """A move as UCI names it: from-square, to-square and promotion piece.

    Squares are names such as ``"a1"``; ``promotion`` is a lowercase piece letter
    or ``None``. Castling is the king's move (``e1g1``).
    """

    from_square: str
    to_square: str
    promotion: str | None = None

    def uci(self) -> str:
        return self.from_square + self.to_square + (self.promotion or "")

    def __str__(self) -> str:
        return self.uci()

    @classmethod
    def from_uci(cls, text: str) -> Move:
        """Parse ``"e2e4"`` or ``"a7a8q"``; raises :class:`ValueError` on bad syntax."""
        if not isinstance(text, str):
            raise TypeError(f"UCI move must be a string, not {type(text).__name__}")
        i = 1
        while i < len(text) and text[i].isdigit():
            i += 1
        j = i + 1
        while j < len(text) and text[j].isdigit():
            j += 1
        from_sq, to_sq, rest = text[:i], text[i:j], text[j:]
        ok = (
            len(from_sq) >= 2 and len(to_sq) >= 2
            and from_sq[0] in FILES and to_sq[0] in FILES
            and rest in ("", "q", "r", "b", "n")
        )
        if not ok:
            raise ValueError(f"invalid UCI move {text!r} (expected like 'e2e4' or 'a7a8q')")
        return cls(from_sq, to_sq, rest or None)


def square_index(name: str, width: int, height: int) -> int:
    """Index (``rank * width + file``) of a square name such as ``"c3"``."""
    if (
        isinstance(name, str) and len(name) >= 2 and name[0] in FILES[:width]
        and name[1:].isdigit() and 1 <= int(name[1:]) <= height
    ):
        return (int(name[1:]) - 1) * width + FILES.index(name[0])
    raise ValueError(f"{name!r} is not a square of a {width}x{height} board")


@functools.lru_cache(maxsize=None)
def square_names(width: int, height: int) -> tuple[str, ...]:
    """Names of all squares, by index."""
    return tuple(f"{FILES[s % width]}{s // width + 1}" for s in range(width * height))


def _decode(code: int, names: tuple[str, ...]) -> Move:
    promo = move_promotion(code)
    return Move(names[move_from(code)], names[move_to(code)], PIECE_SYMBOLS[promo] if promo else None)


def _castling_letters(variant: Variant) -> list[tuple[int, str, object]]:
    """(bit, FEN letter, Castling) for every castling right, in FEN order ``KQkq``.

    The letter is K when the rook starts on the king's right (higher file), else Q.
    """
    letters = []
    for colour, name in enumerate(COLOR_NAMES):
        for i, c in enumerate(variant.castling_options(name)):
            letter = "K" if FILES.index(c.rook_from) > FILES.index(c.king_from) else "Q"
            letters.append((1 << (colour * 2 + i), letter if colour == WHITE else letter.lower(), c))
    return sorted(letters, key=lambda entry: "KQkq".index(entry[1]))


_ASCII_DIGITS = frozenset("0123456789")
MAX_COUNTER = _core.MAX_COUNTER  # 2**31 - 1: the largest halfmove clock and fullmove number


def _counter(fen: str, name: str, text: str, low: int) -> int:
    """A FEN move counter: ASCII digits, ``low <= value <= MAX_COUNTER``."""
    if not (text.isascii() and text.isdigit()):
        if text[:1] == "-" and text[1:].isascii() and text[1:].isdigit():
            raise FenError(f"bad FEN {fen!r}: {name} {text}: move counters must not be negative")
        raise FenError(f"bad FEN {fen!r}: {name} {text!r}: move counters must be integers in digits 0-9")
    if len(text) > 10 or not low <= int(text) <= MAX_COUNTER:
        raise FenError(f"bad FEN {fen!r}: {name} {text} is outside {low}..{MAX_COUNTER}")
    return int(text)


@functools.lru_cache(maxsize=None)
def _start_facts(start_fen: str, capped: bool) -> tuple[bool, bool, dict[int, int] | None]:
    """From a start FEN: is there a White pawn on rank 1, a Black pawn on the last rank,
    and (if ``capped``) how many of each piece code there are."""
    rows = start_fen.split()[0].split("/")
    counts = None
    if capped:
        counts = {}
        for ch in "".join(rows):
            if ch.isalpha():
                code = PIECE_SYMBOLS.index(ch.lower()) | (8 if ch.islower() else 0)
                counts[code] = counts.get(code, 0) + 1
    return "P" in rows[-1], "p" in rows[0], counts


def rule_problems(variant: Variant, board: bytes) -> list[str]:
    """What makes a board (piece codes by square) impossible under the variant's rules.

    Checked from the variant's table row: each colour has one king (with king
    capture, a game may have ended with one taken); no pawn stands on its
    promotion rank (promotion is compulsory) or on its own back rank (pawns
    never move backwards) unless the start position puts one there; in a
    variant without promotion (no pawns, or no promotion pieces) no piece is
    ever created, so no colour has more of a piece type than its start position
    (3x3: one queen and one rook at most). With promotion, material is not
    counted against the pawns that could have promoted: python-chess and
    Fairy-Stockfish accept such positions, and composed positions and
    tablebases over chosen armies use them.
    """
    v, W, H = variant, variant.width, variant.height
    capped = not v.promotion or "P" not in v.pieces.upper()
    white_back_ok, black_back_ok, start = _start_facts(v.start_fen, capped)
    problems = []
    kings = [board.count(KING), board.count(KING | 8)]
    for colour, n in enumerate(kings):
        if n > 1 or (n == 0 and (v.win_rule == "checkmate" or kings[colour ^ 1] == 0)):
            problems.append(f"{COLOR_NAMES[colour]} has {n} kings, expected 1")
    first, last = board[:W], board[(H - 1) * W:]
    for colour, pawn, promotion_rank, back_rank, back_ok in (
        (WHITE, PAWN, last, first, white_back_ok), (BLACK, PAWN | 8, first, last, black_back_ok)
    ):
        if pawn in promotion_rank:
            square = f"{FILES[promotion_rank.index(pawn)]}{H if colour == WHITE else 1}"
            problems.append(f"{COLOR_NAMES[colour]} pawn on {square}, its promotion rank (promotion is compulsory)")
        elif pawn in back_rank and not back_ok:
            square = f"{FILES[back_rank.index(pawn)]}{1 if colour == WHITE else H}"
            problems.append(f"{COLOR_NAMES[colour]} pawn on {square}, its own back rank (pawns never move backwards)")
    if start is not None:
        for code in sorted(set(board) - {0, KING, KING | 8}):
            n, most = board.count(code), start.get(code, 0)
            if n > most:
                problems.append(f"{COLOR_NAMES[code >> 3]} has {n} of piece {PIECE_SYMBOLS[code & 7].upper()}, "
                                f"more than the {most} of the start position ({v.name} has no promotion, "
                                "so no piece is ever created)")
    return problems


class Position(_core.Position):
    """A game position with its move history.

    ``Position("gardner")`` is the start position; ``Position("gardner", fen)``
    any legal one. Moves are :class:`Move` values or UCI strings; the hot paths
    (:meth:`push_action`, :meth:`legal_actions`, :meth:`action_mask`,
    :meth:`observation`) work on action indices.

    The C core's raw calls are public too, for search and table building:
    ``legal_move_codes``, ``push_code``, :meth:`pop_code`, ``move_codes``,
    ``encode`` (code to action), ``pieces`` (the board as bytes), ``board_state``
    (a :data:`BoardState`), ``set_board`` (raw fields, no legality check) and
    ``is_attacked_square``.
    """

    __slots__ = ()

    def __init__(self, variant: str | Variant = "gardner", fen: str | None = None):
        v = get_variant(variant)
        super().__init__(v.rules, v)
        self.set_fen(v.start_fen if fen is None else fen)

    # -- FEN ------------------------------------------------------------------

    def set_fen(self, fen: str) -> None:
        """Set up a position from FEN, clearing the move history.

        Raises :class:`FenError` naming the problem if the FEN is malformed or
        the position is not legal in this variant (see :func:`rule_problems`).
        Counters: halfmove clock ``0..2**31-1``, fullmove number ``1..2**31-1``,
        in ASCII digits. The en-passant field must follow a double step; it is
        kept (and written back by :meth:`fen`) only when a legal en-passant
        capture exists, as python-chess does.
        """
        v: Variant = self.variant
        W, H = v.width, v.height
        if not isinstance(fen, str):
            raise FenError(f"FEN must be a string, not {type(fen).__name__}")
        fields = fen.split()
        if not 1 <= len(fields) <= 6:
            raise FenError(f"bad FEN {fen!r}: expected 1 to 6 space-separated fields")
        fields += ["w", "-", "-", "0", "1"][len(fields) - 1:]
        placement, side, castling, ep, halfmove, fullmove = fields
        rows = placement.split("/")
        if len(rows) != H:
            raise FenError(f"bad FEN {fen!r}: {v.name} has {H} ranks, the FEN has {len(rows)}")
        board = bytearray(W * H)
        allowed = set(v.pieces.upper())
        for i, row in enumerate(rows):
            rank, file, j = H - 1 - i, 0, 0
            while j < len(row):
                ch = row[j]
                if ch in _ASCII_DIGITS:
                    k = j
                    while j < len(row) and row[j] in _ASCII_DIGITS:
                        j += 1
                    if j - k > 2:  # no board is 100 files wide; int() of a 5,000-digit run is a plain ValueError
                        raise FenError(f"bad FEN {fen!r}: rank {rank + 1} has a run of {j - k} digits "
                                       f"(a rank has {W} squares)")
                    file += int(row[k:j])
                    continue
                if ch not in "pnbrqkPNBRQK":
                    raise FenError(f"bad FEN {fen!r}: unknown piece {ch!r} on rank {rank + 1}")
                if ch.upper() not in allowed:
                    raise FenError(f"bad FEN {fen!r}: piece {ch!r} is not used in {v.name} (pieces: {v.pieces})")
                if file < W:
                    board[rank * W + file] = PIECE_SYMBOLS.index(ch.lower()) | (8 if ch.islower() else 0)
                file += 1
                j += 1
            if file != W:
                raise FenError(f"bad FEN {fen!r}: rank {rank + 1} ({row!r}) has {file} squares, expected {W}")
        if side not in ("w", "b"):
            raise FenError(f"bad FEN {fen!r}: side to move must be 'w' or 'b', not {side!r}")
        turn = WHITE if side == "w" else BLACK
        problems = rule_problems(v, bytes(board))
        if problems:
            raise FenError(f"bad FEN {fen!r}: {problems[0]}")
        rights = 0
        if castling != "-":
            letters = {letter: (bit, c) for bit, letter, c in _castling_letters(v)}
            if len(set(castling)) != len(castling):
                raise FenError(f"bad FEN {fen!r}: castling field {castling!r} repeats a right")
            for ch in castling:
                if ch not in letters:
                    raise FenError(f"bad FEN {fen!r}: castling right {ch!r} does not exist in {v.name}")
                bit, c = letters[ch]
                colour = WHITE if ch.isupper() else BLACK
                rank = 0 if colour == WHITE else H - 1
                king_sq, rook_sq = rank * W + FILES.index(c.king_from), rank * W + FILES.index(c.rook_from)
                if board[king_sq] != KING | 8 * colour or board[rook_sq] != ROOK | 8 * colour:
                    raise FenError(f"bad FEN {fen!r}: castling right {ch!r} needs the {COLOR_NAMES[colour]} king "
                                   f"on {c.king_from}{rank + 1} and rook on {c.rook_from}{rank + 1}")
                rights |= bit
        ep_square = -1
        if ep != "-":
            try:
                ep_square = square_index(ep, W, H)
            except ValueError:
                raise FenError(f"bad FEN {fen!r}: en-passant square {ep!r} is not on the board") from None
            if not v.en_passant:
                raise FenError(f"bad FEN {fen!r}: {v.name} has no en passant, but the FEN names {ep!r}")
            ep_rank, ep_file = divmod(ep_square, W)
            # White to move: Black's pawn stepped from rank H-2 over ep to H-4.
            pawn_rank, want_rank = (ep_rank - 1, H - 3) if turn == WHITE else (ep_rank + 1, 2)
            pawn = PAWN | (8 if turn == WHITE else 0)
            if ep_rank != want_rank or board[ep_square] or board[pawn_rank * W + ep_file] != pawn:
                raise FenError(f"bad FEN {fen!r}: en-passant square {ep} does not follow a double step")
        half = _counter(fen, "halfmove clock", halfmove, 0)
        full = _counter(fen, "fullmove number", fullmove, 1)
        # The C core keeps the en-passant square only if a legal capture onto it exists.
        fields = (bytes(board), turn, rights, ep_square, half, full)
        if v.win_rule == "checkmate":
            scratch = _core.Position(v.rules)  # check first: a bad FEN must not clobber this position
            scratch.set_board(*fields)
            them = turn ^ 1
            if scratch.is_attacked_square(board.index(KING | 8 * them), turn):
                raise FenError(f"bad FEN {fen!r}: the side not to move ({COLOR_NAMES[them]}) is in check")
        self.set_board(*fields)

    def fen(self, ply: int = -1) -> str:
        """FEN of the current position (or of the position at ``ply`` in the history)."""
        v: Variant = self.variant
        W, H = v.width, v.height
        state = self.board_state(ply)
        rows = []
        for rank in range(H - 1, -1, -1):
            row, empty = "", 0
            for p in state.pieces[rank * W:(rank + 1) * W]:
                if not p:
                    empty += 1
                    continue
                if empty:
                    row += str(empty)
                    empty = 0
                row += PIECE_SYMBOLS[p & 7].upper() if p < 8 else PIECE_SYMBOLS[p & 7]
            rows.append(row + (str(empty) if empty else ""))
        castling = "".join(letter for bit, letter, _ in _castling_letters(v) if state.castling & bit) or "-"
        ep_name = square_names(W, H)[state.ep_square] if state.ep_square >= 0 else "-"
        return f"{'/'.join(rows)} {'wb'[state.turn]} {castling} {ep_name} {state.halfmove} {state.fullmove}"

    @property
    def root_fen(self) -> str:
        """FEN of the position before the first move of the history."""
        return self.fen(0)

    # -- moves ------------------------------------------------------------------

    @property
    def _names(self) -> tuple[str, ...]:
        return square_names(self.variant.width, self.variant.height)

    @property
    def legal_moves(self) -> list[Move]:
        """All legal moves, in generation order."""
        names = self._names
        return [_decode(code, names) for code in self.legal_move_codes()]

    def move_code(self, move: Move | str) -> int:
        """Engine code of a legal move; raises :class:`IllegalMoveError` otherwise."""
        if isinstance(move, str):
            move = Move.from_uci(move)
        elif not isinstance(move, Move):
            raise TypeError(f"move must be a Move or a UCI string, not {type(move).__name__}")
        names = self._names
        for code in self.legal_move_codes():
            if _decode(code, names) == move:
                return code
        hint = ""
        if move.promotion is None and any(
            m.from_square == move.from_square and m.to_square == move.to_square for m in self.legal_moves
        ):
            hint = " (a promotion needs its piece, e.g. " + move.uci() + self.variant.promotion[0].lower() + ")"
        raise IllegalMoveError(f"illegal move {move.uci()} in {self.fen()}{hint}")

    def is_legal(self, move: Move | str) -> bool:
        """Is ``move`` legal here? (Malformed UCI raises ``ValueError``.)"""
        try:
            self.move_code(move)
        except IllegalMoveError:
            return False
        return True

    def push(self, move: Move | str) -> None:
        """Play a legal move (a :class:`Move` or UCI string)."""
        self.push_code(self.move_code(move))

    def push_uci(self, uci: str) -> None:
        """Play a legal move given in UCI."""
        self.push_code(self.move_code(Move.from_uci(uci)))

    def pop(self) -> Move:
        """Take back the last move and return it (:meth:`pop_code` returns its code)."""
        return _decode(self.pop_code(), self._names)

    def peek(self) -> Move | None:
        """The last move played, or ``None`` at the root."""
        code = self.board_state().last_move
        return _decode(code, self._names) if code else None

    @property
    def move_stack(self) -> list[Move]:
        """Moves played from the root position."""
        names = self._names
        return [_decode(code, names) for code in self.move_codes()]

    def is_castling(self, move: Move | str) -> bool:
        """Is this legal move a castling move?"""
        return bool(move_flags(self.move_code(move)) & FLAG_CASTLING)

    def is_capture(self, move: Move | str) -> bool:
        """Does this legal move capture (en passant included)?"""
        return captured_type(self.pieces, self.move_code(move)) != 0

    # -- actions -------------------------------------------------------------

    def move_to_action(self, move: Move | str) -> int:
        """Action index of a legal move (for the side to move)."""
        return self.encode(self.move_code(move))

    def action_to_move(self, action: int) -> Move:
        """The legal move with this action index; :class:`IllegalMoveError` if none."""
        action = _check_action(action, self.variant.num_actions)
        codes = self.legal_move_codes()
        for code, a in zip(codes, self.legal_actions()):
            if a == action:
                return _decode(code, self._names)
        raise IllegalMoveError(f"action {action} is not a legal move in {self.fen()}")

    def action_mask(self, dtype=np.int8) -> np.ndarray:
        """Legal-action mask: 1 for every legal action, length ``num_actions``."""
        out = np.empty(self.rules.num_actions, dtype=dtype)
        self.write_action_mask(out)
        return out

    def observation(self, history: int = 1, last_move: bool = True) -> np.ndarray:
        """Observation planes, float32 ``(height, width, channels)``.

        See :class:`minichess_envs.encoding.ObservationEncoding` for the layout.
        """
        v = self.variant
        out = np.empty((v.height, v.width, self.observation_channels(history, last_move)), np.float32)
        self.write_observation(out, history, last_move)
        return out

    # -- state and outcome -------------------------------------------------------

    def piece_at(self, square: str) -> str | None:
        """FEN letter of the piece on ``square`` (``"K"``, ``"p"``), or ``None``."""
        p = self.pieces[square_index(square, self.variant.width, self.variant.height)]
        if not p:
            return None
        return PIECE_SYMBOLS[p & 7].upper() if p < 8 else PIECE_SYMBOLS[p & 7]

    def piece_map(self) -> dict[str, str]:
        """Occupied squares and their FEN letters."""
        names = self._names
        return {
            names[s]: PIECE_SYMBOLS[p & 7].upper() if p < 8 else PIECE_SYMBOLS[p & 7]
            for s, p in enumerate(self.pieces) if p
        }

    def is_attacked(self, square: str, by: int) -> bool:
        """Is ``square`` (a name such as ``"c3"``) attacked by color ``by``?"""
        return self.is_attacked_square(square_index(square, self.variant.width, self.variant.height), by)

    def outcome(self) -> Outcome | None:
        """How the game ended, or ``None`` if it goes on.

        Checked in this order: king capture, checkmate, stalemate, insufficient
        material, repetition, no-progress rule.
        """
        reason, winner = self.outcome_code()
        if not reason:
            return None
        return Outcome(Termination(reason), None if winner < 0 else winner)

    def is_game_over(self) -> bool:
        return self.outcome_code()[0] != 0

    def is_checkmate(self) -> bool:
        return self.outcome_code()[0] == Termination.CHECKMATE

    def is_stalemate(self) -> bool:
        return self.outcome_code()[0] == Termination.STALEMATE

    def result(self) -> str:
        """``"1-0"``, ``"0-1"``, ``"1/2-1/2"``, or ``"*"`` while the game goes on."""
        outcome = self.outcome()
        return outcome.result() if outcome else "*"

    def perft_divide(self, depth: int) -> dict[str, int]:
        """Perft below each legal move: ``{uci: leaf count at depth - 1}``."""
        if depth < 1:
            raise ValueError(f"divide needs depth >= 1, got {depth}")
        counts = {}
        for code, move in zip(self.legal_move_codes(), self.legal_moves):
            self.push_code(code)
            counts[move.uci()] = self.perft(depth - 1)
            self.pop_code()
        return counts

    # -- transformations -----------------------------------------------------

    def mirror(self) -> Position:
        """The position reflected left-right (files reversed), same side to move.

        Only for positions without castling rights (castling is not symmetric).
        """
        v: Variant = self.variant
        W, H = v.width, v.height
        pieces, turn, rights, ep, half, full, _, _ = self.board_state()
        if rights:
            raise ValueError("cannot mirror a position with castling rights")
        board = bytes(pieces[r * W + W - 1 - f] for r in range(H) for f in range(W))
        out = Position.__new__(type(self))
        _core.Position.__init__(out, v.rules, v)
        out.set_board(board, turn, 0, -1 if ep < 0 else (ep // W) * W + W - 1 - ep % W, half, full)
        return out

    # -- printing --------------------------------------------------------------

    def unicode(self, *, borders: bool = False, empty: str = "·", coordinates: bool = True) -> str:
        """The board with unicode pieces, White at the bottom, ranks and files labelled."""
        v: Variant = self.variant
        W, H = v.width, v.height
        pieces = self.pieces
        lines = []
        for rank in range(H - 1, -1, -1):
            cells = []
            for p in pieces[rank * W:(rank + 1) * W]:
                letter = (PIECE_SYMBOLS[p & 7].upper() if p < 8 else PIECE_SYMBOLS[p & 7]) if p else None
                cells.append(UNICODE_PIECES[letter] if letter else empty)
            row = " ".join(cells)
            if borders:
                row = "│ " + row + " │"
            lines.append((f"{rank + 1} " if coordinates else "") + row)
        pad = "  " if coordinates else ""
        if borders:
            lines.insert(0, pad + "┌" + "─" * (2 * W + 1) + "┐")
            lines.append(pad + "└" + "─" * (2 * W + 1) + "┘")
            pad += "  "
        if coordinates:
            lines.append(pad + " ".join(FILES[:W]))
        return "\n".join(lines)

    def __str__(self) -> str:
        v: Variant = self.variant
        W, H = v.width, v.height
        pieces = self.pieces
        rows = []
        for rank in range(H - 1, -1, -1):
            rows.append(" ".join(
                (PIECE_SYMBOLS[p & 7].upper() if p < 8 else PIECE_SYMBOLS[p & 7]) if p else "."
                for p in pieces[rank * W:(rank + 1) * W]
            ))
        return "\n".join(rows)

    def __repr__(self) -> str:
        return f"Position({self.variant.name!r}, {self.fen()!r})"

    # -- copying and pickling ----------------------------------------------------

    def __copy__(self) -> Position:
        return self.copy()

    def __deepcopy__(self, memo) -> Position:
        return self.copy()

    def __reduce__(self):
        # The variant goes by value, so a worker process that never registered it can rebuild the position.
        return (_restore, (self.variant, self.root_fen, self.move_codes()))

    def __eq__(self, other) -> bool:
        """Same variant, same board, side to move, rights, clocks and history."""
        if not isinstance(other, _core.Position):
            return NotImplemented
        return (
            self.variant == other.variant
            and self.ply == other.ply
            and all(self.board_state(i) == other.board_state(i) for i in range(self.ply + 1))
        )

    __hash__ = None  # mutable


def _restore(variant: Variant, root_fen: str, codes: Iterable[int]) -> Position:
    pos = Position(variant, root_fen)
    for code in codes:
        pos.push_code(code)
    return pos


def _check_action(action, num_actions: int) -> int:
    """Validate an action index: an integer (Python or NumPy) in range; :class:`ActionSpaceError` if not."""
    if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
        action = action.item()
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise ActionSpaceError(f"action must be an integer, not {type(action).__name__} ({action!r})")
    action = int(action)
    if not 0 <= action < num_actions:
        raise ActionSpaceError(f"action {action} is outside the action space [0, {num_actions})")
    return action
