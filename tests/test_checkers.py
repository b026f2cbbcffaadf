"""Checkers (English draughts) against outside truths: OpenSpiel's ``checkers`` move by move, published perft
counts, hand-built positions of each rule; and its judges."""

import os
import subprocess
import sys

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="open-spiel is checkers' rules oracle: pip install open-spiel")

from agents.arena import play_game  # noqa: E402
from agents.games.checkers import (WIN, Checkers, CheckersAlphaBeta, alpha_beta_values,  # noqa: E402
                                   evaluate, from_openspiel, to_openspiel)
from agents.players.openspiel_mcts import OpenSpielMCTS  # noqa: E402
from agents.players.random_agent import RandomAgent  # noqa: E402


def diagram(square: int) -> tuple[int, int]:
    """Book square 1..32 -> (row, column) of our diagram: four dark squares a row, 1 at row 0, column 1."""
    row, i = divmod(square - 1, 4)
    return row, 2 * i + 1 - row % 2


# Our directions as (row, column) steps in our diagram: 0 up-left, 1 up-right, 2 down-left, 3 down-right.
OUR_STEPS = ((-1, -1), (-1, 1), (1, -1), (1, 1))
# OpenSpiel's (checkers.cc kDirRowOffsets, kDirColumnOffsets) in its own frame, our diagram turned 180 degrees.
THEIR_STEPS = ((-1, -1), (-1, 1), (1, 1), (1, -1))


def openspiel_to_ours() -> dict[int, int]:
    """OpenSpiel's action (row, column, direction, jump: mixed radix 8, 8, 4, 2) -> ours (4 * square + direction)
    for every action that starts on a dark square."""
    square_at = {diagram(s): s for s in range(1, 33)}
    out = {}
    for action in range(512):
        rest, jump = divmod(action, 2)
        rest, direction = divmod(rest, 4)
        row, column = divmod(rest, 8)
        ours = square_at.get((7 - row, 7 - column))
        if ours is not None:
            dr, dc = THEIR_STEPS[direction]
            out[action] = 4 * (ours - 1) + OUR_STEPS.index((-dr, -dc))
    return out


TO_OURS = openspiel_to_ours()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def square_name(square: int) -> str:
    """A book square as OpenSpiel's action strings name it (its columns a..h, rows 8 at the top down to 1)."""
    row, column = diagram(square)
    return f"{'abcdefgh'[7 - column]}{row + 1}"


def openspiel_board(state) -> str:
    """OpenSpiel's board in our repr's rows (squares 1-4 / 5-8 / ...; b, B first player, w, W second)."""
    lines = str(state).splitlines()[:8]  # "8.+.+.+.+" ... "1o.o.o.o.": a rank label, then columns a..h
    chars = {".": ".", "o": "b", "8": "B", "+": "w", "*": "W"}
    cells = []
    for square in range(1, 33):
        row, column = diagram(square)
        cells.append(chars[lines[7 - row][1 + 7 - column]])
    return "/".join("".join(cells[4 * r:4 * r + 4]) for r in range(8))


def lockstep(games: int, seed: int, compare_boards: int = 100) -> int:
    """``games`` seeded random games in lockstep with OpenSpiel: the same legal actions, player to move, end and
    winner at every step (the boards and action names too, in the first ``compare_boards`` games); the plies."""
    rng = np.random.default_rng(seed)
    oracle = pyspiel.load_game("checkers")
    plies = 0
    for g in range(games):
        ours, theirs = Checkers(), oracle.new_initial_state()
        while True:
            assert ours.is_over() == theirs.is_terminal(), (g, ours)
            if g < compare_boards:
                assert repr(ours).split()[0] == f"Checkers({openspiel_board(theirs)}", (g, ours, str(theirs))
            if ours.is_over():
                break
            assert ours.to_play() == theirs.current_player(), (g, ours)
            legal, by_ours = ours.legal_actions(), {TO_OURS[a]: a for a in theirs.legal_actions()}
            assert legal == sorted(by_ours), (g, ours, str(theirs))
            if g < compare_boards:
                theirs_named = {theirs.action_to_string(a) for a in by_ours.values()}
                ours_named = set()
                for a in legal:
                    start, end = ours.action_name(a).replace("x", "-").split("-")
                    ours_named.add(square_name(int(start)) + square_name(int(end)))
                assert ours_named == theirs_named, (g, ours)
            action = legal[rng.integers(len(legal))]
            ours.step(action)
            theirs.apply_action(by_ours[action])
            plies += 1
        returns = theirs.returns()
        assert ours.winner() == (None if returns[0] == returns[1] else int(returns[1] > returns[0])), (g, ours)
        assert ours.legal_actions() == [] and not ours.legal_mask().any()
    return plies


