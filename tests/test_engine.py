"""Rules behaviour, outcomes and bad input."""

from __future__ import annotations

import copy
import pickle
import random

import pytest

from minichess_envs import (
    BLACK,
    VARIANTS,
    WHITE,
    Castling,
    FenError,
    IllegalMoveError,
    Move,
    Position,
    Termination,
    Variant,
    get_variant,
)

chess = pytest.importorskip("chess", reason="python-chess is the 8x8 oracle: pip install chess")


# -- outcomes ------------------------------------------------------------------


def test_checkmate_and_stalemate_on_3x3():
    # Black king a3, white queen b2 guarded by the king on c1... b2 covers a3's escapes
    mate = Position("3x3", "k2/1Q1/2K b - - 0 1")
    assert mate.is_check()
    assert mate.outcome() == (Termination.CHECKMATE, WHITE)
    assert mate.result() == "1-0"
    stalemate = Position("3x3", "k2/2Q/K2 b - - 0 1")
    assert not stalemate.is_check() and not stalemate.legal_moves
    assert stalemate.outcome() == (Termination.STALEMATE, None)
    assert stalemate.result() == "1/2-1/2"


def test_fools_mate_and_python_chess_outcomes_agree():
    pos = Position("chess")
    for uci in ("f2f3", "e7e5", "g2g4", "d8h4"):
        pos.push_uci(uci)
    assert pos.outcome() == (Termination.CHECKMATE, BLACK)
    rng = random.Random(1)
    for _ in range(40):
        board, pos = chess.Board(), Position("chess")
        while True:
            ours = pos.outcome()
            if board.is_checkmate():
                assert ours == (Termination.CHECKMATE, BLACK if board.turn == chess.WHITE else WHITE)
            elif board.is_stalemate():
                assert ours.termination == Termination.STALEMATE
            elif board.is_insufficient_material():
                assert ours.termination == Termination.INSUFFICIENT_MATERIAL
            elif board.is_repetition(3):
                assert ours.termination == Termination.REPETITION
            elif board.halfmove_clock >= 100:
                assert ours.termination == Termination.NO_PROGRESS
            else:
                assert ours is None, board.fen()
            if ours:
                break
            move = rng.choice(list(board.legal_moves)).uci()
            board.push_uci(move)
            pos.push_uci(move)


def test_threefold_repetition_counts_positions_not_moves():
    pos = Position("gardner")
    cycle = ["b1a3", "b5c3", "a3b1", "c3b5"]  # both knights out and back: the start again
    expected_repetitions = [1, 1, 1, 2, 2, 2, 2, 3]
    for uci, reps in zip(cycle * 2, expected_repetitions):
        assert pos.outcome() is None
        pos.push_uci(uci)
        assert pos.repetitions == reps
    assert pos.fen().split()[0] == VARIANTS["gardner"].start_fen.split()[0]
    assert pos.outcome() == (Termination.REPETITION, None)
    pos.pop()
    assert pos.outcome() is None


def test_fifty_move_rule_and_mate_on_the_hundredth_ply():
    pos = Position("chess", "7k/8/8/8/8/8/R7/K7 w - - 99 80")
    pos.push_uci("a2b2")
    assert pos.halfmove_clock == 100
    assert pos.outcome() == (Termination.NO_PROGRESS, None)
    # checkmate takes precedence over the no-progress draw
    pos = Position("chess", "7k/8/6K1/8/8/8/8/R7 w - - 99 80")
    pos.push_uci("a1a8")
    assert pos.outcome() == (Termination.CHECKMATE, WHITE)


def test_insufficient_material_matches_python_chess():
    rng = random.Random(5)
    material = ["", "N", "B", "BB", "NN", "R", "P", "BN", "Q"]
    for _ in range(400):
        board = chess.Board(None)
        squares = rng.sample(range(64), 8)
        board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
        i = 2
        for color, extra in ((chess.WHITE, rng.choice(material)), (chess.BLACK, rng.choice(material))):
            for letter in extra:
                board.set_piece_at(squares[i], chess.Piece.from_symbol(letter if color else letter.lower()))
                i += 1
        if not board.is_valid():
            continue
        pos = Position("chess", board.fen())
        ours = pos.outcome()
        ours_insufficient = ours is not None and ours.termination == Termination.INSUFFICIENT_MATERIAL
        if not board.is_checkmate() and not board.is_stalemate():
            assert ours_insufficient == board.is_insufficient_material(), board.fen()


