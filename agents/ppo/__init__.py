"""PPO with GAE, built in and through RLlib and SB3 (docs/ppo.md); attributes load lazily: no Ray or SB3 on import."""

from __future__ import annotations

import importlib

_MODULES = {
    "agent": ("PPOAgent", "EpsilonRandomAgent", "ByColorAgent"), "network": ("PPONet", "PPONetConfig"),
    "common": ("PPOSettings", "train"), "native": ("NativeBackend",), "task": ("Task", "task_for"),
    "boardgame_env": ("BoardGameVectorEnv", "OpponentPool"),
    "rllib_module": ("MaskedPPOModule",), "rllib_train": ("single_agent_config", "multi_agent_config"),  # need ray
    "sb3_train": ("PPONetPolicy",),  # needs sb3-contrib
}
_EXPORTS = {name: f"agents.ppo.{module}" for module, names in _MODULES.items() for name in names}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'agents.ppo' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
