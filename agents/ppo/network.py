"""The PPO actor-critic network in plain torch, shared by every backend and the saved agents; layout: docs/ppo.md."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

POLICY_HEADS = ("planes", "linear")


@dataclasses.dataclass
class PPONetConfig:
    """Shape of the network; saved with every agent."""

    height: int
    width: int
    channels_in: int
    num_actions: int
    channels: int = 64
    conv_layers: int = 3
    value_hidden: int = 128
    policy_head: str = "planes"  # "planes" (spatial, chess's action encoding) or "linear" (any actions)

    def __post_init__(self):
        if self.policy_head not in POLICY_HEADS:
            raise ValueError(f"policy_head must be one of {', '.join(POLICY_HEADS)}, got {self.policy_head!r}")

    @property
    def num_planes(self) -> int:
        planes, rest = divmod(self.num_actions, self.height * self.width)
        if rest:
            raise ValueError(f"{self.num_actions} actions do not split into planes over a "
                             f"{self.height}x{self.width} board")
        return planes


def mask_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits with every illegal action (``mask == 0``) at the most negative finite float."""
    return torch.where(mask.bool(), logits, torch.finfo(logits.dtype).min)


class PPONet(nn.Module):
    """Conv trunk, policy head (spatial or linear), value head; sized by :class:`PPONetConfig`."""

    def __init__(self, config: PPONetConfig):
        super().__init__()
        self.config = config
        c = config.channels
        layers, cin = [], config.channels_in
        for _ in range(config.conv_layers):
            layers += [nn.Conv2d(cin, c, 3, padding=1), nn.ReLU()]
            cin = c
        self.trunk = nn.Sequential(*layers)
        squares = config.height * config.width
        if config.policy_head == "linear":
            self.policy_head = nn.Sequential(nn.Flatten(), nn.Linear(c * squares, config.num_actions))
        else:
            self.policy_head = nn.Conv2d(c, config.num_planes, 3, padding=1)
        self.value_head = nn.Sequential(nn.Flatten(), nn.Linear(c * squares, config.value_hidden), nn.ReLU(),
                                        nn.Linear(config.value_hidden, 1))
        # Small initial logits and values: a near-uniform first policy, as PPO implementations start.
        for out in (self.policy_head[-1] if config.policy_head == "linear" else self.policy_head, self.value_head[-1]):
            nn.init.normal_(out.weight, std=0.01)
            nn.init.zeros_(out.bias)

    def features(self, observations: torch.Tensor) -> torch.Tensor:
        """Trunk features ``(B, channels, height, width)`` for observations ``(B, H, W, C)``."""
        return self.trunk(observations.permute(0, 3, 1, 2))

    def unmasked_logits(self, features: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, A)`` of every action, legal or not, in the action encoding's order."""
        if self.config.policy_head == "linear":
            return self.policy_head(features)
        planes = self.policy_head(features)  # (B, planes, rank, file)
        return planes.permute(0, 3, 2, 1).reshape(len(planes), -1)  # (file, rank, plane) = action order

    def action_logits(self, features: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``unmasked_logits(features).gather(1, actions)`` read in the head's memory order: no ``(B, A)`` copy."""
        if self.config.policy_head == "linear":
            return self.policy_head(features).gather(1, actions)
        planes = self.policy_head(features).permute(0, 2, 3, 1)  # (B, rank, file, plane)
        square, plane = actions.div(self.config.num_planes, rounding_mode="floor"), actions % self.config.num_planes
        file, rank = square.div(self.config.height, rounding_mode="floor"), square % self.config.height
        index = (rank * self.config.width + file) * self.config.num_planes + plane
        return planes.reshape(len(planes), -1).gather(1, index)

    def policy_logits(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked logits ``(B, A)`` in the action encoding's order."""
        return mask_logits(self.unmasked_logits(features), mask)

    def value(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_head(features).squeeze(-1)

    def forward(self, observations: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(masked policy logits (B, A), value (B,))``."""
        x = self.features(observations)
        return self.policy_logits(x, mask), self.value(x)
