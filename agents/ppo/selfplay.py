"""Self-play for the built-in PPO: the pool of the learner's past selves (board games; on chess the pool
was measured and removed, docs/decisions.md)."""

from __future__ import annotations

import numpy as np

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
