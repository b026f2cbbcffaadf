"""Self-play: many games in lockstep, one batched search per move for all of them; in worker processes or Ray
actors (:class:`SelfPlaySchedule`), one share of an iteration's games per worker, each with its own seed
(:func:`share_jobs`), so a run is the same for a given number of workers and a share replayed after its worker
was lost gives the same games; the replay buffer."""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Callable, Sequence

import numpy as np

from agents.alphazero.search import SearchConfig, search
from agents.games.base import Game
from agents.workers import WorkerPool
from minichess_envs.players import choose_action


@dataclasses.dataclass
class Samples:
    """Training positions: observation, legal mask, search policy and value target (for the side to move)."""

    observations: np.ndarray  # float16 (N, H, W, C): exact for 0/1 planes, clock to 1e-3
    masks: np.ndarray  # int8 (N, A)
    policies: np.ndarray  # float32 (N, A)
    values: np.ndarray  # float32 (N,)

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def concatenate(cls, parts: list[Samples]) -> Samples:
        return cls(*(np.concatenate([getattr(p, field) for p in parts]) for field in FIELDS))

    @classmethod
    def empty(cls, observation_shape: tuple[int, ...], num_actions: int) -> Samples:
        """No samples, with the arrays' shapes and dtypes."""
        return cls(np.zeros((0, *observation_shape), np.float16), np.zeros((0, num_actions), np.int8),
                   np.zeros((0, num_actions), np.float32), np.zeros(0, np.float32))


FIELDS = [f.name for f in dataclasses.fields(Samples)]


@dataclasses.dataclass
class GameResult:
    """A finished self-play game: its actions from its start position, and its winner (None: a draw)."""

    actions: tuple[int, ...]
    winner: int | None
    opponent_seat: int | None = None  # the seat a sparring partner played (None: self-play)


def play_games(starts: list[Game], evaluator, search_config: SearchConfig, rng: np.random.Generator,
               temperature_plies: int = 8, value_target_q: float = 0.0, policy_target_power: float = 1.0,
               discounted_values: bool = False, opponent=None,
               opponent_seats: Sequence[int | None] = ()) -> tuple[Samples, list[GameResult]]:
    """One self-play game from each start (copies are played), in lockstep, one noisy search of all per move: PUCT
    samples by the visits for ``temperature_plies`` plies (:attr:`Game.plies`), then plays the most visited; Gumbel,
    the search's choice. Targets: the search's policy (or visits ** ``policy_target_power``), and the game's result
    mixed with weight ``value_target_q`` with the search's value (the mean Q); with ``discounted_values``, the result
    times the search's discount per ply to the end, as the search backs values up. In game ``i``, ``opponent`` (an
    agent, reseeded from ``rng``) moves for seat ``opponent_seats[i]`` if given; its moves are samples too, its move
    the policy target and the result the value target."""
    gumbel = search_config.root == "gumbel"
    games = [start.copy() for start in starts]
    seats = list(opponent_seats) + [None] * (len(games) - len(opponent_seats))
    if opponent is None and any(seat is not None for seat in seats):
        raise ValueError("opponent_seats name seats for an opponent, but no opponent was given")
    if opponent is not None:
        opponent.reset(int(rng.integers(2**31)))
    trajectories: list[list] = [[] for _ in games]  # (observation, mask, policy, player to move, root value, ply)
    actions: list[list[int]] = [[] for _ in games]
    active = [i for i, g in enumerate(games) if not g.is_over()]
    while active:
        for i in [i for i in active if seats[i] == games[i].to_play()]:
            g = games[i]
            action = choose_action(opponent, g.view(), getattr(g, "encoding", None))
            mask = g.legal_mask()
            target = np.zeros(len(mask), np.float32)
            target[action] = 1.0  # the partner's move, as in learning from engine games; no search value
            trajectories[i].append((g.observation(), mask, target, g.to_play(), np.nan, g.plies))
            g.step(action)
            actions[i].append(action)
        searched = [i for i in active if not games[i].is_over() and seats[i] != games[i].to_play()]
        result = search([games[i] for i in searched], evaluator, search_config, rng=rng) if searched else None
        for row, i in enumerate(searched):
            g = games[i]
            visits, q = result.visits[row], result.q[row]
            policy = visits / visits.sum()
            if policy_target_power == 1:
                target = result.policy[row]
            else:
                target = visits ** policy_target_power
                target = target / target.sum()
            trajectories[i].append((g.observation(), g.legal_mask(), target, g.to_play(), float(policy @ q), g.plies))
            if gumbel:
                action = int(result.actions[row])
            elif g.plies < temperature_plies:
                action = int(rng.choice(len(policy), p=policy))
            else:
                best = np.flatnonzero(visits == visits.max())
                action = int(best[rng.integers(len(best))])
            g.step(action)
            actions[i].append(action)
        active = [i for i in active if not games[i].is_over()]
    parts, results = [], []
    for i, trajectory in enumerate(trajectories):
        winner = games[i].winner()
        results.append(GameResult(tuple(actions[i]), winner, seats[i]))
        if not trajectory:  # the start was already over
            continue
        obs, masks, policies, players, searched, plies = zip(*trajectory)
        outcome = np.array([0.0 if winner is None else (1.0 if p == winner else -1.0) for p in players], np.float32)
        if discounted_values:
            outcome *= search_config.discount ** (games[i].plies - np.array(plies, np.float32))
        searched = np.array(searched, np.float32)
        searched = np.where(np.isnan(searched), outcome, searched)  # the partner's moves: the result alone
        values = ((1 - value_target_q) * outcome + value_target_q * searched).astype(np.float32)
        parts.append(Samples(np.stack(obs).astype(np.float16), np.stack(masks), np.stack(policies).astype(np.float32),
                             values))
    if not parts:
        return Samples.empty(starts[0].observation_shape, starts[0].num_actions), results
    return Samples.concatenate(parts), results


