"""Self-play: many games in lockstep, one batched search per move for all of them."""

from __future__ import annotations

import dataclasses

import numpy as np

from agents.alphazero.search import SearchConfig, search
from agents.games.chess import chess_games
from agents.arena import GameRecord, termination_name
from minichess_envs.encoding import ObservationEncoding


@dataclasses.dataclass
class Samples:
    """Training positions: observation, legal mask, search policy and final outcome.

    ``value`` is the game's result for the side to move at that position
    (+1 win, 0 draw or ply limit, -1 loss).
    """

    observations: np.ndarray  # float16 (N, H, W, C): exact for 0/1 planes, clock to 1e-3
    masks: np.ndarray  # int8 (N, A)
    policies: np.ndarray  # float32 (N, A)
    values: np.ndarray  # float32 (N,)

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def concatenate(cls, parts: list[Samples]) -> Samples:
        return cls(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(cls)))

    @classmethod
    def empty(cls, observation_shape: tuple[int, ...], num_actions: int) -> Samples:
        """No samples, with the arrays' shapes and dtypes."""
        return cls(np.zeros((0, *observation_shape), np.float16), np.zeros((0, num_actions), np.int8),
                   np.zeros((0, num_actions), np.float32), np.zeros(0, np.float32))


@dataclasses.dataclass
class SelfPlayStats:
    """Counts of one or more self-play calls: games and moves played."""

    games: int = 0
    plies: int = 0

    def add(self, other: SelfPlayStats) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def play_games(starts, evaluator, search_config: SearchConfig, encoding: ObservationEncoding,
               rng: np.random.Generator, temperature_plies: int = 8, ply_limit: int | None = None,
               value_q_weight: float = 0.0, stats: SelfPlayStats | None = None) -> tuple[Samples, list[GameRecord]]:
    """Play one game from each start position (copies are played) and return its training samples.

    Every move: a noisy search of all unfinished games at once. PUCT: a move
    sampled in proportion to the visit counts for the first ``temperature_plies``
    plies of the game, and the most visited move afterwards (ties broken at
    random); the target is the visit shares. Gumbel root: the search's chosen
    move (its Gumbel noise explores; ``temperature_plies`` is not used), the
    target the improved policy.
    A game reaching ``ply_limit`` (default: the variant's) counts as a draw.
    ``value_q_weight`` mixes the search's root value into the value target:
    ``(1 - w) * result + w * root value``. ``stats``, if given, gets this call's counts added to it.
    """
    variant = encoding.variant
    limit = variant.ply_limit if ply_limit is None else ply_limit
    gumbel = search_config.root == "gumbel"
    games = [start.copy() for start in starts]
    first_ply = [g.ply for g in games]
    trajectories: list[list] = [[] for _ in games]  # (observation, mask, policy, side to move, root value)
    records: list[GameRecord | None] = [None] * len(games)
    winners: list[int | None] = [None] * len(games)  # set when a game ends; None: a draw
    active = [i for i, g in enumerate(games) if not g.is_game_over()]
    for i, g in enumerate(games):
        if i not in active:
            records[i] = _record(g, g.ply, variant.name)
            outcome = g.outcome()
            winners[i] = None if outcome is None else outcome.winner
    while active:
        result = search(chess_games([games[i] for i in active], encoding, limit), evaluator, search_config, rng=rng)
        visits = result.visits
        still = []
        for row, i in enumerate(active):
            g = games[i]
            root_value = float((visits[row] * result.q[row]).sum() / max(visits[row].sum(), 1.0))
            trajectories[i].append((encoding.encode(g), g.action_mask(), result.policy[row], g.turn, root_value))
            if gumbel:
                action = int(result.actions[row])
            elif g.ply - first_ply[i] < temperature_plies:
                action = int(rng.choice(len(visits[row]), p=visits[row] / visits[row].sum()))
            else:
                best = np.flatnonzero(visits[row] == visits[row].max())
                action = int(best[rng.integers(len(best))])
            g.push_action(action)
            outcome = g.outcome()
            if outcome is None and g.ply < limit:
                still.append(i)
                continue
            records[i] = _record(g, first_ply[i], variant.name)
            winners[i] = None if outcome is None else outcome.winner
        active = still
    if stats is not None:
        stats.add(SelfPlayStats(games=len(games), plies=sum(r.plies for r in records)))
    parts = []
    for i, trajectory in enumerate(trajectories):
        if not trajectory:
            continue
        winner = winners[i]
        obs, masks, policies, sides, root_values = zip(*trajectory)
        values = np.array([0.0 if winner is None else (1.0 if side == winner else -1.0) for side in sides], np.float32)
        if value_q_weight > 0:
            values = (1 - value_q_weight) * values + value_q_weight * np.array(root_values, np.float32)
        parts.append(Samples(np.stack(obs).astype(np.float16), np.stack(masks), np.stack(policies).astype(np.float32),
                             values))
    if not parts:
        return Samples.empty(encoding.shape, variant.num_actions), records
    return Samples.concatenate(parts), records


