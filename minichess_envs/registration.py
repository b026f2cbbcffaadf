"""Environment ids: Gymnasium (``MiniChess-<Title>-v0``) and PettingZoo (``minichess/<name>_v0``).

``import minichess_envs`` registers every catalogue variant; a custom variant
gets its ids from :func:`register_variant`.
"""

from __future__ import annotations

import gymnasium as gym
import pettingzoo

from minichess_envs import variants
from minichess_envs.variants import Variant


def pettingzoo_id(variant: Variant) -> str:
    """The PettingZoo registry id, e.g. ``minichess/gardner_v0``."""
    return f"minichess/{variant.name}_v0"


def register_envs(variant: Variant) -> None:
    """Register the Gymnasium and PettingZoo ids of one catalogue variant."""
    gym.register(
        id=variant.gym_id,
        entry_point="minichess_envs.env:MiniChessEnv",
        vector_entry_point="minichess_envs.vector:MiniChessVectorEnv",
        kwargs={"variant": variant.name},
    )
    pettingzoo.register("aec", pettingzoo_id(variant), entry_point="minichess_envs.aec:env",
                        kwargs={"variant": variant.name})


def register_variant(variant: Variant) -> Variant:
    """Add a custom variant to the catalogue and register its environment ids."""
    variants._add_to_catalogue(variant)
    register_envs(variant)
    return variant


def register_catalogue() -> None:
    for variant in variants.VARIANTS.values():
        if variant.gym_id not in gym.registry:
            register_envs(variant)
