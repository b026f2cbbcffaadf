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
  ``(1 - eps) P + eps * noise``;
- with forced playouts (``forced > 0``), a visited root move with
  ``N * N < forced * P * sum N`` is chosen first (the best score among such moves);
- every edge also sums the squares of the values backed up through it (for
  the lower-confidence-bound move, :func:`agents.alphazero.mcts.choose_actions`).

``tests/test_boardgames.py`` checks that both give the same visit counts on
chess positions with the same network, noise and settings. The Python tree
keeps each node's game (copied from its parent and stepped once) instead of
replaying moves from the root, and its edge statistics in arrays shared by all
trees (a row per node): every simulation step descends all trees at once, a
few NumPy operations per level instead of a Python loop per tree.
"""

from __future__ import annotations

import numpy as np

from agents.alphazero.game import Game, terminal_value
from agents.alphazero.mcts import SearchConfig, SearchResult, choose_actions, forced_playouts, prune_policy_target

F32 = np.float32
NEW, PENDING, EXPANDED, TERMINAL = 0, 1, 2, 3  # a node's state


class GameSearch:
    """Trees over many games searched together (the C ``Search`` object's protocol).

    ``set_root(i, game)``; then rounds of ``select(k, limit)`` (returns the
    leaves' observations, masks and keys), an evaluator call, ``backup(priors,
    values)``; ``mix_root_noise``; ``root_stats()``, ``root_priors()``, ``root_value_squares()``.

    Node ``n``'s children are the row ``n`` of ``actions`` (legal actions in the
    game's order, -1 past the last), ``P``, ``N``, ``W``, ``W2`` (float32 edge
    statistics, as the C tree keeps them per child; ``W2`` sums the squared values
    backed up) and ``children`` (node numbers, -1 not yet made).
    """

    def __init__(self, num_trees: int, num_actions: int, observation_shape, c_puct: float = 1.25,
                 discount: float = 0.99, virtual_loss: float = 1.0, fpu: float = 0.0, forced: float = 0.0):
        if num_trees < 1:
            raise ValueError(f"num_trees must be >= 1, got {num_trees}")
        self.num_actions = num_actions
        self.observation_shape = tuple(observation_shape)
        self.c_puct, self.discount = F32(c_puct), F32(discount)
        self.virtual_loss, self.fpu = F32(virtual_loss), F32(fpu)
        self.forced = F32(forced)
        self.roots = np.full(num_trees, -1, np.int64)
        self.root_visits = np.zeros(num_trees, np.int64)
        self.games: list[Game] = []
        self.size = 0
        self._allocate(max(64, 16 * num_trees), min(num_actions, 16))
        self.leaves: list[tuple[int, int, list, list]] = []  # waiting for backup: (tree, node, path nodes, path edges)

    def _allocate(self, capacity: int, width: int) -> None:
        """Room for ``capacity`` nodes of up to ``width`` children, the current nodes kept."""
        def grown(old, fill, dtype):
            new = np.full((capacity, width), fill, dtype)
            if old is not None:
                new[:old.shape[0], :old.shape[1]] = old
            return new

        for name, fill, dtype in (("P", 0, F32), ("N", 0, F32), ("W", 0, F32), ("W2", 0, F32),
                                  ("actions", -1, np.int64), ("children", -1, np.int64)):
            setattr(self, name, grown(getattr(self, name, None), fill, dtype))
        state, value = np.full(capacity, NEW, np.int8), np.zeros(capacity, F32)
        if hasattr(self, "state"):
            state[:len(self.state)], value[:len(self.value)] = self.state, self.value
        self.state, self.value = state, value

    def _new_node(self, game: Game) -> int:
        if self.size == len(self.state):
            self._allocate(2 * self.size, self.P.shape[1])
        self.games.append(game)
        self.size += 1
        return self.size - 1

    def set_root(self, i: int, game: Game) -> None:
        if self.leaves:
            raise RuntimeError("set_root between select and backup")
        if game.is_over():
            raise ValueError(f"tree {i}: the game is over")
        self.roots[i] = self._new_node(game.copy())
        self.root_visits[i] = 0

    def min_visits(self) -> int:
        used = self.roots >= 0
        return int(self.root_visits[used].min()) if used.any() else 0

    def _backup(self, nodes: np.ndarray, edges: np.ndarray, lengths: np.ndarray, values) -> None:
        """Negamax with discount from each leaf up its path (row ``j`` of ``nodes`` and ``edges``, the first
        ``lengths[j]`` entries); each edge also gets its virtual loss back. An edge lies at one depth in every
        path through it, so its additions come in the paths' order, as one path after another would add them."""
        value = np.asarray(values, F32).copy()
        for depth in range(nodes.shape[1] - 1, -1, -1):
            on = lengths > depth
            if on.any():
                value[on] = -self.discount * value[on]
                np.add.at(self.W, (nodes[on, depth], edges[on, depth]), value[on] + self.virtual_loss)
                np.add.at(self.W2, (nodes[on, depth], edges[on, depth]), value[on] * value[on])

    def _simulate(self, trees: np.ndarray) -> np.ndarray:
        """One simulation in each of ``trees`` at once; per tree 1 for a new leaf needing the network
        (queued for backup), 0 for a finished game (backed up), 2 for a leaf another simulation waits
        for (undone)."""
        node = self.roots[trees].copy()
        visits = self.root_visits[trees].copy()
        path_nodes, path_edges = [], []  # per depth: the node and edge of every tree (-1: stopped above)
        going = np.flatnonzero(self.state[node] == EXPANDED)
        while len(going):
            at = node[going]
            N, W = self.N[at], self.W[at]
            score = W / np.maximum(N, F32(1.0))  # Q
            score[N == 0] = self.fpu
            sqrt_n = np.sqrt(np.maximum(visits[going], 1).astype(F32))
            score += self.c_puct * self.P[at] * sqrt_n[:, None] / (F32(1.0) + N)
            score[self.actions[at] < 0] = -np.inf
            if self.forced > 0 and not path_nodes:  # the roots: forced playouts come first
                forced = (N > 0) & (N * N < self.forced * self.P[at] * N.sum(1, keepdims=True))
                score = np.where(forced.any(1, keepdims=True) & ~forced, -np.inf, score)
            edge = score.argmax(1)  # the first of equal scores, as the C loop's strict '>'
            self.N[at, edge] += F32(1.0)
            self.W[at, edge] -= self.virtual_loss
            level_nodes, level_edges = np.full(len(trees), -1, np.int64), np.full(len(trees), -1, np.int64)
            level_nodes[going], level_edges[going] = at, edge
            path_nodes.append(level_nodes)
            path_edges.append(level_edges)
            visits[going] = self.N[at, edge].astype(np.int64)
            child = self.children[at, edge]
            for j in np.flatnonzero(child < 0):
                game = self.games[at[j]].copy()
                game.step(int(self.actions[at[j], edge[j]]))
                child[j] = self.children[at[j], edge[j]] = self._new_node(game)
            node[going] = child
            going = going[self.state[child] == EXPANDED]
        depth = len(path_nodes)
        nodes = np.stack(path_nodes, 1) if depth else np.zeros((len(trees), 0), np.int64)
        edges = np.stack(path_edges, 1) if depth else np.zeros((len(trees), 0), np.int64)
        lengths = (nodes >= 0).sum(1)
        outcome = np.ones(len(trees), np.int64)
        waiting = self.state[node] == PENDING
        for j in np.flatnonzero(waiting):  # undo the path: this tree waits with its open leaves
            self.N[nodes[j, :lengths[j]], edges[j, :lengths[j]]] -= F32(1.0)
            self.W[nodes[j, :lengths[j]], edges[j, :lengths[j]]] += self.virtual_loss
        outcome[waiting] = 2
        self.root_visits[trees[~waiting]] += 1  # the root counts simulations
        for j in np.flatnonzero(self.state[node] == NEW):
            n = node[j]
            game = self.games[n]
            if game.is_over():
                self.state[n], self.value[n] = TERMINAL, F32(terminal_value(game))
                continue
            actions = game.legal_actions()
            if len(actions) > self.P.shape[1]:
                self._allocate(len(self.state), max(len(actions), 2 * self.P.shape[1]))
            self.actions[n, :len(actions)] = actions
            self.P[n, :len(actions)] = F32(1.0) / F32(len(actions))
            self.state[n] = PENDING
            self.leaves.append((int(trees[j]), int(n), nodes[j, :lengths[j]], edges[j, :lengths[j]]))
        finished = self.state[node] == TERMINAL
        if finished.any():
            self._backup(nodes[finished], edges[finished], lengths[finished], self.value[node[finished]])
            outcome[finished] = 0
        return outcome

    def select(self, k: int, limit: int):
        """Up to ``k`` simulations in every tree with fewer than ``limit`` visits; returns
        ``(observations, masks, keys)`` of the leaves that need the network."""
        if self.leaves:
            raise RuntimeError("select called twice without backup")
        trees = np.flatnonzero(self.roots >= 0)
        for _ in range(k):
            trees = trees[self.root_visits[trees] < limit]
            if not len(trees):
                break
            outcome = self._simulate(trees)
            trees = trees[outcome != 2]  # a tree whose open leaves are all waiting waits with them
        self.leaves.sort(key=lambda leaf: leaf[0])  # tree by tree (stable: each tree's in simulation order)
        n = len(self.leaves)
        observations = np.zeros((n, *self.observation_shape), F32)
        masks = np.zeros((n, self.num_actions), np.int8)
        keys = np.zeros(n, np.uint64)
        for j, (_, node, _, _) in enumerate(self.leaves):
            game = self.games[node]
            observations[j] = game.observation()
            actions = self.actions[node]
            masks[j, actions[actions >= 0]] = 1
            keys[j] = game.key()
        return observations, masks, keys

    def backup(self, priors: np.ndarray, values: np.ndarray) -> None:
        """Priors ``(n, A)`` and values ``(n,)`` (for the player to move) of the last select's leaves."""
        priors = np.asarray(priors, F32)
        values = np.asarray(values, F32)
        if len(priors) != len(self.leaves) or len(values) != len(self.leaves):
            raise ValueError(f"backup needs {len(self.leaves)} priors and values, got {len(priors)} and {len(values)}")
        if not self.leaves:
            return
        leaf = np.array([node for _, node, _, _ in self.leaves])
        actions = self.actions[leaf]
        legal = actions >= 0
        p = np.where(legal, priors[np.arange(len(leaf))[:, None], np.maximum(actions, 0)], F32(0.0))
        total = np.cumsum(p, axis=1, dtype=F32)[:, -1]  # summed in order, as the C loop does
        uniform = np.where(legal, F32(1.0) / legal.sum(1, keepdims=True).astype(F32), F32(0.0))
        self.P[leaf] = np.where((total > 0)[:, None], p / np.where(total > 0, total, F32(1.0))[:, None], uniform)
        self.state[leaf] = EXPANDED
        depth = max(len(path) for _, _, path, _ in self.leaves)
        nodes = np.zeros((len(leaf), depth), np.int64)
        edges = np.zeros((len(leaf), depth), np.int64)
        lengths = np.array([len(path) for _, _, path, _ in self.leaves])
        for j, (_, _, path, path_edges) in enumerate(self.leaves):
            nodes[j, :len(path)], edges[j, :len(path)] = path, path_edges
        self._backup(nodes, edges, lengths, values)
        self.leaves = []

    def mix_root_noise(self, noise: np.ndarray, epsilon: float) -> None:
        """Root priors become ``(1 - eps) P + eps noise[i, action]`` (expanded roots only)."""
        eps = F32(epsilon)
        for i, root in enumerate(self.roots):
            if root < 0 or self.state[root] not in (PENDING, EXPANDED):
                continue
            actions = self.actions[root]
            legal = actions[actions >= 0]
            self.P[root, :len(legal)] = (F32(1.0) - eps) * self.P[root, :len(legal)] + eps * np.asarray(noise[i], F32)[legal]

    def _per_root_action(self, table: np.ndarray, per_visit: bool = False) -> np.ndarray:
        """Float32 ``(num_trees, A)``: each expanded root's row of an edge table (``P``, ``N``, ``W``,
        ``W2``) at its legal actions, divided by ``N`` with ``per_visit`` (0 if unvisited); 0 elsewhere."""
        out = np.zeros((len(self.roots), self.num_actions), F32)
        for i, root in enumerate(self.roots):
            if root < 0 or self.state[root] not in (PENDING, EXPANDED):
                continue
            actions = self.actions[root]
            legal = actions[actions >= 0]
            row = table[root, :len(legal)]
            if per_visit:
                N = self.N[root, :len(legal)]
                row = np.where(N > 0, row / np.maximum(N, F32(1.0)), F32(0.0))
            out[i, legal] = row
        return out

    def root_stats(self) -> tuple[np.ndarray, np.ndarray]:
        """``(visits, q)``, float32 ``(num_trees, A)``: per root action, N and W / N (0 if unvisited)."""
        return self._per_root_action(self.N), self._per_root_action(self.W, per_visit=True)

    def root_value_squares(self) -> np.ndarray:
        """Float32 ``(num_trees, A)``: per root action, the mean squared value backed up (0 if unvisited)."""
        return self._per_root_action(self.W2, per_visit=True)

    def root_priors(self) -> np.ndarray:
        """Float32 ``(num_trees, A)``: per root action, P (root noise mixed in); 0 for unexpanded roots."""
        return self._per_root_action(self.P)


