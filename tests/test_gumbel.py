"""Gumbel AlphaZero at the root of the C search (SearchConfig(root="gumbel"))."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

pytest.importorskip("torch", reason="AlphaZero needs torch: pip install -e '.[agents]'")

import agents  # noqa: E402
from agents.alphazero.agent import AlphaZeroAgent  # noqa: E402
from agents.alphazero.search import SearchConfig, UniformEvaluator, search  # noqa: E402
from agents.games.chess import chess_games  # noqa: E402
from agents.alphazero.train import train, write_agent  # noqa: E402
from minichess_envs import Position, _core  # noqa: E402
from minichess_envs.encoding import ObservationEncoding  # noqa: E402
from minichess_envs.positions import random_walk_positions  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from test_alphazero import mates_in, tiny_config  # noqa: E402

GARDNER = ObservationEncoding("gardner", 1, False)


class BanditEvaluator:
    """Every root move of a position is an arm with a known value for the side to move at the root.

    The positions one and two plies below the root get that value (negated where
    the opponent is to move), so with ``discount=1`` each arm's Q is exactly its
    value however deep the search goes (up to two plies). The root's priors are
    ``root_priors``; other priors are uniform. Deeper positions get value 0,
    counted in ``unknown``.
    """

    def __init__(self, root: Position, arm_values: dict[int, float], root_priors: dict[int, float]):
        self.table = {GARDNER.encode(root).tobytes(): (root_priors, 0.0)}
        self.unknown = 0
        for action, value in arm_values.items():
            child = root.copy()
            child.push_action(action)
            self.table[GARDNER.encode(child).tobytes()] = (None, -value)
            for reply in child.legal_actions():
                grandchild = child.copy()
                grandchild.push_action(reply)
                self.table[GARDNER.encode(grandchild).tobytes()] = (None, value)

    def __call__(self, observations, masks, keys):
        priors = masks.astype(np.float32)
        priors /= priors.sum(1, keepdims=True)
        values = np.zeros(len(masks), np.float32)
        for j, obs in enumerate(observations):
            root_priors, values[j] = self.table.get(obs.tobytes(), (None, 0.0))
            self.unknown += obs.tobytes() not in self.table
            if root_priors is not None:
                priors[j] = 0.0
                for action, p in root_priors.items():
                    priors[j, action] = p
        return priors, values


@pytest.mark.parametrize("simulations", [8, 16])
def test_gumbel_finds_the_best_arm_of_a_bandit_where_puct_may_not(simulations):
    root = Position("gardner")
    legal = root.legal_actions()
    rng = np.random.default_rng(1)
    puct_right = 0
    for trial in range(20):
        values = rng.permutation(np.linspace(-0.6, 0.6, len(legal)))
        arms = dict(zip(legal, values.tolist()))
        best = max(arms, key=arms.get)
        # misleading priors: the better the arm, the less likely the network thinks it is
        order = sorted(legal, key=arms.get)
        weights = np.geomspace(1.0, 0.01, len(legal))
        priors = dict(zip(order, (weights / weights.sum()).tolist()))
        evaluator = BanditEvaluator(root, arms, priors)
        for leaves in (1, 4):
            config = SearchConfig(simulations=simulations, leaves_per_tree=leaves, discount=1.0, root="gumbel")
            result = search(chess_games([root], GARDNER), evaluator, config)
            assert int(result.actions[0]) == best, (trial, leaves, arms)
            assert int(result.policy[0].argmax()) == best
            visited = np.flatnonzero(result.visits[0])
            np.testing.assert_allclose(result.q[0, visited], [arms[a] for a in visited], atol=1e-6)
            assert evaluator.unknown == 0
        puct = search(chess_games([root], GARDNER), evaluator, SearchConfig(simulations=simulations, discount=1.0))
        puct_right += int(puct.actions[0]) == best
    assert puct_right < 20  # the bandit is not trivial: PUCT misses the best arm at this budget


def test_gumbel_root_visits_follow_sequential_halving():
    # 7 arms, all considered (ceil(log2 7) = 3); 15 simulations after the root's (mctx's schedule):
    # one visit each, then the best 3 (7 // 2) get 15 // (3 * 3) = 1 round, the best 2 get
    # 15 // (3 * 2) = 2 rounds, and the best the one simulation left.
    root = Position("gardner")
    legal = root.legal_actions()
    arms = dict(zip(legal, np.linspace(-0.6, 0.6, len(legal)).tolist()))
    evaluator = BanditEvaluator(root, arms, {a: 1 / len(legal) for a in legal})
    ranked = sorted(legal, key=arms.get, reverse=True)
    for leaves in (1, 4):
        config = SearchConfig(simulations=16, discount=1.0, root="gumbel", leaves_per_tree=leaves)
        result = search(chess_games([root], GARDNER), evaluator, config)
        assert [int(result.visits[0, a]) for a in ranked] == [5, 4, 2, 1, 1, 1, 1]


def random_positions(count: int, seed: int) -> list[Position]:
    return random_walk_positions("gardner", count, np.random.default_rng(seed), max_plies=30)


class HashEvaluator:
    """Deterministic pseudo-random priors and values from the observation key (a stand-in network)."""

    def __call__(self, observations, masks, keys):
        priors = np.zeros(masks.shape, np.float32)
        values = np.zeros(len(masks), np.float32)
        for j, key in enumerate(keys):
            rng = np.random.default_rng(int(key))
            logits = rng.normal(0.0, 2.0, masks.shape[1])
            p = np.where(masks[j] > 0, np.exp(logits - logits.max()), 0.0)
            priors[j] = p / p.sum()
            values[j] = np.tanh(rng.normal())
        return priors, values


def completed_q_policy(prior, value, visits, q, c_visit=50.0, c_scale=1.0):
    """The paper's improved policy, from the root's statistics: softmax(log P + sigma(completed Q))."""
    legal = prior > 0
    seen = visits > 0
    mixed = value
    if seen.any():
        weighted = (prior[seen] * q[seen]).sum() / prior[seen].sum()
        mixed = (value + visits.sum() * weighted) / (visits.sum() + 1)
    completed = np.where(seen, q, mixed)
    sigma = (c_visit + visits.max()) * c_scale * (completed + 1) / 2
    z = np.where(legal, np.log(np.where(legal, prior, 1.0)) + sigma, -np.inf)
    return np.exp(z - z.max()) / np.exp(z - z.max()).sum()


def test_completed_q_policy_sums_to_one_over_the_legal_moves():
    positions = random_positions(60, seed=3)
    evaluator = HashEvaluator()
    config = SearchConfig(simulations=24, root="gumbel", gumbel_considered=8)
    result = search(chess_games(positions, GARDNER), evaluator, config, rng=np.random.default_rng(0))
    for i, pos in enumerate(positions):
        mask = pos.action_mask().astype(bool)
        policy = result.policy[i]
        assert abs(policy.sum() - 1.0) < 1e-5 and (policy[~mask] == 0).all() and (policy[mask] > 0).all()
        assert mask[result.actions[i]] and result.visits[i, result.actions[i]] == result.visits[i].max()
        assert result.visits[i].sum() == config.simulations - 1 and (result.visits[i] > 0).sum() <= 8
        # the same policy computed here from the root's statistics and the evaluator's answer at the root
        obs, masks = GARDNER.encode(pos)[None], pos.action_mask()[None]
        tree = _core.Search(pos.rules, 1, root="gumbel")
        tree.set_root(0, pos)
        keys = np.zeros(1, np.uint64)
        tree.select(1, 2, np.zeros_like(obs), np.zeros_like(masks), keys)
        prior, value = evaluator(obs, masks, keys)
        expected = completed_q_policy(prior[0].astype(np.float64), float(value[0]), result.visits[i].astype(np.float64),
                                      result.q[i].astype(np.float64))
        np.testing.assert_allclose(policy, expected, atol=2e-5)


def gumbel_move(fen: str, variant: str, simulations: int, leaves: int = 4) -> str:
    pos = Position(variant, fen)
    config = SearchConfig(simulations=simulations, root="gumbel", leaves_per_tree=leaves)
    result = search(chess_games([pos], ObservationEncoding(variant, 1, False)), UniformEvaluator(), config)
    return pos.action_to_move(int(result.actions[0])).uci()


@pytest.mark.parametrize("variant, fen, plies, simulations", [
    ("3x3", "r1k/QRq/K2 b - - 0 1", 1, 16),  # Qxb2 mates; Rxa2 wins more slowly
    ("3x3", "kqr/2Q/KR1 w - - 0 1", 3, 64),  # only Rxb3 wins: mate in 2
    ("gardner", "r1b1k/pp1pp/n1NP1/Pq3/R1BKQ b - - 3 7", 1, 32),
    ("gardner", "rnbq1/1pNkp/1p1P1/P1p1P/1RBQK w - - 0 7", 3, 400),
])
def test_gumbel_with_uniform_priors_finds_the_fastest_mate(variant, fen, plies, simulations):
    pos = Position(variant, fen)
    expected = mates_in(pos, plies)
    assert expected and (plies == 1 or not mates_in(pos, 1))
    for leaves in (1, 4):
        assert gumbel_move(fen, variant, simulations, leaves) in expected


def test_gumbel_search_is_deterministic_for_a_seed():
    positions = random_positions(12, seed=5)
    config = SearchConfig(simulations=16, root="gumbel", gumbel_considered=4)

    def run(rng):
        r = search(chess_games(positions, GARDNER), HashEvaluator(), config, rng=rng)
        return r.visits, r.policy, r.actions

    a, b = run(np.random.default_rng(7)), run(np.random.default_rng(7))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    other = run(np.random.default_rng(8))
    assert not np.array_equal(a[2], other[2])  # the noise changes which moves are sampled
    plain, again = run(None), run(None)  # no noise: evaluation play, the same every time
    for x, y in zip(plain, again):
        np.testing.assert_array_equal(x, y)


def test_gumbel_batches_distinct_leaves():
    pos = Position("gardner")
    tree = _core.Search(pos.rules, 1, root="gumbel", considered=16)
    tree.set_root(0, pos)
    obs = np.zeros((8, *GARDNER.shape), np.float32)
    masks = np.zeros((8, 1225), np.int8)
    keys = np.zeros(8, np.uint64)
    assert tree.select(8, 64, obs, masks, keys) == 1  # the root alone
    tree.backup(np.full((1, 1225), 1.0, np.float32), np.zeros(1, np.float32))
    n = tree.select(8, 64, obs, masks, keys)
    assert n == 7 and len(set(keys[:n].tolist())) == 7  # one leaf per root move: Gumbel-top-k of all 7
    tree.backup(np.full((n, 1225), 1.0, np.float32), np.zeros(n, np.float32))
    n = tree.select(8, 64, obs, masks, keys)
    assert n > 1 and len(set(keys[:n].tolist())) == n


def test_gumbel_settings_are_checked():
    for bad in ({"root": "ucb"}, {"gumbel_considered": 0}, {"gumbel_considered": 2.5}, {"c_visit": -1.0},
                {"c_scale": float("nan")}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            SearchConfig(**bad)
    pos = Position("gardner")
    with pytest.raises(ValueError, match="root must be"):
        _core.Search(pos.rules, 1, root="ucb")
    with pytest.raises(ValueError, match="considered"):
        _core.Search(pos.rules, 1, root="gumbel", considered=0)
    with pytest.raises(RuntimeError, match="gumbel"):
        _core.Search(pos.rules, 1).set_gumbel(np.zeros((1, 1225), np.float32))
    tree = _core.Search(pos.rules, 1, root="gumbel")
    with pytest.raises(ValueError, match="noise"):
        tree.set_gumbel(np.zeros((2, 1225), np.float32))


def test_gumbel_training_runs_resumes_and_its_agent_plays(tmp_path):
    search = SearchConfig(simulations=16, leaves_per_tree=2, root="gumbel", gumbel_considered=4)
    straight = train(tiny_config(tmp_path / "a", iterations=2, search=search), verbose=False)
    train(tiny_config(tmp_path / "b", iterations=1, search=search), verbose=False)
    resumed = train(tiny_config(tmp_path / "b", iterations=2, search=search), resume=True, verbose=False)
    for name, tensor in straight["model"].items():
        assert (tensor == resumed["model"][name]).all(), name
    assert [m["samples"] for m in resumed["metrics"]] == [m["samples"] for m in straight["metrics"]]

    path = write_agent(str(tmp_path / "a"), straight, simulations=8)
    agent = agents.load(path)
    assert isinstance(agent, AlphaZeroAgent) and agent.search.root == "gumbel"
    pos = Position("3x3")
    assert agent.act(None, pos.action_mask(), pos) in pos.legal_actions()
    top = agent.analyse(pos)["moves"][0]["action"]
    assert top == agent.act(None, pos.action_mask(), pos)

    # a manifest written before the Gumbel settings existed still loads, as PUCT
    manifest = os.path.join(path, "agent.json")
    data = json.load(open(manifest))
    for key in ("root", "gumbel_considered", "c_visit", "c_scale"):
        del data["settings"]["search"][key]
    json.dump(data, open(manifest, "w"))
    assert agents.load(path).search.root == "puct"
    data["settings"]["search"]["root"] = "ucb"
    json.dump(data, open(manifest, "w"))
    with pytest.raises(ValueError, match="agent.json.*root"):
        agents.load(path)
