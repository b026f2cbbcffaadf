"""Perfect play from the tablebase: fastest win, longest defence, a drawing move when drawn."""

from __future__ import annotations

import numpy as np

from agents.base import Agent, check_settings, read_manifest, write_manifest
from minichess_envs.tablebase import Tablebase
from minichess_envs.variants import get_variant


class PerfectAgent(Agent):
    """Plays a DTM-optimal move of the variant's tablebase, ties broken by its own seeded generator.

    Needs the position (``act(..., position=pos)``). The table is loaded (or
    built and cached) on the first move; pass ``tablebase`` to share one.
    """

    name = "perfect"

    def __init__(self, variant: str = "3x3", seed: int | None = None, *, tablebase: Tablebase | None = None,
                 cache_dir: str | None = None):
        self.variant = get_variant(variant).name
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.cache_dir = cache_dir
        self._tablebase = tablebase

    @property
    def tablebase(self) -> Tablebase:
        if self._tablebase is None:
            self._tablebase = Tablebase.load(self.variant, cache_dir=self.cache_dir)
        return self._tablebase

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask, position=None) -> int:
        if position is None:
            raise ValueError("PerfectAgent reads the tablebase, so it needs the position: pass position=")
        tb = self.tablebase
        value, dtm = tb.probe(position)
        best = [m.action for m in tb.move_values(position) if m.value == value and m.dtm == dtm]
        if not best:
            raise ValueError(f"no move to play: the game is over in {position.fen()}")
        return int(best[self.rng.integers(len(best))])

    def save(self, path: str) -> None:
        """Write ``agent.json``: the variant and seed (the table itself is rebuilt or read from the cache)."""
        write_manifest(path, self, variant=self.variant, seed=self.seed)

    @classmethod
    def load(cls, path: str) -> PerfectAgent:
        return cls(**check_settings(path, read_manifest(path)["settings"], {"variant": str}, {"seed": (int, None)}))
