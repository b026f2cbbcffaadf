"""The variant catalogue: one table of rule specs, one row per game.

A :class:`Variant` is plain data. The engine compiles it once into a
:class:`minichess_envs._core.Rules` (board geometry, move tables, Zobrist keys)
and every environment, encoding and agent reads the same spec, so a new game
is one new row in :data:`VARIANTS` (or a ``Variant(...)`` built in user code).

Squares in specs are named as in chess: files ``a``.. from White's left,
ranks ``1``.. from White's side. Rule sources are documented per variant in
``docs/variants.md``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal, NamedTuple

FILES = "abcdefgh"


class Castling(NamedTuple):
    """One castling move, as files on the castling side's back rank.

    ``Castling("e", "g", "h", "f")`` is standard king-side castling: the king
    goes e->g, the rook h->f. ``color`` is ``"white"``, ``"black"`` or ``None``
    for both sides (each on its own back rank). The king must move at least
    two files, so that castling reads as a king move in UCI (``e1g1``).
    """

    king_from: str
    king_to: str
    rook_from: str
    rook_to: str
    color: str | None = None


STANDARD_CASTLING = (Castling("e", "g", "h", "f"), Castling("e", "c", "a", "d"))


@dataclasses.dataclass(frozen=True)
class Variant:
    """Rules of one chess variant.

    :param name: short name used everywhere (``"gardner"``); case-insensitive lookups.
    :param title: CamelCase name for Gymnasium ids: ``MiniChess-{title}-v0``.
    :param width: number of files (1..8).
    :param height: number of ranks (1..8).
    :param start_fen: the start position in FEN.
    :param pieces: piece letters in play (``"KQRBNP"``); fixes the observation planes.
    :param double_step: pawns may advance two squares from their second rank.
    :param en_passant: a double-stepped pawn may be captured en passant.
    :param castling: White's castling moves (Black mirrors them); empty for none.
    :param promotion: promotion pieces; the first is what a plain pawn move to
        the last rank promotes to (the other pieces are underpromotions).
    :param win_rule: ``"checkmate"``, or ``"king_capture"`` (moving into check is
        legal and the game ends when a king is taken, as in Alpha-Mini).
    :param stalemate: result for the side that has no legal move and is not in
        check: ``"draw"``, ``"loss"`` or ``"win"``.
    :param repetition: the n-th occurrence of a position draws (0: never).
    :param no_progress_plies: plies without capture or pawn move that draw
        (100 = the 50-move rule; 0: never).
    :param insufficient_material: draw when neither side can mate (bare kings,
        one minor piece, or only same-colored bishops).
    :param ply_limit: default episode length of the environments; reaching it
        truncates the episode (it is not a rule of the game).
    :param fairy_stockfish: Fairy-Stockfish ``UCI_Variant`` name, if it has one (also
        the PGN ``Variant`` tag, so that Fairy-Stockfish-based tools open our games).
    :param description: one line for tables and ``minichess variants``.
    """

    name: str
    title: str
    width: int
    height: int
    start_fen: str
    pieces: str = "KQRBNP"
    double_step: bool = False
    en_passant: bool = False
    castling: tuple[Castling, ...] = ()
    promotion: str = "QRBN"
    win_rule: Literal["checkmate", "king_capture"] = "checkmate"
    stalemate: Literal["draw", "loss", "win"] = "draw"
    repetition: int = 3
    no_progress_plies: int = 100
    insufficient_material: bool = True
    ply_limit: int = 200
    fairy_stockfish: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        problems = []
        if not (1 <= self.width <= 8 and 1 <= self.height <= 8):
            problems.append(f"board {self.width}x{self.height} is outside 1x1..8x8")
        if not self.name or not self.title.isalnum():
            problems.append(f"name must be non-empty and title {self.title!r} alphanumeric")
        pieces = self.pieces.upper()
        if "K" not in pieces or set(pieces) - set("KQRBNP"):
            problems.append(f"pieces {self.pieces!r} must include K and use only KQRBNP")
        if "P" in pieces and not self.promotion:
            problems.append("a variant with pawns needs promotion pieces")
        if set(self.promotion.upper()) - set(pieces):
            problems.append(f"promotion {self.promotion!r} uses pieces not in {self.pieces!r}")
        if self.win_rule not in ("checkmate", "king_capture"):
            problems.append(f"win_rule {self.win_rule!r} is not 'checkmate' or 'king_capture'")
        if self.stalemate not in ("draw", "loss", "win"):
            problems.append(f"stalemate {self.stalemate!r} is not 'draw', 'loss' or 'win'")
        if self.repetition < 0 or self.no_progress_plies < 0 or self.ply_limit < 1:
            problems.append("repetition and no_progress_plies must be >= 0, ply_limit >= 1")
        if self.en_passant and not self.double_step:
            problems.append("en_passant needs double_step")
        files = FILES[: self.width]
        for c in self.castling:
            if not all(f in files for f in c[:4]):
                problems.append(f"castling {c} uses files outside {files!r}")
            elif abs(files.index(c.king_to) - files.index(c.king_from)) < 2 or c.king_from == c.rook_from:
                problems.append(f"castling {c}: the king must move two or more files, away from the rook's file")
            if c.color not in (None, "white", "black"):
                problems.append(f"castling {c}: color must be 'white', 'black' or None")
        for color in ("white", "black"):
            options = self.castling_options(color)
            sides = {FILES.index(c.rook_from) > FILES.index(c.king_from) for c in options if c[0] in files}
            if len(options) > 2 or len(sides) < len(options):
                problems.append(f"{color} may castle at most once to each side (FEN letters K and Q)")
        if not problems:
            problems += self._start_fen_problems()
        if problems:
            raise ValueError(f"invalid variant {self.name!r}: " + "; ".join(problems))

    def _start_fen_problems(self) -> list[str]:
        """The start FEN read by the engine's own parser, so a variant never holds one that Position refuses."""
        if not isinstance(self.start_fen, str) or not self.start_fen.strip():
            return [f"start_fen must be a non-empty FEN string, not {self.start_fen!r}"]
        try:
            from minichess_envs.engine import FenError, Position
        except ImportError:
            # The catalogue below is built while engine.py itself imports this module, so its parser does not
            # exist yet; the catalogue's start FENs are parsed by the tests instead.
            return []
        try:
            Position(self, self.start_fen)
        except FenError as exc:
            return [f"start_fen: {exc}"]
        return []

    def __reduce__(self):
        # Pickled as its fields: the compiled rules are a C cache, rebuilt on use.
        return (_unpickle_variant, ({f.name: getattr(self, f.name) for f in dataclasses.fields(self)},))

    def castling_options(self, color: str) -> list[Castling]:
        """The castling moves of ``"white"`` or ``"black"``, in right-bit order."""
        return [c for c in self.castling if c.color in (None, color)]

    @property
    def gym_id(self) -> str:
        """The Gymnasium id, e.g. ``MiniChess-Gardner-v0``."""
        return f"MiniChess-{self.title}-v0"

    @functools.cached_property
    def rules(self):
        """The compiled rules (:class:`minichess_envs._core.Rules`), built on first use."""
        from minichess_envs import _core

        return _core.Rules(
            width=self.width,
            height=self.height,
            pieces=self.pieces.upper(),
            promotion=self.promotion.upper(),
            double_step=self.double_step,
            en_passant=self.en_passant,
            castling=[
                (color, *(FILES.index(f) for f in c[:4]))
                for color, name in enumerate(("white", "black"))
                for c in self.castling_options(name)
            ],
            king_capture=self.win_rule == "king_capture",
            stalemate_value={"draw": 0, "loss": -1, "win": 1}[self.stalemate],
            repetition=self.repetition,
            no_progress=self.no_progress_plies,
            insufficient=self.insufficient_material,
        )

    @property
    def num_actions(self) -> int:
        """Size of the action space: squares x (8 directions x max distance + 8 + 9)."""
        return self.width * self.height * (8 * (max(self.width, self.height) - 1) + 17)

    def replace(self, **changes) -> Variant:
        """A copy with some fields changed (a custom variant)."""
        return dataclasses.replace(self, **changes)


