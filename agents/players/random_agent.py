"""Uniformly random legal moves: the reference every leaderboard is measured against."""

from __future__ import annotations

import numpy as np

from agents.base import SeededAgent


class RandomAgent(SeededAgent):
    """Plays a uniformly random legal action, from its own seeded generator."""

    name = "random"

    def __init__(self, seed: int | None = None):
        super().__init__(seed)

    def act(self, observation, action_mask, position=None) -> int:
        return self.pick(np.flatnonzero(action_mask))
