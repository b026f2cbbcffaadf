"""Perfect play from the tablebase: fastest win, longest defence, a drawing move when drawn."""

from __future__ import annotations

from agents.base import SeededAgent, need_position
from minichess_envs.tablebase import Tablebase
from minichess_envs.variants import get_variant


class PerfectAgent(SeededAgent):
    """Plays a DTM-optimal move of the variant's tablebase, ties broken by its own seeded generator. Needs the position
    (``act(..., position=pos)``). The table is loaded (or built and cached) on the first move; pass ``tablebase`` to
    share one. Saved: the variant and seed, not the table."""

    name = "perfect"
    required = {"variant": str}

    def __init__(self, variant: str = "3x3", seed: int | None = None, *, tablebase: Tablebase | None = None,
                 cache_dir: str | None = None):
        super().__init__(seed)
        self.variant = get_variant(variant).name
        self.cache_dir = cache_dir
        self._tablebase = tablebase

    @property
    def tablebase(self) -> Tablebase:
        if self._tablebase is None:
            self._tablebase = Tablebase.load(self.variant, cache_dir=self.cache_dir)
        return self._tablebase

    def act(self, observation, action_mask, position=None) -> int:
        position, tb = need_position(self, position), self.tablebase
        value, dtm = tb.probe(position)
        return self.pick([m.action for m in tb.move_values(position) if m.value == value and m.dtm == dtm], position)
