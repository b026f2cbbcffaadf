"""The board games' vector env for the built-in PPO and the pool of the learner's past selves: docs/ppo.md."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from agents.games import BOARD_GAMES, SEAT_NAMES, board_game, new_game
from agents.ppo.agent import PPOAgent
from agents.ppo.network import PPONet, PPONetConfig

RANDOM, PAST_SELF = 0, 1  # a game's opponent kind
KINDS = ("random", "past_self")


class OpponentPool:
    """Past selves: ``(iteration, weights)``, the newest ``size`` kept, the k-th oldest drawn with weight k."""

    def __init__(self, size: int):
        self.size = size
        self.snapshots: list[tuple[int, dict]] = []

    def add(self, iteration: int, state_dict: dict) -> None:
        self.snapshots.append((iteration, {k: v.detach().clone() for k, v in state_dict.items()}))
        del self.snapshots[:-self.size]

    def draw(self, rng: np.random.Generator) -> tuple[int, dict]:
        """One snapshot, ``(iteration it was taken at, weights)``."""
        if not self.snapshots:
            raise ValueError("the opponent pool is empty")
        weights = np.arange(1, len(self.snapshots) + 1, dtype=float)
        return self.snapshots[int(rng.choice(len(self.snapshots), p=weights / weights.sum()))]

    def state(self) -> dict:
        return {"iterations": [it for it, _ in self.snapshots], "weights": [w for _, w in self.snapshots]}

    def restore(self, state: dict) -> None:
        self.snapshots = [(int(it), dict(w)) for it, w in zip(state["iterations"], state["weights"])]


def check_game(name: str) -> str:
    """``name`` if it is a board game PPO trains on; ``ValueError`` listing the known ones otherwise."""
    if board_game(name) is None:
        raise ValueError(f"unknown board game {name!r}; known: {', '.join(BOARD_GAMES)}")
    return name


class BoardGameVectorEnv(VectorEnv):
    """``num_envs`` games of the learner (seat ``learner_seat``, ``"random"`` drawn per game) against the random
    player or, with probability ``1 - random_share`` once :meth:`set_past_self` was called, its sampling past self."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, game: str, num_envs: int, net_config: PPONetConfig, *, learner_seat: str = "random",
                 random_share: float = 0.2):
        self.game = check_game(game)
        if learner_seat not in (*SEAT_NAMES, "random"):
            raise ValueError(f"learner_seat must be 'first', 'second' or 'random', got {learner_seat!r}")
        if not 0.0 <= random_share <= 1.0:
            raise ValueError(f"random_share must be a probability in [0, 1], got {random_share}")
        probe = new_game(game)
        self.num_envs, self.learner_seat, self.random_share = num_envs, learner_seat, random_share
        self.single_observation_space = spaces.Dict({
            "observation": spaces.Box(0.0, 1.0, probe.observation_shape, np.float32),
            "action_mask": spaces.Box(0, 1, (probe.num_actions,), np.int8)})
        self.single_action_space = spaces.Discrete(probe.num_actions)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.games = [probe.copy() for _ in range(num_envs)]
        self.kinds = np.zeros(num_envs, np.int8)  # RANDOM or PAST_SELF, per game
        self.learners = np.zeros(num_envs, np.int8)  # the learner's seat: 0 moves first
        self.past_self = PPOAgent(PPONet(net_config), game, sample=True)
        self.has_past_self = False
        self._rngs = [np.random.default_rng() for _ in range(num_envs)]

    def set_past_self(self, state_dict: dict) -> None:
        self.past_self.net.load_state_dict(state_dict)
        self.has_past_self = True

    def reset(self, *, seed: int | None = None, options=None):
        """New games everywhere; game i's random stream is seeded ``seed + i``."""
        self._rngs = [np.random.default_rng(None if seed is None else seed + i) for i in range(self.num_envs)]
        self.past_self.rng.manual_seed(0 if seed is None else seed)
        self._new_games(np.arange(self.num_envs))
        return self._observations(), {}

    def step(self, actions):
        actions = np.asarray(actions, np.int64).reshape(self.num_envs)
        for i, (game, action) in enumerate(zip(self.games, actions)):
            if not (0 <= action < game.num_actions) or not game.legal_mask()[action]:
                raise ValueError(f"action {int(action)} of game {i} is not legal in {game!r}; "
                                 f"legal: {game.legal_actions()}")
        for game, action in zip(self.games, actions):
            game.step(int(action))
        self._reply(range(self.num_envs))
        n = self.num_envs
        rewards, terminated = np.zeros(n), np.array([g.is_over() for g in self.games])
        infos: dict = {}
        ended = np.flatnonzero(terminated)
        if len(ended):
            final = self._observations()
            for i in ended:
                game, learner = self.games[i], int(self.learners[i])
                winner = game.winner()
                rewards[i] = 0.0 if winner is None else (1.0 if winner == learner else -1.0)
                infos = self._add_info(infos, {
                    "final_obs": {k: v[i] for k, v in final.items()},
                    "winner": None if winner is None else SEAT_NAMES[winner], "learner_color": SEAT_NAMES[learner],
                    "moves": int(game.plies), "opponent": KINDS[self.kinds[i]]}, i)
            self._new_games(ended)
        return self._observations(), rewards, terminated, np.zeros(n, bool), infos

    def _new_games(self, indices: np.ndarray) -> None:
        """Start games: the learner's seat and the opponent drawn, the opponent's first move if it sits first."""
        for i in indices:
            rng = self._rngs[i]
            seat = self.learner_seat if self.learner_seat != "random" else SEAT_NAMES[int(rng.integers(2))]
            kind = RANDOM if not self.has_past_self or rng.random() < self.random_share else PAST_SELF
            self.games[i] = new_game(self.game)
            self.learners[i], self.kinds[i] = SEAT_NAMES.index(seat), kind
        self._reply(indices)

    def _reply(self, indices) -> None:
        """The opponents' moves in these games until the learner is to move or the game is over (a checkers
        multi-jump is several moves): the random player's per game, the past self's in one batch."""
        def waits(i):
            return not self.games[i].is_over() and self.games[i].to_play() != self.learners[i]

        waiting = [i for i in indices if waits(i)]
        while waiting:
            by_self = [self.games[i] for i in waiting if self.kinds[i] == PAST_SELF]
            for i in waiting:
                if self.kinds[i] == RANDOM:
                    self.games[i].step(int(self._rngs[i].choice(self.games[i].legal_actions())))
            if by_self:
                for game, action in zip(by_self, self.past_self.act_games(by_self)):
                    game.step(int(action))
            waiting = [i for i in waiting if waits(i)]

    def _observations(self) -> dict[str, np.ndarray]:
        """PettingZoo's dicts, batched: planes from the view of the player to move, and the legal mask."""
        return {"observation": np.stack([g.observation() for g in self.games]),
                "action_mask": np.stack([g.legal_mask() for g in self.games])}