def test_random_games_match_openspiel_move_by_move():
    plies = lockstep(1_000, seed=0)
    assert plies > 1_000 * 30  # games of some length: the rules were exercised


@pytest.mark.slow
def test_ten_thousand_random_games_match_openspiel():
    assert lockstep(10_000, seed=1, compare_boards=1_000) > 10_000 * 30


def test_openspiel_action_maps_of_the_module_agree_with_the_tests():
    rng = np.random.default_rng(2)
    oracle = pyspiel.load_game("checkers")
    for _ in range(20):
        ours, theirs = Checkers(), oracle.new_initial_state()
        while not ours.is_over():
            assert sorted(to_openspiel(ours, a) for a in ours.legal_actions()) == theirs.legal_actions()
            assert all(from_openspiel(a) == TO_OURS[a] for a in theirs.legal_actions())
            action = int(rng.choice(ours.legal_actions()))
            theirs.apply_action(to_openspiel(ours, action))
            ours.step(action)


# -- perft -------------------------------------------------------------------------

def perft(game: Checkers, depth: int) -> int:
    """Positions ``depth`` moves on, a whole multi-jump one move."""
    if depth == 0:
        return 1
    total = 0
    for action in game.legal_actions():
        child = game.copy()
        child.step(action)
        same_move = child.to_play() == game.to_play() and not child.is_over()
        total += perft(child, depth if same_move else depth - 1)
    return total


def openspiel_perft(state, depth: int) -> int:
    if depth == 0:
        return 1
    total = 0
    for action in state.legal_actions():
        child = state.child(action)
        same_move = not child.is_terminal() and child.current_player() == state.current_player()
        total += openspiel_perft(child, depth if same_move else depth - 1)
    return total


# Aart Bik, "perft for 8x8 checkers", TalkChess forum, 8 May 2009 (http://www.talkchess.com/forum3/viewtopic.php?
# t=27814): perft(1..8) from the start position, a multi-jump counted as one move.
PUBLISHED_PERFT = [7, 49, 302, 1469, 7361, 36768, 179740, 845931]


def test_perft_from_the_start_matches_the_published_counts_and_openspiel():
    assert [perft(Checkers(), d) for d in range(1, 7)] == PUBLISHED_PERFT[:6]
    state = pyspiel.load_game("checkers").new_initial_state()
    assert [openspiel_perft(state, d) for d in range(1, 6)] == PUBLISHED_PERFT[:5]


@pytest.mark.slow
def test_deeper_perft_matches_the_published_counts():
    assert [perft(Checkers(), d) for d in (7, 8)] == PUBLISHED_PERFT[6:8]


# -- hand-built positions ------------------------------------------------------------

def names(game: Checkers) -> list[str]:
    return [game.action_name(a) for a in game.legal_actions()]


def play(game: Checkers, *moves: str) -> Checkers:
    """``game`` after the moves named (``"11-15"``, ``"11x18"``), each checked legal."""
    for move in moves:
        by_name = {game.action_name(a): a for a in game.legal_actions()}
        assert move in by_name, (move, game, sorted(by_name))
        game.step(by_name[move])
    return game


def test_start_position_encoding_and_names():
    game = Checkers()
    assert game.to_play() == 0 and game.plies == 0 and not game.is_over()
    assert names(game) == ["9-13", "9-14", "10-14", "10-15", "11-15", "11-16", "12-16"]
    # action = 4 * (square - 1) + direction: 11-15 leaves square 11 down-left (2), 11-16 down-right (3)
    assert game.legal_actions()[4:6] == [4 * 10 + 2, 4 * 10 + 3]
    play(game, "11-15")
    assert game.to_play() == 1 and game.plies == 1
    assert names(game) == ["21-17", "22-17", "22-18", "23-18", "23-19", "24-19", "24-20"]
    assert repr(game) == "Checkers(bbbb/bbbb/bb.b/..b./..../wwww/wwww/wwww w quiet=1)"


