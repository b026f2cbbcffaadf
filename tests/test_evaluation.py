"""Batched evaluation against the environments' random player."""

from __future__ import annotations

import numpy as np
import pytest

from agents import MinimaxAgent, RandomAgent
from agents.arena.evaluation import versus_random
from minichess_envs.engine import BLACK, Position
from minichess_envs.env import MiniChessEnv


def test_games_are_the_single_env_episodes_with_the_same_seeds():
    """Game i of versus_random is MiniChessEnv's episode seeded seed + i, for the same agent."""
    def first_capture_or_move(position):  # deterministic, so both runs see the same games
        moves = position.legal_moves
        return next((m for m in moves if position.is_capture(m)), moves[0])

    match = versus_random(first_capture_or_move, "gardner", games=12, color="black", seed=40, batch=5)
    wins = draws = losses = 0
    plies = []
    for i in range(12):
        env = MiniChessEnv("gardner", agent_color="black", ply_limit=200)
        obs, _ = env.reset(seed=40 + i)
        done = False
        while not done:
            action = env.position.move_to_action(first_capture_or_move(env.position))
            obs, reward, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
        wins, draws, losses = wins + (reward > 0), draws + (reward == 0), losses + (reward < 0)
        plies.append(env.position.ply)
    assert (match.wins, match.draws, match.losses) == (wins, draws, losses)
    assert match.mean_plies == pytest.approx(np.mean(plies))


def test_counts_rates_and_intervals():
    match = versus_random(RandomAgent(seed=1), "gardner-kingcapture", games=300, color="white", seed=0)
    assert match.games == 300 and match.wins + match.draws + match.losses == 300
    assert 0.35 < match.win_rate < 0.65  # random against random: about even
    lo, hi = match.win_interval
    assert lo < match.win_rate < hi
    assert match.score == pytest.approx((match.wins + 0.5 * match.draws) / 300)
    again = versus_random(RandomAgent(seed=1), "gardner-kingcapture", games=300, color="white", seed=0)
    assert again == match
    strong = versus_random(MinimaxAgent(depth=2, seed=0), "gardner", games=40, color="white", seed=1)
    assert strong.win_rate > 0.9 and "as white" in str(strong)


def test_bad_input():
    with pytest.raises(ValueError, match="color"):
        versus_random(RandomAgent(), "gardner", games=2, color="red")

    class Cheater:
        name = "cheater"

        def act(self, observation, action_mask, position=None):
            return int(np.flatnonzero(action_mask == 0)[0])

    with pytest.raises(ValueError, match="cheater chose illegal action"):
        versus_random(Cheater(), "gardner", games=2)


def test_visited_positions_are_the_agents_own_turns_in_order():
    visited = []
    match = versus_random(RandomAgent(seed=4), "gardner", games=6, color="black", seed=9, visited=visited)
    assert len(visited) == 6
    rewards = [reward for _, reward in visited]
    assert (rewards.count(1), rewards.count(0), rewards.count(-1)) == (match.wins, match.draws, match.losses)
    for fens, _ in visited:
        assert all(Position("gardner", fen).turn == BLACK for fen in fens)
        assert fens[0] in successors(Position("gardner"))  # the first is after White's first move
        for before, after in zip(fens, fens[1:]):  # the agent's move, then the opponent's reply
            assert after in {fen for child in successors(Position("gardner", before), fens=False)
                             for fen in successors(child)}


def successors(position, fens=True):
    children = []
    for action in position.legal_actions():
        child = position.copy()
        child.push_action(int(action))
        children.append(child.fen() if fens else child)
    return children
