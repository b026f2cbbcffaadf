"""AlphaZero's batched search: one C tree (``minichess_envs._core.Search``) for every game, plus a network.

Many games are searched together, and each tree may keep several leaves waiting
(virtual loss), so one network call evaluates a whole batch of leaves. A chess
variant is searched all in C (its moves are played by the engine); any other
:class:`~agents.games.Game` keeps a game object at each node, made by
:func:`_leaf` when the tree first reaches it. A cache keyed by a hash of the
observation skips positions the network has already seen with the same weights.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from agents.games.base import terminal_value
from minichess_envs import _core

ROOTS = ("puct", "gumbel")
MOVE_CHOICES = {"visits": "the most visited move",  # SearchConfig.move_choice, in words
                "lcb": "the move with the best lower confidence bound on its value (KataGo)"}


@dataclasses.dataclass
class SearchConfig:
    """Search settings: PUCT, or Gumbel AlphaZero at the root.

    :param simulations: simulations per searched position.
    :param c_puct: exploration constant of the PUCT rule.
    :param discount: per-ply discount of backed-up values; below 1 it makes
        the search prefer faster wins and slower losses (AlphaZeroNano's agent did
        not hurry to mate without one).
    :param leaves_per_tree: leaves a tree may select before the network is
        called (virtual loss keeps them apart); more leaves, bigger batches.
    :param dirichlet_alpha, dirichlet_epsilon: root noise during self-play.
    :param fpu: value assumed for unvisited moves.
    :param root: ``"puct"`` (AlphaZero: Dirichlet noise in self-play, visit-share
        targets) or ``"gumbel"`` (Danihelka et al., ICLR 2022: Gumbel-top-k of
        ``gumbel_considered`` moves and sequential halving at the root, the
        paper's deterministic choice below it; plays the search's chosen move,
        Gumbel noise in self-play, completed-Q targets). ``c_puct``, ``fpu`` and
        the Dirichlet settings are PUCT's only.
    :param gumbel_considered: moves sampled at the root (m).
    :param c_visit, c_scale: Gumbel's sigma(q) = (c_visit + max N) * c_scale * (q + 1) / 2.
    :param move_choice: the move a PUCT search plays: ``"visits"``, the most
        visited (AlphaZero); ``"lcb"``, KataGo's choice by lower confidence
        bound (:func:`chosen_actions`).
    :param lcb_stdevs, lcb_min_share: the bound's width in standard errors, and
        the share of the most visited move's visits a move needs to be chosen
        by it (KataGo: 5 and 0.15).
    """

    simulations: int = 64
    c_puct: float = 1.5
    discount: float = 0.99
    leaves_per_tree: int = 4
    dirichlet_alpha: float = 0.3
    dirichlet_epsilon: float = 0.25
    fpu: float = 0.0
    root: str = "puct"
    gumbel_considered: int = 16
    c_visit: float = 50.0
    c_scale: float = 1.0
    move_choice: str = "visits"
    lcb_stdevs: float = 5.0
    lcb_min_share: float = 0.15

    def __post_init__(self):
        if self.root not in ROOTS:
            raise ValueError(f"SearchConfig.root must be one of {', '.join(ROOTS)}, got {self.root!r}")
        for name in ("simulations", "gumbel_considered", "leaves_per_tree"):
            value = getattr(self, name)
            low = 0 if name == "simulations" else 1
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= 10**6:
                raise ValueError(f"SearchConfig.{name} must be an integer in [{low}, 1000000], got {value!r}")
        for name in ("c_puct", "discount", "dirichlet_alpha", "dirichlet_epsilon", "c_visit", "c_scale",
                     "lcb_stdevs", "lcb_min_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"SearchConfig.{name} must be a finite number >= 0, got {value!r}")
        if isinstance(self.fpu, bool) or not isinstance(self.fpu, (int, float)) or not -1 <= self.fpu <= 1:
            raise ValueError(f"SearchConfig.fpu must be a number in [-1, 1], got {self.fpu!r}")
        if self.move_choice not in MOVE_CHOICES:
            raise ValueError(f"SearchConfig.move_choice must be one of {', '.join(MOVE_CHOICES)}, "
                             f"got {self.move_choice!r}")
        if self.move_choice != "visits" and self.root != "puct":
            raise ValueError(f"SearchConfig.move_choice={self.move_choice!r} is PUCT's: root={self.root!r} "
                             "plays the move its search chose")

    @classmethod
    def setting_types(cls) -> dict:
        """Each field's type, for checking settings read from a file."""
        kinds = {"float": float, "int": int, "str": str}
        return {f.name: kinds[f.type] for f in dataclasses.fields(cls)}

    @classmethod
    def saved_types(cls) -> dict:
        """:meth:`setting_types` and the removed options that saved settings may still hold."""
        return {**cls.setting_types(), "forced_playouts": float}

    @classmethod
    def from_dict(cls, settings: dict) -> SearchConfig:
        """Settings as saved; an option removed since (forced playouts, docs/decisions.md) is dropped
        where it was off and refused where it was on."""
        settings = dict(settings)
        forced = settings.pop("forced_playouts", 0.0)
        if forced != 0:
            raise ValueError(f"forced_playouts={forced!r} was removed after measurements rejected it "
                             "(docs/decisions.md)")
        return cls(**settings)


