"""AlphaZero's batched PUCT search over any :class:`~agents.alphazero.game.Game`, in Python.

The same algorithm as the C search over our chess engine (``minichess_envs/csrc/search.c``,
driven by :func:`agents.alphazero.mcts.run_search`), step for step and in float32:

- selection: ``Q + c_puct * P * sqrt(max(N_parent, 1)) / (1 + N)``, ``Q = W / N`` or
  ``fpu`` for an unvisited child, the first child (in the game's legal-action
  order) with the highest score wins ties;
- every edge on the path takes a virtual visit and a virtual loss, undone at
  backup; a simulation that reaches a leaf already waiting for the network
  undoes its path and ends the tree's turn in this round;
- a finished game's exact value is backed up at once; a new leaf is expanded
  with uniform priors, waits for the network, and gets its priors renormalised
  over its legal actions;
- backup is negamax with a discount: each edge adds ``-discount * value`` of
  the position below it;
- Dirichlet noise is mixed into the root priors after the first round,
  ``(1 - eps) P + eps * noise``.

``tests/test_boardgames.py`` checks that both give the same visit counts on
chess positions with the same network, noise and settings. The Python tree
keeps each node's game (copied from its parent and stepped once) instead of
replaying moves from the root.
"""

from __future__ import annotations

import numpy as np

from agents.alphazero.game import Game, terminal_value
from agents.alphazero.mcts import SearchConfig

F32 = np.float32


class _Node:
    """A position in the tree. Edge statistics of its children live in the parent's arrays
    (``P``, ``N``, ``W``: float32, indexed like ``actions``), as the C tree keeps them per child."""

    __slots__ = ("game", "actions", "P", "N", "W", "children", "pending", "terminal", "value")

    def __init__(self, game: Game):
        self.game = game
        self.actions = None  # legal actions once expanded
        self.children = None
        self.pending = False  # expanded, waiting for the network's priors
        self.terminal = False
        self.value = F32(0.0)  # exact value for the player to move, if terminal


