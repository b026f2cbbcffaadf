"""The search's move choice by lower confidence bound (KataGo), the statistics behind it, and the
settings a search refuses."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from agents.alphazero.search import NetworkEvaluator, SearchConfig, UniformEvaluator, chosen_actions, search
from agents.games import ChessGame, ConnectFour, Game
from boards import play
from agents.games.chess import chess_games
from minichess_envs import Position, _core
from minichess_envs.encoding import ObservationEncoding


def peaked_evaluator(observations, masks, keys):
    """Priors and values drawn from a hash of the observation, far from uniform (softmax of
    3 * normal logits), so that some moves get few visits."""
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
    assert chosen_actions(visits, q, squares, SearchConfig(move_choice="lcb")).tolist() == [1, 0]
    assert chosen_actions(visits, q, squares, SearchConfig()).tolist() == [0, 0]
    assert chosen_actions(visits, q, squares, SearchConfig(move_choice="lcb", lcb_min_share=0.1)).tolist() == [2, 0]


def test_value_squares_bound_the_values_and_the_lcb_move_differs_somewhere():
    """The mean squared values behind the lcb choice are at least Q ** 2 (Jensen) and at most 1, and
    the lcb choice differs from the most visited move somewhere."""
    encoding = ObservationEncoding("gardner")
    positions = _positions("gardner", 8, seed=1)
    config = SearchConfig(simulations=200, leaves_per_tree=4, move_choice="lcb", lcb_min_share=0.05)
    c = search(chess_games(positions, encoding), peaked_evaluator, config)
    assert (c.value_squares >= c.q * c.q - 1e-6).all() and (c.value_squares <= 1.0).all()
    assert (c.value_squares[c.visits > 0] > 0).any()
    assert (c.actions != c.visits.argmax(1)).any()
    np.testing.assert_array_equal(c.actions, chosen_actions(c.visits, c.q, c.value_squares, config))


@pytest.mark.parametrize("settings, message", [
    (dict(move_choice="best"), "move_choice must be one of visits, lcb"),
    (dict(move_choice="lcb", root="gumbel"), "is PUCT's"),
    (dict(lcb_stdevs=-1.0), "lcb_stdevs must be a finite number >= 0"),
    (dict(lcb_min_share=float("nan")), "lcb_min_share must be a finite number >= 0"),
    (dict(c_puct=float("nan")), "c_puct must be a finite number >= 0"),
    (dict(simulations=10**12), "simulations must be an integer in"),
    (dict(simulations=True), "simulations must be an integer in"),
    (dict(fpu=2.0), "fpu must be a number in"),
])
def test_bad_search_settings_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        SearchConfig(**settings)


def test_settings_saved_with_a_removed_option_load_only_where_it_was_off():
    assert SearchConfig.from_dict({"simulations": 8, "forced_playouts": 0.0}) == SearchConfig(simulations=8)
    with pytest.raises(ValueError, match="forced_playouts=2.0 was removed"):
        SearchConfig.from_dict({"forced_playouts": 2.0})


# -- one tree: a game kept in Python expands as the engine expands it in C ----------


def _walk(variant: str, plies: int, seed: int) -> list[Position]:
    rng = np.random.default_rng(seed)
    p = Position(variant)
    out = [p.copy()]
    for _ in range(plies):
        p.push_action(int(rng.choice(p.legal_actions())))
        if p.is_game_over():
            break
        out.append(p.copy())
    return out


class PythonChess(ChessGame):
    """A chess game that the tree keeps as a Python object, expanded through its Game methods."""

    def copy(self):
        return PythonChess(self.position.copy(), self.encoding, self.ply_limit)

    tree_root = Game.tree_root


@pytest.mark.parametrize("variant, settings, noise_seed", [
    ("3x3", dict(simulations=48, leaves_per_tree=4), 7),
    ("3x3", dict(simulations=48, leaves_per_tree=1, fpu=-0.5, discount=0.9, c_puct=2.5), None),
    ("gardner", dict(simulations=32, leaves_per_tree=8, move_choice="lcb"), 3),
    ("gardner", dict(simulations=32, leaves_per_tree=4, root="gumbel"), 5),
])
def test_a_game_kept_in_python_is_searched_as_the_engine_searches_it(variant, settings, noise_seed):
    """The tree over chess positions played in C, and over the same positions as Python games (legal
    actions, outcomes, observations and keys from the Game methods): the same visits, Q values, targets
    and moves, bit for bit, noise and virtual-loss batches included."""
    torch = pytest.importorskip("torch", reason="the network needs torch: pip install -e '.[agents]'")
    from agents.alphazero.network import NetConfig, PolicyValueNet

    encoding = ObservationEncoding(variant, 1, False)
    torch.manual_seed(0)
    net = PolicyValueNet(NetConfig(*encoding.shape, encoding.variant.num_actions, blocks=1, channels=8,
                                   policy_channels=2, value_hidden=8))
    positions = _walk(variant, 3, seed=1)
    config = SearchConfig(**settings)

    def rng():
        return None if noise_seed is None else np.random.default_rng(noise_seed)

    c = search([ChessGame(p, encoding) for p in positions], NetworkEvaluator(net), config, rng=rng())
    py = search([PythonChess(p, encoding) for p in positions], NetworkEvaluator(net), config, rng=rng())
    # the first simulation expands the root; the children hold all the others
    assert c.visits.sum(1).tolist() == [config.simulations - 1] * len(positions)
    for name in ("visits", "q", "policy", "actions", "priors", "value_squares"):
        np.testing.assert_array_equal(getattr(py, name), getattr(c, name), err_msg=name)
    assert (c.visits > 0).sum() > len(positions)  # the search spread its visits: the comparison is not trivial


def test_the_tree_refuses_misuse_and_bad_games():
    with pytest.raises(ValueError, match="game 0 is over"):
        search([play(ConnectFour, [0, 1, 0, 1, 0, 1, 0])], UniformEvaluator(), SearchConfig())
    with pytest.raises(ValueError, match="at least one game"):
        search([], UniformEvaluator(), SearchConfig())
    with pytest.raises(ValueError, match="num_actions"):
        _core.Search(None, 2)

    def leaf(parent, action):
        return parent, False, None, [0, 9], np.zeros(84, np.float32), 1

    tree = _core.Search(None, 2, num_actions=7, observation_size=84, leaf=leaf)
    tree.set_root(0, ConnectFour())
    out = (np.zeros((8, 84), np.float32), np.zeros((8, 7), np.int8), np.zeros(8, np.uint64))
    with pytest.raises(ValueError, match="legal action 9 is out of"):
        tree.select(4, 10, *out)
    for bad, message in (((1, False, None, [0], None), "leaf must return"),
                         ((None, False, 2.0, None, None, None), "value must be in"),
                         ((None, False, None, [0], np.zeros(3, np.float32), 1), "observation must be 84 float32"),
                         ((None, False, None, [], None, None), "1 to 7 legal actions")):
        tree = _core.Search(None, 1, num_actions=7, observation_size=84, leaf=lambda p, a, bad=bad: bad)
        tree.set_root(0, ConnectFour())
        with pytest.raises((TypeError, ValueError), match=message):
            tree.select(1, 10, *out)
    tree = _core.Search(None, 2, num_actions=7, observation_size=84,
                        leaf=lambda p, a: (p, False, None, [0, 1], np.zeros(84, np.float32), 1))
    tree.set_root(0, ConnectFour())
    assert tree.select(4, 10, *out) == 1  # the root waits: one leaf this round
    with pytest.raises(RuntimeError, match="select called twice"):
        tree.select(4, 10, *out)
    with pytest.raises(RuntimeError, match="set_root between select and backup"):
        tree.set_root(1, ConnectFour())


class BonusNim(Game):
    """Take 1 or 2 counters from a pile; whoever takes the last wins, and whoever leaves a multiple of 3 (not 0)
    moves again: a game where one player may move twice in a row, as in a checkers multi-jump."""

    name, num_actions, observation_shape = "bonus_nim", 2, (1, 1, 2)

    def __init__(self, pile: int, mover: int = 0):
        self.pile, self.mover, self.last = pile, mover, None

    def copy(self):
        other = BonusNim(self.pile, self.mover)
        other.last = self.last
        return other

    def to_play(self):
        return self.mover

    def legal_actions(self):
        return [a for a in (0, 1) if a + 1 <= self.pile]

    def step(self, action):
        self.pile -= action + 1
        self.last = self.mover
        if self.pile == 0 or self.pile % 3:
            self.mover = 1 - self.mover

    def is_over(self):
        return self.pile == 0

    def winner(self):
        return self.last if self.pile == 0 else None

    def observation(self):
        return np.array([[[self.pile / 20, self.mover]]], np.float32)

    def key(self):
        return self.pile * 2 + self.mover


def bonus_nim_wins(pile: int) -> bool:
    """Exact: does the player to move win? (A move into a multiple of 3 keeps the move.)"""
    if pile == 0:
        return False  # the previous player took the last counter
    for take in (1, 2):
        rest = pile - take
        if rest == 0 or (rest % 3 == 0 and bonus_nim_wins(rest)) or (rest % 3 and rest > 0
                                                                      and not bonus_nim_wins(rest)):
            return True
    return False


def test_values_keep_their_sign_where_the_same_player_moves_again():
    # Against exact minimax: with the sign flipped at every ply regardless of who moves, the search
    # misjudges the moves after which the same player moves again
    piles = [p for p in range(2, 16) if bonus_nim_wins(p)]
    games = [BonusNim(p) for p in piles]
    result = search(games, UniformEvaluator(), SearchConfig(simulations=3000, discount=1.0))
    for pile, action, q in zip(piles, result.actions, result.q):
        rest = pile - (int(action) + 1)
        wins = rest == 0 or (rest % 3 == 0 and bonus_nim_wins(rest)) or (rest % 3 and not bonus_nim_wins(rest))
        assert wins, (pile, int(action), q)
        assert q[action] > 0.5, (pile, q)
