"""The action-masking RLModule: :class:`~agents.ppo.network.PPONet` inside RLlib's new API stack."""

from __future__ import annotations

import gymnasium as gym
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule

from agents.ppo.network import PPONet, PPONetConfig

NET_SIZES = ("channels", "conv_layers", "value_hidden")


def net_config_for(observation_space: gym.Space, action_space: gym.Space, model_config: dict | None) -> PPONetConfig:
    """The :class:`PPONetConfig` for an env's spaces; ``ValueError`` if they are not ours."""
    if not (isinstance(observation_space, gym.spaces.Dict)
            and {"observation", "action_mask"} <= set(observation_space.spaces)):
        raise ValueError("the masking module needs a Dict observation space with 'observation' (H, W, C) planes "
                         f"and an 'action_mask', got {observation_space}")
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"the masking module needs a Discrete action space, got {action_space}")
    height, width, channels = observation_space["observation"].shape
    sizes = {k: v for k, v in (model_config or {}).items() if k in NET_SIZES}
    return PPONetConfig(height, width, channels, int(action_space.n), **sizes)


class MaskedPPOModule(TorchRLModule, ValueFunctionAPI):
    """Actor-critic over the observation planes with the legal-action mask applied to the logits."""

    def setup(self):
        self.net_config = net_config_for(self.observation_space, self.action_space, self.model_config)
        self.net = PPONet(self.net_config)

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self._logits_and_features(batch[Columns.OBS])[0]}

    def _forward_train(self, batch, **kwargs):
        logits, features = self._logits_and_features(batch[Columns.OBS])
        # The learner's value call reuses the trunk's features (PPO passes EMBEDDINGS back to compute_values).
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: features}

    def compute_values(self, batch, embeddings=None):
        if embeddings is None:
            embeddings = self.net.features(batch[Columns.OBS]["observation"])
        return self.net.value(embeddings)

    def _logits_and_features(self, obs: dict):
        features = self.net.features(obs["observation"])
        return self.net.policy_logits(features, obs["action_mask"]), features
