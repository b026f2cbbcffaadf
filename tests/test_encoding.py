"""The action and observation encodings."""

from __future__ import annotations

import random

import numpy as np
import pytest

from minichess_envs import VARIANTS, Position
from minichess_envs.encoding import ActionEncoding, ObservationEncoding


def test_action_space_sizes():
    assert ActionEncoding("gardner").num_actions == 1225  # as pgx gardner_chess
    assert ActionEncoding("chess").num_actions == 4672  # as PettingZoo chess_v6 / AlphaZero 8x8x73
    assert ActionEncoding("3x3").num_actions == 9 * 33
    assert ActionEncoding("losalamos").num_actions == 36 * 57
    for v in VARIANTS.values():
        enc = ActionEncoding(v)
        assert enc.num_actions == v.num_actions == enc.width * enc.height * (8 * enc.max_distance + 17)


def test_chess_actions_equal_pettingzoo_chess_v6():
    """Index for index, PettingZoo's own mapping is the reference for 8x8."""
    chess = pytest.importorskip("chess")
    chess_utils = pytest.importorskip("pettingzoo.classic.chess.chess_utils")
    rng = random.Random(2)
    for _ in range(40):
        board, pos = chess.Board(), Position("chess")
        while not board.is_game_over() and board.ply() < 200:
            assert sorted(pos.legal_actions()) == sorted(chess_utils.legal_moves(board)), board.fen()
            move = rng.choice(list(board.legal_moves))
            board.push(move)
            pos.push_uci(move.uci())


def test_plane_meanings():
    enc = ActionEncoding("gardner")
    # from a1 (mover's view), one step north, two steps east, a knight jump, an underpromotion
    assert enc.decode(enc.action(0, 0, 4)) == (0, 0, 0, 1, None)
    assert enc.plane_name(4) == "N x1"
    assert enc.decode(enc.action(0, 0, 8 + 6)) == (0, 0, 2, 0, None)
    assert enc.plane_name(32 + 5) == "knight (1,2)"
    assert enc.decode(enc.action(1, 3, 32 + 8 + 3 * 2 + 2)) == (1, 3, 2, 4, "r")
    assert enc.plane_name(32 + 8 + 0) == "=n capture left"


def test_black_sees_the_board_from_its_side():
    """The same move shape has the same action for either color after a rank flip."""
    white = Position("gardner")
    black = Position("gardner", "rnbqk/ppppp/5/PPPPP/RNBQK b - - 0 1")
    assert sorted(white.legal_actions()) == sorted(black.legal_actions())
    assert white.move_to_action("a2a3") == black.move_to_action("a4a3")
    assert np.array_equal(white.observation()[..., :14], black.observation()[..., :14])  # pieces, repetitions
    assert not white.observation()[..., 14].any() and black.observation()[..., 14].all()  # color plane


def reference_observation(pos: Position, history: int, last_move: bool) -> np.ndarray:
    """The documented layout, rebuilt from FEN-level facts in plain Python."""
    v = pos.variant
    W, H = v.width, v.height
    types = [t for t in "PNBRQK" if t in v.pieces.upper()]
    enc = ObservationEncoding(v, history, last_move)
    obs = np.zeros(enc.shape, np.float32)
    mover = pos.turn

    def cell(square):  # (row, col) seen from the mover
        file, rank = "abcdefgh".index(square[0]), int(square[1:]) - 1
        return (rank if mover == 0 else H - 1 - rank), file

    stack = [pos.copy()]
    while len(stack) < history and stack[-1].ply > 0:
        prev = stack[-1].copy()
        prev.pop()
        stack.append(prev)
    per_step = 2 * len(types) + 2
    for t, p in enumerate(stack):
        for square, letter in p.piece_map().items():
            own = letter.isupper() == (mover == 0)
            channel = t * per_step + (0 if own else len(types)) + types.index(letter.upper())
            obs[cell(square) + (channel,)] = 1
        if p.repetitions >= 2:
            obs[..., t * per_step + 2 * len(types)] = 1
        if p.repetitions >= 3:
            obs[..., t * per_step + 2 * len(types) + 1] = 1
    c = history * per_step
    obs[..., c] = float(mover == 1)
    obs[..., c + 1] = min(pos.halfmove_clock / v.no_progress_plies, 1.0) if v.no_progress_plies else 0.0
    c += 2
    if v.castling:
        rights = pos.fen().split()[2]
        own, opp = ("KQ", "kq") if mover == 0 else ("kq", "KQ")
        for i, letter in enumerate(own + opp):
            if letter in rights:
                obs[..., c + i] = 1
        c += 4
    if v.en_passant:
        ep = pos.fen().split()[3]
        if ep != "-":
            obs[cell(ep) + (c,)] = 1
        c += 1
    if last_move and pos.ply:
        move = pos.peek()
        obs[cell(move.from_square) + (c,)] = 1
        obs[cell(move.to_square) + (c + 1,)] = 1
    return obs


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("history, last_move", [(1, True), (3, False), (8, True)])
def test_observation_matches_the_documented_layout(variant, history, last_move):
    enc = ObservationEncoding(variant, history, last_move)
    rng = random.Random(len(variant) + history)
    pos = Position(variant)
    for _ in range(40):
        obs = enc.encode(pos)
        assert obs.shape == enc.shape and obs.dtype == np.float32
        assert pos.observation_channels(history, last_move) == enc.num_channels
        np.testing.assert_array_equal(obs, reference_observation(pos, history, last_move), err_msg=pos.fen())
        if pos.is_game_over():
            break
        pos.push_code(rng.choice(pos.legal_move_codes()))


def test_repetition_planes_light_up():
    pos = Position("gardner")
    for uci in ["b1a3", "b5c3", "a3b1", "c3b5"]:
        pos.push_uci(uci)
    obs = ObservationEncoding("gardner").encode(pos)
    assert obs[..., 12].all() and not obs[..., 13].any()  # occurred twice, not three times


def test_observation_buffer_errors_are_clear():
    pos = Position("gardner")
    with pytest.raises(ValueError, match="observation buffer must hold"):
        pos.write_observation(np.zeros((5, 5, 3), np.float32), 1, True)
    with pytest.raises(ValueError, match="float32"):
        pos.write_observation(np.zeros((5, 5, 18), np.int32), 1, True)
    with pytest.raises(ValueError, match="history must be >= 1"):
        pos.write_observation(np.zeros((5, 5, 18), np.float32), 0, True)
    with pytest.raises(ValueError, match="history must be an integer >= 1"):
        ObservationEncoding("gardner", history=0)
