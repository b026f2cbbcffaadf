"""minichess-envs: exact small-board chess for reinforcement learning."""

import importlib.util as _util
import os as _os

if _util.find_spec("minichess_envs._core") is None:
    # Typical cause: a source checkout without its build, earlier on sys.path (the current directory,
    # or a script that puts the checkout on sys.path), shadows an installed minichess-envs; Python's
    # own message would blame a circular import.
    raise ImportError(
        f"minichess_envs at {_os.path.dirname(_os.path.abspath(__file__))} has no compiled engine "
        "(minichess_envs/_core*.so). In a source checkout, build it: pip install -e . (or python setup.py "
        "build_ext --inplace). To use an installed minichess-envs instead, run from outside the checkout, "
        "so that its source tree is not on sys.path."
    )

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
from minichess_envs.registration import (
    extend_make_vec,
    register_catalogue,
    register_variant,
)
from minichess_envs.variants import VARIANTS, Castling, Variant, get_variant

__version__ = "0.1.0"

register_catalogue()  # gym.make("MiniChess-Gardner-v0"), pettingzoo.make("aec", "minichess/gardner_v0")
extend_make_vec()  # gym.make_vec(id, n, vectorization_mode=any, vector_kwargs={"autoreset_mode": ...})

__all__ = [
    "ActionSpaceError", "BLACK", "WHITE", "Castling", "FenError", "IllegalMoveError", "Move", "Outcome", "Position",
    "Termination", "VARIANTS", "Variant", "get_variant", "register_variant",
]
