"""Where networks run: ``--device auto|cpu|cuda|mps`` for training, search and agents.

>>> resolve_device("cpu")
device(type='cpu')
"""

from __future__ import annotations

import contextlib

import torch

DEVICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """The torch device for ``name``: ``auto`` picks CUDA, then Apple's MPS, then the CPU.

    ``cuda:1`` style indices are accepted. ``ValueError`` for an unknown name or a device this
    machine does not have.
    """
    if isinstance(name, torch.device):
        name = str(name)
    if not isinstance(name, str) or name.split(":")[0] not in DEVICES:
        raise ValueError(f"unknown device {name!r}: expected one of {', '.join(DEVICES)}")
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    kind = name.split(":")[0]
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but torch {torch.__version__} sees no CUDA GPU here "
                         f"(use --device cpu or auto)")
    if kind == "mps" and not _mps_available():
        raise ValueError(f"device {name!r} asked for, but this torch has no usable Apple MPS backend "
                         f"(use --device cpu or auto)")
    return torch.device(name)


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def autocast(device: torch.device, enabled: bool = True):
    """bf16 mixed precision on a CUDA device (no loss scaling needed for bf16); a no-op elsewhere.

    On the CPU bf16 autocast was slower than float32 for our small convolutional networks.
    """
    if enabled and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()
