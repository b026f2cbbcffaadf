"""Greedy capture: take the most valuable piece on offer, else move at random."""

from __future__ import annotations

import numpy as np

from agents.base import Agent, check_settings, read_manifest, write_manifest
from minichess_envs import engine


class GreedyAgent(Agent):
    """Captures the most valuable piece it can (ties at random); with no capture, a random move.

    Needs the position (``act(..., position=pos)``).
    """

    name = "greedy"

    def __init__(self, seed: int | None = None, name: str | None = None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        if name:
            self.name = name

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask, position=None) -> int:
        if position is None:
            raise ValueError("GreedyAgent looks at the pieces, so it needs the position: pass position=")
        values = engine.captured_values(position.pieces, position.legal_move_codes())
        if not values:
            raise ValueError(f"no legal move: the game is over in {position.fen()}")
        best = max(values)
        actions = position.legal_actions()  # same order as legal_move_codes()
        choices = [a for a, v in zip(actions, values) if v == best]
        return int(choices[self.rng.integers(len(choices))])

    def save(self, path: str) -> None:
        write_manifest(path, self, seed=self.seed, name=self.name)

    @classmethod
    def load(cls, path: str) -> GreedyAgent:
        settings = check_settings(path, read_manifest(path)["settings"], {}, {"seed": (int, None), "name": (str, None)})
        return cls(**settings)
