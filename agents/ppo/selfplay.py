"""Self-play for the built-in PPO: the learner against a pool of its past selves and the random player.

One network plays both colors (observations are from the side to move), so
a past self is just an earlier copy of the learner's weights.

* :class:`OpponentPool`: snapshots of the learner, one every ``pool_every``
  iterations, the newest ``pool_size`` kept. Each iteration draws one of them
  to be that iteration's past self: uniformly (``pool_sampling="uniform"``)
  or with a recency bias (``"recent"``: the k-th oldest of n is drawn with
  probability proportional to k, so the newest is n times as likely as the
  oldest).
* :class:`SelfPlayVectorEnv`: ``num_envs`` games stepped together, with the
  vector env's interface (same-step autoreset, the final observation in
  ``infos["final_obs"]``). At its start each game draws its opponent: the
  random player with probability ``selfplay_random`` (Alpha-Mini's opponents
  move at random half the time), else the past self, which samples its moves
  from its masked policy. The learner's color is drawn per game as
  ``agent_color`` says. The rules, rewards and limits of each game are the
  single env's (:class:`~minichess_envs.env.Duel`); the past self's replies in
  all games are one batched forward pass.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from minichess_envs import _core
from minichess_envs.encoding import NO_OP_ACTION, ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, Termination
from minichess_envs.env import MATERIAL_SCALE, Duel, Opponent, StartPositions, draw_color, observation_space
from minichess_envs.variants import get_variant

from agents.ppo.network import PPONet, PPONetConfig

RANDOM, PAST_SELF = 0, 1  # a game's opponent kind
KINDS = ("random", "past_self")


class OpponentPool:
    """The learner's past selves: ``(iteration, weights)`` snapshots, the newest ``size`` kept."""

    def __init__(self, size: int, sampling: str = "recent"):
        if sampling not in ("uniform", "recent"):
            raise ValueError(f"pool sampling must be 'uniform' or 'recent', not {sampling!r}")
        self.size, self.sampling = size, sampling
        self.snapshots: list[tuple[int, dict]] = []

    def add(self, iteration: int, state_dict: dict) -> None:
        self.snapshots.append((iteration, {k: v.detach().clone() for k, v in state_dict.items()}))
        del self.snapshots[:-self.size]

    def probabilities(self) -> np.ndarray:
        """The chance of each snapshot (oldest first) to be drawn."""
        n = len(self.snapshots)
        weights = np.ones(n) if self.sampling == "uniform" else np.arange(1, n + 1, dtype=float)
        return weights / weights.sum()

    def draw(self, rng: np.random.Generator) -> tuple[int, dict]:
        """One snapshot, ``(iteration it was taken at, weights)``."""
        if not self.snapshots:
            raise ValueError("the opponent pool is empty")
        return self.snapshots[int(rng.choice(len(self.snapshots), p=self.probabilities()))]

    def state(self) -> dict:
        return {"iterations": [it for it, _ in self.snapshots], "weights": [w for _, w in self.snapshots]}

    def restore(self, state: dict) -> None:
        self.snapshots = [(int(it), dict(w)) for it, w in zip(state["iterations"], state["weights"])]


class PastSelfVectorEnv(VectorEnv):
    """What the self-play vector envs share: per-game random streams, the past self's network and
    :meth:`reset`. A subclass starts games in ``_new_games(indices)`` and batches them in ``_observations()``."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def _init_opponents(self, num_envs: int, net_config: PPONetConfig) -> None:
        self.kinds = np.zeros(num_envs, np.int8)  # RANDOM or PAST_SELF, per game
        self.learners = np.zeros(num_envs, np.int8)
        self.past_self = PPONet(net_config).eval()
        self.has_past_self = False
        self.generator = torch.Generator()
        self.games_started = np.zeros(2, np.int64)  # by kind, since the last reset()
        self._rngs = [np.random.default_rng() for _ in range(num_envs)]

    def set_past_self(self, state_dict: dict) -> None:
        self.past_self.load_state_dict(state_dict)
        self.has_past_self = True

    def reset(self, *, seed: int | None = None, options=None):
        """New games everywhere; game i's random stream is seeded ``seed + i``."""
        seeds = [None] * self.num_envs if seed is None else [seed + i for i in range(self.num_envs)]
        self._rngs = [np.random.default_rng(s) for s in seeds]
        self.generator.manual_seed(0 if seed is None else seed)
        self.games_started[:] = 0
        self._new_games(np.arange(self.num_envs))
        return self._observations(), {}


