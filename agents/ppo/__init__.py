"""PPO with GAE on our envs, through RLlib and stable-baselines3, with exact action masking.

Modules, in reading order: ``network`` (the actor-critic in plain torch),
``rllib_module`` (it as an RLlib RLModule), ``common`` (settings, evaluation,
checkpoints), ``rllib_train`` (RLlib configs, training loop, the Alpha-Mini
procedure), ``sb3_train`` (sb3-contrib MaskablePPO), ``agent`` (trained
policies as agents). Playing a saved policy needs only torch; training needs
``pip install -e ".[rllib]"`` or ``".[sb3]"``.

Attributes load lazily, so ``import agents.ppo`` imports neither Ray nor SB3.
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
