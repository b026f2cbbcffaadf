"""AlphaZero's batched search: many games at once in one C tree (``minichess_envs._core.Search``), several
leaves per tree (virtual loss) in each network call. Chess variants are searched all in C; other games keep a
game object at each node (:func:`_leaf`)."""

from __future__ import annotations

import dataclasses
import sys
from typing import Sequence

import numpy as np

from agents.games.base import terminal_value
from minichess_envs import _core

ROOTS = ("puct", "gumbel")
MOVE_CHOICES = {"visits": "the most visited move",  # SearchConfig.move_choice, in words
                "lcb": "the move with the best lower confidence bound on its value (KataGo)"}


def check_number(name: str, value, low, high=None, kind=float) -> None:
    """``ValueError`` unless ``value`` is a finite number (an integer if ``kind=int``), not a bool, in [low, high]."""
    top = sys.float_info.max if high is None else high  # NaN and infinities fail
    if isinstance(value, bool) or not isinstance(value, (kind, int)) or not low <= value <= top:
        what = "an integer" if kind is int else "a number" if high is not None else "a finite number"
        raise ValueError(f"{name} must be {what} " + (f">= {low}" if high is None else f"in [{low}, {high}]")
                         + f", got {value!r}")


def check_choice(name: str, value, choices) -> None:
    """``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


@dataclasses.dataclass
class SearchConfig:
    """Search settings. ``root="puct"``: AlphaZero's (``c_puct``, ``fpu``, Dirichlet noise in self-play, visit-share
    targets, the move by ``move_choice``); ``"gumbel"``: Gumbel AlphaZero's (Danihelka et al., ICLR 2022: Gumbel-top-k
    and sequential halving at the root, Gumbel noise in self-play, completed-Q targets, the search's chosen move)."""

    simulations: int = 64  # per searched position
    c_puct: float = 1.5  # exploration constant of the PUCT rule
    discount: float = 0.99  # per ply, of backed-up values: below 1 it prefers faster wins and slower losses
    leaves_per_tree: int = 4  # leaves a tree selects (kept apart by virtual loss) before the network is called
    dirichlet_alpha: float = 0.3  # root noise in self-play
    dirichlet_epsilon: float = 0.25
    fpu: float = 0.0  # value assumed for unvisited moves
    root: str = "puct"  # see ROOTS
    gumbel_considered: int = 16  # moves sampled at the root (m)
    c_visit: float = 50.0  # Gumbel's sigma(q) = (c_visit + max N) * c_scale * (q + 1) / 2
    c_scale: float = 1.0
    move_choice: str = "visits"  # PUCT's move: see MOVE_CHOICES and chosen_actions
    lcb_stdevs: float = 5.0  # lcb: the bound's width in standard errors (KataGo: 5)
    lcb_min_share: float = 0.15  # lcb: the share of the most visited move's visits a move needs (KataGo: 0.15)

    def __post_init__(self):
        check_choice("SearchConfig.root", self.root, ROOTS)
        for name in ("simulations", "gumbel_considered", "leaves_per_tree"):
            check_number(f"SearchConfig.{name}", getattr(self, name), 0 if name == "simulations" else 1, 10**6, int)
        for name in ("c_puct", "discount", "dirichlet_alpha", "dirichlet_epsilon", "c_visit", "c_scale",
                     "lcb_stdevs", "lcb_min_share"):
            check_number(f"SearchConfig.{name}", getattr(self, name), 0)
        check_number("SearchConfig.fpu", self.fpu, -1, 1)
        check_choice("SearchConfig.move_choice", self.move_choice, MOVE_CHOICES)
        if self.move_choice != "visits" and self.root != "puct":
            raise ValueError(f"SearchConfig.move_choice={self.move_choice!r} is PUCT's: root={self.root!r} "
                             "plays the move its search chose")

    @classmethod
    def saved_types(cls) -> dict:
        """Each field's type, and the removed options that saved settings may still hold."""
        kinds = {"float": float, "int": int, "str": str}
        return {**{f.name: kinds[f.type] for f in dataclasses.fields(cls)}, "forced_playouts": float}

    @classmethod
    def from_dict(cls, settings: dict) -> SearchConfig:
        """Settings as saved; a removed option (forced playouts) is dropped where it was off, refused where on."""
        settings = dict(settings)
        forced = settings.pop("forced_playouts", 0.0)
        if forced != 0:
            raise ValueError(f"forced_playouts={forced!r} was removed after measurements rejected it "
                             "(docs/decisions.md)")
        return cls(**settings)


@dataclasses.dataclass
class SearchResult:
    """What a search of ``n`` games found: float32 ``(n, num_actions)`` arrays, except ``actions``."""

    visits: np.ndarray  # simulations through each root move
    q: np.ndarray  # its mean value for the player to move (0 if unvisited)
    policy: np.ndarray  # the training target: PUCT's visit shares, Gumbel's softmax(log P + sigma(completed Q))
    actions: np.ndarray  # int64 (n,): the move to play (PUCT: chosen_actions; Gumbel: the search's choice)
    priors: np.ndarray  # the root's P, root noise mixed in
    value_squares: np.ndarray  # mean squared value backed up through each move (with q, their variance)