VARIANTS: dict[str, Variant] = {}


def _unpickle_variant(fields: dict) -> Variant:
    """A variant from its pickled fields: the registered one when it is equal (sharing its compiled rules)."""
    variant = Variant(**fields)
    registered = VARIANTS.get(variant.name.lower())
    return registered if registered == variant else variant


def _add_to_catalogue(variant: Variant) -> Variant:
    """Add a variant to the catalogue (:func:`minichess_envs.register_variant` also gives it env ids)."""
    key = variant.name.lower()
    if key in VARIANTS:
        raise ValueError(f"variant {variant.name!r} is already registered")
    VARIANTS[key] = variant
    return variant


def get_variant(variant: str | Variant) -> Variant:
    """Look a variant up by name (case-insensitive), or pass a :class:`Variant` through."""
    if isinstance(variant, Variant):
        return variant
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a name or a Variant, not {type(variant).__name__}")
    try:
        return VARIANTS[variant.lower()]
    except KeyError:
        known = ", ".join(VARIANTS)
        raise ValueError(f"unknown variant {variant!r}; known variants: {known}") from None


# --------------------------------------------------------------------------
# The catalogue. Rule choices and sources: docs/variants.md.

_add_to_catalogue(Variant(
    name="3x3", title="3x3", width=3, height=3,
    start_fen="kqr/3/KQR w - - 0 1",
    pieces="KQR", promotion="", no_progress_plies=0,
    ply_limit=100,
    description="Major-Piece 3x3 chess: each side a king and at most one queen and one rook",
))
_add_to_catalogue(Variant(
    name="gardner", title="Gardner", width=5, height=5,
    start_fen="rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1",
    fairy_stockfish="gardner",
    description="Gardner's 5x5 minichess (Fairy-Stockfish and pgx rules)",
))
_add_to_catalogue(VARIANTS["gardner"].replace(
    name="gardner-kingcapture", title="GardnerKingCapture",
    win_rule="king_capture", insufficient_material=False,
    fairy_stockfish=None,
    description="Gardner 5x5 won by capturing the king, as in Alpha-Mini",
))
_add_to_catalogue(Variant(
    name="losalamos", title="LosAlamos", width=6, height=6,
    start_fen="rnqknr/pppppp/6/6/PPPPPP/RNQKNR w - - 0 1",
    pieces="KQRNP", promotion="QRN", ply_limit=300,
    fairy_stockfish="losalamos",
    description="Los Alamos 6x6 chess: no bishops, no double step, no castling",
))
_add_to_catalogue(Variant(
    name="silverman", title="Silverman", width=4, height=5,
    start_fen="rqkr/pppp/4/PPPP/RQKR w - - 0 1",
    pieces="KQRP", promotion="QR", double_step=True, en_passant=True,
    description="Silverman 4x5: double step and en passant, promotion to queen or rook",
))
_add_to_catalogue(Variant(
    name="microchess", title="Microchess", width=4, height=5,
    start_fen="rbnk/p3/4/3P/RBNK w - - 0 1",
    description="Microchess 4x5 in Fairy-Stockfish's setup and rules (Gardner rules otherwise)",
))
_add_to_catalogue(Variant(
    name="baby", title="Baby", width=5, height=5,
    start_fen="kqbnr/ppppp/5/PPPPP/RNBQK w - - 0 1",
    description="Gardner's Baby chess 5x5: kings in opposite corners, Gardner rules",
))
_add_to_catalogue(Variant(
    name="mallett", title="Mallett", width=5, height=5,
    start_fen="rbkqb/ppppp/5/PPPPP/RNKQN w - - 0 1",
    description="Mallett 5x5: two white knights against two black bishops, Gardner rules",
))
_add_to_catalogue(Variant(
    name="jacobs-meirovitz", title="JacobsMeirovitz", width=5, height=5,
    start_fen="bnrqk/ppppp/5/PPPPP/KQRNB w - - 0 1",
    description="Jacobs-Meirovitz 5x5: armies rotated, Gardner rules",
))
_add_to_catalogue(Variant(
    name="petty", title="Petty", width=5, height=6,
    start_fen="qkbnr/ppppp/5/5/PPPPP/QKBNR w - - 0 1",
    ply_limit=250,
    description="Petty chess 5x6: no double step, no castling (Pritchard)",
))
_add_to_catalogue(Variant(
    name="chess", title="Chess", width=8, height=8,
    start_fen="rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    double_step=True, en_passant=True, castling=STANDARD_CASTLING,
    ply_limit=512, fairy_stockfish="chess",
    description="Standard chess",
))