def test_a_capture_is_compulsory():
    game = Checkers.from_squares(first_men=[1, 11], second_men=[15, 30])
    assert names(game) == ["11x18"]  # 1-5 and 1-6 are steps, and so not legal
    play(game, "11x18")
    assert game.to_play() == 1 and game.squares()["second_men"] == [30]
    assert names(game) == ["30-25", "30-26"]  # the man on 18 is behind 30's men: nothing to take


def test_a_multi_jump_goes_on_with_the_same_piece_along_either_branch():
    start = Checkers.from_squares(first_men=[1, 3], second_men=[6, 8, 14, 15])
    assert names(start) == ["1x10", "3x12"]
    for branch, taken in (("10x17", 14), ("10x19", 15)):
        game = play(start.copy(), "1x10")
        assert game.to_play() == 0 and game.plies == 1
        assert names(game) == ["10x17", "10x19"]  # the jumper alone, though 3x12 would take too
        assert game.observation()[5, 4, 4] == 1 and game.observation()[..., 4].sum() == 1  # 10, turned
        play(game, branch)
        assert game.to_play() == 1
        assert game.squares()["second_men"] == sorted({8, 14, 15} - {taken})


def test_a_man_crowned_by_a_jump_ends_the_move_a_king_jumps_on():
    man = Checkers.from_squares(first_men=[22], second_men=[26, 27, 10])
    play(man, "22x31")
    assert man.to_play() == 1 and man.squares()["first_kings"] == [31]  # 31x24 would take 27: not this move
    king = Checkers.from_squares(first_kings=[22], second_men=[26, 27, 10])
    play(king, "22x31")
    assert king.to_play() == 0 and names(king) == ["31x24"]
    play(king, "31x24")
    assert king.to_play() == 1 and king.squares() == {"first_men": [], "first_kings": [24], "second_men": [10],
                                                      "second_kings": []}


def test_kings_move_and_jump_backwards_men_do_not():
    assert names(Checkers.from_squares(first_kings=[14], second_men=[32])) == ["14-9", "14-10", "14-17", "14-18"]
    assert names(Checkers.from_squares(first_men=[14], second_men=[32])) == ["14-17", "14-18"]
    assert names(Checkers.from_squares(second_kings=[14], first_men=[1], to_play=1)) == [
        "14-9", "14-10", "14-17", "14-18"]
    assert names(Checkers.from_squares(first_kings=[18], second_men=[14, 32])) == ["18x9"]
    assert names(Checkers.from_squares(first_men=[18], second_men=[14, 32])) == ["18-22", "18-23"]


def test_a_player_without_a_legal_move_loses():
    blocked = Checkers.from_squares(first_men=[18, 25], second_men=[29])
    play(blocked, "18-22")  # 29's one step (25) and its jump (to 22) are both blocked now
    assert blocked.is_over() and blocked.winner() == 0 and blocked.legal_actions() == []
    assert Checkers.from_squares(first_men=[22, 25], second_men=[29], to_play=1).winner() == 0
    taken = Checkers.from_squares(first_men=[14], second_men=[17])
    play(taken, "14x21")
    assert taken.is_over() and taken.winner() == 0
    second_wins = Checkers.from_squares(first_men=[5], second_men=[9, 14])  # 5's one step (9) and jump blocked
    assert second_wins.to_play() == 0 and names(second_wins) == []
    assert second_wins.winner() == 1
    with pytest.raises(ValueError, match="the game is over"):
        second_wins.step(0)


def test_forty_plies_without_a_capture_draw_before_any_other_end():
    game = Checkers.from_squares(first_kings=[1], second_kings=[32], quiet_plies=38)
    play(game, "1-6")
    assert not game.is_over() and game.observation()[0, 0, 5] == pytest.approx(39 / 40)
    play(game, "32-28")
    assert game.is_over() and game.winner() is None and game.legal_actions() == []
    blocked = Checkers.from_squares(first_men=[18, 25], second_men=[29], quiet_plies=39)
    play(blocked, "18-22")  # the 40th quiet ply leaves 29 no move: a draw all the same
    assert blocked.is_over() and blocked.winner() is None
    capture = Checkers.from_squares(first_men=[11, 1], second_men=[15, 30], quiet_plies=39)
    play(capture, "11x18")  # a capture starts the count again
    assert not capture.is_over() and capture.observation()[..., 5].max() == 0
    assert Checkers.from_squares(first_men=[1], second_men=[32], quiet_plies=40).winner() is None


