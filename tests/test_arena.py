"""The arena and the ratings: hand-computed intervals and Elo, adjudication, seeds, PGN, the leaderboard.

Independent truth: Wilson bounds and Elo differences worked out by hand, a
likelihood grid for the Elo interval, and python-chess reading our 8x8 PGN.
"""

from __future__ import annotations

import csv
import io
import math
import multiprocessing
import os
import shutil

import numpy as np
import pytest

from agents import GreedyAgent, MinimaxAgent, RandomAgent
from agents.arena import (
    ILLEGAL_MOVE,
    LOCKSTEP_GAMES,
    PLY_LIMIT,
    MatchResult,
    all_games,
    color_tally,
    game_seed,
    pairing_seed,
    play_game,
    play_match,
    rating_results,
    run_tournament,
    tally,
    write_pgn,
)
from agents.arena.ratings import elo_mle, wilson_interval
from agents import zoo
from agents.games import new_game
from minichess_envs import IllegalMoveError
from minichess_envs.players import legal_action


# -- Wilson ------------------------------------------------------------------------------


def test_wilson_interval_hand_computed():
    # 8/10, z = 1.959964: centre (0.8 + z^2/20) / (1 + z^2/10) = 0.71674,
    # half-width z / 1.38415 * sqrt(0.016 + z^2/400) = 0.22658.
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.49016, abs=1e-4) and high == pytest.approx(0.94332, abs=1e-4)
    # 0/10: the lower bound is 0 and the upper z^2/10 / (1 + z^2/10) = 0.27753.
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for k in range(11):  # symmetric in successes and failures
        low, high = wilson_interval(k, 10)
        assert wilson_interval(10 - k, 10) == pytest.approx((1 - high, 1 - low))
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


# -- Elo ----------------------------------------------------------------------------------


def test_elo_of_a_75_percent_score_is_400_log10_3():
    wins = [("a", "random", 1.0)] * 3 + [("a", "random", 0.0)]
    draws = [("a", "random", 1.0)] * 2 + [("random", "a", 0.5)] * 2  # same score, half points
    for games in (wins, draws, wins * 10):
        ratings = elo_mle(games)
        assert ratings["a"].elo == pytest.approx(400 * math.log10(3), abs=1e-6)  # 190.85
        assert ratings["random"] == (0.0, 0.0, 0.0, len(games), 0.25)


def test_elo_on_a_chain_adds_up():
    # Pairs form a tree, so each difference is fixed by its own pair: 75% and 90% scores.
    games = ([("a", "random", 1.0)] * 3 + [("a", "random", 0.0)]
             + [("b", "a", 1.0)] * 9 + [("b", "a", 0.0)])
    ratings = elo_mle(games)
    assert ratings["a"].elo == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert ratings["b"].elo == pytest.approx(400 * math.log10(3) + 400 * math.log10(9), abs=1e-6)
    assert list(ratings) == ["b", "a", "random"]  # strongest first


def test_elo_interval_matches_a_likelihood_grid():
    games = [("a", "random", 1.0)] * 6 + [("a", "random", 0.5)] * 2 + [("a", "random", 0.0)] * 2
    r = elo_mle(games)["a"]
    s, n = 7.0, 10  # a's points and games
    x = np.linspace(-400, 800, 1_200_001)
    p = 1 / (1 + 10 ** (-x / 400))
    loglik = s * np.log(p) + (n - s) * np.log(1 - p)
    inside = x[loglik >= loglik.max() - 1.959964**2 / 2]
    assert r.elo == pytest.approx(x[loglik.argmax()], abs=0.01)
    assert (r.low, r.high) == pytest.approx((inside.min(), inside.max()), abs=0.01)