def test_king_capture_variant_allows_moving_into_check_and_ends_on_capture():
    fen = "4k/5/5/5/K2r1 w - - 0 1"  # the white king may step into the rook's file
    kc = Position("gardner-kingcapture", fen)
    cm = Position("gardner", fen)
    assert "a1b1" in [m.uci() for m in kc.legal_moves]
    assert "a1b1" not in [m.uci() for m in cm.legal_moves]
    kc.push_uci("a1b2")
    kc.push_uci("e5d5")
    kc.push_uci("b2c2")  # walks next to nothing; now a king capture line
    kc = Position("gardner-kingcapture", "4k/5/5/5/Kr3 b - - 0 1")
    kc.push_uci("b1a1")
    assert kc.outcome() == (Termination.KING_CAPTURE, BLACK)
    assert kc.legal_moves == []


def test_side_not_to_move_in_check_is_legal_only_with_king_capture():
    fen = "4k/5/5/5/K3r w - - 0 1"
    with pytest.raises(FenError, match="not to move .white. is in check"):
        Position("gardner", fen.replace(" w ", " b "))
    pos = Position("gardner-kingcapture", fen.replace(" w ", " b "))
    pos.push_uci("e1a1")
    assert pos.outcome() == (Termination.KING_CAPTURE, BLACK)