def test_from_squares_checks_its_pieces():
    with pytest.raises(ValueError, match="1..32"):
        Checkers.from_squares(first_men=[0])
    with pytest.raises(ValueError, match="one piece"):
        Checkers.from_squares(first_men=[5], second_kings=[5])
    with pytest.raises(ValueError, match="crowned"):
        Checkers.from_squares(first_men=[30])
    game = play(Checkers(), "11-15", "22-18", "15x22")
    again = Checkers.from_squares(**game.squares(), to_play=game.to_play())
    assert repr(again) == repr(game) and again.legal_actions() == game.legal_actions()


# -- the Game interface ---------------------------------------------------------------

def test_observation_is_the_movers_view():
    game = Checkers()
    first = game.observation()
    assert first.shape == Checkers.observation_shape and first.dtype == np.float32
    # the mover's men on its three home rows at the bottom, the opponent's at the top, dark squares only
    assert first[5:, :, 0].sum() == 12 and first[:3, :, 2].sum() == 12 and first[..., [1, 3, 4, 5]].sum() == 0
    assert all(first[r, c].sum() == 0 for r in range(8) for c in range(8) if (r + c) % 2 == 0)
    play(game, "11-15")
    second = game.observation()
    assert second[5:, :, 0].sum() == 12 and second[:3, :, 2].sum() == 11
    assert second[3, 4, 2] == 1  # 15 (diagram row 3, column 4) as White sees it: White moves up the diagram
    assert np.all(second[..., 5] == 1 / 40)
    crowned = Checkers.from_squares(first_kings=[32], second_kings=[1], second_men=[20], to_play=1)
    assert crowned.observation()[0, 1, 1] == 1 and crowned.observation()[7, 6, 3] == 1
    assert crowned.observation()[4, 7, 0] == 1