def test_elo_prior_draws_and_unbounded_cases():
    sweep = [("a", "random", 1.0)] * 3
    with pytest.raises(ValueError, match="won every game"):
        elo_mle(sweep)
    # One virtual draw: 3.5 points of 4, so 400 log10(7).
    assert elo_mle(sweep, prior_draws=1)["a"].elo == pytest.approx(400 * math.log10(7), abs=1e-6)
    assert elo_mle(sweep, prior_draws=1)["a"].games == 3
    with pytest.raises(ValueError, match="anchor 'random' played no game"):
        elo_mle([("a", "b", 1.0), ("a", "b", 0.0)])
    with pytest.raises(ValueError, match="no chain of games links c, d"):
        elo_mle([("a", "random", 1.0), ("a", "random", 0.0), ("c", "d", 1.0), ("c", "d", 0.0)])


# -- games -----------------------------------------------------------------------------------


def test_ply_limit_is_a_labelled_draw():
    record = play_game(RandomAgent(), RandomAgent(), "gardner", seed=1, ply_limit=6)
    assert (record.result, record.termination, record.plies) == ("1/2-1/2", PLY_LIMIT, 6)
    assert '[Termination "adjudication"]' in record.pgn and '[Result "1/2-1/2"]' in record.pgn
    assert record.pgn.rstrip().endswith("1/2-1/2")


def test_illegal_actions_raise_or_forfeit():
    def bad(position):
        return 0  # action 0 is never legal at the start of gardner

    with pytest.raises(IllegalMoveError, match=r"bad \(black\) chose illegal action 0"):
        play_game(RandomAgent(), bad, "gardner", seed=0)
    record = play_game(RandomAgent(), bad, "gardner", seed=0, illegal="forfeit")
    assert (record.result, record.termination, record.plies) == ("1-0", ILLEGAL_MOVE, 1)


def test_agents_cannot_change_the_game():
    class Meddler(RandomAgent):
        name, calls = "meddler", 0

        def act(self, observation, action_mask, position=None):
            self.calls += 1
            action = super().act(observation, action_mask, position)
            position.push_action(position.legal_actions()[0])  # lands on the agent's copy only
            return action

    meddler = Meddler()
    record = play_game(meddler, RandomAgent(), "gardner", seed=0, ply_limit=20)
    assert len(record.moves) == record.plies and meddler.calls == (record.plies + 1) // 2


def test_results_are_reproducible_from_seeds():
    def field():
        return [RandomAgent(), GreedyAgent(), MinimaxAgent(1)]

    first = all_games(run_tournament(field(), "gardner", games=6, seed=11))
    again = all_games(run_tournament(field(), "gardner", games=6, seed=11))
    parallel = all_games(run_tournament(field(), "gardner", games=6, seed=11, workers=2))
    other = all_games(run_tournament(field(), "gardner", games=6, seed=12))
    assert [g.pgn for g in first] == [g.pgn for g in again] == [g.pgn for g in parallel]
    assert [g.moves for g in first] != [g.moves for g in other]
    # A single game is replayed from its recorded seed alone.
    g = first[7]
    assert f'[Seed "{g.seed}"]' in g.pgn
    names = {"random": RandomAgent, "greedy": GreedyAgent, "minimax-d1": lambda: MinimaxAgent(1)}
    replay = play_game(names[g.white](), names[g.black](), "gardner", g.seed, round=g.round)
    assert replay.pgn == g.pgn
    # Pairing seeds depend on the two names only, so adding a player leaves other matches as they were.
    assert g.seed == game_seed(pairing_seed(11, "random", "minimax-d1"), 1)
    bigger = all_games(run_tournament(field() + [MinimaxAgent(2)], "gardner", games=6, seed=11))
    assert [h.moves for h in bigger if "minimax-d2" not in (h.white, h.black)] == [h.moves for h in first]


class DiesOnce(RandomAgent):
    """A random player whose worker process dies the first time it moves there (a flag file records it)."""

    def __init__(self, flag: str, seed: int):
        super().__init__(seed)
        self.flag, self.name = flag, "dies-once"

    def act(self, observation, action_mask, position=None):
        if multiprocessing.parent_process() is not None and not os.path.exists(self.flag):
            open(self.flag, "w").close()
            os._exit(9)  # as a kill or the OOM killer would leave it: no answer, no cleanup
        return super().act(observation, action_mask, position)


