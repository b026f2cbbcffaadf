"""Move generation against independent engines: Fairy-Stockfish and python-chess."""

from __future__ import annotations

import random

import pytest

from minichess_envs import Position

chess = pytest.importorskip("chess", reason="python-chess is the 8x8 oracle: pip install chess")
from oracles import FAIRY_VARIANTS, fsf_perft, random_game_fens, sf  # noqa: E402

# Positions from the Chess Programming Wiki perft page, cross-checked live with python-chess.
CHESS_POSITIONS = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",  # Kiwipete
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
]


def python_chess_perft(board: chess.Board, depth: int) -> int:
    if depth == 1:
        return board.legal_moves.count()
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += python_chess_perft(board, depth - 1)
        board.pop()
    return total


@pytest.mark.parametrize("fen", CHESS_POSITIONS)
def test_chess_perft_matches_python_chess(fen):
    board = chess.Board(fen)
    pos = Position("chess", fen)
    for depth in (1, 2, 3):
        assert pos.perft(depth) == python_chess_perft(board, depth), (fen, depth)


@pytest.mark.slow
@pytest.mark.parametrize(
    "fen, depth, nodes",
    [  # published values (chessprogramming.org/Perft_Results), too deep for python-chess in a test
        (CHESS_POSITIONS[0], 6, 119060324),
        (CHESS_POSITIONS[1], 5, 193690690),
        (CHESS_POSITIONS[2], 7, 178633661),
        (CHESS_POSITIONS[3], 5, 15833292),
        (CHESS_POSITIONS[4], 5, 89941194),
        (CHESS_POSITIONS[5], 5, 164075551),
    ],
)
def test_chess_perft_deep(fen, depth, nodes):
    assert Position("chess", fen).perft(depth) == nodes


def test_chess_legal_moves_match_python_chess_along_random_games():
    rng = random.Random(7)
    for _ in range(60):
        board, pos = chess.Board(), Position("chess")
        while not board.is_game_over() and board.ply() < 300:
            assert sorted(m.uci() for m in pos.legal_moves) == sorted(m.uci() for m in board.legal_moves)
            assert pos.fen() == board.fen(en_passant="legal")
            assert pos.is_check() == board.is_check()
            move = rng.choice(list(board.legal_moves)).uci()
            board.push_uci(move)
            pos.push_uci(move)


@pytest.mark.parametrize("variant", sorted(FAIRY_VARIANTS))
def test_start_perft_matches_fairy_stockfish(variant):
    fsf_name = FAIRY_VARIANTS[variant]
    pos = Position(variant)
    depth = 4 if variant in ("gardner", "losalamos") else 3
    for d in range(1, depth + 1):
        assert pos.perft(d) == fsf_perft(fsf_name, pos.fen(), d), (variant, d)


@pytest.mark.parametrize("variant", sorted(FAIRY_VARIANTS))
def test_midgame_perft_matches_fairy_stockfish(variant):
    fsf_name = FAIRY_VARIANTS[variant]
    fens = random_game_fens(fsf_name, 24, seed=len(variant))
    for fen in fens[8::8]:
        if not sf.legal_moves(fsf_name, fen, []):
            continue
        assert Position(variant, fen).perft(3) == fsf_perft(fsf_name, fen, 3), (variant, fen)


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(FAIRY_VARIANTS))
def test_deep_perft_matches_fairy_stockfish(variant):
    fsf_name = FAIRY_VARIANTS[variant]
    pos = Position(variant)
    assert pos.perft(5) == fsf_perft(fsf_name, pos.fen(), 5)
    for fen in random_game_fens(fsf_name, 40, seed=99)[10::10]:
        if sf.legal_moves(fsf_name, fen, []):
            assert Position(variant, fen).perft(4) == fsf_perft(fsf_name, fen, 4), fen


@pytest.mark.parametrize("variant", sorted(FAIRY_VARIANTS))
def test_legal_moves_match_fairy_stockfish_along_random_games(variant):
    """Every position of many random games: same move list, same check and game end."""
    fsf_name = FAIRY_VARIANTS[variant]
    rng = random.Random(3)
    positions = 0
    for _ in range(15):
        pos = Position(variant)
        while positions < 3000:
            fen = pos.fen()
            theirs = sf.legal_moves(fsf_name, fen, [])
            assert sorted(m.uci() for m in pos.legal_moves) == sorted(theirs), fen
            assert pos.is_check() == sf.gives_check(fsf_name, fen, []), fen
            positions += 1
            if not theirs or pos.is_game_over() or pos.ply >= 150:
                break
            pos.push_uci(rng.choice(theirs))


def test_custom_variant_with_color_specific_castling_matches_fairy_stockfish():
    """Glimne's Microchess as a user would define it: castling, double step, en passant."""
    from minichess_envs import VARIANTS, Castling

    glimne = VARIANTS["microchess"].replace(
        name="microchess-glimne", title="MicrochessGlimne",
        start_fen="knbr/p3/4/3P/RBNK w Qk - 0 1", double_step=True, en_passant=True,
        castling=(Castling("d", "b", "a", "c", color="white"), Castling("a", "c", "d", "b", color="black")),
    )
    pos = Position(glimne)
    for depth in range(1, 5):
        assert pos.perft(depth) == fsf_perft("mc-microchess-glimne", glimne.start_fen, depth)
    rng = random.Random(4)
    castled = 0
    for _ in range(40):
        pos = Position(glimne)
        while not pos.is_game_over() and pos.ply < 80:
            theirs = sf.legal_moves("mc-microchess-glimne", pos.fen(), [])
            assert sorted(m.uci() for m in pos.legal_moves) == sorted(theirs), pos.fen()
            move = rng.choice(theirs)
            castled += move in ("d1b1", "a5c5")
            pos.push_uci(move)
    assert castled > 0, "the random games never castled: the test did not exercise castling"
