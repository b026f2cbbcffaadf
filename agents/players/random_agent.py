"""Uniformly random legal moves: the reference every leaderboard is measured against."""

from __future__ import annotations

import numpy as np

from agents.base import Agent, check_settings, read_manifest, write_manifest


class RandomAgent(Agent):
    """Plays a uniformly random legal action, from its own seeded generator."""

    name = "random"

    def __init__(self, seed: int | None = None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask, position=None) -> int:
        legal = np.flatnonzero(action_mask)
        if len(legal) == 0:
            raise ValueError("no legal action: the game is over")
        return int(legal[self.rng.integers(len(legal))])

    def save(self, path: str) -> None:
        write_manifest(path, self, seed=self.seed)

    @classmethod
    def load(cls, path: str) -> RandomAgent:
        return cls(**check_settings(path, read_manifest(path)["settings"], {}, {"seed": (int, None)}))
