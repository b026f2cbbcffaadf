"""Greedy capture: take the most valuable piece on offer, else move at random."""

from __future__ import annotations

from agents.base import SeededAgent, need_position
from minichess_envs import engine


class GreedyAgent(SeededAgent):
    """Captures the most valuable piece it can (ties at random); with no capture, a random move. Needs the position
    (``act(..., position=pos)``)."""

    name = "greedy"
    optional = {"seed": (int, None), "name": (str, None)}

    def act(self, observation, action_mask, position=None) -> int:
        position = need_position(self, position)
        values = engine.captured_values(position.pieces, position.legal_move_codes())
        best = max(values, default=0)
        # legal_actions() is in the order of legal_move_codes()
        return self.pick([a for a, v in zip(position.legal_actions(), values) if v == best], position)