def test_a_lost_arena_worker_is_replaced_and_its_game_played_again(tmp_path):
    flag = str(tmp_path / "died")
    straight = all_games(run_tournament([DiesOnce(flag, 1), GreedyAgent(2)], "gardner", games=8, seed=3))
    repaired = all_games(run_tournament([DiesOnce(flag, 1), GreedyAgent(2)], "gardner", games=8, seed=3, workers=2))
    assert os.path.exists(flag) and [g.pgn for g in repaired] == [g.pgn for g in straight]


class NeverMoves(RandomAgent):
    """Fails the test if asked for a move: every game should come from the journal."""

    def act(self, observation, action_mask, position=None):
        raise AssertionError("a game in the journal was played again")


def test_a_stopped_match_goes_on_from_its_game_journal(tmp_path):
    journal = str(tmp_path / "games.jsonl")
    straight = play_match(MinimaxAgent(1), RandomAgent(4), "gardner", games=6, seed=5)
    play_match(MinimaxAgent(1), RandomAgent(4), "gardner", games=6, seed=5, journal=journal)
    lines = open(journal).read().splitlines(keepends=True)
    assert len(lines) == 6
    # Stopped while writing the fourth game: three whole lines and part of one.
    open(journal, "w").write("".join(lines[:3]) + lines[3][:40])
    resumed = play_match(MinimaxAgent(1), RandomAgent(4), "gardner", games=6, seed=5, journal=journal, workers=2)
    assert [g.pgn for g in resumed.games] == [g.pgn for g in straight.games]
    assert len(open(journal).read().splitlines()) == 6
    again = play_match(NeverMoves(), RandomAgent(4), "gardner", games=6, seed=5, journal=journal,
                       names=("minimax-d1", "random"))
    assert [g.pgn for g in again.games] == [g.pgn for g in straight.games]
    # Other game options are other games.
    with pytest.raises(AssertionError, match="played again"):
        play_match(NeverMoves(), RandomAgent(4), "gardner", games=6, seed=5, journal=journal, ply_limit=20,
                   names=("minimax-d1", "random"))


def test_a_board_game_match_in_lockstep_goes_on_from_its_journal(tmp_path):
    journal = str(tmp_path / "games.jsonl")
    names = ("a", "b")
    first = play_match(RandomAgent(3), RandomAgent(4), "connect_four", games=4, seed=2, seats="first", names=names,
                       journal=journal)
    again = play_match(NeverMoves(), NeverMoves(), "connect_four", games=4, seed=2, seats="first", names=names,
                       journal=journal)
    assert [g.moves for g in again.games] == [g.moves for g in first.games]
    assert [g.white for g in again.games] == ["a"] * 4


def test_a_corrupt_game_journal_is_an_error_naming_its_line(tmp_path):
    journal = tmp_path / "games.jsonl"
    play_match(RandomAgent(1), RandomAgent(2), "gardner", games=2, seed=1, names=("a", "b"), journal=str(journal))
    first, second = journal.read_text().splitlines()
    journal.write_text(first + "\n" + '{"key": "k", "record": {"game": "gardner"}}\n' + second + "\n")
    with pytest.raises(ValueError, match="line 2: not a game"):
        play_match(RandomAgent(1), RandomAgent(2), "gardner", games=2, seed=1, names=("a", "b"), journal=str(journal))
    journal.write_text("import os\n")
    with pytest.raises(ValueError, match="line 1: not a game"):
        play_match(RandomAgent(1), RandomAgent(2), "gardner", games=2, seed=1, names=("a", "b"), journal=str(journal))


