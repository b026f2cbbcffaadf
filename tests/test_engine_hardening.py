"""No input crashes the engine; bad FENs get a FenError naming the problem; rules at the edges.

Each test reproduces a failure found by fuzzing and sanitizers, and checks the
fix against an independent reference (python-chess, Fairy-Stockfish) where one exists.
"""

from __future__ import annotations

import random
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import minichess_envs  # noqa: F401  (registers the environments)
from minichess_envs import VARIANTS, FenError, Position, _core
from minichess_envs.cli import main
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import KING, PAWN

chess = pytest.importorskip("chess", reason="python-chess is the 8x8 oracle: pip install chess")
from oracles import FAIRY_VARIANTS, sf  # noqa: E402

QUEENS_FEN = "2QQQQBk/QQ4Rb/Q5QQ/Q3Q2Q/Q6Q/Q6Q/Q6Q/KQQQQQQB w - - 0 1"  # 262 legal moves


def python_chess_moves(fen: str) -> list[str]:
    return sorted(m.uci() for m in chess.Board(fen).legal_moves)


# -- memory safety --------------------------------------------------------------------


def test_more_moves_than_any_game_reaches_are_listed_in_full():
    pos = Position("chess", QUEENS_FEN)
    assert sorted(m.uci() for m in pos.legal_moves) == python_chess_moves(QUEENS_FEN)
    assert len(pos.legal_moves) == 262 == pos.num_legal_moves() == int(pos.action_mask().sum())
    assert pos.perft(2) == sum(1 for _ in _python_chess_children(QUEENS_FEN))
    # the bound in the C core covers every board: at most n^2/4 (from, to) pairs plus promotions
    assert _core.MAX_MOVES >= 64 * 64 // 4


def _python_chess_children(fen):
    board = chess.Board(fen)
    for move in list(board.legal_moves):
        board.push(move)
        yield from board.legal_moves
        board.pop()


def test_many_moves_through_the_env_and_the_cli(capsys):
    env = gym.make("MiniChess-Chess-v0")
    obs, info = env.reset(seed=0, options={"fen": QUEENS_FEN})
    assert int(obs["action_mask"].sum()) == 262
    env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert main(["show", "chess", "--fen", QUEENS_FEN]) == 0
    assert "legal:    262:" in capsys.readouterr().out


def test_a_piece_type_the_variant_does_not_use_is_refused_by_the_core():
    rules = VARIANTS["3x3"].rules  # K, Q, R only: no bishop plane in the observation
    pos = _core.Position(rules)
    board = bytearray(9)
    board[0], board[8], board[4] = KING, KING | 8, 3  # a bishop
    with pytest.raises(ValueError, match="not a piece of this variant"):
        pos.set_board(bytes(board), 0, 0, -1, 0, 1)
    board[4] = KING  # the engine tracks one king square per colour
    with pytest.raises(ValueError, match="a second white king"):
        pos.set_board(bytes(board), 0, 0, -1, 0, 1)
    board[4] = 3
    # the same bytes reach the core from a tablebase file (pieces array, checksum in the same file)
    from minichess_envs.tablebase import Tablebase

    tb = Tablebase(VARIANTS["3x3"], "K", "k", pieces=np.frombuffer(bytes(board), np.uint8).reshape(1, 9),
                   turn=np.zeros(1, np.uint8), value=np.zeros(1, np.int8), dtm=np.full(1, -1, np.int16),
                   outcome=np.zeros(1, np.int8))
    with pytest.raises(ValueError, match="not a piece of this variant"):
        tb.position(0)
    with pytest.raises(ValueError, match="not a piece of this variant"):
        tb.row_move_values(0)


def test_move_number_at_its_limit_saturates_instead_of_overflowing():
    pos = Position("chess", "4k3/8/8/8/8/8/8/4K3 b - - 0 2147483647")
    pos.push_uci("e8e7")
    assert pos.fullmove_number == 2**31 - 1 and pos.legal_moves
    pos = Position("chess", "4k3/8/8/8/8/8/8/4K3 w - - 2147483647 9")
    pos.push_uci("e1e2")
    assert pos.halfmove_clock == 2**31 - 1


def test_history_too_long_for_the_observation_layout_is_a_clear_error():
    with pytest.raises(ValueError, match="history must be an integer >= 1 and at most 1024"):
        gym.make("MiniChess-Gardner-v0", history=2**30)
    pos = Position("gardner")
    with pytest.raises(ValueError, match="history must be >= 1 and at most 1024"):
        pos.observation_channels(2**30, True)
    with pytest.raises(ValueError, match="history must be >= 1 and at most 1024"):
        pos.write_observation(np.zeros((5, 5, 18), np.float32), 2**30, True)
    with pytest.raises(ValueError, match="at most 1024"):
        _core.Search(VARIANTS["gardner"].rules, 1, history=2**30)