@dataclasses.dataclass
class SearchResult:
    """What a search of ``n`` games found, float32 ``(n, num_actions)`` arrays except ``actions``.

    ``visits``: simulations through each root move; ``q``: its mean value for
    the player to move (0 if unvisited); ``policy``: the training target (PUCT:
    the visit shares; Gumbel: the improved policy softmax(log P + sigma(completed Q))
    over the legal moves); ``actions``: int64 ``(n,)``, the move to play (PUCT:
    :func:`chosen_actions`; Gumbel: the search's choice); ``priors``: the root's P,
    root noise mixed in; ``value_squares``: the mean of the squared values backed
    up through each move (with ``q``, their variance).
    """

    visits: np.ndarray
    q: np.ndarray
    policy: np.ndarray
    actions: np.ndarray
    priors: np.ndarray
    value_squares: np.ndarray


class UniformEvaluator:
    """Uniform priors over the legal moves and value 0: search with the rules alone."""

    def __call__(self, observations, masks, keys):
        priors = masks.astype(np.float32)
        priors /= np.maximum(priors.sum(1, keepdims=True), 1.0)
        return priors, np.zeros(len(masks), np.float32)


class NetworkEvaluator:
    """Priors and values from a :class:`~agents.alphazero.network.PolicyValueNet`, cached.

    Call :meth:`clear` whenever the weights change. The cache keeps the priors
    of the legal moves only, and is emptied when it holds ``cache_size`` entries.
    """

    def __init__(self, net, cache_size: int = 200_000, mixed_precision: bool = True):
        self.net = net
        self.mixed_precision = mixed_precision  # bf16 autocast where it pays (agents.devices.autocast)
        self.cache: dict[int, tuple[np.ndarray, float]] = {}
        self.cache_size = cache_size
        self.hits = self.misses = 0

    def clear(self) -> None:
        self.cache.clear()

    def __getstate__(self) -> dict:
        return dict(self.__dict__, cache={})  # a copy starts with an empty cache: no need to ship it

    def __call__(self, observations: np.ndarray, masks: np.ndarray, keys: np.ndarray):
        n, A = masks.shape
        priors = np.zeros((n, A), np.float32)
        values = np.zeros(n, np.float32)
        missing = []
        for j in range(n):
            hit = self.cache.get(int(keys[j]))
            if hit is None:
                missing.append(j)
            else:
                priors[j, np.flatnonzero(masks[j])] = hit[0]
                values[j] = hit[1]
        self.hits += n - len(missing)
        self.misses += len(missing)
        if missing:
            p, v = self.evaluate(observations[missing], masks[missing])
            priors[missing], values[missing] = p, v
            if len(self.cache) + len(missing) > self.cache_size:
                self.cache.clear()
            for j in missing:
                self.cache[int(keys[j])] = (priors[j, np.flatnonzero(masks[j])], float(values[j]))
        return priors, values

    def evaluate(self, observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Uncached network call on the network's device: softmax over the legal actions, and values."""
        import torch

        from agents.devices import autocast

        self.net.eval()
        device = next(self.net.parameters()).device
        with torch.inference_mode(), autocast(device, self.mixed_precision, batch=len(observations)):
            obs = torch.from_numpy(np.ascontiguousarray(observations)).to(device, non_blocking=True)
            logits, values = self.net(obs)
            logits = logits.float().masked_fill(torch.from_numpy(masks).to(device) == 0, float("-inf"))
            priors = torch.softmax(logits, dim=-1)
        return priors.cpu().numpy(), values.float().cpu().numpy()


def _leaf(parent, action: int):
    """A new node of the C tree for a Python game: the game after ``action`` from ``parent`` (-1: the
    root itself), with its exact value if it is over, else its legal actions, observation and key."""
    game = parent
    if action >= 0:
        game = parent.copy()
        game.step(action)
    if game.is_over():
        return game, terminal_value(game), None, None, None
    return game, None, game.legal_actions(), np.ascontiguousarray(game.observation(), np.float32), game.key()


def search(games: Sequence, evaluator, config: SearchConfig, rng: np.random.Generator | None = None) -> SearchResult:
    """Search every game (none may be over) with ``config.simulations`` simulations each.

    With ``rng`` the root gets noise for self-play exploration: Dirichlet noise
    mixed into the priors (PUCT), or Gumbel noise on the logits (Gumbel; the
    chosen move is then a sample of the improved policy). Without, the search is
    deterministic. The first round expands the roots, the noise goes on right
    after, then rounds of ``leaves_per_tree`` leaves per tree until every root
    has ``simulations`` visits.
    """
    games = list(games)
    if not games:
        raise ValueError("search needs at least one game")
    n, first = len(games), games[0]
    A, shape = first.num_actions, tuple(first.observation_shape)
    gumbel = config.root == "gumbel"
    options, _ = first.tree_root()
    if options.get("rules") is None:  # a Python game: the tree keeps its nodes' games and makes leaves with _leaf
        options = dict(options, num_actions=A, observation_size=int(np.prod(shape)), leaf=_leaf)
    tree = _core.Search(num_trees=n, c_puct=config.c_puct, discount=config.discount, fpu=config.fpu,
                        root=config.root, considered=config.gumbel_considered, c_visit=config.c_visit,
                        c_scale=config.c_scale, **options)
    for i, game in enumerate(games):
        if game.is_over():
            raise ValueError(f"game {i} is over: nothing to search")
        tree.set_root(i, game.tree_root()[1])
    if gumbel and rng is not None:
        tree.set_gumbel(rng.gumbel(size=(n, A)).astype(np.float32))
    k = max(1, config.leaves_per_tree)
    observations = np.zeros((n * k, *shape), np.float32)
    masks = np.zeros((n * k, A), np.int8)
    keys = np.zeros(n * k, np.uint64)
    noise_added = gumbel or rng is None or config.dirichlet_epsilon <= 0
    while tree.min_visits() < config.simulations:
        # The first round expands the roots (one leaf each); noise goes on right after.
        count = tree.select(1 if not noise_added else k, config.simulations, observations, masks, keys)
        priors, values = evaluator(observations[:count], masks[:count], keys[:count])
        tree.backup(np.ascontiguousarray(priors, np.float32), np.ascontiguousarray(values, np.float32))
        if not noise_added:
            tree.mix_root_noise(dirichlet_noise(games, config.dirichlet_alpha, A, rng), config.dirichlet_epsilon)
            noise_added = True
    visits, q, priors, squares = (np.zeros((n, A), np.float32) for _ in range(4))
    tree.root_stats(visits, q)
    tree.root_priors(priors)
    tree.root_value_squares(squares)
    if gumbel:
        policy = np.zeros((n, A), np.float32)
        actions = np.zeros(n, np.int64)
        tree.root_policy(policy, actions)
    else:
        policy = visits / np.maximum(visits.sum(1, keepdims=True), 1.0)
        actions = chosen_actions(visits, q, squares, config)
    return SearchResult(visits, q, policy, actions, priors, squares)


def chosen_actions(visits: np.ndarray, q: np.ndarray, squares: np.ndarray, config: SearchConfig) -> np.ndarray:
    """The move a PUCT search plays from each root (rows of ``visits``, ``q`` and ``squares``, the mean
    squared value backed up through each move).

    ``config.move_choice == "visits"``: the most visited move, the first on ties. ``"lcb"`` (KataGo's
    ``useLcbForSelection``): among the moves with at least ``lcb_min_share`` of the most visited
    move's visits (that move among them), the highest ``Q - lcb_stdevs * s / sqrt(N)``, where
    ``s**2 = (N * (mean square - Q**2) + 1) / (N + 1)``: the values' variance with one more value of
    variance 1 (the most values in [-1, 1] allow), so that a move with few, equal values is not
    trusted. A longer search thus plays a move whose value has overtaken the most visited one's
    beyond doubt, before its visits do.
    """
    most = visits.argmax(1)
    if config.move_choice == "visits":
        return most
    n = np.asarray(visits, np.float64)
    q = np.asarray(q, np.float64)
    variance = (n * np.maximum(np.asarray(squares, np.float64) - q * q, 0.0) + 1.0) / (n + 1.0)
    bound = q - config.lcb_stdevs * np.sqrt(variance / np.maximum(n, 1.0))
    eligible = (n > 0) & (n >= config.lcb_min_share * n.max(1, keepdims=True))
    eligible[np.arange(len(n)), most] = True
    return np.where(eligible, bound, -np.inf).argmax(1)


def dirichlet_noise(games, alpha: float, num_actions: int, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet(alpha) over each game's legal actions (in its own order), zeros elsewhere."""
    noise = np.zeros((len(games), num_actions), np.float32)
    for i, game in enumerate(games):
        legal = game.legal_actions()
        noise[i, legal] = rng.dirichlet([alpha] * len(legal))
    return noise