class GameSearch:
    """Trees over many games searched together (the C ``Search`` object's protocol).

    ``set_root(i, game)``; then rounds of ``select(k, limit)`` (returns the
    leaves' observations, masks and keys), an evaluator call, ``backup(priors,
    values)``; ``mix_root_noise``; ``root_stats()``.
    """

    def __init__(self, num_trees: int, num_actions: int, observation_shape, c_puct: float = 1.25,
                 discount: float = 0.99, virtual_loss: float = 1.0, fpu: float = 0.0):
        if num_trees < 1:
            raise ValueError(f"num_trees must be >= 1, got {num_trees}")
        self.num_actions = num_actions
        self.observation_shape = tuple(observation_shape)
        self.c_puct, self.discount = F32(c_puct), F32(discount)
        self.virtual_loss, self.fpu = F32(virtual_loss), F32(fpu)
        self.roots: list[_Node | None] = [None] * num_trees
        self.root_visits = [0] * num_trees
        self.leaves: list[tuple[_Node, list]] = []  # waiting for backup: (leaf, path of (node, child index))

    def set_root(self, i: int, game: Game) -> None:
        if self.leaves:
            raise RuntimeError("set_root between select and backup")
        if game.is_over():
            raise ValueError(f"tree {i}: the game is over")
        self.roots[i] = _Node(game.copy())
        self.root_visits[i] = 0

    def min_visits(self) -> int:
        visits = [v for r, v in zip(self.roots, self.root_visits) if r is not None]
        return min(visits) if visits else 0

    def _select_child(self, node: _Node, visits: int) -> int:
        sqrt_n = np.sqrt(F32(max(visits, 1)))
        N = node.N
        score = node.W / np.maximum(N, F32(1.0))  # Q
        score[N == 0] = self.fpu
        score += self.c_puct * node.P * sqrt_n / (F32(1.0) + N)
        return int(score.argmax())  # the first of equal scores, as the C loop's strict '>'

    def _backup(self, path: list, value) -> None:
        """Negamax with discount from the leaf up; each edge also gets its virtual loss back."""
        value = F32(value)
        for node, k in reversed(path):
            value = -self.discount * value
            node.W[k] += value + self.virtual_loss

    def _simulate(self, i: int) -> tuple[int, _Node | None, list]:
        """One simulation in tree ``i``: ``(1, leaf, path)`` for a leaf needing the network,
        0 for a finished game (backed up), 2 for a leaf another simulation waits for (undone)."""
        node = self.roots[i]
        visits = self.root_visits[i]
        path = []
        while node.children is not None and not node.pending:
            k = self._select_child(node, visits)
            node.N[k] += F32(1.0)
            node.W[k] -= self.virtual_loss
            path.append((node, k))
            visits = int(node.N[k])
            child = node.children[k]
            if child is None:
                game = node.game.copy()
                game.step(node.actions[k])
                child = node.children[k] = _Node(game)
            node = child
        if node.pending:
            for parent, k in path:
                parent.N[k] -= F32(1.0)
                parent.W[k] += self.virtual_loss
            return 2, None, path
        self.root_visits[i] += 1  # the root counts simulations
        if not node.terminal and node.game.is_over():
            node.terminal = True
            node.value = F32(terminal_value(node.game))
        if node.terminal:
            self._backup(path, node.value)
            return 0, None, path
        actions = node.game.legal_actions()
        n = len(actions)
        node.actions = np.asarray(actions, np.int64)
        node.P = np.full(n, F32(1.0) / F32(n), F32)
        node.N = np.zeros(n, F32)
        node.W = np.zeros(n, F32)
        node.children = [None] * n
        node.pending = True
        return 1, node, path

    def select(self, k: int, limit: int):
        """Up to ``k`` simulations in every tree with fewer than ``limit`` visits; returns
        ``(observations, masks, keys)`` of the leaves that need the network."""
        if self.leaves:
            raise RuntimeError("select called twice without backup")
        for i, root in enumerate(self.roots):
            if root is None:
                continue
            for _ in range(k):
                if self.root_visits[i] >= limit:
                    break
                got, leaf, path = self._simulate(i)
                if got == 2:  # the tree's open leaves are all waiting: wait with them
                    break
                if got == 1:
                    self.leaves.append((leaf, path))
        n = len(self.leaves)
        observations = np.zeros((n, *self.observation_shape), F32)
        masks = np.zeros((n, self.num_actions), np.int8)
        keys = np.zeros(n, np.uint64)
        for j, (leaf, _) in enumerate(self.leaves):
            observations[j] = leaf.game.observation()
            masks[j, leaf.actions] = 1
            keys[j] = leaf.game.key()
        return observations, masks, keys

    def backup(self, priors: np.ndarray, values: np.ndarray) -> None:
        """Priors ``(n, A)`` and values ``(n,)`` (for the player to move) of the last select's leaves."""
        priors = np.asarray(priors, F32)
        values = np.asarray(values, F32)
        if len(priors) != len(self.leaves) or len(values) != len(self.leaves):
            raise ValueError(f"backup needs {len(self.leaves)} priors and values, got {len(priors)} and {len(values)}")
        for j, (leaf, path) in enumerate(self.leaves):
            p = priors[j, leaf.actions]
            total = np.cumsum(p, dtype=F32)[-1]  # summed in order, as the C loop does
            leaf.P = p / total if total > 0 else np.full(len(p), F32(1.0) / F32(len(p)), F32)
            leaf.pending = False
            self._backup(path, values[j])
        self.leaves = []

    def mix_root_noise(self, noise: np.ndarray, epsilon: float) -> None:
        """Root priors become ``(1 - eps) P + eps noise[i, action]`` (expanded roots only)."""
        eps = F32(epsilon)
        for i, root in enumerate(self.roots):
            if root is None or root.children is None:
                continue
            root.P = (F32(1.0) - eps) * root.P + eps * np.asarray(noise[i], F32)[root.actions]

    def root_stats(self) -> tuple[np.ndarray, np.ndarray]:
        """``(visits, q)``, float32 ``(num_trees, A)``: per root action, N and W / N (0 if unvisited)."""
        visits = np.zeros((len(self.roots), self.num_actions), F32)
        q = np.zeros_like(visits)
        for i, root in enumerate(self.roots):
            if root is None or root.children is None:
                continue
            visits[i, root.actions] = root.N
            q[i, root.actions] = np.where(root.N > 0, root.W / np.maximum(root.N, F32(1.0)), F32(0.0))
        return visits, q


def run_game_search(games, evaluator, config: SearchConfig, rng: np.random.Generator | None = None):
    """Search every game; returns ``(visits, q)``, float32 ``(len(games), num_actions)``.

    The same loop as :func:`agents.alphazero.mcts.run_search`: the first round
    expands the roots, Dirichlet noise (with ``rng``) goes on right after, then
    rounds of ``leaves_per_tree`` leaves per tree until every root has
    ``simulations`` visits. Games must not be over.
    """
    games = list(games)
    if not games:
        raise ValueError("run_game_search needs at least one game")
    if config.root != "puct":
        raise ValueError(f"run_game_search is PUCT only; root={config.root!r} needs the C search of chess variants")
    n = len(games)
    first = games[0]
    search = GameSearch(n, first.num_actions, first.observation_shape, c_puct=config.c_puct,
                        discount=config.discount, fpu=config.fpu)
    for i, game in enumerate(games):
        search.set_root(i, game)
    k = max(1, config.leaves_per_tree)
    noise_added = rng is None or config.dirichlet_epsilon <= 0
    while search.min_visits() < config.simulations:
        observations, masks, keys = search.select(1 if not noise_added else k, config.simulations)
        priors, values = evaluator(observations, masks, keys)
        search.backup(priors, values)
        if not noise_added:
            search.mix_root_noise(dirichlet_noise(games, config.dirichlet_alpha, first.num_actions, rng),
                                  config.dirichlet_epsilon)
            noise_added = True
    return search.root_stats()


def dirichlet_noise(games, alpha: float, num_actions: int, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet(alpha) over each game's legal actions (in its own order), zeros elsewhere."""
    noise = np.zeros((len(games), num_actions), F32)
    for i, game in enumerate(games):
        legal = game.legal_actions()
        noise[i, legal] = rng.dirichlet([alpha] * len(legal))
    return noise