class ReplayBuffer:
    """The most recent ``capacity`` samples, as a ring of preallocated arrays."""

    def __init__(self, capacity: int, observation_shape: tuple, num_actions: int):
        self.capacity = capacity
        self.observations = np.zeros((capacity, *observation_shape), np.float16)
        self.masks = np.zeros((capacity, num_actions), np.int8)
        self.policies = np.zeros((capacity, num_actions), np.float32)
        self.values = np.zeros(capacity, np.float32)
        self.size = 0
        self.next = 0  # where the next sample goes
        self.added = 0  # samples ever added

    def add(self, samples: Samples) -> None:
        for j in range(0, len(samples), self.capacity):
            chunk = slice(j, min(j + self.capacity, len(samples)))
            n = chunk.stop - chunk.start
            idx = (self.next + np.arange(n)) % self.capacity
            self.observations[idx] = samples.observations[chunk]
            self.masks[idx] = samples.masks[chunk]
            self.policies[idx] = samples.policies[chunk]
            self.values[idx] = samples.values[chunk]
            self.next = int((self.next + n) % self.capacity)
            self.size = min(self.capacity, self.size + n)
            self.added += n

    def held(self) -> Samples:
        """The samples held (views, in ring order)."""
        n = self.size
        return Samples(self.observations[:n], self.masks[:n], self.policies[:n], self.values[:n])

    def sample(self, batch_size: int, rng: np.random.Generator) -> Samples:
        """``batch_size`` samples drawn uniformly from those held."""
        idx = rng.integers(self.size, size=batch_size)
        return Samples(self.observations[idx], self.masks[idx], self.policies[idx], self.values[idx])

    def state(self) -> dict:
        """Everything needed to restore the buffer (saved in checkpoints).

        Stored compactly: the legal-move masks as bits and the policy targets only where a move is legal
        (they are zero elsewhere by construction), 7x smaller than the arrays on Gardner.
        """
        n = self.size
        legal = self.masks[:n].astype(bool)
        policies = self.policies[:n]
        legal_policies = policies[legal]
        if np.count_nonzero(legal_policies) != np.count_nonzero(policies):
            raise ValueError("a policy target puts probability on an illegal move: cannot store it compactly")
        return {"capacity": self.capacity, "next": self.next, "size": n, "added": self.added,
                "observations": self.observations[:n].copy(), "mask_bits": np.packbits(legal, axis=1),
                "legal_policies": legal_policies, "values": self.values[:n].copy()}

    def restore(self, state: dict) -> None:
        """Restore from :meth:`state`'s dict, or from the dense arrays that checkpoints held before."""
        if state["capacity"] != self.capacity:
            raise ValueError(f"checkpoint buffer holds {state['capacity']} samples, this run {self.capacity}")
        n = state["size"]
        self.observations[:n] = state["observations"]
        if "mask_bits" in state:
            legal = np.unpackbits(state["mask_bits"], axis=1, count=self.masks.shape[1]).astype(bool)
            self.masks[:n] = legal
            policies = self.policies[:n]  # a view: the assignments below fill the buffer
            policies[:] = 0
            policies[legal] = state["legal_policies"]
        else:
            self.masks[:n] = state["masks"]
            self.policies[:n] = state["policies"]
        self.values[:n] = state["values"]
        self.size, self.next, self.added = n, state["next"], state["added"]


def _record(game, first_ply: int, variant: str) -> GameRecord:
    """The record of a self-play game from ply ``first_ply`` on (stopped at the ply limit: a draw)."""
    moves = tuple(m.uci() for m in game.move_stack[first_ply:])
    outcome = game.outcome()
    result, termination = (outcome.result() if outcome else "1/2-1/2"), termination_name(outcome)
    return GameRecord(variant, "self-play", "self-play", result, termination, len(moves), moves, game.fen(first_ply))