def test_colors_alternate_and_tallies_add_up():
    match = play_match(MinimaxAgent(1), RandomAgent(), "gardner", games=10, seed=3)
    assert [g.white for g in match.games] == ["minimax-d1", "random"] * 5
    total, white, black = match.tally(), match.tally(color="white"), match.tally(color="black")
    assert (white.games, black.games, total.games) == (5, 5, 10)
    assert (total.wins, total.draws, total.losses) == tuple(
        a + b for a, b in zip((white.wins, white.draws, white.losses), (black.wins, black.draws, black.losses)))
    points = sum(g.score("minimax-d1") for g in match.games)
    assert total.score == pytest.approx(points / 10)
    opp = tally(match.games, "random")
    assert (opp.wins, opp.losses) == (total.losses, total.wins)
    c = color_tally(match.games)
    assert c.wins == sum(g.result == "1-0" for g in match.games)
    assert "minimax-d1 as white" in match.summary()
    with pytest.raises(ValueError, match="distinct"):
        run_tournament([RandomAgent(), RandomAgent()], "gardner", games=2)


def test_pgn_of_8x8_games_reads_in_python_chess(tmp_path):
    chess_pgn = pytest.importorskip("chess.pgn")
    match = play_match(GreedyAgent(), RandomAgent(), "chess", games=2, seed=0, ply_limit=80)
    path = tmp_path / "games.pgn"
    assert write_pgn(match.games, str(path)) == 2
    with open(path) as f:
        for record in match.games:
            game = chess_pgn.read_game(f)
            assert not game.errors
            assert [m.uci() for m in game.mainline_moves()] == list(record.moves)
            assert game.headers["White"] == record.white and game.headers["Result"] == record.result
    assert "[Variant" not in path.read_text()


def test_pgn_has_variant_tags(tmp_path):
    match = play_match(GreedyAgent(), RandomAgent(), "losalamos", games=2, seed=0)
    for g in match.games:
        assert '[Variant "losalamos"]' in g.pgn and '[FEN "rnqknr/pppppp/6/6/PPPPPP/RNQKNR w - - 0 1"]' in g.pgn
        assert f'[White "{g.white}"]' in g.pgn and '[Round "1.' in g.pgn


def test_rating_results_feed_elo():
    match = play_match(MinimaxAgent(2), GreedyAgent(), "gardner", games=4, seed=0)
    rows = rating_results(match.games)
    assert len(rows) == 4 and all(w == g.white and s == g.score(g.white) for (w, _, s), g in zip(rows, match.games))


# -- the leaderboard ------------------------------------------------------------------------


def test_leaderboard_runs_and_writes_its_outputs(tmp_path, capsys):
    from experiments import leaderboard
    runs = tmp_path / "runs"
    checkpoint = pytest.importorskip("agents.players.perfect").PerfectAgent("3x3", seed=0)
    checkpoint.save(str(runs / "exp1" / "final"))
    (runs / "broken").mkdir(parents=True)
    (runs / "broken" / "agent.json").write_text("{not json")
    out = tmp_path / "out"
    leaderboard.main(["--preset", "quick", "--variant", "3x3", "--games", "4",  # quick: 20 reference games, minimax d1
                      "--runs", str(runs), "--out", str(out), "--workers", "1", "--zoo", "none"])
    printed = capsys.readouterr().out
    assert "skipping checkpoint" in printed and "| ref | random vs random |" in printed
    for name in ("leaderboard.md", "leaderboard.csv", "games.pgn"):
        assert (out / name).stat().st_size > 0
    rows = list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text())))
    agents_ = {r["agent"] for r in rows if r["kind"] == "agent"}
    assert agents_ == {"random", "greedy", "minimax-d1", "perfect", "exp1/final"}
    ref = [r for r in rows if r["kind"] == "reference"]
    assert len(ref) == 1 and int(ref[0]["games"]) == 20
    assert float(next(r for r in rows if r["agent"] == "random")["elo"]) == 0.0
    assert (out / "games.pgn").read_text().count("[Event ") == 10 * 4  # 5 agents: 10 pairings


