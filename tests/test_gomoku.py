"""Gomoku: hand-built rules (five and overline, edges, a full board), the observation planes of the seed's input
study, the exact solver against exhaustive search and published m,n,k values, and the judges. The move-by-move
comparison with OpenSpiel is in test_boardgame_rules.py."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from agents.alphazero.search import SearchConfig, UniformEvaluator, search
from agents.arena import play_game
from agents.games import Gomoku, new_game
from agents.games.gomoku import GomokuAlphaBeta, GomokuSolver, alpha_beta_values
from agents.games.tictactoe import solve_tictactoe
from agents.players.random_agent import RandomAgent

G9 = Gomoku.sized(9)


def placed(cls, first, second, history=1):
    """A position from the cells of each player's stones, played alternately (first's first)."""
    game = cls(history)
    for a, b in zip(first, list(second) + [None]):
        game.step(a)
        if b is not None:
            game.step(b)
    return game


def test_five_and_overline_win_four_does_not():
    four = placed(G9, [0, 1, 2, 3], [18, 19, 20])
    assert not four.is_over() and four.to_play() == 1
    five = placed(G9, [0, 1, 2, 3, 4], [18, 19, 20, 21])
    assert five.is_over() and five.winner() == 0
    # a stone joining two fours into six wins: freestyle Gomoku, as OpenSpiel's
    six = placed(G9, [0, 1, 2, 4, 5, 3], [18, 19, 20, 21, 23])
    assert six.winner() == 0 and six.plies == 11
    # diagonals both ways, ending on the board's edges
    assert placed(G9, [0, 10, 20, 30, 40], [1, 2, 3, 4]).winner() == 0
    assert placed(G9, [9, 72, 64, 56, 48], [8, 16, 24, 32, 40]).winner() == 1
    # a line does not wrap around the edge: cells 7, 8, 9, 10, 11 are two rows
    assert not placed(G9, [7, 8, 9, 10, 11], [30, 31, 32, 33]).is_over()
    with pytest.raises(ValueError, match="the game is over"):
        five.copy().step(80)
    with pytest.raises(ValueError, match="illegal Gomoku action 0"):
        four.copy().step(0)


def test_a_full_board_without_a_line_is_a_draw():
    # 3x3, three in a row: a drawn tic-tac-toe game is a drawn 3x3 Gomoku game
    draw = placed(Gomoku.sized(3, 3), [0, 2, 5, 6, 7], [1, 3, 4, 8])
    assert draw.is_over() and draw.winner() is None


def test_observation_planes_are_the_seed_input_study():
    game = placed(G9, [40, 30], [41], history=3)  # second to move
    o = game.observation()
    assert o.shape == (9, 9, 5) and o.dtype == np.float32
    assert o[4, 5, 0] == 1 and o[4, 4, 1] == 1 and o[3, 3, 1] == 1  # the mover's stones, then the opponent's
    assert not o[..., 2].any()  # the mover (second) did not move first
    assert np.flatnonzero(o[..., 3]).tolist() == [30] and np.flatnonzero(o[..., 4]).tolist() == [41]
    for history in (1, 2, 3):
        g = placed(G9, [40, 30], [41], history=history)
        assert g.observation().shape == (9, 9, 2 + history)
        np.testing.assert_array_equal(g.observation(), o[..., :2 + history])
        back = G9.from_observation(g.observation())
        assert back.board == g.board and back.key() == g.key() and back.history == history
    # the key sees what the planes see: the same stones after other last moves differ with history > 1
    a, b = placed(G9, [40, 30], [41, 50], 2), placed(G9, [30, 40], [50, 41], 2)
    assert a.board == b.board and a.key() != b.key()
    assert placed(G9, [40, 30], [41, 50], 1).key() == placed(G9, [30, 40], [50, 41], 1).key()
    with pytest.raises(ValueError, match="history is 1, 2 or 3"):
        new_game("gomoku", history=4)
    with pytest.raises(ValueError, match="takes history"):
        new_game("gomoku", last_move=True)


def with_threats(game):
    game.threats = True
    return game


def rows_of(game) -> list[list[int]]:
    """The board's windows of ``length`` cells in a row, walked here (not the game's tables)."""
    n, k = game.height, game.length
    return [[(r + i * dr) * n + c + i * dc for i in range(k)]
            for r in range(n) for c in range(n) for dr, dc in ((0, 1), (1, 0), (1, 1), (-1, 1))
            if all(0 <= r + i * dr < n and 0 <= c + i * dc < n for i in range(k))]


def brute_force_threats(game) -> np.ndarray:
    """The threat planes by trying every empty cell: a stone there wins (the rules say), and the windows of five
    cells in a row on the board (walked here, not the game's tables) it fills to four with none of the other's."""
    n, out, windows = game.height, np.zeros((game.height, game.width, 4), np.float32), rows_of(game)
    for k, player in enumerate((game.to_play(), 1 - game.to_play())):
        for cell in game.legal_actions():
            board = list(game.board)
            board[cell] = player + 1
            stones = [[board[c] for c in w] for w in windows if cell in w]
            out[cell // n, cell % n, 2 * k] = any(all(v == player + 1 for v in w) for w in stones)
            out[cell // n, cell % n, 2 * k + 1] = sum(
                w.count(player + 1) == game.length - 1 and w.count(2 - player) == 0 for w in stones) / 4
    return out


def test_the_threat_planes_are_where_a_stone_makes_five_or_fours():
    # first to move: its open four 30-33 (row 3) makes five at 29 or 34; second's three 60-62 on row 6's edge makes
    # a four at 58 or 59 (the one window 58-62), its diagonal 0, 10, 20 none (30 is first's)
    stones = [30, 31, 32, 33, 70, 80], [0, 10, 20, 60, 61, 62]
    game = with_threats(placed(G9, *stones, history=2))
    o = game.observation()
    assert o.shape == game.observation_shape == (9, 9, 8)
    np.testing.assert_array_equal(o[..., :4], placed(G9, *stones, history=2).observation())  # then the threats
    assert np.flatnonzero(o[..., 4]).tolist() == [29, 34] and not o[..., 6].any()  # fives: the mover's, the other's
    assert np.flatnonzero(o[..., 7]).tolist() == [58, 59] and o[6, 4, 7] == o[6, 5, 7] == 0.25
    np.testing.assert_array_equal(o[..., 4:], brute_force_threats(game))
    rng = np.random.default_rng(5)
    for stones in (6, 15, 30):
        moves = rng.choice(81, size=stones, replace=False).tolist()
        game = with_threats(placed(G9, moves[0::2], moves[1::2], history=1))
        if not game.is_over():
            np.testing.assert_array_equal(game.observation()[..., 3:], brute_force_threats(game))
            back = G9.from_observation(game.observation())
            assert back.board == game.board and (back.history, back.threats) == (1, True)
    assert new_game("gomoku", threats=True).observation_shape == (9, 9, 7)
    with pytest.raises(ValueError, match="takes history, last_move, ply_limit, fen"):
        new_game("gardner", threats=True)


def test_symmetric_images_are_the_positions_played_symmetrically():
    rng = np.random.default_rng(3)
    moves = rng.choice(81, size=9, replace=False).tolist()
    game = with_threats(placed(G9, moves[0::2], moves[1::2], history=3))
    for turns, flip, perm in G9.symmetries():
        inverse = np.argsort(perm)  # perm[new cell] = old cell, as a policy p becomes p[perm]
        image = placed(G9, [int(inverse[m]) for m in moves[0::2]], [int(inverse[m]) for m in moves[1::2]], 3)
        o = game.observation()
        np.testing.assert_array_equal(np.rot90(np.fliplr(o) if flip else o, turns), with_threats(image).observation())
    assert len(G9.symmetries()) == 8


def test_names_give_any_size_and_length():
    assert type(new_game("gomoku")) is G9 and (G9.height, G9.length) == (9, 5)
    assert type(new_game("gomoku15")).height == 15
    small = new_game("gomoku7k4")
    assert (small.height, type(small).length, small.name) == (7, 4, "gomoku7k4")
    for bad in ("gomoku2", "gomoku5k6", "gomoku30"):
        with pytest.raises(ValueError, match="size in 3..19"):
            new_game(bad)


# -- the exact solver ------------------------------------------------------------------


@functools.cache
def exhaustive_value(cls, board: tuple, mover: int) -> int:
    """Plain negamax over every continuation (no pruning, no rule of thumb), memoised: the value for ``mover``."""
    mark = mover + 1
    empties = [i for i, v in enumerate(board) if not v]
    if not empties:
        return 0
    best = -1
    for i in empties:
        after = board[:i] + (mark,) + board[i + 1:]
        if any(all(after[c] == mark for c in line) for line in cls.lines[i]):
            return 1
        best = max(best, -exhaustive_value(cls, after, 1 - mover))
    return best


def test_the_solver_agrees_with_tic_tac_toe_s_independent_table():
    table, solver = solve_tictactoe(), GomokuSolver(Gomoku.sized(3, 3))
    positions = [g for g in table.non_terminal()]
    assert len(positions) == 4520
    for game in positions:
        ours = placed(Gomoku.sized(3, 3), [i for i, v in enumerate(game.board) if v == 1],
                      [i for i, v in enumerate(game.board) if v == 2])
        assert solver.move_values(ours) == table.move_values(game), game


@pytest.mark.parametrize("size, length, stones", [(4, 3, 4), (4, 4, 7)])
def test_the_solver_agrees_with_exhaustive_search(size, length, stones):
    cls, rng = Gomoku.sized(size, length), np.random.default_rng(size * 10 + length)
    solver = GomokuSolver(cls)
    checked = 0
    while checked < 60:
        game = cls()
        for _ in range(stones + int(rng.integers(0, 4))):
            if game.is_over():
                break
            game.step(int(rng.choice(game.legal_actions())))
        if game.is_over():
            continue
        for a, v in solver.move_values(game).items():
            child = game.copy()
            child.step(a)
            exact = 1 if child.winner() is not None else -exhaustive_value(cls, tuple(child.board), child.to_play()) \
                if not child.is_over() else 0
            assert v == exact, (game, a)
        checked += 1


def test_the_solver_finds_the_published_m_n_k_values():
    # Wikipedia, "m,n,k-game": (3,3,3) and (4,4,4) are draws, (4,4,3) a first-player win
    for size, length, value in ((3, 3, 0), (4, 4, 0), (4, 3, 1)):
        assert GomokuSolver(Gomoku.sized(size, length)).value(0, 0) == value, (size, length)


# -- alpha-beta and outside opponents ----------------------------------------------------------


def test_alpha_beta_wins_at_once_blocks_and_sees_two_plies():
    win = placed(G9, [10, 11, 12, 13], [40, 41, 42, 50])  # first to move: 9 or 14 makes five
    assert set(alpha_beta_values(win, 2)) == {9, 14}
    block = placed(G9, [10, 11, 12, 13, 70], [9, 40, 41, 50])  # second to move: must block at 14
    assert set(alpha_beta_values(block, 2)) == {14}
    # an open three for the mover (row 4, cells 38..40 of 36..44): depth 2 makes it an open four
    three = placed(G9, [38, 39, 40, 0], [8, 72, 80])
    assert GomokuAlphaBeta(depth=2).choose(three) in (37, 41)
    judge = GomokuAlphaBeta(depth=1, seed=4)
    first = [judge.choose(G9()) for _ in range(8)]
    judge.reset(4)
    assert [judge.choose(G9()) for _ in range(8)] == first
    with pytest.raises(ValueError, match="depth"):
        GomokuAlphaBeta(depth=0)


def minimax(game, depth: int) -> dict[int, int]:
    """The documented alpha-beta without pruning, from the rules and the board's rows walked here: every candidate's
    depth-``depth`` value, the evaluation (``4 ** stones`` for each window of five cells holding one player's stones
    only, the mover's plus, the other's minus) at the leaves."""
    n, windows = game.height, rows_of(game)

    def evaluation(g) -> int:
        me, score = g.to_play() + 1, 0
        for w in windows:
            stones = [g.board[c] for c in w if g.board[c]]
            if stones and len(set(stones)) == 1:
                score += 4 ** len(stones) * (1 if stones[0] == me else -1)
        return score

    def near(g) -> list[int]:
        cells = [a for a in g.legal_actions() if any(g.board[r * n + c] for r in range(n) for c in range(n)
                                                      if max(abs(r - a // n), abs(c - a % n)) <= 2)]
        return cells or g.legal_actions()

    def value(g, d: int) -> int:
        if not g.legal_actions():
            return 0
        if d == 0:
            return evaluation(g)
        best = -(10**10)
        for a in near(g):
            child = g.copy()
            child.step(a)
            if child.winner() is not None:
                return 10**9 + d
            best = max(best, -value(child, d - 1))
        return best

    def after(a):
        child = game.copy()
        child.step(a)
        return child

    wins = [a for a in game.legal_actions() if after(a).winner() is not None]
    if wins:
        return dict.fromkeys(wins, 10**9 + depth)
    blocks = [a for a in game.legal_actions() if any(all(game.board[c] == 2 - game.to_play() or c == a for c in w)
                                                      for w in windows if a in w)]
    return {a: -value(after(a), depth - 1) for a in blocks or near(game)}


def test_alpha_beta_finds_the_best_moves_of_plain_minimax():
    # values below the best are bounds (pruned); the best value and the moves that reach it are exact
    rng = np.random.default_rng(7)
    for name, plies in (("gomoku", 6), ("gomoku", 11), ("gomoku", 16), ("gomoku7k4", 8)):
        game = new_game(name)
        while game.plies < plies:
            game = new_game(name) if game.is_over() else game
            game.step(int(rng.choice(game.legal_actions())))
        for depth in (1, 2):
            ours, truth = alpha_beta_values(game, depth), minimax(game, depth)
            assert set(ours) == set(truth)
            best = max(truth.values())
            assert max(ours.values()) == best
            assert {a for a, v in ours.items() if v == best} == {a for a, v in truth.items() if v == best}


def test_alpha_beta_beats_the_random_player_in_the_arena():
    for seed in range(4):
        judge = GomokuAlphaBeta(depth=1, seed=seed)
        white, black = (judge, RandomAgent(seed)) if seed % 2 == 0 else (RandomAgent(seed), judge)
        record = play_game(white, black, game="gomoku", seed=seed)
        assert record.score(judge.name) == 1.0 and record.termination == "win", record


def test_openspiel_mcts_plays_gomoku_through_the_arena():
    pytest.importorskip("pyspiel", reason="open-spiel: pip install open-spiel")
    from agents.players.openspiel_mcts import OpenSpielMCTS

    game = placed(G9, [40, 30, 20], [41, 31])
    state = game.openspiel_state()
    assert sorted(state.legal_actions()) == game.legal_actions() and state.current_player() == game.to_play()
    record = play_game(OpenSpielMCTS(simulations=8, seed=0), RandomAgent(0), game="gomoku4k4", seed=0)
    assert record.plies >= 7 and record.white == "openspiel mcts 8"


def test_the_search_finds_a_win_in_one_and_the_block():
    win = placed(G9, [10, 11, 12, 13], [40, 41, 42, 50])
    assert search([win], UniformEvaluator(), SearchConfig(simulations=400)).actions[0] in (9, 14)
    # with the rules alone, the search finds a block once it tries the opponent's replies: a small board
    block = placed(Gomoku.sized(4, 4), [0, 1, 2], [5, 10])  # second to move: 3 completes the first's row
    assert search([block], UniformEvaluator(), SearchConfig(simulations=2000)).actions[0] == 3


# -- the experiment ----------------------------------------------------------------------


def run_experiment(*args):
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root, "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "experiments/alphazero_gomoku.py", "--preset", "quick", "--workers", "0",
                           *args], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def test_tiny_experiment_runs_judge_by_solver_and_play_the_input_study(tmp_path):
    import csv

    import agents

    pytest.importorskip("pyspiel", reason="OpenSpiel's MCTS bot is a judge: pip install open-spiel")
    run_experiment("--out", str(tmp_path / "solved"), "--board", "gomoku4k4")
    rows = list(csv.DictReader(open(tmp_path / "solved" / "metrics.csv")))
    assert len(rows) == 2 and all(0 <= float(r["score_policy_value_preserving"]) <= 1 for r in rows)
    scores = {(r["player"], r["to move"]): r for r in csv.DictReader(open(tmp_path / "solved" / "scores.csv"))}
    assert int(next(r for (p, m), r in scores.items() if p.startswith("MCTS 8") and m == "all")["positions"]) == 40
    matches = list(csv.DictReader(open(tmp_path / "solved" / "matches.csv")))
    assert {(m["opponent"], m["player moves"]) for m in matches} == {
        (o, s) for o in ("alpha-beta depth 2", "OpenSpiel MCTS 20") for s in ("first", "second")}
    # each game opens with random plies: two searches from the empty board would repeat one game
    assert all(m["distinct_games"] == m["games"] for m in matches)
    agent = agents.load(str(tmp_path / "solved" / "agent"))
    game = new_game("gomoku4k4", history=2)
    assert agent.history == 2 and agent.act(game.observation(), game.legal_mask(), game) in game.legal_actions()
    assert agent.search.root == "gumbel"  # the judged search's root (self-play: PUCT's)

    run_experiment("--out", str(tmp_path / "study"), "--study")
    matches = list(csv.DictReader(open(tmp_path / "study" / "matches.csv")))
    assert {(m["player"], m["opponent"]) for m in matches} == {
        ("history 1", "history 2"), ("history 1", "history 3"), ("history 2", "history 3")}
    assert all(int(m["games"]) == 2 for m in matches)
    for history in (1, 2, 3):
        assert agents.load(str(tmp_path / "study" / f"history{history}" / "agent")).history == history


def test_a_game_of_any_size_pickles_into_a_fresh_process():
    # worker processes receive games and judges by pickle: a sized class must be found by its name there
    import pickle
    import subprocess
    import sys

    game = new_game("gomoku7k4", history=3)
    game.step(3)
    code = "import pickle, sys; g = pickle.loads(sys.stdin.buffer.read()); print(g.key(), g.history, type(g).length)"
    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(game), capture_output=True)
    assert done.stdout.decode().split() == [str(game.key()), "3", "4"], done.stderr.decode()[-500:]


def test_an_agent_seeing_the_threat_planes_saves_loads_and_plays_a_plain_game(tmp_path):
    pytest.importorskip("torch", reason="the agent needs the agents extra (pip install -e '.[agents]')")
    import agents
    from agents.alphazero.agent import AlphaZeroAgent
    from agents.alphazero.network import NetConfig, PolicyValueNet

    net = PolicyValueNet(NetConfig(9, 9, 2 + 2 + 4, 81, blocks=1, channels=8, policy_channels=2))
    AlphaZeroAgent(net, "gomoku", history=2, simulations=4, threats=True).save(str(tmp_path / "agent"))
    agent = agents.load(str(tmp_path / "agent"))
    assert (agent.history, agent.threats, agent.shape) == (2, True, (9, 9, 8))
    game = new_game("gomoku")  # seen with the agent's planes: history 2 and the threats
    assert agent.act(game.observation(), game.legal_mask(), game) in game.legal_actions()
    with pytest.raises(ValueError, match="does not fit gomoku"):
        AlphaZeroAgent(net, "gomoku", history=2)
