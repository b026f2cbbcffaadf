"""The agent interface, and saved agents.

An agent chooses a legal action (an index of the variant's action encoding) from an observation and its
legal-action mask; it may also look at the :class:`~minichess_envs.Position` (search agents, tablebases and
engines do). Anything with this ``act`` method, or a plain callable ``position -> move``, can play
(:mod:`minichess_envs.players`). A saved agent is a directory holding ``agent.json`` (its registered class and
settings) plus whatever the class needs; :func:`load` hands the directory to that class's ``load``."""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
from typing import Any, Callable

import numpy as np

from minichess_envs.extras import extra_hint
from minichess_envs.players import check_player, legal_action

if not getattr(sys.modules.get("agents"), "MINICHESS_AGENTS", False):
    raise ImportError(
        f"the package 'agents' imported here ({getattr(sys.modules.get('agents'), '__file__', None)}) is not "
        "minichess-envs' agents: another distribution with a top-level 'agents' package (openai-agents is one) "
        "was installed over it. Use minichess-envs in a virtual environment without that distribution, or "
        "reinstall minichess-envs over it (pip install --force-reinstall --no-deps, from its checkout or wheel)"
    )

MANIFEST = "agent.json"
MANIFEST_VERSION = 1
#: The largest ``agent.json`` read (one is well under a kilobyte): a bigger file is refused unread.
MAX_MANIFEST_BYTES = 1 << 20


class Closing:
    """Closed on leaving a ``with`` block."""

    def close(self) -> None:
        """Release what it holds (an engine process, a log writer, ...)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Agent(Closing):
    """Base class of all agents: subclasses implement :meth:`act`; the rest has working defaults."""

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


def need_position(agent: Agent, position):
    """``position``; ``ValueError`` if it is ``None`` (``agent`` reads the board, not the observation)."""
    if position is None:
        raise ValueError(f"{agent.name} needs the position: pass position=")
    return position


class SeededAgent(Agent):
    """An agent that draws its moves (or breaks ties) with its own seeded generator; ``reset(seed)`` reseeds it.
    ``required`` and ``optional`` name the settings saved in ``agent.json`` (attributes that ``__init__`` takes back)
    with their types, checked on load as :func:`check_settings` does, within ``bounds``."""

    required: dict = {}
    optional: dict = {"seed": (int, None)}
    bounds: dict = {}

    def __init__(self, seed: int | None = None, name: str | None = None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        if name:
            self.name = name

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def pick(self, choices, position=None) -> int:
        """One of ``choices`` drawn with the agent's generator; ``ValueError`` if there is none (game over)."""
        if not len(choices):
            where = "" if position is None else f" in {position.fen()}"
            raise ValueError(f"no legal move: the game is over{where}")
        return int(choices[self.rng.integers(len(choices))])

    def save(self, path: str) -> None:
        write_manifest(path, self, **{key: getattr(self, key) for key in (*self.required, *self.optional)})

    @classmethod
    def load(cls, path: str) -> Agent:
        return cls(**check_settings(path, read_manifest(path)["settings"], cls.required, cls.optional, cls.bounds))


#: The agent classes :func:`load` may build, by the manifest's ``class`` entry (``"module:Class"``): those the
#: project ships (imported on first use) and those added by :func:`register_agent`. Loading an agent never
#: imports a module a file names.
AGENT_TYPES: dict[str, type | None] = dict.fromkeys([
    "agents.players.random_agent:RandomAgent", "agents.players.greedy:GreedyAgent",
    "agents.players.minimax:MinimaxAgent", "agents.players.perfect:PerfectAgent", "agents.players.uci:UCIEngineAgent",
    "agents.ppo.agent:PPOAgent", "agents.ppo.agent:EpsilonRandomAgent", "agents.ppo.agent:ByColorAgent",
    "agents.alphazero.agent:AlphaZeroAgent",
])