def test_write_batch_refuses_a_perspective_out_of_range():
    v = VARIANTS["gardner"]
    positions = [Position(v), Position(v)]
    C = positions[0].observation_channels(1, True)
    obs = np.zeros((2, 5, 5, C), np.float32)
    masks = np.zeros((2, v.num_actions), np.int8)
    for bad in (2, 100, -2, -128):
        with pytest.raises(ValueError, match=f"perspective {bad} of game 1"):
            _core.write_batch(positions, obs, masks, np.array([0, bad], np.int8), 1, True)
    _core.write_batch(positions, obs, masks, np.array([-1, 1], np.int8), 1, True)
    assert masks.sum() == 2 * 7


# -- FEN counters and errors ------------------------------------------------------------


@pytest.mark.parametrize("half", [0, 99, 32767, 32768, 65535, 65536, 65636, 2**31 - 1])
def test_halfmove_clock_round_trips_exactly(half):
    fen = f"4k3/8/8/8/8/8/8/R3K3 w - - {half} 7"
    pos = Position("chess", fen)
    assert pos.halfmove_clock == half and pos.fen() == fen
    assert Position("chess", pos.fen()).fen() == fen
    clock = pos.observation()[..., ObservationEncoding("chess").channel_names().index("no-progress clock")]
    assert 0.0 <= clock.min() <= clock.max() <= 1.0
    # 65636 was read back as 100 and 32768 as negative
    assert pos.outcome() is None if half < 100 else pos.outcome().termination.name == "NO_PROGRESS"


@pytest.mark.parametrize(
    "counters, message",
    [
        ("2147483648 1", "halfmove clock 2147483648 is outside 0..2147483647"),
        ("0 2147483648", "fullmove number 2147483648 is outside 1..2147483647"),
        ("0 99999999999999999999999", "fullmove number 99999999999999999999999 is outside"),
        ("0 0", "fullmove number 0 is outside 1..2147483647"),
        ("\u0663 1", "halfmove clock '\u0663': move counters must be integers in digits 0-9"),  # Arabic-Indic 3
        ("0 \u00b2", "fullmove number '\u00b2': move counters must be integers"),  # superscript 2
        ("+5 1", "move counters must be integers"),
        ("-3 1", "move counters must not be negative"),
    ],
)
def test_bad_counters_raise_fen_errors_that_name_them(counters, message):
    with pytest.raises(FenError, match=message):
        Position("chess", f"4k3/8/8/8/8/8/8/4K3 w - - {counters}")


def test_non_ascii_characters_in_the_placement_are_fen_errors():
    for fen in ("4k3/8/8/8/8/8/8/\u00b24K2 w - - 0 1", "4k3/8/8/8/8/8/8/4\u212a3 w - - 0 1", "4k3/8/8/8/8/8/8/\u06614K2"):
        with pytest.raises(FenError, match="unknown piece"):
            Position("chess", fen)


@pytest.mark.parametrize("digits", [3, 50, 5000])
def test_a_long_run_of_digits_is_a_fen_error_naming_the_fen(digits):
    # issue 34: a 5,000-digit run raised int()'s plain ValueError (over Python's 4,300-digit limit)
    fen = "4k3/8/8/" + "1" * digits + "/8/8/8/4K3 w - - 0 1"
    with pytest.raises(ValueError):
        chess.Board(fen)  # the oracle refuses it too
    with pytest.raises(FenError, match=f"rank 5 has a run of {digits} digits") as info:
        Position("chess", fen)
    assert "bad FEN '4k3/8/8/111" in str(info.value)


@pytest.mark.parametrize("start_fen, problem", [
    ("", "start_fen must be a non-empty FEN string"),
    ("   ", "start_fen must be a non-empty FEN string"),
    (None, "start_fen must be a non-empty FEN string"),
    ("rnbqk/ppppp/5/PPPPP w - - 0 1", "gardner has 5 ranks, the FEN has 4"),
    ("4k/5/5/5/K3R w - - 0 1", "is in check"),  # White to move would take the king
])
def test_a_start_fen_the_engine_refuses_is_refused_when_the_variant_is_made(start_fen, problem):
    # issue 34: Variant(start_fen="") was accepted, and Position(variant, fen) then raised IndexError
    with pytest.raises(ValueError, match=problem):
        VARIANTS["gardner"].replace(start_fen=start_fen)


