"""PPO with GAE on our envs, built in, through RLlib and through stable-baselines3, with exact action masking.

Modules in reading order and what each needs installed: docs/ppo.md. Attributes load lazily, so
``import agents.ppo`` imports neither Ray nor SB3.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "PPOAgent": "agents.ppo.agent",
    "EpsilonRandomAgent": "agents.ppo.agent",
    "ByColorAgent": "agents.ppo.agent",
    "PPONet": "agents.ppo.network",
    "PPONetConfig": "agents.ppo.network",
    "PPOSettings": "agents.ppo.common",
    "train": "agents.ppo.common",
    "NativeBackend": "agents.ppo.native",
    "Task": "agents.ppo.task",
    "task_for": "agents.ppo.task",
    "OpponentPool": "agents.ppo.selfplay",
    "BoardGameVectorEnv": "agents.ppo.boardgame_env",
    "MaskedPPOModule": "agents.ppo.rllib_module",  # needs ray
    "single_agent_config": "agents.ppo.rllib_train",  # needs ray
    "multi_agent_config": "agents.ppo.rllib_train",  # needs ray
    "PPONetPolicy": "agents.ppo.sb3_train",  # needs sb3-contrib
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'agents.ppo' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