def test_castling_and_en_passant_in_chess():
    pos = Position("chess", "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    assert {"e1g1", "e1c1"} <= {m.uci() for m in pos.legal_moves}
    assert pos.is_castling("e1g1")
    pos.push_uci("e1g1")
    assert pos.fen() == "r3k2r/8/8/8/8/8/8/R4RK1 b kq - 1 1"
    pos = Position("chess", "4k3/8/8/8/1p6/8/P7/4K3 w - - 0 1")
    pos.push_uci("a2a4")
    assert pos.fen() == "4k3/8/8/8/Pp6/8/8/4K3 b - a3 0 1"
    assert pos.is_capture("b4a3")
    pos.push_uci("b4a3")
    assert pos.piece_at("a4") is None and pos.piece_at("a3") == "p"


def test_move_codes_board_state_and_piece_values_agree_with_python_chess():
    from minichess_envs.engine import (
        FLAG_CASTLING, FLAG_DOUBLE_STEP, FLAG_EN_PASSANT, PIECE_VALUES, captured_type, captured_values, move_flags,
        move_from, move_promotion, move_to,
    )

    values = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
    assert PIECE_VALUES[:6] == (0, 1, 3, 3, 5, 9) and PIECE_VALUES[6] > max(PIECE_VALUES[:6])
    rng = random.Random(7)
    for _ in range(12):
        board, pos = chess.Board(), Position("chess")
        while not board.is_game_over() and board.ply() < 120:
            state = pos.board_state()
            assert state.pieces == pos.pieces and state.turn == pos.turn
            assert (state.turn == BLACK) == (board.turn == chess.BLACK)
            assert state.ep_square == (board.ep_square if board.has_legal_en_passant() else -1)
            assert (state.halfmove, state.fullmove) == (board.halfmove_clock, board.fullmove_number)
            for sq in range(64):
                piece = board.piece_at(sq)
                expected = 0 if piece is None else piece.piece_type | (8 if piece.color == chess.BLACK else 0)
                assert state.pieces[sq] == expected
            material = sum(v * (len(board.pieces(t, chess.WHITE)) - len(board.pieces(t, chess.BLACK)))
                           for t, v in values.items())
            assert pos.material_balance() == material
            codes = {}
            for code in pos.legal_move_codes():
                move = chess.Move(move_from(code), move_to(code), move_promotion(code) or None)
                codes[move] = code
            assert set(codes) == set(board.legal_moves)
            gains = captured_values(pos.pieces, list(codes.values()))
            for (move, code), gain in zip(codes.items(), gains):
                flags = move_flags(code)
                assert bool(flags & FLAG_CASTLING) == board.is_castling(move)
                assert bool(flags & FLAG_EN_PASSANT) == board.is_en_passant(move)
                double = board.piece_type_at(move.from_square) == chess.PAWN and abs(
                    move.to_square - move.from_square) == 16
                assert bool(flags & FLAG_DOUBLE_STEP) == double
                taken = chess.PAWN if board.is_en_passant(move) else (board.piece_type_at(move.to_square) or 0)
                assert captured_type(state.pieces, code) == (taken if board.is_capture(move) else 0)
                assert gain == (values[taken] if board.is_capture(move) else 0)
            move = rng.choice(list(codes))
            board.push(move)
            pos.push_code(codes[move])
            assert pos.board_state().last_move == codes[move]
        while pos.ply:  # pop_code undoes the moves, newest first
            code = pos.board_state().last_move
            assert pos.pop_code() == code and move_from(code) == board.pop().from_square


def test_promotion_needs_its_piece_and_underpromotions_exist():
    pos = Position("gardner", "k4/2P2/5/5/4K w - - 0 1")
    assert {m.uci() for m in pos.legal_moves} >= {"c4c5q", "c4c5r", "c4c5b", "c4c5n"}
    with pytest.raises(IllegalMoveError, match="promotion needs its piece"):
        pos.push_uci("c4c5")
    pos.push_uci("c4c5n")
    assert pos.piece_at("c5") == "N"
    los = Position("losalamos", "k5/2P3/6/6/6/5K w - - 0 1")
    assert {m.promotion for m in los.legal_moves if m.from_square == "c5"} == {"q", "r", "n"}


# -- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    "variant, fen, message",
    [
        ("gardner", "rnbqk/ppppp/5/PPPPP w - - 0 1", "has 5 ranks, the FEN has 4"),
        ("gardner", "rnbqk/ppppp/6/PPPPP/RNBQK w - - 0 1", r"rank 3 \('6'\) has 6 squares, expected 5"),
        ("gardner", "rnbqk/pppp/5/PPPPP/RNBQK w - - 0 1", r"rank 4 \('pppp'\) has 4 squares"),
        ("gardner", "rnbxk/ppppp/5/PPPPP/RNBQK w - - 0 1", "unknown piece 'x'"),
        ("losalamos", "rnbknr/pppppp/6/6/PPPPPP/RNQKNR w - - 0 1", "piece 'b' is not used in losalamos"),
        ("gardner", "rnbqr/ppppp/5/PPPPP/RNBQK w - - 0 1", "black has 0 kings"),
        ("gardner", "rnbqk/ppppp/5/PPPPP/KNBQK w - - 0 1", "white has 2 kings"),
        ("gardner", "P3k/5/5/5/4K w - - 0 1", "white pawn on a5, its promotion rank"),
        ("gardner", "4k/5/5/5/p3K w - - 0 1", "black pawn on a1, its promotion rank"),
        ("gardner", "4k/5/5/5/4K x - - 0 1", "side to move must be 'w' or 'b'"),
        ("gardner", "4k/5/5/5/4K w K - 0 1", "castling right 'K' does not exist"),
        ("chess", "4k3/8/8/8/8/8/8/4K3 w K - 0 1", "castling right 'K' needs the white king on e1 and rook on h1"),
        ("gardner", "4k/5/5/5/4K w - c3 0 1", "gardner has no en passant"),
        ("chess", "4k3/8/8/8/8/8/8/4K3 w - e9 0 1", "en-passant square 'e9' is not on the board"),
        ("chess", "4k3/8/8/8/8/8/8/4K3 w - e6 0 1", "does not follow a double step"),
        ("gardner", "4k/5/5/5/4K w - - x 1", "move counters must be integers"),
        ("gardner", "4k/5/5/5/4K w - - -1 1", "must not be negative"),
        ("gardner", "4k/4Q/5/5/4K w - - 0 1", r"side not to move \(black\) is in check"),
        ("gardner", "", "expected 1 to 6"),
    ],
)
def test_bad_fen_names_the_problem(variant, fen, message):
    with pytest.raises(FenError, match=message):
        Position(variant, fen)


