"""Agent specs: one normalisation and one limit check, shared by the web app, the command line and the leaderboard."""

from __future__ import annotations

import pytest

from agents import MinimaxAgent, RandomAgent
from agents.spec import LOCAL_LIMITS, SERVER_LIMITS, SpecLimits, check_limits, from_spec, parse_spec


@pytest.mark.parametrize("spec, normal", [
    ("minimax:3", "minimax:3"), ("MINIMAX:3", "minimax:3"), (" minimax:3 ", "minimax:3"), ("Minimax : 03", "minimax:3"),
    ("minimax", "minimax"), ("Random", "random"), ("\tGREEDY\n", "greedy"), ("Fairy-Stockfish:100", "fairy-stockfish:100"),
    ("runs/My Agent", "runs/My Agent"),  # a path keeps its case: file names are case-sensitive
])
def test_specs_are_normalised(spec, normal):
    assert parse_spec(spec) == normal


@pytest.mark.parametrize("spec", ["MINIMAX:9", " minimax:9", "Minimax:12", "minimax:5", "minimax:0009"])
def test_the_server_depth_limit_holds_whatever_the_spelling(spec):
    with pytest.raises(ValueError, match=r"minimax depth \d+ is more than this server allows \(4\)"):
        check_limits(spec, SERVER_LIMITS)
    with pytest.raises(ValueError, match="more than this server allows"):
        from_spec(spec, "gardner", allow_paths=False, limits=SERVER_LIMITS)


@pytest.mark.parametrize("spec", ["Fairy-Stockfish:2000000000", "STOCKFISH:1000001", " fairy-stockfish:10000000 "])
def test_the_server_node_limit_holds_whatever_the_spelling(spec):
    with pytest.raises(ValueError, match=r"nodes is more than this server allows \(1,000,000\)"):
        check_limits(spec, SERVER_LIMITS)


def test_limits_allow_up_to_the_bound_and_none_means_no_bound():
    assert check_limits("MINIMAX:4", SERVER_LIMITS) == "minimax:4"
    assert check_limits("fairy-stockfish:1000000", SERVER_LIMITS) == "fairy-stockfish:1000000"
    assert check_limits("minimax:50", None) == "minimax:50"
    assert check_limits("minimax:50", SpecLimits(nodes=10)) == "minimax:50"  # no depth bound given
    with pytest.raises(ValueError, match="more than the command line allows"):
        check_limits("minimax:99", LOCAL_LIMITS)


@pytest.mark.parametrize("spec", ["minimax:²", "minimax:٣", "minimax:-1", "minimax:0", "minimax:1.5", "minimax:x",
                                  "minimax:" + "9" * 5000, "stockfish:" + "1" * 13])
def test_bad_numbers_are_value_errors_that_stay_short(spec):
    with pytest.raises(ValueError, match="must be a positive integer") as info:
        parse_spec(spec)
    assert len(str(info.value)) < 200


@pytest.mark.parametrize("spec", ["", "   ", None, 5, b"random"])
def test_non_specs_are_refused(spec):
    with pytest.raises(ValueError, match="non-empty string"):
        parse_spec(spec)


def test_from_spec_builds_from_the_normal_form():
    agent = from_spec(" MiniMax:3 ", "gardner", seed=1)
    assert isinstance(agent, MinimaxAgent) and agent.depth == 3
    assert isinstance(from_spec("RANDOM", "gardner"), RandomAgent)
    with pytest.raises(ValueError, match="unknown agent"):
        from_spec("random:3", "gardner", allow_paths=False)


def test_board_games_have_their_own_forms():
    from agents.games.checkers import CheckersAlphaBeta
    from agents.games.gomoku import GomokuSolver
    from agents.games.tictactoe import TicTacToeSolver

    assert isinstance(from_spec("Alpha-Beta:3", "checkers"), CheckersAlphaBeta)
    assert from_spec("alpha-beta", "checkers").depth == 2  # the default depth, as minimax's
    assert isinstance(from_spec("perfect", "tictactoe"), TicTacToeSolver)
    assert isinstance(from_spec("perfect", "gomoku4k4"), GomokuSolver)
    assert isinstance(from_spec("random", "gomoku"), RandomAgent)
    for spec, game, message in [
            ("minimax:2", "checkers", "'minimax' plays chess variants, not checkers"),
            ("alpha-beta:2", "gardner", "'alpha-beta' plays board games, not the chess variant 'gardner'"),
            ("perfect", "checkers", "checkers has no 'perfect' player"),
            ("alpha-beta", "tictactoe", "tictactoe has no 'alpha-beta' player"),
            ("perfect", "gomoku", "the exact solver does not finish on 9x9"),
            ("openspiel-mcts", "connect_four", "not connect_four"),
            ("nonsense", "checkers", "unknown agent 'nonsense' for checkers")]:
        with pytest.raises(ValueError, match=message):
            from_spec(spec, game, allow_paths=False)
    with pytest.raises(ValueError, match=r"alpha-beta depth 5 is more than this server allows \(4\)"):
        from_spec("alpha-beta:5", "checkers", limits=SERVER_LIMITS)
    with pytest.raises(ValueError, match=r"2,001 simulations is more than this server allows"):
        check_limits("OpenSpiel-MCTS:2001", SERVER_LIMITS)


def test_a_saved_agent_of_another_game_is_refused(tmp_path):
    pytest.importorskip("torch", reason="a saved network agent needs the agents extra")
    from agents.alphazero.agent import AlphaZeroAgent
    from agents.alphazero.train import Config, make_net, with_changes
    from agents.spec import load_for_game

    config = with_changes(Config(), game="connect_four", blocks=1, channels=8, policy_channels=2)
    AlphaZeroAgent(make_net(config), "connect_four", simulations=2).save(str(tmp_path / "c4"))
    assert from_spec(str(tmp_path / "c4"), "connect_four").game == "connect_four"
    with pytest.raises(ValueError, match="plays 'connect_four', not 'tictactoe'"):
        from_spec(str(tmp_path / "c4"), "tictactoe")
    with pytest.raises(ValueError, match="plays 'connect_four', not 'gardner'"):
        load_for_game(str(tmp_path / "c4"), "gardner")