class UniformEvaluator:
    """Uniform priors over the legal moves and value 0: search with the rules alone."""

    def __call__(self, observations, masks, keys):
        priors = masks.astype(np.float32)
        priors /= np.maximum(priors.sum(1, keepdims=True), 1.0)
        return priors, np.zeros(len(masks), np.float32)


class NetworkEvaluator:
    """Priors and values from a :class:`~agents.alphazero.network.PolicyValueNet`, cached by position key (the legal
    moves' priors) in two generations of up to ``cache_size`` entries each: a full one becomes the old one, whose hits
    move to the new, so that the positions of the last moves stay; call :meth:`clear` whenever the weights change."""

    def __init__(self, net, cache_size: int = 200_000, mixed_precision: bool = True):
        self.net = net
        self.mixed_precision = mixed_precision  # bf16 autocast where it pays (agents.devices.autocast)
        self.cache: dict[int, tuple[np.ndarray, float]] = {}
        self.old: dict[int, tuple[np.ndarray, float]] = {}
        self.cache_size = cache_size

    def clear(self) -> None:
        self.cache.clear()
        self.old.clear()

    def __getstate__(self) -> dict:
        return dict(self.__dict__, cache={}, old={})  # a copy starts with an empty cache: no need to ship it

    def _store(self, key: int, entry: tuple[np.ndarray, float]) -> None:
        if len(self.cache) >= self.cache_size:
            self.old, self.cache = self.cache, {}
        self.cache[key] = entry

    def __call__(self, observations: np.ndarray, masks: np.ndarray, keys: np.ndarray):
        n, A = masks.shape
        priors, values = np.zeros((n, A), np.float32), np.zeros(n, np.float32)
        missing = []
        for j in range(n):
            key = int(keys[j])
            hit = self.cache.get(key)
            if hit is None:
                hit = self.old.pop(key, None)
                if hit is not None:
                    self._store(key, hit)
            if hit is None:
                missing.append(j)
            else:
                priors[j, np.flatnonzero(masks[j])] = hit[0]
                values[j] = hit[1]
        if missing:
            p, v = self.evaluate(observations[missing], masks[missing])
            priors[missing], values[missing] = p, v
            for j in missing:
                self._store(int(keys[j]), (priors[j, np.flatnonzero(masks[j])], float(values[j])))
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
    """A new node of the C tree for a Python game: the game after ``action`` from ``parent`` (-1: the root
    itself), whether the player who moved moves again (a multi-jump), and its exact value if it is over, else
    its legal actions, observation and key."""
    game, again = parent, False
    if action >= 0:
        game = parent.copy()
        game.step(action)
        again = game.to_play() == parent.to_play()
    if game.is_over():
        return game, again, terminal_value(game), None, None, None
    return game, again, None, game.legal_actions(), np.ascontiguousarray(game.observation(), np.float32), game.key()


def search(games: Sequence, evaluator, config: SearchConfig, rng: np.random.Generator | None = None) -> SearchResult:
    """Search every game (none may be over) with ``config.simulations`` simulations each; with ``rng``, with
    self-play noise at the roots (PUCT: Dirichlet noise in the priors; Gumbel: noise on the logits)."""
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
        if not noise_added:  # Dirichlet(alpha) over each game's legal actions, in its own order
            noise = np.zeros((n, A), np.float32)
            for i, game in enumerate(games):
                legal = game.legal_actions()
                noise[i, legal] = rng.dirichlet([config.dirichlet_alpha] * len(legal))
            tree.mix_root_noise(noise, config.dirichlet_epsilon)
            noise_added = True
    visits, q, priors, squares = (np.zeros((n, A), np.float32) for _ in range(4))
    tree.root_stats(visits, q)
    tree.root_priors(priors)
    tree.root_value_squares(squares)
    if gumbel:
        policy, actions = np.zeros((n, A), np.float32), np.zeros(n, np.int64)
        tree.root_policy(policy, actions)
    else:
        policy = visits / np.maximum(visits.sum(1, keepdims=True), 1.0)
        actions = chosen_actions(visits, q, squares, config)
    return SearchResult(visits, q, policy, actions, priors, squares)


def chosen_actions(visits: np.ndarray, q: np.ndarray, squares: np.ndarray, config: SearchConfig) -> np.ndarray:
    """The move a PUCT search plays from each root: ``"visits"``, the most visited (the first on ties); ``"lcb"``
    (KataGo), among the moves with ``lcb_min_share`` of its visits, the highest ``Q - lcb_stdevs * s / sqrt(N)``,
    ``s**2`` the values' variance with one more of variance 1 (few equal values are not trusted)."""
    most = visits.argmax(1)
    if config.move_choice == "visits":
        return most
    n, q = np.asarray(visits, np.float64), np.asarray(q, np.float64)
    variance = (n * np.maximum(np.asarray(squares, np.float64) - q * q, 0.0) + 1.0) / (n + 1.0)
    bound = q - config.lcb_stdevs * np.sqrt(variance / np.maximum(n, 1.0))
    eligible = (n > 0) & (n >= config.lcb_min_share * n.max(1, keepdims=True))
    eligible[np.arange(len(n)), most] = True
    return np.where(eligible, bound, -np.inf).argmax(1)

