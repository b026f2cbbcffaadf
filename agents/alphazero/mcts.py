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


@dataclasses.dataclass
class SearchConfig:
    """PUCT search settings.

    :param simulations: simulations per searched position.
    :param c_puct: exploration constant of the PUCT rule.
    :param discount: per-ply discount of backed-up values; below 1 it makes
        the search prefer faster wins and slower losses (AlphaZeroNano's agent did
        not hurry to mate without one).
    :param leaves_per_tree: leaves a tree may select before the network is
        called (virtual loss keeps them apart); more leaves, bigger batches.
    :param dirichlet_alpha, dirichlet_epsilon: root noise during self-play.
    :param fpu: value assumed for unvisited moves.
    """

    simulations: int = 64
    c_puct: float = 1.5
    discount: float = 0.99
    leaves_per_tree: int = 4
    dirichlet_alpha: float = 0.3
    dirichlet_epsilon: float = 0.25
    fpu: float = 0.0


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
        with torch.inference_mode(), autocast(device, self.mixed_precision, inference_batch=len(observations)):
            obs = torch.from_numpy(np.ascontiguousarray(observations)).to(device, non_blocking=True)
            logits, values = self.net(obs)
            logits = logits.float().masked_fill(torch.from_numpy(masks).to(device) == 0, float("-inf"))
            priors = torch.softmax(logits, dim=-1)
        return priors.cpu().numpy(), values.float().cpu().numpy()


def run_search(positions, evaluator, config: SearchConfig, encoding: ObservationEncoding,
               rng: np.random.Generator | None = None, ply_limit: int | None = None):
    """Search every position; returns ``(visits, q)``, float32 ``(len(positions), num_actions)``.

    ``visits[i, a]`` counts the simulations through move ``a`` at root ``i`` and
    ``q[i, a]`` is that move's mean value for the side to move. With ``rng``,
    Dirichlet noise is mixed into the root priors (self-play exploration).
    Positions must not be game-over.
    """
    n = len(positions)
    variant = encoding.variant
    rules = variant.rules
    A = rules.num_actions
    search = _core.Search(rules, n, c_puct=config.c_puct, discount=config.discount, fpu=config.fpu,
                          ply_limit=variant.ply_limit if ply_limit is None else ply_limit,
                          history=encoding.history, last_move=encoding.last_move)
    for i, position in enumerate(positions):
        search.set_root(i, position)
    k = max(1, config.leaves_per_tree)
    observations = np.zeros((n * k, *encoding.shape), np.float32)
    masks = np.zeros((n * k, A), np.int8)
    keys = np.zeros(n * k, np.uint64)
    noise_added = rng is None or config.dirichlet_epsilon <= 0
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
    return visits, q


def dirichlet_noise(positions, alpha: float, num_actions: int, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet(alpha) over each position's legal actions, zeros elsewhere."""
    noise = np.zeros((len(positions), num_actions), np.float32)
    for i, position in enumerate(positions):
        legal = position.legal_actions()
        noise[i, legal] = rng.dirichlet([alpha] * len(legal))
    return noise
