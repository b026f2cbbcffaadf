"""Standard Algebraic Notation and PGN export for games on any board.

>>> pos = Position("gardner")
>>> san(pos, "b1c3")
'Nc3'
>>> pos.push_uci("b1c3")
>>> print(game_pgn(pos, {"White": "random"}))  # doctest: +ELLIPSIS
[Event "?"]
...
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import os
import re
from typing import Iterator

from minichess_envs.engine import FILES, WHITE, IllegalMoveError, Move, Position, Termination
from minichess_envs.variants import VARIANTS, Variant, get_variant

STANDARD_START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

#: The values of the ``Termination`` tag (PGN standard, section 9.8.1), which PGN readers expect.
TERMINATIONS = ("abandoned", "adjudication", "death", "emergency", "normal", "rules infraction", "time forfeit",
                "unterminated")
#: The reasons this project records (``Outcome.termination`` names, the arena's and the play apps' labels),
#: by standard value. A game the rules or a player ended is "normal"; the ply limit is in termination_tag.
_REASONS = {
    **{t.name.lower().replace("_", " "): "normal" for t in Termination},  # checkmate, stalemate, repetition, ...
    "resignation": "normal",
    "agreement": "normal",
    "illegal move": "rules infraction",
}
_PLY_LIMIT = ("ply limit", "truncated at the ply limit")


def termination_tag(reason: str, result: str = "*") -> str:
    """The standard ``Termination`` value (:data:`TERMINATIONS`) for ``reason``, as recorded here or in older files.

    ``"checkmate"``, ``"resignation"`` and the other ends by the rules or a player are ``"normal"``,
    ``"illegal move"`` is ``"rules infraction"``. The ply limit is ``"adjudication"`` when the game
    was scored anyway (``result`` ``"1/2-1/2"``: the arena and the play apps adjudicate a draw there)
    and ``"unterminated"`` when it was not (``"*"``: an environment truncates the episode). A standard
    value is returned in the standard's spelling; anything else unchanged.
    """
    key = " ".join(reason.lower().replace("_", " ").split())
    if key in TERMINATIONS:
        return key
    if key in _PLY_LIMIT:
        return "unterminated" if result == "*" else "adjudication"
    return _REASONS.get(key, reason)


def san(position: Position, move: Move | str) -> str:
    """SAN of a legal move in ``position`` (``Nf3``, ``exd5``, ``O-O``, ``c5=Q+``, ``Qh4#``)."""
    if isinstance(move, str):
        move = Move.from_uci(move)
    code = position.move_code(move)  # raises IllegalMoveError for illegal moves
    piece = position.piece_at(move.from_square).upper()
    if position.is_castling(move):
        text = "O-O" if FILES.index(move.to_square[0]) > FILES.index(move.from_square[0]) else "O-O-O"
    else:
        capture = position.is_capture(move)
        if piece == "P":
            text = (move.from_square[0] + "x" if capture else "") + move.to_square
            if move.promotion:
                text += "=" + move.promotion.upper()
        else:
            # Disambiguate among other pieces of the same type that can reach the square.
            rivals = [
                m.from_square for m in position.legal_moves
                if m.to_square == move.to_square and m.from_square != move.from_square
                and position.piece_at(m.from_square).upper() == piece
            ]
            prefix = ""
            if rivals:
                if all(r[0] != move.from_square[0] for r in rivals):
                    prefix = move.from_square[0]
                elif all(r[1:] != move.from_square[1:] for r in rivals):
                    prefix = move.from_square[1:]
                else:
                    prefix = move.from_square
            text = piece + prefix + ("x" if capture else "") + move.to_square
    position.push_code(code)
    try:
        if position.is_checkmate():
            text += "#"
        elif position.is_check():
            text += "+"
    finally:
        position.pop()
    return text


def game_pgn(position: Position, headers: dict[str, str] | None = None) -> str:
    """PGN of the game that led to ``position`` (from its root), with ``FEN``/``SetUp``/``Variant`` tags.

    ``headers`` adds or overrides tags (``White``, ``Black``, ``Event``, ...). The
    result is taken from the position's outcome (``*`` while it goes on, unless
    ``headers["Result"]`` says otherwise, e.g. for a truncated game). A ``Termination``
    tag is written as its standard value (:func:`termination_tag`), the reason given
    kept as a comment before the result (``{checkmate} 1-0``).
    """
    v = position.variant
    root = Position(v, position.root_fen)
    tags = {
        "Event": "?",
        "Site": "?",
        "Date": datetime.date.today().strftime("%Y.%m.%d"),
        "Round": "?",
        "White": "?",
        "Black": "?",
        "Result": position.result(),
    }
    if v.name != "chess":  # Fairy-Stockfish's name where it has one, so that FSF-based tools read it
        tags["Variant"] = v.fairy_stockfish or v.name
    if v.name != "chess" or root.fen() != STANDARD_START:
        tags["SetUp"] = "1"
        tags["FEN"] = root.fen()
    tags.update(headers or {})
    reason = None
    if "Termination" in tags:
        reason = str(tags["Termination"])
        tags["Termination"] = termination_tag(reason, tags["Result"])
        if tags["Termination"] in (reason, reason.strip().lower()):
            reason = None  # nothing more to say than the tag
    tokens = []
    for i, move in enumerate(position.move_stack):
        if root.turn == WHITE:
            tokens.append(f"{root.fullmove_number}.")
        elif i == 0:
            tokens.append(f"{root.fullmove_number}...")
        tokens.append(san(root, move))
        root.push(move)
    if reason:
        tokens.append("{" + reason.replace("}", ")") + "}")  # a comment cannot hold "}"
    tokens.append(tags["Result"])
    lines, line = [], ""
    for token in tokens:  # wrap movetext at 80 columns, as the PGN standard asks
        if line and len(line) + 1 + len(token) > 80:
            lines.append(line)
            line = token
        else:
            line = f"{line} {token}" if line else token
    lines.append(line)
    header = "\n".join(f'[{key} "{_escape(str(value))}"]' for key, value in tags.items())
    return header + "\n\n" + "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')



# -- reading -------------------------------------------------------------------------------------------

class AmbiguousMoveError(IllegalMoveError):
    """A SAN move that more than one legal move matches (``Nd2`` with knights on b1 and f1)."""


_SAN = re.compile(r"^([KQRBN])?([a-h])?([1-8])?(x)?([a-h][1-8])(?:=?([QRBNK]))?$")
_UCI = re.compile(r"^[a-h][1-8][a-h][1-8][qrbnk]?$")
_CASTLES = {"O-O": 1, "0-0": 1, "O-O-O": -1, "0-0-0": -1}


def parse_san(position: Position, text: str) -> Move:
    """The legal move that SAN ``text`` names in ``position`` (UCI is accepted too).

    Check and annotation marks (``+ # ! ?``) are ignored; ``0-0`` reads as ``O-O``.
    Raises :class:`IllegalMoveError` if no legal move matches and
    :class:`AmbiguousMoveError` if several do.
    """
    token = text.strip().rstrip("+#!?")
    legal = position.legal_moves
    if token in _CASTLES:
        direction = _CASTLES[token]
        found = [m for m in legal if position.is_castling(m)
                 and (FILES.index(m.to_square[0]) - FILES.index(m.from_square[0])) * direction > 0]
        return _one(found, text, position)
    if _UCI.match(token):
        move = Move.from_uci(token)
        if move in legal:
            return move
    match = _SAN.match(token)
    if match is None:
        raise IllegalMoveError(f"cannot read move {text!r} in {position.fen()}: not SAN or UCI")
    piece, file, rank, _, target, promotion = match.groups()
    piece = piece or "P"
    promotion = promotion.lower() if promotion else None
    found = []
    for m in legal:
        if m.to_square != target or m.promotion != promotion:
            continue
        if (file and m.from_square[0] != file) or (rank and m.from_square[1:] != rank):
            continue
        if position.piece_at(m.from_square).upper() != piece or position.is_castling(m):
            continue
        if piece == "P" and file is None and m.from_square[0] != target[0]:
            continue  # a pawn capture names its file
        found.append(m)
    if not found and promotion is None and any(
        m.to_square == target and m.promotion and position.piece_at(m.from_square).upper() == piece for m in legal
    ):
        raise IllegalMoveError(f"move {text!r} in {position.fen()} needs its promotion piece (e.g. {target}=Q)")
    return _one(found, text, position)


def _one(found: list[Move], text: str, position: Position) -> Move:
    if len(found) == 1:
        return found[0]
    if not found:
        raise IllegalMoveError(f"illegal move {text!r} in {position.fen()}")
    options = ", ".join(m.uci() for m in found)
    raise AmbiguousMoveError(f"ambiguous move {text!r} in {position.fen()}: {options}")


@dataclasses.dataclass
class PgnGame:
    """One game read from PGN: its tags, variant, start position, moves and result."""

    headers: dict[str, str]
    variant: Variant
    root_fen: str
    moves: list[Move]
    result: str  #: ``"1-0"``, ``"0-1"``, ``"1/2-1/2"`` or ``"*"``, from the movetext (or the tag)

    @property
    def termination(self) -> str | None:
        """The ``Termination`` tag as its standard value (older files say ``"checkmate"``); ``None`` without one."""
        tag = self.headers.get("Termination")
        return None if tag is None else termination_tag(tag, self.result)

    def position(self) -> Position:
        """The final position, with the whole game as its move history."""
        position = Position(self.variant, self.root_fen)
        for move in self.moves:
            position.push(move)
        return position

    def positions(self) -> Iterator[tuple[Position, Move]]:
        """``(position, move played there)`` for each ply; the position object is reused, copy it to keep it."""
        position = Position(self.variant, self.root_fen)
        for move in self.moves:
            yield position, move
            position.push(move)


@dataclasses.dataclass
class PgnStats:
    """What a read found: games read, and games skipped counted by reason."""

    games: int = 0
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def __str__(self) -> str:
        reasons = ", ".join(f"{n} {why}" for why, n in self.skipped.most_common())
        return f"{self.games} games read" + (f"; skipped {reasons}" if reasons else "")


RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
_TAG = re.compile(r'^\[\s*([A-Za-z0-9_]+)\s+"((?:[^"\\]|\\.)*)"\s*\]\s*$')
_TOKENS = re.compile(r"\{[^}]*\}?|;[^\n]*|\$\d+|\(|\)|[^\s{};()$]+")
_MOVE_NUMBER = re.compile(r"^\d+\.*$")


def variant_of(headers: dict[str, str], default: str | Variant | None = None) -> Variant:
    """The variant a PGN game's ``Variant`` tag names (ours or Fairy-Stockfish's name).

    Without the tag, ``default`` (or standard chess). Raises ``ValueError`` for an unknown name.
    """
    name = headers.get("Variant", "").strip()
    if not name or name.lower() in ("standard", "chess", "normal", "from position"):
        return get_variant(default or "chess")
    for v in VARIANTS.values():
        if name.lower() in (v.name.lower(), (v.fairy_stockfish or "").lower(), v.title.lower()):
            return v
    raise ValueError(f"unknown variant {name!r}")


def read_pgn(source, variant: str | Variant | None = None, stats: PgnStats | None = None) -> Iterator[PgnGame]:
    """Read games one at a time from a PGN file (a path or a text stream).

    Tags ``Variant``, ``FEN`` and ``SetUp`` set up each game (``variant`` is the
    default where a game has no ``Variant`` tag); SAN or UCI movetext is
    accepted, and comments, NAGs, variations and move numbers are skipped.
    A game that cannot be read is skipped and counted in ``stats.skipped``
    under its reason; reading goes on with the next game. Memory stays flat:
    only the current game is held.
    """
    stats = stats if stats is not None else PgnStats()
    if isinstance(source, (str, os.PathLike)):
        with open(source, encoding="utf-8", errors="replace") as f:
            yield from read_pgn(f, variant, stats)
        return
    for headers, movetext in _split_games(source):
        try:
            game = _parse_game(headers, movetext, variant)
        except _Skip as skip:
            stats.skipped[skip.reason] += 1
            continue
        stats.games += 1
        yield game


class _Skip(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _split_games(lines) -> Iterator[tuple[list[str], list[str]]]:
    """Raw (tag lines, movetext lines) per game; a tag line after movetext starts the next game."""
    tags: list[str] = []
    movetext: list[str] = []
    in_comment = False  # inside a { } comment, which may span lines and hold "["
    after_blank = False
    for line in lines:
        line = line.rstrip("\r\n")
        if line.startswith("%"):
            continue  # escape line (PGN standard, section 6)
        stripped = line.strip()
        if in_comment and after_blank and _TAG.match(stripped):
            in_comment = False  # a comment left open: the tag section of the next game ends it
        after_blank = not stripped
        if not in_comment and stripped.startswith("["):
            if movetext:
                yield tags, movetext
                tags, movetext = [], []
            tags.append(stripped)
        elif stripped:
            movetext.append(line)
            if "{" in line or "}" in line:
                in_comment = _inside_comment_after(line, in_comment)
    if tags or movetext:
        yield tags, movetext


def _inside_comment_after(line: str, in_comment: bool) -> bool:
    for ch in line:
        if in_comment:
            in_comment = ch != "}"
        elif ch == "{":
            in_comment = True
        elif ch == ";":
            break  # the rest of the line is a comment
    return in_comment


def _parse_game(tag_lines: list[str], movetext: list[str], default_variant) -> PgnGame:
    headers: dict[str, str] = {}
    for line in tag_lines:
        m = _TAG.match(line)
        if m is None:
            raise _Skip("malformed tag")
        headers[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
    try:
        variant = variant_of(headers, default_variant)
    except ValueError:
        raise _Skip("unknown variant") from None
    root_fen = headers.get("FEN", variant.start_fen)
    try:
        position = Position(variant, root_fen)
    except ValueError:
        raise _Skip("bad FEN") from None
    root_fen = position.fen()
    moves: list[Move] = []
    result = "*"
    depth = 0
    text = "\n".join(movetext)
    if text.count("{") > text.count("}"):
        raise _Skip("unterminated comment")
    for token in _TOKENS.findall(text):
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth < 0:
                raise _Skip("unbalanced variation")
        elif depth or token[0] in "{;$" or _MOVE_NUMBER.match(token):
            continue
        elif token in RESULTS:
            result = token
            break
        else:
            if _MOVE_NUMBER.match(token.split(".")[0] + ".") and "." in token:
                token = token.rsplit(".", 1)[1]  # "1.e4" written without a space
                if not token:
                    continue
            try:
                move = parse_san(position, token)
            except AmbiguousMoveError:
                raise _Skip("ambiguous move") from None
            except IllegalMoveError:
                raise _Skip("illegal move") from None
            position.push(move)
            moves.append(move)
    if depth > 0:
        raise _Skip("unbalanced variation")
    if result == "*" and headers.get("Result") in RESULTS:
        result = headers["Result"]
    return PgnGame(headers, variant, root_fen, moves, result)
