"""PPO on the PettingZoo board games: a Gymnasium env of one player against an opponent, and
sb3-contrib's ``MaskablePPO`` trained on it against random or in self-play.

:class:`GameEnv` turns a :class:`~agents.alphazero.game.Game` into a single-agent env: the learner
plays one colour (drawn at random each episode), the opponent answers inside ``step``; the reward is
+1 / 0 / -1 at the end; ``action_masks()`` is what MaskablePPO reads. Observations and actions are
PettingZoo's. In self-play the opponent is a frozen copy of the learner, refreshed every
``snapshot_steps`` steps.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np

from agents.alphazero.game import new_game


class GameEnv(gym.Env):
    """One player of a board game against ``opponent(games) -> actions`` (batched, one game here)."""

    metadata = {"render_modes": []}

    def __init__(self, game: str, opponent, learner_first: bool | None = None):
        self.game_name = game
        self.opponent = opponent
        self.learner_first = learner_first  # None: drawn at random each episode
        probe = new_game(game)
        self.observation_space = gym.spaces.Box(0.0, 1.0, probe.observation_shape, np.float32)
        self.action_space = gym.spaces.Discrete(probe.num_actions)
        self.game = probe
        self.learner = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.game = new_game(self.game_name)
        first = self.learner_first if self.learner_first is not None else bool(self.np_random.integers(2))
        self.learner = 0 if first else 1
        if not first:
            self.game.step(int(self.opponent([self.game])[0]))
        return self.game.observation(), {}

    def action_masks(self) -> np.ndarray:
        return self.game.legal_mask().astype(bool)

    def step(self, action):
        action = int(action)
        if self.game.is_over():
            raise RuntimeError("step after the end of the game: call reset()")
        if not (0 <= action < self.action_space.n) or not self.game.legal_mask()[action]:
            raise ValueError(f"illegal action {action} in {self.game!r}; legal: {self.game.legal_actions()}")
        self.game.step(action)
        if not self.game.is_over():
            self.game.step(int(self.opponent([self.game])[0]))
        if not self.game.is_over():
            return self.game.observation(), 0.0, False, False, {}
        winner = self.game.winner()
        reward = 0.0 if winner is None else (1.0 if winner == self.learner else -1.0)
        return self.game.observation(), reward, True, False, {"winner": winner}


def policy_player(model):
    """A MaskablePPO model (or its policy) as a batched player: its most probable legal action."""
    def choose(games):
        obs = np.stack([g.observation() for g in games])
        masks = np.stack([g.legal_mask().astype(bool) for g in games])
        actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
        return [int(a) for a in np.atleast_1d(actions)]
    return choose


def train_ppo(game: str, opponent: str = "random", total_steps: int = 50_000, seed: int = 0, n_envs: int = 8,
              snapshot_steps: int = 5_000, verbose: int = 0, **ppo_kwargs):
    """MaskablePPO (MLP policy) trained against ``"random"`` or in ``"self"``-play; returns the model."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.boardgame_judges import random_player

    if opponent not in ("random", "self"):
        raise ValueError(f"opponent must be 'random' or 'self', got {opponent!r}")
    frozen = {"choose": random_player(seed + 1)}

    def current(games):  # the env's opponent: whatever is frozen now
        return frozen["choose"](games)

    envs = DummyVecEnv([lambda: GameEnv(game, current) for _ in range(n_envs)])
    envs.seed(seed)
    settings = dict(n_steps=256, batch_size=256, n_epochs=4, gamma=0.99, learning_rate=1e-3, ent_coef=0.01)
    settings.update(ppo_kwargs)
    model = MaskablePPO("MlpPolicy", envs, seed=seed, verbose=verbose, **settings)

    class Snapshot(BaseCallback):
        def _on_step(self) -> bool:
            if opponent == "self" and self.num_timesteps % snapshot_steps < n_envs:
                frozen["choose"] = policy_player(copy.deepcopy(model.policy))
            return True

    if opponent == "self":
        frozen["choose"] = policy_player(copy.deepcopy(model.policy))
    model.learn(total_timesteps=total_steps, callback=Snapshot())
    return model
