"""Invariants over random legal play in every variant (hypothesis)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minichess_envs import VARIANTS, Position
from minichess_envs.encoding import ActionEncoding

ALL = sorted(VARIANTS)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_positions(variant: str, seed: int, max_plies: int = 120):
    """Yield the positions of one random game (the same object, advanced)."""
    rng = random.Random(seed)
    pos = Position(variant)
    yield pos
    while not pos.is_game_over() and pos.ply < max_plies:
        pos.push_code(rng.choice(pos.legal_move_codes()))
        yield pos


@pytest.mark.parametrize("variant", ALL)
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_no_legal_move_leaves_own_king_attacked(variant, seed):
    if VARIANTS[variant].win_rule != "checkmate":
        pytest.skip("with king capture, moving into check is legal")
    for pos in random_positions(variant, seed):
        mover = pos.turn
        for code in pos.legal_move_codes():
            pos.push_code(code)
            king = next(sq for sq, p in pos.piece_map().items() if p == "Kk"[mover])
            assert not pos.is_attacked(king, mover ^ 1), (pos.fen(), code)
            pos.pop()


@pytest.mark.parametrize("variant", ALL)
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_fen_round_trips(variant, seed):
    for pos in random_positions(variant, seed):
        fen = pos.fen()
        again = Position(variant, fen)
        assert again.fen() == fen
        assert again.zobrist_hash == pos.zobrist_hash  # incremental hash == hash from scratch
        assert sorted(again.legal_move_codes()) == sorted(pos.legal_move_codes())


@pytest.mark.parametrize("variant", ALL)
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_actions_round_trip_and_mask_equals_legal_moves(variant, seed):
    enc = ActionEncoding(variant)
    for pos in random_positions(variant, seed):
        moves = pos.legal_moves
        actions = [pos.move_to_action(m) for m in moves]
        assert len(set(actions)) == len(actions), "two legal moves share an action"
        assert all(0 <= a < enc.num_actions for a in actions)
        assert [pos.action_to_move(a) for a in actions] == moves
        mask = pos.action_mask()
        assert mask.shape == (enc.num_actions,) and mask.dtype == np.int8
        assert set(np.flatnonzero(mask)) == set(actions)


@pytest.mark.parametrize("variant", [v for v in ALL if not VARIANTS[v].castling])
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_mirrored_positions_have_mirrored_moves(variant, seed):
    v = VARIANTS[variant]
    enc = ActionEncoding(v)
    files = "abcdefgh"[: v.width]

    def mirror_square(name):
        return files[v.width - 1 - files.index(name[0])] + name[1:]

    for pos in random_positions(variant, seed):
        mirrored = pos.mirror()
        expected = sorted(
            mirror_square(m.from_square) + mirror_square(m.to_square) + (m.promotion or "") for m in pos.legal_moves
        )
        assert sorted(m.uci() for m in mirrored.legal_moves) == expected
        assert mirrored.outcome_code() == pos.outcome_code() or pos.repetitions > 1
        # the action permutation maps the mask of a position onto its mirror's
        assert np.array_equal(pos.action_mask()[enc.mirror_permutation.argsort()], mirrored.action_mask())


@pytest.mark.parametrize("variant", ALL)
def test_push_pop_restores_everything(variant):
    rng = random.Random(11)
    for pos in random_positions(variant, 5, max_plies=60):
        before = (pos.fen(), pos.zobrist_hash, pos.repetitions, pos.outcome_code())
        code = rng.choice(pos.legal_move_codes()) if not pos.is_game_over() else None
        if code is None:
            break
        pos.push_code(code)
        assert pos.pop() is not None
        assert (pos.fen(), pos.zobrist_hash, pos.repetitions, pos.outcome_code()) == before


def test_random_walk_positions_are_live_walks_of_the_asked_lengths():
    from minichess_envs.positions import random_walk_positions

    positions = random_walk_positions("gardner", 50, np.random.default_rng(1), max_plies=9, min_plies=3)
    assert len(positions) == 50
    for position in positions:
        assert not position.is_game_over() and 3 <= position.ply <= 8
        replay = Position("gardner")  # every walk is legal from the start
        for move in position.move_stack:
            assert move in replay.legal_moves
            replay.push(move)
        assert replay.fen() == position.fen()
    again = random_walk_positions("gardner", 50, np.random.default_rng(1), max_plies=9, min_plies=3)
    assert [p.fen() for p in again] == [p.fen() for p in positions]