def test_a_board_game_leaderboard_has_its_judges_and_saved_agents(tmp_path, capsys):
    pytest.importorskip("torch", reason="the saved agent is a network (the agents extra)")
    from agents.alphazero.agent import AlphaZeroAgent
    from agents.alphazero.train import Config, make_net, with_changes
    from experiments import leaderboard

    runs, out = tmp_path / "runs", tmp_path / "out"
    config = with_changes(Config(), game="connect_four", blocks=1, channels=8, policy_channels=2)
    AlphaZeroAgent(make_net(config), "connect_four", simulations=2).save(str(runs / "c4"))
    leaderboard.main(["--preset", "quick", "--variant", "connect_four", "--games", "2", "--runs", str(runs),
                      "--out", str(out), "--workers", "2", "--zoo", "none"])  # the zoo's Connect Four agent is slow
    text = (out / "leaderboard.md").read_text()
    assert "| vs random as first | vs random as second |" in text
    assert "| ref | random vs random | 0 | | first wins" in text
    rows = list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text())))
    agents_ = {r["agent"] for r in rows if r["kind"] == "agent"}
    assert {"random", "alpha-beta depth 1", "c4"} <= agents_ <= {"random", "alpha-beta depth 1", "c4",
                                                                 "perfect solver (bitbully)"}
    assert all(int(r["games"]) == 2 * (len(agents_) - 1) for r in rows if r["kind"] == "agent")


def test_leaderboard_plot_keeps_its_titles_and_labels_inside_the_figure(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from agents.arena.leaderboard import leaderboard_plot as plot

    saved = []
    savefig = Figure.savefig

    def keep(fig, *args, **kwargs):
        saved.append(fig)
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)

    def rows(*names):
        return [{"agent": name, "elo": 100.0 * i, "elo_low": 100.0 * i - 50, "elo_high": 100.0 * i + 60}
                for i, name in enumerate(names)]

    for results in ({"gardner": rows("random", "runs/gardner-alphazero-a-long-run-name/final")},
                    {"3x3": rows("random", "greedy", "perfect"), "gardner": rows("random", "minimax-d2")},
                    {"3x3": rows("random")}):
        assert plot(results, str(tmp_path / "leaderboard.png"))
        fig = saved.pop()
        drawn = fig.get_tightbbox(FigureCanvasAgg(fig).get_renderer())  # inches; plot() closed the figure
        width, height = fig.get_size_inches()
        assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01 and drawn.x1 <= width + 0.01 and drawn.y1 <= height + 0.01, (
            drawn, (width, height), results)


def test_elo_against_fixed_ratings_matches_the_hand_computed_case():
    from agents.arena.ratings import elo_mle

    # 3 wins and 1 loss against a player held at 100: 100 + 400 log10(3)
    rating = elo_mle([("x", "level", 1.0)] * 3 + [("x", "level", 0.0)], anchor={"level": 100.0})["x"]
    assert abs(rating.elo - (100 + 400 * math.log10(3))) < 1e-6
    # 50% against each of two levels at 0 and 400: the expected scores must sum to the actual 2 of 4,
    # so by symmetry the rating is midway
    games = [("x", "a", 1.0), ("x", "a", 0.0), ("x", "b", 1.0), ("x", "b", 0.0)]
    both = elo_mle(games, anchor={"a": 0.0, "b": 400.0})
    assert abs(both["x"].elo - 200) < 1e-6 and both["a"].elo == 0 and both["b"].elo == 400
    assert both["x"].low < 200 < both["x"].high


@pytest.mark.parametrize("anchor", [613.0, 1350.0, 2391.0])
def test_elo_against_a_level_far_from_0_moves_with_the_anchor(anchor):
    """The model sees differences only: anchored at any Elo, a rating is the anchor-0 one shifted, even where the
    player won (or lost) every game and only the virtual draw keeps it finite."""
    from agents.arena.ratings import elo_mle

    for score in (1.0, 0.0, 0.5):
        games = [("x", "level", score)] * 100 + [("x", "level", 1.0)]
        at_0 = elo_mle(games, anchor={"level": 0.0}, prior_draws=1.0)["x"]
        shifted = elo_mle(games, anchor={"level": anchor}, prior_draws=1.0)["x"]
        assert np.allclose(shifted[:3], (at_0.elo + anchor, at_0.low + anchor, at_0.high + anchor), atol=1e-4)


