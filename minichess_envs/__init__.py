"""minichess-envs: exact small-board chess for reinforcement learning."""

from minichess_envs.engine import (
    BLACK,
    WHITE,
    ActionSpaceError,
    FenError,
    IllegalMoveError,
    Move,
    Outcome,
    Position,
    Termination,
)
from minichess_envs.registration import register_catalogue, register_variant
from minichess_envs.variants import VARIANTS, Castling, Variant, get_variant

__version__ = "0.1.0"

register_catalogue()  # gym.make("MiniChess-Gardner-v0"), pettingzoo.make("aec", "minichess/gardner_v0")

__all__ = [
    "ActionSpaceError", "BLACK", "WHITE", "Castling", "FenError", "IllegalMoveError", "Move", "Outcome", "Position",
    "Termination", "VARIANTS", "Variant", "get_variant", "register_variant",
]