class SelfPlayVectorEnv(PastSelfVectorEnv):
    """``num_envs`` games of the learner against the random player or the past self (see the module doc).

    :meth:`set_past_self` loads the weights the past self plays with; until
    then (an empty pool) every game is against the random player.
    """

    def __init__(self, num_envs: int, variant: str, net_config: PPONetConfig, *, agent_color: str = "random",
                 reward: str = "outcome", start: str = "default", random_share: float = 0.2,
                 material_scale: float = MATERIAL_SCALE, illegal_action: str = "raise"):
        if illegal_action != "raise":
            raise ValueError("the self-play env raises on illegal actions (illegal_action='raise')")
        self.variant = get_variant(variant)
        self.num_envs = num_envs
        self.agent_color, self.random_share = agent_color, random_share
        self.encoding = ObservationEncoding(self.variant)
        self.single_observation_space = observation_space(self.variant, self.encoding)
        self.single_action_space = spaces.Discrete(self.variant.num_actions)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.starts = StartPositions(self.variant, start)
        self.duels = [Duel(Opponent(None, self.encoding), reward, material_scale, self.variant.ply_limit)
                      for _ in range(num_envs)]
        self._init_opponents(num_envs, net_config)
        self._obs = np.zeros((num_envs, *self.encoding.shape), np.float32)
        self._masks = np.zeros((num_envs, self.variant.num_actions), np.int8)

    def step(self, actions):
        actions = np.asarray(actions, np.int64)
        n = self.num_envs
        illegal = self._masks[np.arange(n), actions] == 0
        if illegal.any():
            i = int(np.flatnonzero(illegal)[0])
            raise ValueError(f"action {int(actions[i])} of game {i} is not a legal move in "
                             f"{self.duels[i].position.fen()}")
        replying = np.array([self.duels[i].learner_move(int(actions[i])) for i in range(n)])
        self._reply(np.flatnonzero(replying))
        rewards, terminated, truncated = np.zeros(n), np.zeros(n, bool), np.zeros(n, bool)
        for i in range(n):
            rewards[i], terminated[i], truncated[i] = self.duels[i].result()
        infos: dict = {}
        ended = np.flatnonzero(terminated | truncated)
        if len(ended):
            final = self._observations()
            for i in ended:
                reason, winner = self.duels[i].position.outcome_code()
                info = {"final_obs": {k: v[i] for k, v in final.items()},
                        "outcome": Termination(reason).name.lower() if reason else None,
                        "winner": COLOR_NAMES[winner] if reason and winner >= 0 else None,
                        "learner_color": COLOR_NAMES[self.learners[i]], "ply": self.duels[i].position.ply,
                        "opponent": KINDS[self.kinds[i]]}
                infos = self._add_info(infos, info, i)
            self._new_games(ended)
        return self._observations(), rewards, terminated, truncated, infos

    # -- internals ---------------------------------------------------------------------------

    def _new_games(self, games: np.ndarray) -> None:
        """Start games: learner color and opponent kind drawn, the opponent's first move if it is White."""
        openings = []
        for i in games:
            rng = self._rngs[i]
            learner = draw_color(self.agent_color, rng)
            kind = RANDOM if not self.has_past_self or rng.random() < self.random_share else PAST_SELF
            position = self.starts.position(rng, learner)
            self.kinds[i], self.learners[i] = kind, learner
            self.games_started[kind] += 1
            openings.append((i, position, rng))
        # A past self's first move is sampled in one batch; the random player's is drawn by Duel.start.
        first = [(i, p) for i, p, _ in openings if self.kinds[i] == PAST_SELF and p.turn != self.learners[i]]
        for (i, position), action in zip(first, self._past_self_moves([p for _, p in first])):
            position.push_action(int(action))
        for i, position, rng in openings:
            self.duels[i].start(position, int(self.learners[i]), rng)

    def _reply(self, games: np.ndarray) -> None:
        """The opponents' moves in these games: the random player's per game, the past self's in one batch."""
        by_self = [i for i in games if self.kinds[i] == PAST_SELF]
        for i in games:
            if self.kinds[i] == RANDOM:
                duel = self.duels[i]
                duel.reply(duel.opponent.choose(duel.position))
        actions = self._past_self_moves([self.duels[i].position for i in by_self])
        for i, action in zip(by_self, actions):
            self.duels[i].reply(int(action))

    def _past_self_moves(self, positions: list) -> np.ndarray:
        """Moves sampled from the past self's masked policy, from each mover's side."""
        if not positions:
            return np.zeros(0, np.int64)
        k = len(positions)
        obs = np.zeros((k, *self.encoding.shape), np.float32)
        masks = np.zeros((k, self.variant.num_actions), np.int8)
        _core.write_batch(positions, obs, masks, np.full(k, -1, np.int8), self.encoding.history,
                          self.encoding.last_move)
        with torch.inference_mode():
            logits, _ = self.past_self(torch.from_numpy(obs), torch.from_numpy(masks))
            return torch.multinomial(torch.softmax(logits, -1), 1, generator=self.generator).squeeze(1).numpy()

    def _observations(self) -> dict[str, np.ndarray]:
        positions = [d.position for d in self.duels]
        _core.write_batch(positions, self._obs, self._masks, self.learners, self.encoding.history,
                          self.encoding.last_move)
        empty = ~self._masks.any(axis=1)  # a finished game's final observation: a playable mask all the same
        self._masks[empty, NO_OP_ACTION] = 1
        return {"observation": self._obs.copy(), "action_mask": self._masks.copy()}
