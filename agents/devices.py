"""Where networks run: ``--device auto|cpu|cuda|mps`` for training, search and agents.

>>> resolve_device("cpu")
device(type='cpu')
"""

from __future__ import annotations

import contextlib

import torch

DEVICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """The torch device for ``name`` (``cuda:1`` style indices too): ``auto`` picks CUDA, then Apple's MPS, then the
    CPU. ``ValueError`` for an unknown name or a device this machine does not have."""
    name = str(name) if isinstance(name, torch.device) else name
    kind = name.split(":")[0] if isinstance(name, str) else None
    if kind not in DEVICES:
        raise ValueError(f"unknown device {name!r}: expected one of {', '.join(DEVICES)}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if _mps_available() else "cpu")
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


def autocast(device: torch.device, enabled: bool = True, batch: int | None = None):
    """bf16 autocast where it was measured to pay (docs/alphazero.md), else a no-op: a CPU with native bf16
    (AVX512-BF16 or AMX, as oneDNN reports it) and network calls of ``batch >= 64`` positions; CUDA runs float32."""
    if enabled and device.type == "cpu" and batch is not None and batch >= 64 and cpu_has_native_bf16():
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def cpu_has_native_bf16() -> bool:
    """Whether oneDNN runs bf16 natively on this CPU (else bf16 is emulated, and slower)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False
