"""Environment ids: Gymnasium (``MiniChess-<Title>-v0``) and PettingZoo (``minichess/<name>_v0``).

``import minichess_envs`` registers every catalogue variant; a custom variant
gets its ids from :func:`register_variant`.
"""

from __future__ import annotations

import gymnasium as gym
import gymnasium.envs.registration
import pettingzoo
from gymnasium.envs.registration import VectorizeMode

from minichess_envs import variants
from minichess_envs.variants import Variant

VECTOR_ENTRY_POINT = "minichess_envs.vector:MiniChessVectorEnv"


def pettingzoo_id(variant: Variant) -> str:
    """The PettingZoo registry id, e.g. ``minichess/gardner_v0``."""
    return f"minichess/{variant.name}_v0"


def register_envs(variant: Variant) -> None:
    """Register the Gymnasium and PettingZoo ids of one catalogue variant."""
    gym.register(
        id=variant.gym_id,
        entry_point="minichess_envs.env:MiniChessEnv",
        vector_entry_point=VECTOR_ENTRY_POINT,
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


def make_vec(id, num_envs: int = 1, vectorization_mode=None, vector_kwargs=None, wrappers=None, **kwargs):
    """``gymnasium.make_vec``, where our ids take ``autoreset_mode`` the same way in every vectorization mode.

    Gymnasium passes ``vector_kwargs`` to sync and async vector envs and refuses
    them for a ``vector_entry_point`` env, whose options are ``kwargs`` (which
    sync and async pass to every sub-env). So that one call can switch modes,
    ``autoreset_mode`` moves, for our ids, to where the chosen mode takes it;
    everything else goes to Gymnasium unchanged.
    """
    spec = id if isinstance(id, gym.envs.registration.EnvSpec) else gym.registry.get(id)
    if spec is not None and spec.vector_entry_point == VECTOR_ENTRY_POINT:
        vector_kwargs = dict(vector_kwargs or {})
        mode = VectorizeMode(vectorization_mode or spec.kwargs.get("vectorization_mode")
                             or VectorizeMode.VECTOR_ENTRY_POINT)
        source, target = (vector_kwargs, kwargs) if mode == VectorizeMode.VECTOR_ENTRY_POINT else (kwargs, vector_kwargs)
        if "autoreset_mode" in source:
            if "autoreset_mode" in target:
                raise ValueError("autoreset_mode given both in vector_kwargs and as a keyword argument: give it once")
            target["autoreset_mode"] = source.pop("autoreset_mode")
    return _gymnasium_make_vec(id, num_envs, vectorization_mode, vector_kwargs, wrappers, **kwargs)


# Gymnasium's own, also when this module is loaded again (importlib.reload) after installing ours.
_gymnasium_make_vec = getattr(gym.envs.registration.make_vec, "__wrapped__", gym.envs.registration.make_vec)
make_vec.__wrapped__ = _gymnasium_make_vec


def extend_make_vec() -> None:
    """Install :func:`make_vec` as ``gymnasium.make_vec``; other ids see no change.

    Code that imported ``make_vec`` from gymnasium before ``minichess_envs`` keeps Gymnasium's own.
    """
    gym.make_vec = gym.envs.registration.make_vec = make_vec
