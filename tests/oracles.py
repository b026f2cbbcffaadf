"""Independent references for the tests: Fairy-Stockfish (pyffish) and python-chess.

pyffish crashes the interpreter on an unknown variant name, so callers pass
only names it knows (built in, or loaded with ``load_fairy_variants``).
"""

from __future__ import annotations

import functools
import random

import pytest

sf = pytest.importorskip("pyffish", reason="pyffish (Fairy-Stockfish) is the rules oracle: pip install pyffish")

# Fairy-Stockfish definitions of the variants it does not build in, as
# researched in docs/variants.md (prefixed so they cannot shadow a built-in).
FAIRY_CONFIG = """
[mc-silverman:chess]
maxRank = 5
maxFile = d
startFen = rqkr/pppp/4/PPPP/RQKR w - - 0 1
promotionRegionWhite = *5
promotionRegionBlack = *1
promotionPieceTypes = qr
doubleStepRegionWhite = *2
doubleStepRegionBlack = *4
castling = false

[mc-microchess:gardner]
maxRank = 5
maxFile = d
startFen = rbnk/p3/4/3P/RBNK w - - 0 1

[mc-microchess-glimne:chess]
maxRank = 5
maxFile = d
startFen = knbr/p3/4/3P/RBNK w Qk - 0 1
promotionRegionWhite = *5
promotionRegionBlack = *1
doubleStepRegionWhite = *2
doubleStepRegionBlack = *4
castlingKingsideFile = c
castlingQueensideFile = b

[mc-baby:gardner]
startFen = kqbnr/ppppp/5/PPPPP/RNBQK w - - 0 1

[mc-mallett:gardner]
startFen = rbkqb/ppppp/5/PPPPP/RNKQN w - - 0 1

[mc-jacobs-meirovitz:gardner]
startFen = bnrqk/ppppp/5/PPPPP/KQRNB w - - 0 1

[mc-petty:gardner]
maxRank = 6
promotionRegionWhite = *6
promotionRegionBlack = *1
startFen = qkbnr/ppppp/5/5/PPPPP/QKBNR w - - 0 1

[mc-3x3]
maxRank = 3
maxFile = c
king = k
queen = q
rook = r
startFen = kqr/3/KQR w - - 0 1
castling = false
doubleStep = false
nMoveRule = 0
"""

sf.load_variant_config(FAIRY_CONFIG)

# Our variant name -> Fairy-Stockfish variant name (built in, or from FAIRY_CONFIG).
FAIRY_VARIANTS = {
    "gardner": "gardner",
    "losalamos": "losalamos",
    "silverman": "mc-silverman",
    "microchess": "mc-microchess",
    "baby": "mc-baby",
    "mallett": "mc-mallett",
    "jacobs-meirovitz": "mc-jacobs-meirovitz",
    "petty": "mc-petty",
    "3x3": "mc-3x3",
}
_missing = set(FAIRY_VARIANTS.values()) - set(sf.variants())
assert not _missing, f"pyffish did not load {_missing}"


def fsf_perft(variant: str, fen: str, depth: int) -> int:
    """Perft computed by Fairy-Stockfish one node at a time."""
    moves = sf.legal_moves(variant, fen, [])
    if depth == 1:
        return len(moves)
    return sum(fsf_perft(variant, sf.get_fen(variant, fen, [m]), depth - 1) for m in moves)


def random_game_fens(variant: str, plies: int, seed: int) -> list[str]:
    """FENs along a random game played by Fairy-Stockfish itself."""
    rng = random.Random(seed)
    fen = sf.start_fen(variant)
    fens = [fen]
    for _ in range(plies):
        moves = sf.legal_moves(variant, fen, [])
        if not moves:
            break
        fen = sf.get_fen(variant, fen, [rng.choice(moves)])
        fens.append(fen)
    return fens
