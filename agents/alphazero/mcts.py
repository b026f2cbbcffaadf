"""Batched AlphaZero search: the C tree (``minichess_envs._core.Search``) plus a network evaluator.

Many positions are searched together, and each tree may keep several leaves
waiting (virtual loss), so one network call evaluates a whole batch of leaves.
A cache keyed by a hash of the observation skips positions the network has
already seen with the same weights.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from minichess_envs import _core
from minichess_envs.encoding import ObservationEncoding


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
    :param root: ``"puct"`` (AlphaZero: the most visited move, Dirichlet noise in
        self-play, visit-share targets) or ``"gumbel"`` (Danihelka et al., ICLR
        2022: Gumbel-top-k of ``gumbel_considered`` moves and sequential halving
        at the root, the paper's deterministic choice below it; plays the
        search's chosen move, Gumbel noise in self-play, completed-Q targets).
        ``c_puct``, ``fpu`` and the Dirichlet settings are PUCT's only.
    :param gumbel_considered: moves sampled at the root (m).
    :param c_visit, c_scale: Gumbel's sigma(q) = (c_visit + max N) * c_scale * (q + 1) / 2.
    :param forced_playouts: KataGo's forced playouts and policy target pruning
        (Wu, 2019, section 3.2; KataGo uses 2), PUCT searches with root noise
        only: each root move that has been visited gets at least
        ``sqrt(forced_playouts * P * sum N)`` visits, and the training target
        takes back those PUCT would not have given (:func:`prune_policy_target`).
        0: off.
    :param move_choice: the move a PUCT search plays: ``"visits"``, the most
        visited (AlphaZero); ``"lcb"``, KataGo's choice by lower confidence
        bound (:func:`choose_actions`).
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
    forced_playouts: float = 0.0
    move_choice: str = "visits"
    lcb_stdevs: float = 5.0
    lcb_min_share: float = 0.15

    def __post_init__(self):
        if self.root not in ROOTS:
            raise ValueError(f"SearchConfig.root must be one of {', '.join(ROOTS)}, got {self.root!r}")
        m = self.gumbel_considered
        if not isinstance(m, int) or isinstance(m, bool) or m < 1:
            raise ValueError(f"SearchConfig.gumbel_considered must be an integer >= 1, got {m!r}")
        for name in ("c_visit", "c_scale", "forced_playouts", "lcb_stdevs", "lcb_min_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"SearchConfig.{name} must be a finite number >= 0, got {value!r}")
        if self.forced_playouts > 0 and self.root != "puct":
            raise ValueError(f"SearchConfig.forced_playouts is PUCT's: root={self.root!r} takes 0, "
                             f"got {self.forced_playouts!r}")
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


@dataclasses.dataclass
class SearchResult:
    """What a search of ``n`` positions found, float32 ``(n, num_actions)`` arrays except ``actions``.

    ``visits``: simulations through each root move; ``q``: its mean value for
    the side to move (0 if unvisited); ``policy``: the training target (PUCT:
    the visit shares, pruned after forced playouts (:func:`prune_policy_target`);
    Gumbel: the improved policy softmax(log P + sigma(completed Q)) over the
    legal moves); ``actions``: int64 ``(n,)``, the move to play
    (PUCT: :func:`choose_actions`; Gumbel: the search's choice);
    ``priors``: the root's P, root noise mixed in; ``value_squares``: the mean of
    the squared values backed up through each move (with ``q``, their variance).
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


def run_search(positions, evaluator, config: SearchConfig, encoding: ObservationEncoding,
               rng: np.random.Generator | None = None, ply_limit: int | None = None):
    """Search every position; returns ``(visits, q)`` (see :func:`search_positions`)."""
    result = search_positions(positions, evaluator, config, encoding, rng, ply_limit)
    return result.visits, result.q


def search_positions(positions, evaluator, config: SearchConfig, encoding: ObservationEncoding,
                     rng: np.random.Generator | None = None, ply_limit: int | None = None) -> SearchResult:
    """Search every position (none may be game-over) with ``config.simulations`` simulations each.

    With ``rng`` the root gets noise for self-play exploration: Dirichlet noise
    mixed into the priors (PUCT), or Gumbel noise on the logits (Gumbel; the
    chosen move is then a sample of the improved policy). Without, the search is
    deterministic. Forced playouts (``config.forced_playouts``) go with the
    Dirichlet noise: a search without ``rng`` has none.
    """
    n = len(positions)
    variant = encoding.variant
    rules = variant.rules
    A = rules.num_actions
    gumbel = config.root == "gumbel"
    search = _core.Search(rules, n, c_puct=config.c_puct, discount=config.discount, fpu=config.fpu,
                          ply_limit=variant.ply_limit if ply_limit is None else ply_limit,
                          history=encoding.history, last_move=encoding.last_move, root=config.root,
                          considered=config.gumbel_considered, c_visit=config.c_visit, c_scale=config.c_scale,
                          forced=forced_playouts(config, rng))
    for i, position in enumerate(positions):
        search.set_root(i, position)
    if gumbel and rng is not None:
        search.set_gumbel(rng.gumbel(size=(n, A)).astype(np.float32))
    k = max(1, config.leaves_per_tree)
    observations = np.zeros((n * k, *encoding.shape), np.float32)
    masks = np.zeros((n * k, A), np.int8)
    keys = np.zeros(n * k, np.uint64)
    noise_added = gumbel or rng is None or config.dirichlet_epsilon <= 0
    while search.min_visits() < config.simulations:
        # The first round expands the roots (one leaf each); noise goes on right after.
        count = search.select(1 if not noise_added else k, config.simulations, observations, masks, keys)
        priors, values = evaluator(observations[:count], masks[:count], keys[:count])
        search.backup(np.ascontiguousarray(priors, np.float32), np.ascontiguousarray(values, np.float32))
        if not noise_added:
            search.mix_root_noise(dirichlet_noise(positions, config.dirichlet_alpha, A, rng),
                                  config.dirichlet_epsilon)
            noise_added = True
    visits = np.zeros((n, A), np.float32)
    q = np.zeros((n, A), np.float32)
    search.root_stats(visits, q)
    priors, squares = np.zeros((n, A), np.float32), np.zeros((n, A), np.float32)
    search.root_priors(priors)
    search.root_value_squares(squares)
    if gumbel:
        policy = np.zeros((n, A), np.float32)
        actions = np.zeros(n, np.int64)
        search.root_policy(policy, actions)
    else:
        policy = visits / np.maximum(visits.sum(1, keepdims=True), 1.0)
        if forced_playouts(config, rng):
            policy = prune_policy_target(visits, q, priors, config.c_puct, config.forced_playouts)
        actions = choose_actions(visits, q, squares, config)
    return SearchResult(visits, q, policy, actions, priors, squares)


def choose_actions(visits: np.ndarray, q: np.ndarray, squares: np.ndarray, config: SearchConfig) -> np.ndarray:
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


def forced_playouts(config: SearchConfig, rng) -> float:
    """The forced-playout constant a search uses: ``config.forced_playouts`` with root noise, else 0."""
    return config.forced_playouts if rng is not None and config.dirichlet_epsilon > 0 else 0.0


def prune_policy_target(visits: np.ndarray, q: np.ndarray, priors: np.ndarray, c_puct: float,
                        forced_playouts: float) -> np.ndarray:
    """Visit shares with the forced playouts taken back (KataGo's policy target pruning; Wu, 2019, 3.2).

    Per row (a root: ``visits``, ``q`` and ``priors`` per action, as the search
    left them): ``c*`` is the most visited move (the first on ties). Every other
    move loses up to ``n_forced = sqrt(forced_playouts * P * sum N)`` visits, but
    only as many as leave its PUCT score ``Q + c_puct * P * sqrt(sum N + 1) / (1 + N)``
    (the root's visit count is ``sum N + 1``, as in the search) at or below
    ``c*``'s: those visits PUCT would not have given it. A move left with one
    visit or fewer is dropped. Returns float32 rows that sum to 1 (0 for an
    unsearched row).
    """
    visits = np.asarray(visits, np.float64)
    q = np.asarray(q, np.float64)
    priors = np.asarray(priors, np.float64)
    rows = np.arange(len(visits))
    total = visits.sum(1, keepdims=True)
    best = visits.argmax(1)
    explore = c_puct * priors * np.sqrt(total + 1)
    best_score = (q[rows, best] + explore[rows, best] / (1 + visits[rows, best]))[:, None]
    gap = best_score - q
    # the fewest visits that keep Q + explore / (1 + N) <= the best score; none if Q alone reaches it
    wanted = np.where(gap > 0, np.ceil(explore / np.where(gap > 0, gap, 1.0) - 1.0), visits)
    pruned = np.clip(np.maximum(np.ceil(visits - np.sqrt(forced_playouts * priors * total)), wanted), 0.0, visits)
    pruned = np.where(pruned <= 1.0, 0.0, pruned)
    pruned[rows, best] = visits[rows, best]
    return (pruned / np.maximum(pruned.sum(1, keepdims=True), 1.0)).astype(np.float32)


def dirichlet_noise(positions, alpha: float, num_actions: int, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet(alpha) over each position's legal actions, zeros elsewhere."""
    noise = np.zeros((len(positions), num_actions), np.float32)
    for i, position in enumerate(positions):
        legal = position.legal_actions()
        noise[i, legal] = rng.dirichlet([alpha] * len(legal))
    return noise
