"""Self-play: many games in lockstep, one batched search per move for all of them."""

from __future__ import annotations

import dataclasses

import numpy as np

from agents.alphazero.mcts import SearchConfig, SearchResult, search_positions
from agents.arena import GameRecord, termination_name
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import WHITE

RESIGNATION = "resignation"  # a record's termination when the side to move gave up


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
    """Counts of one or more self-play calls: games, moves played, and what resignation did."""

    games: int = 0
    plies: int = 0  # moves played in all games, recorded as samples or not
    resigned: int = 0  # games ended by the side to move resigning
    resign_checks: int = 0  # verification games (resignation disabled) in which a side would have resigned
    resign_false_positives: int = 0  # ... of those, the games that side did not lose

    def add(self, other: SelfPlayStats) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def check_resign_settings(resign_threshold: float | None, resign_check_fraction: float) -> None:
    """``ValueError`` naming the setting unless the threshold is off (``None``) or in (-1, 0) and the
    share of verification games is in [0, 1]."""
    if resign_threshold is not None and not -1.0 < resign_threshold < 0.0:
        raise ValueError(f"resign_threshold must be None (off) or in (-1, 0), got {resign_threshold!r}")
    if not 0.0 <= resign_check_fraction <= 1.0:
        raise ValueError(f"resign_check_fraction must be in [0, 1], got {resign_check_fraction!r}")


def play_games(starts, evaluator, search: SearchConfig, encoding: ObservationEncoding, rng: np.random.Generator,
               temperature_plies: int = 8, ply_limit: int | None = None, fast_simulations: int = 0,
               full_search_fraction: float = 1.0, value_q_weight: float = 0.0,
               resign_threshold: float | None = None, resign_check_fraction: float = 0.1,
               stats: SelfPlayStats | None = None) -> tuple[Samples, list[GameRecord]]:
    """Play one game from each start position (copies are played) and return its training samples.

    Every move: a noisy search of all unfinished games at once. PUCT: a move
    sampled in proportion to the visit counts for the first ``temperature_plies``
    plies of the game, and the most visited move afterwards (ties broken at
    random); the target is the visit shares (pruned with forced playouts). Gumbel root: the search's chosen
    move (its Gumbel noise explores; ``temperature_plies`` is not used), the
    target the improved policy.
    A game reaching ``ply_limit`` (default: the variant's) counts as a draw.

    Playout cap randomisation (KataGo; Wu, 2019, section 3.1) with ``fast_simulations > 0``: each move
    gets the full search with probability ``full_search_fraction`` and becomes a training sample;
    the other moves get a noiseless search of ``fast_simulations`` and are played only.
    ``value_q_weight`` mixes the search's root value into the value target:
    ``(1 - w) * result + w * root value``.

    Resignation (AlphaGo Zero; Silver et al., 2017, Methods "Self-play") with ``resign_threshold``:
    after every search, the side to move would resign when the root value (the visit-weighted mean Q)
    and the Q of the most visited move are both below the threshold. Each game draws at its start
    whether it may resign; a share ``resign_check_fraction`` of them may not (verification games): they
    are played out, and one is a false positive if the side that first would have resigned did not lose.
    A resigned game ends at once and the side to move loses (its samples' value targets say so).
    With ``resign_threshold=None`` no random numbers are drawn for it.

    ``stats``, if given, gets this call's counts added to it.
    """
    check_resign_settings(resign_threshold, resign_check_fraction)
    resigning = resign_threshold is not None
    variant = encoding.variant
    fast_search = dataclasses.replace(search, simulations=fast_simulations) if fast_simulations > 0 else None
    limit = variant.ply_limit if ply_limit is None else ply_limit
    gumbel = search.root == "gumbel"
    games = [start.copy() for start in starts]
    first_ply = [g.ply for g in games]
    trajectories: list[list] = [[] for _ in games]  # (observation, mask, policy, side to move, root value)
    records: list[GameRecord | None] = [None] * len(games)
    winners: list[int | None] = [None] * len(games)  # set when a game ends; None: a draw
    # drawn only with resignation on, so that without it the random stream is what it always was
    may_resign = rng.random(len(games)) >= resign_check_fraction if resigning else np.zeros(len(games), bool)
    would_resign: list[int | None] = [None] * len(games)  # verification games: the first side below the threshold
    active = [i for i, g in enumerate(games) if not g.is_game_over()]
    for i, g in enumerate(games):
        if i not in active:
            records[i] = _record(g, g.ply, variant.name)
            outcome = g.outcome()
            winners[i] = None if outcome is None else outcome.winner
    while active:
        full = np.ones(len(active), bool)
        if fast_search is not None:
            full = rng.random(len(active)) < full_search_fraction
        result = _search_split([games[i] for i in active], full, evaluator, search, fast_search, encoding, rng, limit)
        visits = result.visits
        still = []
        for row, i in enumerate(active):
            g = games[i]
            root_value = float((visits[row] * result.q[row]).sum() / max(visits[row].sum(), 1.0))
            if full[row]:
                trajectories[i].append((encoding.encode(g), g.action_mask(), result.policy[row], g.turn, root_value))
            if resigning and _would_resign(visits[row], result.q[row], root_value, resign_threshold):
                if may_resign[i]:  # the position searched stays a sample; no move is played from it
                    records[i] = _record(g, first_ply[i], variant.name, resigned=g.turn)
                    winners[i] = 1 - g.turn  # the other side (WHITE 0, BLACK 1)
                    continue
                if would_resign[i] is None:
                    would_resign[i] = g.turn
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
        checked = [i for i, side in enumerate(would_resign) if side is not None]
        stats.add(SelfPlayStats(
            games=len(games), plies=sum(r.plies for r in records),
            resigned=sum(r.termination == RESIGNATION for r in records), resign_checks=len(checked),
            resign_false_positives=sum(winners[i] != 1 - would_resign[i] for i in checked)))
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