def test_keys_follow_what_the_observation_shows():
    a = play(Checkers(), "11-15", "24-20", "9-13")
    b = play(Checkers(), "9-13", "24-20", "11-15")
    assert a.key() == b.key() and repr(a) == repr(b)
    pieces = a.squares()
    assert Checkers.from_squares(**pieces, to_play=1, quiet_plies=3).key() == a.key()
    assert len({Checkers.from_squares(**pieces, to_play=t, quiet_plies=q).key() for t in (0, 1) for q in (0, 3)}) == 4
    jumping = play(Checkers.from_squares(first_men=[1, 3], second_men=[6, 8, 14, 15]), "1x10")
    after = Checkers.from_squares(**jumping.squares())  # the same pieces, no jump pending
    assert after.key() != jumping.key()
    code = (f"from agents.games.checkers import Checkers\ng = Checkers()\n"
            f"for a in {a.history()}: g.step(a)\nprint(g.key())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env=dict(os.environ, PYTHONHASHSEED="123"), cwd=ROOT)
    assert int(other.stdout) == a.key() and 0 <= a.key() < 2**64


def test_copy_is_independent_and_steps_check_their_actions():
    game = play(Checkers(), "11-15")
    other = game.copy()
    play(other, "22-18")
    assert game.plies == 1 and other.plies == 2 and game.key() != other.key()
    assert game.legal_actions() != other.legal_actions()
    game.legal_actions().clear()  # a caller's list: the game keeps its own
    assert len(game.legal_actions()) == 7
    with pytest.raises(ValueError, match=r"illegal checkers action 0 \(square 1 up-left\) in Checkers\("):
        game.step(0)
    with pytest.raises(ValueError, match="illegal checkers action 500"):
        game.step(500)
    assert Checkers.symmetries()[0][2].tolist() == list(range(128)) and len(Checkers.symmetries()) == 1
    assert game.history() == [42] and other.history() == [42, 4 * 21 + 1]  # 11-15 (down-left), 22-18 (up-right)
    assert Checkers.from_squares(first_men=[1], second_men=[32]).history() is None


def test_random_start_and_legal_mask():
    game = Checkers().random_start(np.random.default_rng(0), 10)
    assert 1 <= game.plies <= 10 and not game.is_over()
    assert np.flatnonzero(game.legal_mask()).tolist() == game.legal_actions()


# -- judges ----------------------------------------------------------------------------

def test_alpha_beta_takes_the_most_material():
    game = Checkers.from_squares(first_men=[1, 3], second_men=[6, 8, 15])  # 1x10x19 takes two, 3x12 one
    judge = CheckersAlphaBeta(depth=1)
    for seed in range(5):
        judge.reset(seed)
        assert game.action_name(judge.choose(game)) == "1x10"
    values = {game.action_name(a): v for a, v in alpha_beta_values(game, 1, exact=True).items()}
    assert values["1x10"] - values["3x12"] >= 900  # a man more
    # White to move, a man down (-1000); Black's men advanced 4 rows (19), White's 6 (8): -1000 - 4 + 6
    assert evaluate(play(game.copy(), "1x10", "10x19")) == -998


def test_alpha_beta_finds_a_forced_win():
    # 8-11 blocks 20 (its jump over 16 would land on 11): White must play 21-17, 14x21 takes it, and White has
    # no move. Every other move lets White go on.
    game = Checkers.from_squares(first_men=[8, 14, 16], second_men=[20, 21])
    for depth in (2, 3):
        values = alpha_beta_values(game, depth, exact=True)
        best = max(values, key=values.get)
        assert game.action_name(best) == "8-11" and values[best] == WIN - 3
        assert all(v < WIN // 2 for a, v in values.items() if a != best)
    judge = CheckersAlphaBeta(depth=2)
    while not game.is_over():
        game.step(judge.choose(game) if game.to_play() == 0 else game.legal_actions()[0])
    assert game.winner() == 0 and game.plies == 3


def test_alpha_beta_values_match_plain_minimax():
    def minimax(game, depth, ply):
        if game.is_over():
            return 0 if game.winner() is None else WIN - ply if game.winner() == game.to_play() else ply - WIN
        if depth <= 0 and "x" not in game.action_name(game.legal_actions()[0]):
            return evaluate(game)
        out = []
        for action in game.legal_actions():
            child = game.copy()
            child.step(action)
            same = child.to_play() == game.to_play()
            out.append(minimax(child, depth, ply + 1) if same else -minimax(child, depth - 1, ply + 1))
        return max(out)

    rng = np.random.default_rng(3)
    for _ in range(10):
        game = Checkers().random_start(rng, 40)
        exact = {}
        for action in game.legal_actions():
            child = game.copy()
            child.step(action)
            same = child.to_play() == game.to_play()
            exact[action] = minimax(child, 3, 1) if same else -minimax(child, 2, 1)
        assert alpha_beta_values(game, 3, exact=True) == exact, game


def test_alpha_beta_ties_are_seeded_and_it_needs_the_position():
    judge = CheckersAlphaBeta(depth=1, seed=5)
    first = [judge.choose(Checkers()) for _ in range(12)]
    judge.reset(5)
    assert [judge.choose(Checkers()) for _ in range(12)] == first and len(set(first)) > 1
    assert judge.name == "alpha-beta depth 1"
    with pytest.raises(ValueError, match="needs the position"):
        judge.act(Checkers().observation(), Checkers().legal_mask())
    with pytest.raises(ValueError, match="depth"):
        CheckersAlphaBeta(depth=0)


def test_alpha_beta_beats_the_random_player_in_the_arena():
    for seed in range(4):
        judge, rival = CheckersAlphaBeta(depth=2), RandomAgent()
        white, black = (judge, rival) if seed % 2 == 0 else (rival, judge)
        record = play_game(white, black, game="checkers", seed=seed)
        assert record.score(judge.name) == 1.0 and record.termination == "win", record
        replay = Checkers()
        for move in record.moves:
            play(replay, move)
        assert replay.is_over() and repr(replay) == record.final and replay.plies == record.plies


def test_openspiel_mcts_plays_legal_moves_through_the_arena():
    bot = OpenSpielMCTS(simulations=8, seed=0)
    record = play_game(bot, RandomAgent(), game="checkers", seed=0, opening_plies=4)
    assert record.white == "openspiel mcts 8" and record.plies > 4
    game = play(Checkers(), "11-15", "23-19")
    assert sorted(from_openspiel(a) for a in game.openspiel_state().legal_actions()) == game.legal_actions()
    with pytest.raises(ValueError, match="from_squares"):
        bot.act(None, None, Checkers.from_squares(first_men=[1], second_men=[32]))
    with pytest.raises(ValueError, match="needs the position"):
        bot.act(None, None, None)