def test_every_catalogue_start_fen_passes_the_check_the_catalogue_skips():
    for variant in VARIANTS.values():  # a copy is checked in full (the catalogue is built before the parser exists)
        copy = variant.replace()
        assert Position(copy).fen() == Position(variant, variant.start_fen).fen()


def test_mutated_fens_raise_only_fen_errors_and_accepted_ones_round_trip():
    rng = random.Random(10)
    alphabet = "pnbrqkPNBRQK0123456789/ -wbKQkqace" + "\u0663\u00b2\u212a\u00e9"
    sources = [(name, v.start_fen) for name, v in VARIANTS.items()]
    sources += [("chess", QUEENS_FEN), ("chess", "4k1n1/2p5/8/KP5r/8/8/8/6N1 b - - 0 1")]
    accepted = 0
    for _ in range(3000):
        variant, fen = rng.choice(sources)
        fen = list(fen)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(fen) + 1)
            op = rng.randrange(3)
            if op == 0:
                fen.insert(i, rng.choice(alphabet))
            elif op == 1 and i < len(fen):
                del fen[i]
            elif i < len(fen):
                fen[i] = rng.choice(alphabet)
        fen = "".join(fen)
        try:
            pos = Position(variant, fen)
        except FenError:
            continue
        accepted += 1
        again = Position(variant, pos.fen())
        assert again.fen() == pos.fen() and again.zobrist_hash == pos.zobrist_hash
        pos.legal_moves, pos.observation(), pos.outcome()
    assert accepted > 50


def test_cli_never_prints_a_traceback_for_bad_input():
    cases = [
        ["show", "chess", "--fen", "4k3/8/8/8/8/8/8/4K3 w - - 2147483648 1"],
        ["show", "chess", "--fen", "4k3/8/8/8/8/8/8/4K3 w - - \u0663 1"],
        ["perft", "chess", "99999999999999999999999"],
        ["perft", "chess", "x"],
        ["show", "3x3", "--fen", "kqq/3/KQR w - - 0 1"],
    ]
    for args in cases:
        out = subprocess.run([sys.executable, "-m", "minichess_envs.cli", *args], capture_output=True, text=True)
        assert out.returncode == 2 and "Traceback" not in out.stderr and "error:" in out.stderr, (args, out.stderr)


def test_cli_stops_quietly_when_the_reader_closes_the_pipe():
    cmd = f"{sys.executable} -m minichess_envs.cli demo | head -1; exit ${{PIPESTATUS[0]}}"
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert out.stdout.startswith("== ") and out.stdout.count("\n") == 1
    assert out.stderr == "" and out.returncode == 0


# -- rules at the edges -------------------------------------------------------------------


def test_an_en_passant_capture_that_is_illegal_does_not_count_for_repetition():
    start = "4k1n1/2p5/8/KP5r/8/8/8/6N1 b - - 0 1"  # b5xc6 e.p. would expose the a5 king to the h5 rook
    moves = ["c7c5"] + ["g1f3", "g8f6", "f3g1", "f6g8"] * 2
    pos, board = Position("chess", start), chess.Board(start)
    for ply, uci in enumerate(moves, 1):
        pos.push_uci(uci)
        board.push_uci(uci)
        assert pos.fen() == board.fen()  # no e.p. square: no legal capture onto c6
        assert pos.is_game_over() == board.is_repetition(3), ply
    assert pos.ply == 9 and pos.outcome().termination.name == "REPETITION"


def test_en_passant_square_is_written_only_when_a_legal_capture_exists():
    legal = "4k3/8/8/1Pp5/8/8/8/4K3 w - c6 0 2"
    assert Position("chess", legal).fen() == chess.Board(legal).fen() == legal
    pinned = "4k3/8/8/KPp4r/8/8/8/8 w - c6 0 2"
    assert Position("chess", pinned).fen() == chess.Board(pinned).fen() == "4k3/8/8/KPp4r/8/8/8/8 w - - 0 2"
    assert "b5c6" not in {m.uci() for m in Position("chess", legal.replace("c6", "-")).legal_moves}
    rng = random.Random(7)
    for game in range(30):  # python-chess writes the field by the same rule
        pos, board = Position("chess"), chess.Board()
        while not board.is_game_over() and board.ply() < 80:
            move = rng.choice(list(board.legal_moves))
            board.push(move)
            pos.push_uci(move.uci())
            assert pos.fen() == board.fen()


