"""The policy-value network: a small residual tower from observation planes ``(batch, height, width, channels)``
to policy logits over the game's actions and a value in [-1, 1] for the side to move."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn
from torch.nn import functional as F


@dataclasses.dataclass
class NetConfig:
    """Shape of the network; saved with every checkpoint."""

    height: int
    width: int
    channels_in: int
    num_actions: int
    blocks: int = 4
    channels: int = 64
    policy_channels: int = 32  # planes before the policy's linear layer (its size: these x squares x actions)
    value_hidden: int = 64


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


class PolicyValueNet(nn.Module):
    """AlphaZero's network, sized by :class:`NetConfig`."""

    def __init__(self, config: NetConfig):
        super().__init__()
        self.config = config
        c, squares = config.channels, config.height * config.width
        self.stem = nn.Sequential(
            nn.Conv2d(config.channels_in, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.tower = nn.Sequential(*[ResidualBlock(c) for _ in range(config.blocks)])
        p = config.policy_channels
        self.policy_head = nn.Sequential(
            nn.Conv2d(c, p, 1, bias=False), nn.BatchNorm2d(p), nn.ReLU(), nn.Flatten(),
            nn.Linear(p * squares, config.num_actions))
        self.value_head = nn.Sequential(
            nn.Conv2d(c, 4, 1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
            nn.Linear(4 * squares, config.value_hidden), nn.ReLU(), nn.Linear(config.value_hidden, 1), nn.Tanh())

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(policy_logits (B, A), value (B,))`` for observations ``(B, H, W, C)``."""
        x = self.tower(self.stem(observations.permute(0, 3, 1, 2)))
        return self.policy_head(x), self.value_head(x).squeeze(-1)


def masked_log_softmax(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over the legal actions (``-inf`` elsewhere)."""
    return F.log_softmax(logits.masked_fill(masks == 0, float("-inf")), dim=-1)


def loss_terms(net: PolicyValueNet, observations, masks, target_policy, target_value):
    """``(policy_loss, value_loss)``: cross-entropy to the search's visit distribution, value MSE."""
    logits, value = net(observations)
    logits, value = logits.float(), value.float()  # the losses in float32 under bf16 autocast too
    log_p = masked_log_softmax(logits, masks)
    # 0 * -inf would be nan: illegal actions have zero target, so drop them from the sum
    policy_loss = -(target_policy * log_p.masked_fill(masks == 0, 0.0)).sum(-1).mean()
    value_loss = F.mse_loss(value, target_value)
    return policy_loss, value_loss