def _would_resign(visits: np.ndarray, q: np.ndarray, root_value: float, threshold: float) -> bool:
    """Whether the root value and the most visited move's Q (the best Q among ties) are both below
    ``threshold``; never for a root the search did not visit."""
    if visits.max() <= 0:
        return False
    return root_value < threshold and float(q[visits == visits.max()].max()) < threshold


def _search_split(positions, full, evaluator, search, fast_search, encoding, rng, limit) -> SearchResult:
    """One search result for all positions: the full (noisy) search where ``full``, the fast one elsewhere."""
    if full.all():
        return search_positions(positions, evaluator, search, encoding, rng=rng, ply_limit=limit)
    n, A = len(positions), encoding.variant.num_actions
    out = SearchResult(*(np.zeros((n, A), np.float32) for _ in range(3)), np.zeros(n, np.int64),
                       np.zeros((n, A), np.float32), np.zeros((n, A), np.float32))
    for chosen, config, noise in ((full, search, rng), (~full, fast_search, None)):
        rows = np.flatnonzero(chosen)
        if len(rows):
            part = search_positions([positions[r] for r in rows], evaluator, config, encoding, rng=noise,
                                    ply_limit=limit)
            for name in ("visits", "q", "policy", "actions", "priors", "value_squares"):
                getattr(out, name)[rows] = getattr(part, name)
    return out


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

    @classmethod
    def of(cls, samples: Samples) -> ReplayBuffer:
        """A buffer holding exactly ``samples``."""
        buffer = cls(max(len(samples), 1), samples.observations.shape[1:], samples.policies.shape[1])
        buffer.add(samples)
        return buffer

    def sample(self, batch_size: int, rng: np.random.Generator, window: int | None = None) -> Samples:
        """``batch_size`` samples drawn uniformly from the most recent ``window`` (default: all held)."""
        if window is None or window >= self.size:
            idx = rng.integers(self.size, size=batch_size)
        else:
            idx = (self.next - 1 - rng.integers(max(1, int(window)), size=batch_size)) % self.capacity
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


def averaged_positions(samples: Samples) -> Samples:
    """Each distinct position once, with the mean of its samples' policy and value targets.

    Position averaging (Oracle's "Lessons from AlphaZero" study of Connect Four): the openings
    that every game repeats stop outweighing the rest of the buffer, and their targets lose the
    noise of single games. Positions are told apart by their observation planes.
    """
    n = len(samples)
    if n == 0:
        return samples
    rows = np.ascontiguousarray(samples.observations.reshape(n, -1))
    keys = rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).ravel()
    _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    policies = np.zeros((len(first), samples.policies.shape[1]), np.float64)
    np.add.at(policies, inverse, samples.policies)
    values = np.bincount(inverse, weights=samples.values, minlength=len(first))
    return Samples(samples.observations[first], samples.masks[first],
                   (policies / counts[:, None]).astype(np.float32), (values / counts).astype(np.float32))


def replay_window(added: int, start: int, alpha: float = 0.75, beta: float = 0.4) -> int:
    """KataGo's growing replay window (Wu, 2019, section 4.2): ``start`` samples at first, then
    ``start * (1 + beta * ((added / start) ** alpha - 1) / alpha)`` once ``added`` samples exist, so
    early, weaker games leave training sooner than a fixed window would let them."""
    if added <= start:
        return start
    return int(start * (1 + beta * ((added / start) ** alpha - 1) / alpha))


def _record(game, first_ply: int, variant: str, resigned: int | None = None) -> GameRecord:
    """The record of a self-play game from ply ``first_ply`` on (stopped at the ply limit: a draw;
    ``resigned``: the side that resigned in the game's current position, so lost)."""
    moves = tuple(m.uci() for m in game.move_stack[first_ply:])
    if resigned is not None:
        result, termination = ("0-1" if resigned == WHITE else "1-0"), RESIGNATION
    else:
        outcome = game.outcome()
        result, termination = (outcome.result() if outcome else "1/2-1/2"), termination_name(outcome)
    return GameRecord(variant, "self-play", "self-play", result, termination, len(moves), moves, game.fen(first_ply))