def test_bad_fen_leaves_a_usable_position():
    pos = Position("gardner")
    pos.push_uci("a2a3")
    for bad in ("nonsense", "4k/4Q/5/5/4K w - - 0 1"):
        with pytest.raises(FenError):
            pos.set_fen(bad)
    assert pos.ply == 1 and pos.fen().startswith("rnbqk/ppppp/P4/1PPPP/RNBQK b")
    assert len(pos.legal_moves) > 0


def test_illegal_moves_and_actions_raise_value_errors():
    pos = Position("gardner")
    with pytest.raises(IllegalMoveError, match="illegal move a2a4"):
        pos.push_uci("a2a4")  # no double step in gardner
    with pytest.raises(ValueError, match="invalid UCI move"):
        pos.push_uci("a2")
    with pytest.raises(ValueError, match="outside"):
        pos.push_action(1225)
    with pytest.raises(ValueError, match="outside"):
        pos.push_action(-1)
    with pytest.raises(IllegalMoveError, match="not a legal move"):
        pos.push_action(0)
    with pytest.raises(TypeError):
        pos.push_action(1.5)
    with pytest.raises(TypeError):
        pos.push_action(True)
    with pytest.raises(IllegalMoveError):
        pos.action_to_move(0)
    with pytest.raises(IndexError):
        pos.pop()
    assert isinstance(IllegalMoveError("x"), ValueError)
    assert pos.ply == 0 and len(pos.legal_moves) == 7


def test_unknown_variant_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown variant 'nope'; known variants: 3x3, gardner"):
        Position("nope")


# -- API ---------------------------------------------------------------------------


def test_copy_pickle_and_history():
    pos = Position("gardner")
    for uci in ("a2a3", "e4e3", "b1c3"):
        pos.push_uci(uci)
    for clone in (pos.copy(), copy.deepcopy(pos), pickle.loads(pickle.dumps(pos))):
        assert clone == pos and clone is not pos
        assert clone.move_stack == [Move.from_uci(u) for u in ("a2a3", "e4e3", "b1c3")]
        clone.pop()
        assert clone != pos and pos.ply == 3
    bare = pos.copy(stack=False)
    assert bare.fen() == pos.fen() and bare.ply == 0


def test_custom_variant_from_a_spec():
    v = Variant(
        name="4x4-test", title="FourByFour", width=4, height=4,
        start_fen="rqkr/pppp/PPPP/RQKR w - - 0 1", pieces="KQRP", promotion="QR",
    )
    pos = Position(v)  # the pawns are locked; only diagonal captures exist
    assert {m.uci() for m in pos.legal_moves} == {"a2b3", "b2a3", "b2c3", "c2b3", "c2d3", "d2c3"}
    assert pos.rules.num_actions == 16 * (8 * 3 + 17)
    castle = Variant(
        name="castle6", title="Castle6", width=6, height=6, start_fen="2k2r/6/6/6/6/R1K2R w KQk - 0 1",
        pieces="KR", promotion="", castling=(Castling("c", "e", "f", "d"), Castling("c", "a", "a", "b")),
    )
    pos = Position(castle)
    assert {"c1e1", "c1a1"} <= {m.uci() for m in pos.legal_moves}
    assert "c1a1" not in {m.uci() for m in Position(castle, "r1k3/6/6/6/6/R1K2R w KQ - 0 1").legal_moves}, \
        "the king may not castle onto a square the a6 rook attacks"
    pos.push_uci("c1a1")
    assert pos.piece_at("a1") == "K" and pos.piece_at("b1") == "R"
    assert pos.fen() == "2k2r/6/6/6/6/KR3R b k - 1 1"
    with pytest.raises(ValueError, match="board 9x9 is outside"):
        Variant(name="big", title="Big", width=9, height=9, start_fen="k8/9/9/9/9/9/9/9/8K w - - 0 1")
    with pytest.raises(ValueError, match="promotion 'QB' uses pieces not in"):
        Variant(name="x", title="X", width=5, height=5, start_fen="k4/5/5/5/4K", pieces="KQRP", promotion="QB")
    assert get_variant(v) is v


def test_every_catalogue_row_is_playable():
    for name, v in VARIANTS.items():
        pos = Position(name)
        assert pos.fen() == v.start_fen
        assert pos.legal_moves and pos.outcome() is None
        assert v.num_actions == pos.rules.num_actions
        assert get_variant(name.upper()) is v