@pytest.mark.parametrize(
    "variant, fen, message",
    [
        ("3x3", "kqq/3/KQR w - - 0 1", "black has 2 of piece Q, more than the 1 of the start position "
                                       r"\(3x3 has no promotion, so no piece is ever created\)"),
        ("3x3", "k2/3/KRR w - - 0 1", "white has 2 of piece R"),
        ("chess", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPP1/RNBQKBNP w - - 0 1",
         r"white pawn on h1, its own back rank \(pawns never move backwards\)"),
        ("chess", "rnbqkbnp/ppppppp1/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1", "black pawn on h8, its own back rank"),
        ("gardner", "4k/5/5/5/P3K w - - 0 1", "white pawn on a1, its own back rank"),
        ("gardner", "p3k/5/5/5/4K w - - 0 1", "black pawn on a5, its own back rank"),
        ("chess", "P3k3/8/8/8/8/8/8/4K3 w - - 0 1", r"white pawn on a8, its promotion rank \(promotion is compulsory\)"),
    ],
)
def test_positions_the_variant_rules_make_impossible_are_refused(variant, fen, message):
    with pytest.raises(FenError, match=message):
        Position(variant, fen)


def test_promoted_material_is_accepted_where_promotion_exists():
    assert len(Position("gardner", "qqqqk/qqqqq/5/QQQQQ/QQQQK w - - 0 1").legal_moves) == len(
        sf.legal_moves("gardner", "qqqqk/qqqqq/5/QQQQQ/QQQQK w - - 0 1", []))
    Position("3x3", "k2/3/KQR w - - 0 1")  # fewer pieces than at the start is always possible


# -- crafted crowded positions against the oracles -------------------------------------------


def crowded_positions(variant: str, seed: int, count: int):
    """Random legal positions with many pieces: kings placed, then every other square filled with
    probability ``density`` by a random piece of the variant, respecting the variant's rules."""
    v = VARIANTS[variant]
    rng = random.Random(seed)
    W, H = v.width, v.height
    letters = [p for p in v.pieces.upper() if p != "K"]
    capped = not ("P" in v.pieces.upper() and v.promotion)
    start = {ch: v.start_fen.split()[0].count(ch) for ch in "PNBRQKpnbrqk"}
    made = 0
    while made < count:
        density = rng.choice([0.3, 0.6, 0.9, 1.0])
        turn = rng.choice("wb")
        # half the boards crowd the mover's side with long-range pieces, for the most moves
        sliders = rng.random() < 0.5 and [p for p in letters if p in "QRB"]
        board = [[None] * W for _ in range(H)]
        squares = [(r, f) for r in range(H) for f in range(W)]
        rng.shuffle(squares)
        (r1, f1), (r2, f2) = squares[:2]
        board[r1][f1], board[r2][f2] = "K", "k"
        used = {"K": 1, "k": 1}
        for r, f in squares[2:]:
            if rng.random() > density:
                continue
            if sliders:
                letter = rng.choice(sliders)
                mine = rng.random() < (0.8 if density < 0.9 else 0.5)
                letter = letter if mine == (turn == "w") else letter.lower()
            else:
                letter = rng.choice(letters)
                letter = letter if rng.random() < 0.5 else letter.lower()
            if letter in "Pp" and r in (0, H - 1):
                continue
            if capped and used.get(letter, 0) >= start[letter]:
                continue
            used[letter] = used.get(letter, 0) + 1
            board[r][f] = letter
        rows = []
        for r in range(H - 1, -1, -1):
            row, empty = "", 0
            for f in range(W):
                if board[r][f] is None:
                    empty += 1
                else:
                    row += (str(empty) if empty else "") + board[r][f]
                    empty = 0
            rows.append(row + (str(empty) if empty else ""))
        fen = "/".join(rows) + f" {turn} - - 0 1"
        try:
            pos = Position(v, fen)
        except FenError as exc:
            assert "in check" in str(exc), exc  # the generator obeys every other rule
            continue
        made += 1
        yield fen, pos


@pytest.mark.parametrize("seed", range(3))
def test_crowded_chess_positions_match_python_chess(seed):
    most = 0
    for fen, pos in crowded_positions("chess", seed, 60):
        ours = sorted(m.uci() for m in pos.legal_moves)
        assert ours == python_chess_moves(fen), fen
        assert int(pos.action_mask().sum()) == len(ours)
        most = max(most, len(ours))
    assert most > 60


@pytest.mark.parametrize("variant", sorted(FAIRY_VARIANTS))
@pytest.mark.parametrize("seed", range(2))
def test_crowded_positions_match_fairy_stockfish(variant, seed):
    fsf = FAIRY_VARIANTS[variant]
    for fen, pos in crowded_positions(variant, seed, 60):
        ours = sorted(m.uci() for m in pos.legal_moves)
        assert ours == sorted(sf.legal_moves(fsf, fen, [])), fen
        assert int(pos.action_mask().sum()) == len(ours)
        pos.observation(history=2)