def run_game_search(games, evaluator, config: SearchConfig, rng: np.random.Generator | None = None):
    """Search every game; returns ``(visits, q)`` (see :func:`search_games`)."""
    result = search_games(games, evaluator, config, rng)
    return result.visits, result.q


def search_games(games, evaluator, config: SearchConfig, rng: np.random.Generator | None = None) -> SearchResult:
    """Search every game (none may be over) with ``config.simulations`` simulations each.

    The same loop and result as :func:`agents.alphazero.mcts.search_positions`:
    the first round expands the roots, Dirichlet noise (with ``rng``) goes on
    right after, then rounds of ``leaves_per_tree`` leaves per tree until every
    root has ``simulations`` visits; forced playouts go with the noise, the
    policy target is pruned after them, and the move played is
    :func:`~agents.alphazero.mcts.choose_actions`'.
    """
    games = list(games)
    if not games:
        raise ValueError("search_games needs at least one game")
    if config.root != "puct":
        raise ValueError(f"search_games is PUCT only; root={config.root!r} needs the C search of chess variants")
    n = len(games)
    first = games[0]
    search = GameSearch(n, first.num_actions, first.observation_shape, c_puct=config.c_puct,
                        discount=config.discount, fpu=config.fpu, forced=forced_playouts(config, rng))
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
    visits, q = search.root_stats()
    priors = search.root_priors()
    policy = visits / np.maximum(visits.sum(1, keepdims=True), F32(1.0))
    if forced_playouts(config, rng):
        policy = prune_policy_target(visits, q, priors, config.c_puct, config.forced_playouts)
    squares = search.root_value_squares()
    return SearchResult(visits, q, policy, choose_actions(visits, q, squares, config), priors, squares)


def dirichlet_noise(games, alpha: float, num_actions: int, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet(alpha) over each game's legal actions (in its own order), zeros elsewhere."""
    noise = np.zeros((len(games), num_actions), F32)
    for i, game in enumerate(games):
        legal = game.legal_actions()
        noise[i, legal] = rng.dirichlet([alpha] * len(legal))
    return noise
