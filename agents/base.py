"""The agent interface.

An agent chooses a legal action (an index of the variant's action encoding)
from an observation and its legal-action mask; it may also look at the
:class:`~minichess_envs.Position` itself (search agents, tablebases and engines
do). Environments, the arena and the tablebase scorer accept any object with
this ``act`` method, or a plain callable ``position -> move``.

Saved agents are directories holding ``agent.json`` (which class to load and
its settings) plus whatever the class needs (weights, ...); :func:`load` reads
the manifest and hands the directory to that class's ``load``.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any, Callable

import numpy as np

MANIFEST = "agent.json"
MANIFEST_VERSION = 1


class Agent:
    """Base class of all agents.

    Subclasses implement :meth:`act`; the rest has working defaults.
    """

    #: Short name for tables and PGN headers.
    name: str = "agent"

    def reset(self, seed: int | None = None) -> None:
        """A new game starts (clear per-game state; reseed if ``seed`` is given)."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, position=None) -> int:
        """Return a legal action: an index ``a`` with ``action_mask[a] == 1``."""
        raise NotImplementedError

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray, positions=None) -> np.ndarray:
        """Actions for a batch (default: one :meth:`act` call each)."""
        positions = [None] * len(observations) if positions is None else positions
        return np.array([self.act(o, m, p) for o, m, p in zip(observations, action_masks, positions)], np.int64)

    def save(self, path: str) -> None:
        """Write the agent to directory ``path`` so that :func:`load` restores it."""
        raise NotImplementedError(f"{type(self).__name__} has no saved form")

    @classmethod
    def load(cls, path: str) -> Agent:
        """Restore an agent saved with :meth:`save`."""
        raise NotImplementedError(f"{cls.__name__} has no saved form")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def write_manifest(path: str, agent: Agent, **settings: Any) -> None:
    """Write ``agent.json`` for ``agent`` into directory ``path`` (created if needed)."""
    os.makedirs(path, exist_ok=True)
    manifest = {
        "format": MANIFEST_VERSION,
        "class": f"{type(agent).__module__}:{type(agent).__qualname__}",
        "name": agent.name,
        "settings": settings,
    }
    tmp = os.path.join(path, MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
    os.replace(tmp, os.path.join(path, MANIFEST))  # atomic: never a half-written manifest


def read_manifest(path: str) -> dict:
    """The manifest of a saved agent; ``ValueError`` naming the problem if it is missing or corrupt."""
    file = path if os.path.basename(path) == MANIFEST else os.path.join(path, MANIFEST)
    if not os.path.exists(file):
        raise ValueError(f"no saved agent at {path!r}: {file} does not exist")
    try:
        with open(file) as f:
            manifest = json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"corrupt agent manifest {file}: {exc}") from None
    if not isinstance(manifest, dict) or "class" not in manifest:
        raise ValueError(f"corrupt agent manifest {file}: no 'class' entry")
    if manifest.get("format") != MANIFEST_VERSION:
        raise ValueError(f"agent manifest {file} has format {manifest.get('format')!r}, expected {MANIFEST_VERSION}")
    return manifest


def load(path: str) -> Agent:
    """Load any saved agent (a directory with ``agent.json``, or the manifest itself)."""
    manifest = read_manifest(path)
    module_name, _, class_name = manifest["class"].partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"agent at {path!r} needs {manifest['class']}, which cannot be imported: {exc}") from None
    directory = os.path.dirname(path) if os.path.basename(path) == MANIFEST else path
    return cls.load(directory)


class CallableAgent(Agent):
    """An agent from a plain function ``position -> move``.

    The function may return an action index, a :class:`~minichess_envs.Move` or a
    UCI string; it needs the position, so :meth:`act` must be given one.
    """

    def __init__(self, choose: Callable, name: str | None = None):
        self.choose = choose
        self.name = name or getattr(choose, "__name__", "callable")

    def act(self, observation, action_mask, position=None) -> int:
        if position is None:
            raise ValueError(f"agent {self.name!r} is a function of the position; pass position=")
        return to_action(position, self.choose(position))


def to_action(position, choice) -> int:
    """An action index from an action, a Move or a UCI string chosen in ``position``."""
    if isinstance(choice, (int, np.integer)) and not isinstance(choice, bool):
        return int(choice)
    return position.move_to_action(choice)


def as_agent(player) -> Agent:
    """``player`` itself if it has ``act``, else a :class:`CallableAgent` around it."""
    if hasattr(player, "act"):
        return player
    if callable(player):
        return CallableAgent(player)
    raise TypeError(f"expected an agent (with .act) or a callable position -> move, got {type(player).__name__}")
