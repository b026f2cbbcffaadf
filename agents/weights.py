"""Network weights of saved agents: ``weights.pt`` beside the agent's manifest.

The file holds the network's config (a dataclass, as a dict) and its state
dict, so a network is rebuilt without knowing its size in advance. Writes are
atomic (a temporary file, then a rename). torch is imported here, not by
:mod:`agents.base`.
"""

from __future__ import annotations

import dataclasses
import os

import torch

WEIGHTS = "weights.pt"


def save_network(path: str, net: torch.nn.Module) -> None:
    """Write ``net.config`` and ``net.state_dict()`` to ``path/weights.pt`` atomically."""
    os.makedirs(path, exist_ok=True)
    tmp = os.path.join(path, WEIGHTS + ".tmp")
    torch.save({"net_config": dataclasses.asdict(net.config), "model": net.state_dict()}, tmp)
    os.replace(tmp, os.path.join(path, WEIGHTS))


def load_network(path: str, net_class: type, config_class: type, what: str) -> torch.nn.Module:
    """``net_class(config_class(**net_config))`` with the weights of ``path/weights.pt``.

    ``ValueError`` naming the file when it is missing, truncated or holds another network; ``what``
    names the kind of weights in the message (``"PPO"``, ``"AlphaZero"``).
    """
    file = os.path.join(path, WEIGHTS)
    try:
        weights = torch.load(file, map_location="cpu", weights_only=True)
        net = net_class(config_class(**weights["net_config"]))
        net.load_state_dict(weights["model"])
    except Exception as exc:  # missing, truncated or foreign files raise many kinds of errors
        raise ValueError(f"corrupt {what} weights {file}: {type(exc).__name__}: {exc}") from None
    return net