def test_leaderboard_with_its_default_workers_and_a_trained_agent(tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch", reason="the trained agent is an AlphaZero network: needs torch")
    from agents.alphazero.search import SearchConfig
    from agents.alphazero.train import Config, train, with_changes, write_agent

    from experiments import leaderboard

    runs = tmp_path / "runs"
    config = with_changes(Config(), game="3x3", run_dir=str(runs / "az"), iterations=1, games_per_iteration=8,
                          search=SearchConfig(simulations=8, leaves_per_tree=2), blocks=1, channels=8, batch_size=32,
                          buffer_size=1000, threads=1)
    write_agent(config.run_dir, train(config, verbose=False), simulations=4)
    # The default is one worker per core; with one core there would be no worker processes to test.
    cores = max(2, os.cpu_count() or 1)
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    out = tmp_path / "out"
    leaderboard.main(["--preset", "quick", "--variant", "3x3", "--runs", str(runs), "--out", str(out)])
    assert f"workers: {cores}" in capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text())))
    zoo_agents = {f"zoo:{name}" + ":casual" * bool(zoo.card(name).casual)  # they enter by default, casual
                  for name in zoo.names() if zoo.card(name).game == "3x3"}
    players = {"random", "greedy", "minimax-d1", "perfect", "az/agent"} | zoo_agents
    assert {r["agent"] for r in rows if r["kind"] == "agent"} == players
    pgn = (out / "games.pgn").read_text()
    assert pgn.count("[Event ") == len(players) * (len(players) - 1) // 2 * 2 and "illegal" not in pgn.lower()


# -- board games: the same arena, in lockstep -----------------------------------------------


def first_column(game):
    """A function ``position -> move``; in a board game the position is the game itself."""
    return game.legal_actions()[0]


def test_board_game_matches_score_by_the_rules():
    from agents import CallableAgent

    # the leftmost free column for both: columns 0, 1, 2 fill with alternating marks, and the first
    # player's 10th stone, at the bottom of column 3, completes the bottom row's four
    other = CallableAgent(first_column, "first column too")
    match = play_match(first_column, other, "connect_four", 3, seats="first")
    t = match.tally()
    assert (t.wins, t.draws, t.losses, match.distinct) == (3, 0, 0, 1)
    g = match.games[0]
    assert (g.game, g.white, g.result, g.termination, g.plies, g.moves) == (
        "connect_four", "first_column", "1-0", "win", 19, ("a",) * 6 + ("b",) * 6 + ("c",) * 6 + ("d",))
    assert (g.start_fen, g.pgn) == (None, None) and match.row()["player moves"] == "first"
    match = play_match(first_column, other, "connect_four", 3, seats="second")
    t = match.tally()
    assert (t.wins, t.losses) == (0, 3) and t.rate_interval("wins")[1] < 0.6
    assert match.tally(color="first").games == 0 and match.tally(color="second").games == 3


def test_games_that_end_alike_by_other_moves_are_distinct():
    from agents import CallableAgent

    def script(cells, name):  # the first of ``cells`` still free
        return CallableAgent(lambda game: next(c for c in cells if c in game.legal_actions()), name)

    # X takes the top row while O takes two cells of the middle row, in two orders: one final board, two games
    one = play_game(script([0, 1, 2], "x"), script([3, 4], "o"), "tictactoe")
    other = play_game(script([1, 0, 2], "x"), script([4, 3], "o"), "tictactoe")
    assert one.final == other.final and one.moves != other.moves and one.result == "1-0"
    assert MatchResult("x", "o", [one, other, one]).distinct == 2