def type_name(cls: type) -> str:
    """The manifest's name of an agent class: ``"module:Class"``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def register_agent(cls: type) -> type:
    """Class decorator: let :func:`load` build saved agents of ``cls`` (your own agent types)."""
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise TypeError(f"register_agent takes an Agent subclass, got {cls!r}")
    AGENT_TYPES[type_name(cls)] = cls
    return cls


#: Agent types saved under another name before: what they load as.
RENAMED_TYPES = {"agents.alphazero.boardgames:BoardGameAlphaZeroAgent": "agents.alphazero.agent:AlphaZeroAgent",
                 "agents.boardgame_ppo:BoardGamePPOAgent": "agents.ppo.agent:PPOAgent",
                 **{f"agents.{module}:{name}": f"agents.players.{module}:{name}"
                    for module, name in (("random_agent", "RandomAgent"), ("greedy", "GreedyAgent"),
                                         ("minimax", "MinimaxAgent"), ("perfect", "PerfectAgent"),
                                         ("uci", "UCIEngineAgent"))}}


def agent_class(name: str) -> type:
    """The registered agent class called ``name`` (``"module:Class"``); ``ValueError`` if it is not registered."""
    name = RENAMED_TYPES.get(name, name)
    if name not in AGENT_TYPES:
        raise ValueError(f"{name!r} is not a registered agent type (register your own with "
                         "agents.register_agent; shipped: " + ", ".join(sorted(AGENT_TYPES)) + ")")
    cls = AGENT_TYPES[name]
    if cls is None:  # a shipped class: its module is ours
        module_name, _, class_name = name.partition(":")
        with extra_hint(f"the agent type {name}"):  # torch and the like: name the extra that installs them
            cls = getattr(importlib.import_module(module_name), class_name)
        AGENT_TYPES[name] = cls
    return cls


def write_manifest(path: str, agent: Agent, **settings: Any) -> None:
    """Write ``agent.json`` for ``agent`` into directory ``path`` (created if needed)."""
    os.makedirs(path, exist_ok=True)
    manifest = {"format": MANIFEST_VERSION, "class": type_name(type(agent)), "name": agent.name, "settings": settings}
    tmp = os.path.join(path, MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
    os.replace(tmp, os.path.join(path, MANIFEST))  # atomic: never a half-written manifest


def manifest_file(path: str) -> str:
    """``path/agent.json``, or ``path`` itself when it names the manifest."""
    return path if os.path.basename(path) == MANIFEST else os.path.join(path, MANIFEST)


def read_manifest(path: str) -> dict:
    """The manifest of a saved agent; ``ValueError`` naming the file if it is missing or corrupt."""
    file = manifest_file(path)
    if not os.path.exists(file):
        raise ValueError(f"no saved agent at {path!r}: {file} does not exist")
    try:
        with open(file, encoding="utf-8") as f:
            text = f.read(MAX_MANIFEST_BYTES + 1)
        if len(text) > MAX_MANIFEST_BYTES:
            raise ValueError(f"longer than {MAX_MANIFEST_BYTES} characters")
        manifest = json.loads(text)
    except (OSError, ValueError) as exc:  # ValueError: bad JSON and bad UTF-8 alike
        raise ValueError(f"corrupt agent manifest {file}: {type(exc).__name__}: {exc}") from None
    except RecursionError:  # json's parser recurses per nesting level
        raise ValueError(f"corrupt agent manifest {file}: JSON nested too deeply") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"corrupt agent manifest {file}: expected a JSON object, got {type(manifest).__name__}")
    if manifest.get("format") != MANIFEST_VERSION:
        raise ValueError(f"agent manifest {file} has format {manifest.get('format')!r}, expected {MANIFEST_VERSION}")
    for key, kind in (("class", str), ("settings", dict)):
        if not isinstance(manifest.get(key), kind):
            raise ValueError(f"corrupt agent manifest {file}: no {key!r} entry (a JSON "
                             f"{'string' if kind is str else 'object'})")
    if not isinstance(manifest.get("name", ""), str):
        raise ValueError(f"corrupt agent manifest {file}: 'name' must be a string")
    return manifest


def manifest_game(path: str) -> str | None:
    """The game a saved agent says it plays (a chess variant or a board game), or ``None``."""
    settings = read_manifest(path)["settings"]
    game = settings.get("game", settings.get("variant"))
    return game if isinstance(game, str) else None


def check_settings(path: str, settings: dict, required: dict, optional: dict | None = None,
                   bounds: dict | None = None) -> dict:
    """``settings`` after checking each key's type and range; ``ValueError`` naming the manifest file and the key.
    ``required`` and ``optional`` map keys to a type or tuple of types (``None`` allows null); ``bool`` is never
    accepted for an ``int`` or ``float``, nor NaN or an infinity for a ``float``. ``bounds`` maps keys to inclusive
    ``(low, high)`` ranges (either ``None``: open)."""
    file = manifest_file(path)
    optional = optional or {}
    problems = [f"{what} settings {sorted(keys)}" for what, keys in (
        ("unknown", set(settings) - set(required) - set(optional)), ("missing", set(required) - set(settings))) if keys]
    if problems:
        raise ValueError(f"bad agent manifest {file}: " + "; ".join(problems))
    for key, value in settings.items():
        kinds = required.get(key, optional.get(key))
        kinds = tuple(type(None) if k is None else k for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
        accepted = kinds + ((int,) if float in kinds else ())  # a whole number is a float too
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
            raise ValueError(f"bad agent manifest {file}: setting {key!r} must be {names}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):  # json reads NaN and Infinity
            raise ValueError(f"bad agent manifest {file}: setting {key!r} must be finite, got {value!r}")
        low, high = (bounds or {}).get(key, (None, None))
        if value is not None and ((low is not None and value < low) or (high is not None and value > high)):
            raise ValueError(f"bad agent manifest {file}: setting {key!r} must lie in "
                             f"{'-inf' if low is None else low}..{'inf' if high is None else high}, got {value!r}")
    return settings


def load(path: str) -> Agent:
    """Load any saved agent (a directory with ``agent.json``, or the manifest itself). Only registered agent types are
    built (:data:`AGENT_TYPES`) and they read data only (JSON settings, tensors), so loading a stranger's agent runs
    none of its code. Any problem is a ``ValueError`` naming the file, except a missing optional dependency
    (:class:`~minichess_envs.extras.MissingExtraError`, naming the extra). ``agents.load`` also takes
    ``"zoo:NAME"`` (:mod:`agents.zoo`)."""
    manifest = read_manifest(path)
    purpose = f"loading the saved agent in {manifest_file(path)}"
    try:
        with extra_hint(purpose):
            cls = agent_class(manifest["class"])
    except ValueError as exc:
        raise ValueError(f"agent manifest {manifest_file(path)}: {exc}") from None
    directory = (os.path.dirname(path) or ".") if os.path.basename(path) == MANIFEST else path
    try:
        with extra_hint(purpose):  # a class may import its optional dependencies in load()
            return cls.load(directory)
    except ValueError as exc:
        if os.path.normpath(directory) in str(exc) or directory in str(exc):
            raise
        raise ValueError(f"cannot load the agent in {manifest_file(path)}: {exc}") from None
    except (TypeError, KeyError, AttributeError, NotImplementedError) as exc:  # settings the class cannot take
        raise ValueError(f"cannot load the agent in {manifest_file(path)}: {type(exc).__name__}: {exc}") from None


class CallableAgent(Agent):
    """An agent from a plain function ``position -> move`` (an action index, a :class:`~minichess_envs.Move` or a
    UCI string); :meth:`act` must be given the position."""

    def __init__(self, choose: Callable, name: str | None = None):
        self.choose = choose
        self.name = name or getattr(choose, "__name__", "callable")

    def act(self, observation, action_mask, position=None) -> int:
        return legal_action(position, self.choose(need_position(self, position)), self.name)


def as_agent(player) -> Agent:
    """``player`` itself if it has ``act``, else a :class:`CallableAgent` around it."""
    check_player(player)
    return player if hasattr(player, "act") else CallableAgent(player)
