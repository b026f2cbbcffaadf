"""KataGo's options of the PUCT search: forced playouts and policy target pruning (Wu, 2019, section
3.2), and the move chosen by lower confidence bound."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from agents.alphazero.game import ChessGame
from agents.alphazero.generic_search import run_game_search, search_games
from agents.alphazero.mcts import SearchConfig, choose_actions, dirichlet_noise, prune_policy_target, search_positions
from minichess_envs import Position, _core
from minichess_envs.encoding import ObservationEncoding


def peaked_evaluator(observations, masks, keys):
    """Priors and values drawn from a hash of the observation: the same for both searches, and far
    from uniform (softmax of 3 * normal logits), so that some moves get few visits."""
    priors = np.zeros(masks.shape, np.float32)
    values = np.zeros(len(masks), np.float32)
    for j in range(len(masks)):
        rng = np.random.default_rng(zlib.crc32(observations[j].tobytes()))
        logits = np.where(masks[j] > 0, 3.0 * rng.standard_normal(masks.shape[1]), -np.inf)
        priors[j] = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        values[j] = rng.uniform(-0.6, 0.6)
    return priors, values


def _positions(variant: str, count: int, seed: int) -> list[Position]:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        p = Position(variant)
        for _ in range(int(rng.integers(0, 8))):
            p.push_action(int(rng.choice(p.legal_actions())))
            if p.is_game_over():
                break
        if not p.is_game_over():
            out.append(p)
    return out


def _root(search, A: int):
    visits, q, priors = (np.zeros((1, A), np.float32) for _ in range(3))
    search.root_stats(visits, q)
    search.root_priors(priors)
    return visits[0], q[0], priors[0]


@pytest.mark.parametrize("forced", [0.0, 2.0])
def test_a_visited_root_move_below_its_forced_count_is_searched_next(forced):
    """One simulation at a time: with forced playouts, whenever some visited root move has
    N * N < k * P * sum N, the next simulation goes to one of them; otherwise (and always with
    k = 0) to a move of the best PUCT score Q + c_puct * P * sqrt(N_root) / (1 + N)."""
    encoding = ObservationEncoding("gardner")
    A = encoding.variant.num_actions
    c_puct, simulations = 1.5, 300
    forced_steps = 0
    for position in _positions("gardner", 3, seed=2):
        search = _core.Search(encoding.variant.rules, 1, c_puct=c_puct, ply_limit=encoding.variant.ply_limit,
                              history=encoding.history, last_move=encoding.last_move, forced=forced)
        search.set_root(0, position)
        obs, masks, keys = np.zeros((1, *encoding.shape), np.float32), np.zeros((1, A), np.int8), np.zeros(1, np.uint64)
        rng = np.random.default_rng(0)
        while search.min_visits() < simulations:
            before, q, priors = _root(search, A)
            n = search.select(1, simulations, obs, masks, keys)
            search.backup(*peaked_evaluator(obs[:n], masks[:n], keys[:n]))
            if search.visits(0) == 1:  # the root was expanded: noise, as in self-play
                search.mix_root_noise(dirichlet_noise([position], 0.3, A, rng), 0.25)
                continue
            after, _, _ = _root(search, A)
            chosen = int(np.flatnonzero(after != before)[0])
            below = (before > 0) & (before * before < np.float32(forced) * priors * before.sum())
            if below.any():
                forced_steps += 1
                assert below[chosen], (before[below], chosen)
            else:
                legal = priors > 0
                score = np.where(before > 0, q, 0.0) + c_puct * priors * np.sqrt(before.sum() + 1) / (1 + before)
                assert score[chosen] >= score[legal].max() - 1e-5
    assert (forced_steps > 10) == (forced > 0)  # the forced rule was exercised (and only with k > 0)


@pytest.mark.parametrize("leaves_per_tree", [1, 4])
def test_the_python_twin_forces_the_same_playouts_as_the_c_search(leaves_per_tree):
    """Same evaluator, noise and settings: identical visit counts and Q values with forced playouts,
    which changed them."""
    encoding = ObservationEncoding("gardner")
    positions = _positions("gardner", 4, seed=1)

    def search(forced):
        config = SearchConfig(simulations=64, leaves_per_tree=leaves_per_tree, forced_playouts=forced)
        c = search_positions(positions, peaked_evaluator, config, encoding, rng=np.random.default_rng(3))
        py_visits, py_q = run_game_search([ChessGame(p, encoding) for p in positions], peaked_evaluator, config,
                                          rng=np.random.default_rng(3))
        np.testing.assert_array_equal(py_visits, c.visits)
        np.testing.assert_array_equal(py_q, c.q)
        return c

    plain, forced = search(0.0), search(2.0)
    assert not np.array_equal(plain.visits, forced.visits)


def test_policy_target_pruning_matches_a_hand_computed_case():
    """c_puct 1, k 2, 41 visits below the root (its own count 42, sqrt 6.4807). The best move (30
    visits, P 0.5, Q 0.2) scores 0.2 + 0.5 * 6.4807 / 31 = 0.30453. Move 1 (8 visits, P 0.2, Q 0.1)
    keeps the fewest visits that hold its score at or below that, ceil(0.2 * 6.4807 / 0.20453 - 1) = 6,
    as it may lose up to sqrt(2 * 0.2 * 41) = 4.05. Move 2 (2 visits) would keep ceil(0.072) = 1 and
    move 3 keeps its one visit: one visit or fewer is dropped. In the second row move 1's Q (0.35)
    beats the best score whatever its visits: it keeps all 8."""
    visits = np.array([[30, 8, 2, 1, 0], [30, 8, 2, 1, 0]], np.float32)
    priors = np.array([[0.5, 0.2, 0.1, 0.1, 0.1]] * 2, np.float32)
    q = np.array([[0.2, 0.1, -0.3, 0.0, 0.0], [0.2, 0.35, -0.3, 0.0, 0.0]], np.float32)
    target = prune_policy_target(visits, q, priors, c_puct=1.0, forced_playouts=2.0)
    np.testing.assert_allclose(target, [[30 / 36, 6 / 36, 0, 0, 0], [30 / 38, 8 / 38, 0, 0, 0]], rtol=1e-6)
    unsearched = prune_policy_target(np.zeros((1, 5), np.float32), q[:1], priors[:1], 1.0, 2.0)
    assert not unsearched.any()


def test_self_play_targets_are_pruned_and_searches_without_noise_are_not_forced():
    encoding = ObservationEncoding("gardner")
    positions = _positions("gardner", 6, seed=4)
    config = SearchConfig(simulations=64, forced_playouts=2.0)
    noisy = search_positions(positions, peaked_evaluator, config, encoding, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(noisy.policy, prune_policy_target(noisy.visits, noisy.q, noisy.priors, config.c_puct,
                                                                    config.forced_playouts))
    np.testing.assert_allclose(noisy.policy.sum(1), 1.0, rtol=1e-6)
    assert ((noisy.policy > 0) < (noisy.visits > 0)).any()  # some visited moves were pruned
    for rng, eps in ((None, 0.25), (np.random.default_rng(5), 0.0)):
        off = SearchConfig(simulations=64, dirichlet_epsilon=eps)
        on = SearchConfig(simulations=64, dirichlet_epsilon=eps, forced_playouts=2.0)
        a = search_positions(positions, peaked_evaluator, off, encoding,
                             rng=None if rng is None else np.random.default_rng(5))
        b = search_positions(positions, peaked_evaluator, on, encoding, rng=rng)
        np.testing.assert_array_equal(a.visits, b.visits)
        np.testing.assert_array_equal(a.policy, b.policy)


def test_the_lcb_choice_matches_a_hand_computed_case():
    """lcb_stdevs 5, lcb_min_share 0.15. Row 0: move 1 (400 visits, Q 0.5, mean square 0.34: variance
    (400 * 0.09 + 1) / 401 = 0.0923, bound 0.5 - 5 * sqrt(0.0923 / 400) = 0.4240) beats the most
    visited move 0 (900 visits, Q 0.3, mean square 0.18: variance (900 * 0.09 + 1) / 901 = 0.0910,
    bound 0.3 - 5 * 0.01006 = 0.2497); move 2 (Q 0.9) has 100 visits, under 0.15 * 900 = 135. Row 1:
    move 1 has only 3 visits and equal values (Q 0.6, variance 1 / 4): bound 0.6 - 5 * sqrt(0.25 / 3)
    = -0.843, so the most visited move (20 visits, Q 0.1, variance (20 * 0.01 + 1) / 21: bound
    0.1 - 5 * 0.0535 = -0.167) stays; with "visits" the most visited is played in both rows."""
    visits = np.array([[900, 400, 100], [20, 3, 0]], np.float32)
    q = np.array([[0.3, 0.5, 0.9], [0.1, 0.6, 0.0]], np.float32)
    squares = np.array([[0.18, 0.34, 0.82], [0.02, 0.36, 0.0]], np.float32)
    assert choose_actions(visits, q, squares, SearchConfig(move_choice="lcb")).tolist() == [1, 0]
    assert choose_actions(visits, q, squares, SearchConfig()).tolist() == [0, 0]
    assert choose_actions(visits, q, squares, SearchConfig(move_choice="lcb", lcb_min_share=0.1)).tolist() == [2, 0]


def test_both_searches_keep_the_same_value_squares_and_choose_the_same_moves():
    """The mean squared values behind the lcb choice: bit for bit the same in the C search and the
    Python twin, at least Q ** 2 (Jensen) and at most 1; the lcb choice differs from the most
    visited move somewhere, the same in both."""
    encoding = ObservationEncoding("gardner")
    positions = _positions("gardner", 8, seed=1)
    config = SearchConfig(simulations=200, leaves_per_tree=4, move_choice="lcb", lcb_min_share=0.05)
    c = search_positions(positions, peaked_evaluator, config, encoding)
    py = search_games([ChessGame(p, encoding) for p in positions], peaked_evaluator, config)
    for name in ("visits", "q", "value_squares", "priors", "policy", "actions"):
        np.testing.assert_array_equal(getattr(py, name), getattr(c, name), err_msg=name)
    assert (c.value_squares >= c.q * c.q - 1e-6).all() and (c.value_squares <= 1.0).all()
    assert (c.value_squares[c.visits > 0] > 0).any()
    assert (c.actions != c.visits.argmax(1)).any()


@pytest.mark.parametrize("settings, message", [
    (dict(move_choice="best"), "move_choice must be one of visits, lcb"),
    (dict(move_choice="lcb", root="gumbel"), "is PUCT's"),
    (dict(lcb_stdevs=-1.0), "lcb_stdevs must be a finite number >= 0"),
    (dict(lcb_min_share=float("nan")), "lcb_min_share must be a finite number >= 0"),
    (dict(forced_playouts=-1.0), "forced_playouts must be a finite number >= 0"),
    (dict(forced_playouts=float("inf")), "forced_playouts must be a finite number >= 0"),
    (dict(forced_playouts=True), "forced_playouts must be a finite number >= 0"),
    (dict(forced_playouts=2.0, root="gumbel"), "forced_playouts is PUCT's"),
])
def test_bad_forced_playout_settings_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        SearchConfig(**settings)
    rules = ObservationEncoding("3x3").variant.rules
    with pytest.raises(ValueError, match="forced"):
        _core.Search(rules, 1, forced=-1.0)
    with pytest.raises(ValueError, match="PUCT's"):
        _core.Search(rules, 1, root="gumbel", forced=2.0)