def test_board_game_records_replay_in_pettingzoo_to_the_same_result():
    from boards import pettingzoo_env

    for game in ("tictactoe", "connect_four"):
        match = play_match(RandomAgent(1), RandomAgent(2), game, 30, names=("one", "two"))
        assert [g.white for g in match.games] == ["one", "two"] * 15  # seats alternate by default
        for g in match.games:
            env = pettingzoo_env(game)  # PettingZoo's own rules, independent of ours
            ours = new_game(game)  # reads the recorded move names back into actions
            for move in g.moves:
                assert not any(env.terminations.values())
                action = legal_action(ours, move)
                ours.step(action)
                env.step(action)
            assert all(env.terminations.values())
            first_reward = env.rewards[env.possible_agents[0]]
            assert {1: "1-0", 0: "1/2-1/2", -1: "0-1"}[first_reward] == g.result
            assert g.termination == ("draw" if first_reward == 0 else "win")
        assert 10 < match.distinct <= 30  # random games rarely repeat


def test_a_board_game_match_asks_each_player_once_a_round():
    from agents.games import TicTacToe

    class Counting(RandomAgent):
        name = "counting"

        def __init__(self, seed):
            super().__init__(seed)
            self.batches = []

        def act_batch(self, observations, action_masks, positions=None):
            assert all(isinstance(p, TicTacToe) for p in positions)  # the games themselves (copies)
            self.batches.append(len(positions))
            return super().act_batch(observations, action_masks, positions)

    counting = Counting(1)
    done = []
    match = play_match(counting, RandomAgent(2), "tictactoe", LOCKSTEP_GAMES, seats="first",
                       progress=lambda record, n, total: done.append((n, total)))
    games = match.games
    assert len(games) == LOCKSTEP_GAMES and done == [(n, LOCKSTEP_GAMES) for n in range(1, LOCKSTEP_GAMES + 1)]
    # X moves at most 5 times: one batched call for all the games each time
    assert len(counting.batches) <= 5 and sum(counting.batches) == sum((g.plies + 1) // 2 for g in games)
    counting.batches = []
    games = play_match(counting, RandomAgent(2), "tictactoe", LOCKSTEP_GAMES + 8, seats="first").games
    # more games than are played at once: a finished game's place is taken by the next
    assert counting.batches[0] == LOCKSTEP_GAMES and max(counting.batches) == LOCKSTEP_GAMES
    assert sum(counting.batches) == sum((g.plies + 1) // 2 for g in games) and len(counting.batches) < 10
    counting.batches = []
    play_match(counting, RandomAgent(2), "tictactoe", 4, lockstep=False)  # one by one: act, never act_batch
    assert counting.batches == []


def test_in_lockstep_a_player_that_does_not_batch_plays_its_games_as_one_by_one():
    # seeded random players: each game gets its own copy, reset with the game's seed
    for game in ("connect_four", "gardner"):
        options = dict(games=LOCKSTEP_GAMES + 6, seed=3, names=("one", "two"))
        one_by_one = play_match(RandomAgent(1), RandomAgent(2), game, lockstep=False, **options)
        lockstep = play_match(RandomAgent(1), RandomAgent(2), game, lockstep=True, **options)
        assert [g.moves for g in lockstep.games] == [g.moves for g in one_by_one.games]
        assert lockstep.distinct > LOCKSTEP_GAMES


@pytest.mark.skipif(not shutil.which("fairy-stockfish") and not os.path.exists("/usr/games/fairy-stockfish"),
                    reason="fairy-stockfish not installed (apt install fairy-stockfish)")
def test_in_lockstep_each_game_has_an_engine_of_its_own():
    from agents import UCIEngineAgent
    from agents.arena.ladder import Ladder

    class FirstLegal(RandomAgent):  # batches, and chooses deterministically
        name = "first legal"

        def act(self, observation, action_mask, position=None):
            return int(np.flatnonzero(action_mask)[0])

        def act_batch(self, observations, action_masks, positions=None):
            return np.array([self.act(None, m) for m in action_masks])

    openings = [o.fen for o in Ladder.load("gardner").openings[:3]]
    results = []
    for lockstep in (False, True):
        engine = UCIEngineAgent("gardner", nodes=50)
        try:
            results.append(play_match(FirstLegal(0), engine, "gardner", 6, openings=openings, lockstep=lockstep))
        finally:
            engine.close()
    # one by one the engine clears its hash for each game; in lockstep each game's copy starts its own process
    assert [g.pgn for g in results[1].games] == [g.pgn for g in results[0].games]
    assert results[0].tally().losses == 6


def test_workers_share_a_lockstep_match_in_parts():
    from agents.games.tictactoe import TicTacToeSolver, solve_tictactoe

    solver, options = TicTacToeSolver(solve_tictactoe(), seed=1), dict(opening_plies=1, names=("solver", "random"))
    one = play_match(solver, RandomAgent(2), "tictactoe", 24, 5, **options)
    done = []
    two = play_match(solver, RandomAgent(2), "tictactoe", 24, 5, workers=2,
                     progress=lambda record, n, total: done.append(n), **options)
    assert done == list(range(1, 25))
    # each game as one process plays it: its seats and its seeded opening (one random ply: the game stays drawn)
    assert [(g.white, g.round, g.moves[0]) for g in two.games] == [(g.white, g.round, g.moves[0]) for g in one.games]
    assert two.tally("solver").losses == 0 and two.distinct > 12


def test_solvers_play_perfectly_in_the_arena():
    from agents.games.tictactoe import TicTacToeSolver, solve_tictactoe

    table = solve_tictactoe()
    a, b = TicTacToeSolver(table, seed=1), TicTacToeSolver(table, seed=2)
    assert play_match(a, b, "tictactoe", 20, names=("a", "b")).tally().draws == 20  # perfect play draws
    for seats in ("first", "second"):
        assert play_match(a, RandomAgent(3), "tictactoe", 40, seats=seats).tally().losses == 0
    pytest.importorskip("bitbully")
    from agents.games.connect_four import ConnectFourAlphaBeta, ConnectFourSolver

    # Connect Four is a first-player win: the solver moving first wins every game
    match = play_match(ConnectFourSolver(seed=0), ConnectFourAlphaBeta(2, seed=1), "connect_four", 2, seats="first")
    assert match.tally().wins == 2


def test_illegal_board_game_moves_raise_or_forfeit():
    def bad(game):
        return 9  # no square 9 in Tic-Tac-Toe

    with pytest.raises(IllegalMoveError, match=r"bad \(second\) chose illegal action 9 in TicTacToe\("):
        play_match(RandomAgent(0), bad, "tictactoe", 2, seats="first")
    match = play_match(RandomAgent(0), bad, "tictactoe", 4, illegal="forfeit")
    assert [g.termination for g in match.games] == [ILLEGAL_MOVE] * 4 and match.tally().wins == 4
    with pytest.raises(ValueError, match="empty board"):
        play_game(RandomAgent(0), bad, "tictactoe", ply_limit=3)


def test_chess_in_lockstep_plays_the_games_one_by_one_would(tmp_path):
    chess_pgn = pytest.importorskip("chess.pgn")

    def lowest(position):
        return position.legal_actions()[0]

    def highest(position):
        return position.legal_actions()[-1]

    options = {"games": 4, "seed": 5, "opening_plies": 3, "ply_limit": 60}
    one_by_one = play_match(lowest, highest, "chess", lockstep=False, **options)
    lockstep = play_match(lowest, highest, "chess", lockstep=True, **options)
    assert [g.pgn for g in lockstep.games] == [g.pgn for g in one_by_one.games]
    path = tmp_path / "lockstep.pgn"
    write_pgn(lockstep.games, str(path))
    with open(path) as f:
        for record in lockstep.games:
            game = chess_pgn.read_game(f)  # python-chess replays every move by its own rules
            assert not game.errors and [m.uci() for m in game.mainline_moves()] == list(record.moves)
            assert game.end().board().fen().split()[:4] == record.final.split()[:4]
