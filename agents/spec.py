"""Agents named by a short text, as the command line and the web app take them.

>>> from_spec("minimax:3", "gardner")
MinimaxAgent(name='minimax-d3')

The forms: ``random``, ``greedy``, ``minimax[:DEPTH]``, ``fairy-stockfish[:NODES]``,
``stockfish[:NODES]`` (standard chess), ``perfect`` (tablebase play, 3x3), or the
directory of a saved agent (``agents.load``).
"""

from __future__ import annotations

import os

from agents.base import MANIFEST, Agent, load
from minichess_envs.variants import Variant, get_variant

#: The built-in forms, for help texts and error messages.
SPEC_FORMS = ("random", "greedy", "minimax[:DEPTH]", "fairy-stockfish[:NODES]", "stockfish[:NODES]", "perfect")


def from_spec(spec: str, variant: str | Variant, *, seed: int | None = None, allow_paths: bool = True) -> Agent:
    """A new agent for ``variant`` from its spec (see the module docstring).

    ``ValueError`` names the problem: an unknown form, a bad number, an engine
    that does not play the variant, a saved agent trained for another variant.
    With ``allow_paths=False`` only the built-in forms are accepted.
    """
    from agents.greedy import GreedyAgent
    from agents.minimax import MinimaxAgent
    from agents.random_agent import RandomAgent
    from agents.uci import UCIEngineAgent

    v = get_variant(variant)
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent spec must be a non-empty string, not {spec!r}")
    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    kind = kind.lower()
    if kind in ("random", "greedy", "perfect") and not arg:
        if kind == "random":
            return RandomAgent(seed)
        if kind == "greedy":
            return GreedyAgent(seed)
        from agents.perfect import PerfectAgent

        if v.name != "3x3":
            raise ValueError(f"'perfect' plays from the tablebase, which exists for 3x3 only, not {v.name!r}")
        return PerfectAgent(v.name, seed)
    if kind == "minimax":
        return MinimaxAgent(_positive(spec, arg, 2, "depth"), seed)
    if kind in ("fairy-stockfish", "stockfish"):
        return UCIEngineAgent(v.name, kind, nodes=_positive(spec, arg, 1000, "node count"))
    if allow_paths and (os.path.isdir(spec) or os.path.basename(spec) == MANIFEST):
        return load_for_variant(spec, v)
    forms = ", ".join(SPEC_FORMS) + (" or a saved agent's directory" if allow_paths else "")
    raise ValueError(f"unknown agent {spec!r}: expected {forms}")


def load_for_variant(path: str, variant: str | Variant) -> Agent:
    """``agents.load(path)``, checked to play ``variant`` (when the agent says which it plays)."""
    v = get_variant(variant)
    agent = load(path)
    plays = getattr(agent, "variant", None)
    if plays is not None and get_variant(plays).name != v.name:
        raise ValueError(f"the agent at {path!r} plays {get_variant(plays).name!r}, not {v.name!r}")
    return agent


def saved_agents(root: str) -> dict[str, str]:
    """``{name: directory}`` of every saved agent (a directory with ``agent.json``) under ``root``.

    Names are the directories relative to ``root``; nothing is loaded.
    """
    found = {}
    if not os.path.isdir(root):
        return found
    for directory, subdirs, files in os.walk(root):
        subdirs.sort()
        if MANIFEST in files:
            found[os.path.relpath(directory, root)] = directory
    return found


def _positive(spec: str, text: str, default: int, what: str) -> int:
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"agent {spec!r}: the {what} must be a positive integer, not {text!r}")
    return int(text)
