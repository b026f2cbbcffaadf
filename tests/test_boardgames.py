"""AlphaZero on PettingZoo board games: the game adapters, the generic search, the judges, training."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.alphazero.game import AECGame, ChessGame, ConnectFour, TicTacToe, pettingzoo_env, play
from agents.alphazero.generic_search import run_game_search
from agents.alphazero.mcts import NetworkEvaluator, SearchConfig, UniformEvaluator, run_search
from agents.alphazero.network import NetConfig, PolicyValueNet
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import Position

# -- one search algorithm: the generic Python search equals the C search -------------


def _positions(variant: str, plies: int, seed: int) -> list[Position]:
    rng = np.random.default_rng(seed)
    p = Position(variant)
    out = [p.copy()]
    for _ in range(plies):
        p.push_action(int(rng.choice(p.legal_actions())))
        if p.is_game_over():
            break
        out.append(p.copy())
    return out


@pytest.mark.parametrize("variant, settings, noise_seed", [
    ("3x3", dict(simulations=48, leaves_per_tree=4), 7),
    ("3x3", dict(simulations=48, leaves_per_tree=1, fpu=-0.5, discount=0.9, c_puct=2.5), None),
    ("gardner", dict(simulations=32, leaves_per_tree=8), 3),
])
def test_generic_search_gives_the_c_search_visit_counts_on_chess(variant, settings, noise_seed):
    """Same network, noise and settings: identical visit counts and Q values (float32, bit for bit),
    virtual-loss batches included, since both trees select, wait and back up in the same order."""
    encoding = ObservationEncoding(variant, 1, False)
    torch.manual_seed(0)
    net = PolicyValueNet(NetConfig(*encoding.shape, encoding.variant.num_actions, blocks=1, channels=8,
                                   policy_channels=2, value_hidden=8))
    positions = _positions(variant, 3, seed=1)
    config = SearchConfig(**settings)

    def rng():
        return None if noise_seed is None else np.random.default_rng(noise_seed)

    c_visits, c_q = run_search(positions, NetworkEvaluator(net), config, encoding, rng=rng())
    py_visits, py_q = run_game_search([ChessGame(p, encoding) for p in positions], NetworkEvaluator(net), config,
                                      rng=rng())
    # the first simulation expands the root; the children hold all the others
    assert c_visits.sum(1).tolist() == [config.simulations - 1] * len(positions)
    np.testing.assert_array_equal(py_visits, c_visits)
    np.testing.assert_array_equal(py_q, c_q)
    assert (c_visits > 0).sum() > len(positions)  # the search spread its visits: the comparison is not trivial


# -- the adapters play PettingZoo's games exactly ---------------------------------


def _winner_from_rewards(env) -> int | None:
    r = [env._cumulative_rewards[a] for a in env.possible_agents]
    return None if r[0] == r[1] else int(np.argmax(r))


@pytest.mark.parametrize("name, cls", [("tictactoe", TicTacToe), ("connect_four", ConnectFour)])
def test_board_adapters_match_pettingzoo_on_random_games(name, cls):
    rng = np.random.default_rng(0)
    for _ in range(60 if name == "tictactoe" else 25):
        env = pettingzoo_env(name)
        ours = cls()
        generic = AECGame(pettingzoo_env(name))
        while True:
            agent = env.agent_selection
            observed = env.observe(agent)
            over = any(env.terminations.values())
            assert ours.is_over() == over == generic.is_over()
            assert env.possible_agents.index(agent) == ours.to_play() == generic.to_play()
            np.testing.assert_array_equal(ours.observation(), observed["observation"].astype(np.float32))
            np.testing.assert_array_equal(generic.observation(), observed["observation"].astype(np.float32))
            if over:
                assert ours.winner() == _winner_from_rewards(env) == generic.winner()
                assert ours.legal_actions() == [] and not ours.legal_mask().any()
                break
            np.testing.assert_array_equal(ours.legal_mask(), observed["action_mask"])
            np.testing.assert_array_equal(generic.legal_mask(), observed["action_mask"])
            action = int(rng.choice(np.flatnonzero(observed["action_mask"])))
            env.step(action)
            ours.step(action)
            generic.step(action)


def test_board_adapters_copy_independently_and_reject_illegal_actions():
    game = play(ConnectFour, [3, 3, 3])
    other = game.copy()
    other.step(3)
    assert game.board != other.board and game.key() != other.key() and game.to_play() == 1
    assert play(ConnectFour, [3]).key() == play(ConnectFour, [3]).key()
    full = play(ConnectFour, [0] * 6)
    with pytest.raises(ValueError, match="illegal Connect Four action 0"):
        full.step(0)
    with pytest.raises(ValueError, match="illegal Tic-Tac-Toe action 9"):
        TicTacToe().step(9)
    won = play(TicTacToe, [0, 3, 1, 4, 2])
    assert won.is_over() and won.winner() == 0
    with pytest.raises(ValueError, match="the game is over"):
        won.step(5)


# -- the search on the board games --------------------------------------------------


def test_search_takes_the_win_in_one_and_blocks_the_loss_in_connect_four():
    config = SearchConfig(simulations=200, leaves_per_tree=4)
    # X has three in column 3 and moves: 3 wins at once (O threatens column 0 too)
    win = play(ConnectFour, [3, 0, 3, 0, 3, 0])
    # O to move; X holds columns 1, 2 and 4 of the bottom row: only column 3 stops the win
    block = play(ConnectFour, [1, 1, 2, 2, 4])
    visits, q = run_game_search([win, block], UniformEvaluator(), config)
    assert int(visits[0].argmax()) == 3 and q[0, 3] > 0.98
    assert int(visits[1].argmax()) == 3
    # the same with the generic PettingZoo adapter (deepcopy of the real env)
    env = pettingzoo_env("connect_four")
    for a in [3, 0, 3, 0, 3, 0]:
        env.step(a)
    visits, _ = run_game_search([AECGame(env)], UniformEvaluator(), SearchConfig(simulations=50))
    assert int(visits[0].argmax()) == 3


def test_search_in_tictactoe_blocks_and_takes_the_win_in_one():
    game = play(TicTacToe, [4, 0, 8, 2])  # X holds 4 and 8, O holds 0 and 2 and threatens 1: X must block at 1
    visits, _ = run_game_search([game], UniformEvaluator(), SearchConfig(simulations=400))
    assert int(visits[0].argmax()) == 1
    game = play(TicTacToe, [0, 3, 1, 4])  # X: 0, 1 -> X wins at 2
    visits, q = run_game_search([game], UniformEvaluator(), SearchConfig(simulations=100))
    assert int(visits[0].argmax()) == 2 and q[0, 2] > 0.98