def symmetric_samples(samples: Samples, symmetries) -> Samples:
    """Every sample in each of the board's symmetric images (:meth:`Game.symmetries`), values unchanged."""
    parts = []
    for k, flip, perm in symmetries:
        obs = samples.observations[:, :, ::-1, :] if flip else samples.observations
        parts.append(Samples(np.ascontiguousarray(np.rot90(obs, k, axes=(1, 2))), samples.masks[:, perm],
                             samples.policies[:, perm], samples.values))
    return Samples.concatenate(parts)


class ReplayBuffer:
    """The most recent ``capacity`` samples, as a ring of preallocated arrays."""

    def __init__(self, capacity: int, observation_shape: tuple, num_actions: int):
        self.capacity, self.size, self.next, self.added = capacity, 0, 0, 0  # next: where the next sample goes
        for field, empty in zip(FIELDS, dataclasses.astuple(Samples.empty(observation_shape, num_actions))):
            setattr(self, field, np.zeros((capacity, *empty.shape[1:]), empty.dtype))

    def add(self, samples: Samples) -> None:
        for j in range(0, len(samples), self.capacity):
            n = min(self.capacity, len(samples) - j)
            idx = (self.next + np.arange(n)) % self.capacity
            for field in FIELDS:
                getattr(self, field)[idx] = getattr(samples, field)[j:j + n]
            self.next = int((self.next + n) % self.capacity)
            self.size = min(self.capacity, self.size + n)
            self.added += n

    def sample(self, batch_size: int, rng: np.random.Generator) -> Samples:
        """``batch_size`` samples drawn uniformly from those held."""
        idx = rng.integers(self.size, size=batch_size)
        return Samples(*(getattr(self, field)[idx] for field in FIELDS))

    def state(self) -> dict:
        """Everything needed to restore the buffer (saved in checkpoints): the masks as bits and the policy
        targets only where a move is legal (zero elsewhere by construction), 7x smaller on Gardner."""
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
        """Restore from :meth:`state`'s dict."""
        if state["capacity"] != self.capacity:
            raise ValueError(f"checkpoint buffer holds {state['capacity']} samples, this run {self.capacity}")
        n = state["size"]
        self.observations[:n] = state["observations"]
        legal = np.unpackbits(state["mask_bits"], axis=1, count=self.masks.shape[1]).astype(bool)
        self.masks[:n] = legal
        policies = self.policies[:n]  # a view: the assignments below fill the buffer
        policies[:] = 0
        policies[legal] = state["legal_policies"]
        self.values[:n] = state["values"]
        self.size, self.next, self.added = n, state["next"], state["added"]


def share_jobs(items: Sequence, workers: int, rng: np.random.Generator) -> list[tuple[list, int]]:
    """``items`` in up to ``workers`` contiguous shares, each with a seed from ``rng``; the seeds are drawn
    before any share is played, so a replayed share does not change the loop's random stream."""
    shares = [share for share in np.array_split(np.arange(len(items)), max(1, workers)) if len(share)]
    return [([items[i] for i in share], int(rng.integers(2**31))) for share in shares]


class SelfPlaySchedule:
    """A loop's self-play on a :class:`~agents.workers.WorkerPool` of ``make_player(asdict(config))``, the starts from
    ``draw_items(rng)``. With ``overlap`` the next iteration's games are submitted as soon as this one's are
    collected; games in flight are checkpointed and ``saved``'s submitted again, as if the run was never cut."""

    def __init__(self, make_player: Callable, config, draw_items: Callable[[np.random.Generator], Sequence],
                 saved: dict | None = None):
        scale = config.scale
        self.pool = WorkerPool(make_player, dataclasses.asdict(config), scale.workers, scale.ray_address)
        self.draw_jobs = lambda rng: share_jobs(draw_items(rng), scale.workers, rng)
        self.overlap = scale.overlap
        self.in_flight = None  # (generator state before the draw, weights) of the submitted games
        if saved is not None and "in_flight_rng" in saved and self.overlap:
            draw = np.random.default_rng()  # a copy: the loop's generator has moved past these draws
            draw.bit_generator.state = saved["in_flight_rng"]
            self._submit({k: v.numpy() for k, v in saved["in_flight_weights"].items()}, draw)

    def _submit(self, weights: dict, rng: np.random.Generator) -> None:
        state = copy.deepcopy(rng.bit_generator.state)
        self.pool.submit(weights, self.draw_jobs(rng))
        self.in_flight, self.submitted = (state, weights), time.perf_counter()

    def games(self, net, rng: np.random.Generator) -> tuple[list, float]:
        """This iteration's results from the pool (share order) and the seconds from their submission to
        their collection; with ``overlap``, the next iteration's games are submitted before returning."""
        if self.in_flight is None:
            self._submit(numpy_weights(net), rng)
        outcomes = self.pool.collect()
        seconds = time.perf_counter() - self.submitted
        self.in_flight = None
        if self.overlap:
            self._submit(numpy_weights(net), rng)
        return outcomes, seconds

    def checkpoint(self) -> dict:
        """The tensors a checkpoint needs to play the games in flight again (none without overlap)."""
        if self.in_flight is None:
            return {}
        import torch
        state, weights = self.in_flight
        return {"in_flight_rng": state, "in_flight_weights": {k: torch.from_numpy(v) for k, v in weights.items()}}


def numpy_weights(net) -> dict:
    """The network's state dict as numpy arrays, copied: a CPU tensor's array shares its memory (training goes on)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}
