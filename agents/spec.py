"""Agents named by a short text (:data:`SPEC_FORMS`, or a saved agent's directory), as the command line and the web
app take them (docs/play.md). Built-in forms ignore case and surrounding spaces; :func:`check_limits` bounds them.

>>> from_spec("minimax:3", "gardner")
MinimaxAgent(name='minimax-d3')
"""

from __future__ import annotations

import dataclasses
import os

from agents.base import MANIFEST, Agent, load
from agents.players.greedy import GreedyAgent
from agents.players.minimax import MAX_DEPTH, MinimaxAgent
from agents.players.perfect import PerfectAgent
from agents.players.random_agent import RandomAgent
from agents.players.uci import ENGINES, UCIEngineAgent
from minichess_envs.variants import Variant, get_variant

#: The built-in forms, for help texts and error messages.
SPEC_FORMS = ("random", "greedy", "minimax[:DEPTH]", "fairy-stockfish[:NODES]", "stockfish[:NODES]", "perfect")
#: Digits a spec's number may have: more cannot be a sensible search and ``int()`` of thousands is slow.
MAX_DIGITS = 12


@dataclasses.dataclass(frozen=True)
class SpecLimits:
    """The largest minimax ``depth`` and engine ``nodes`` a spec may ask for (``None``: no bound); ``where``
    names who sets them, for the error message."""

    depth: int | None = None
    nodes: int | None = None
    where: str = "this program"


#: ``minichess serve``: what a stranger's browser may ask for (minimax deeper than 4 takes minutes on 8x8).
SERVER_LIMITS = SpecLimits(depth=4, nodes=1_000_000, where="this server")
#: The command line and experiments: a typo such as ``minimax:99`` must not start a search that never ends
#: (the depth bound is the one a saved minimax agent's ``agent.json`` is held to).
LOCAL_LIMITS = SpecLimits(depth=MAX_DEPTH, nodes=10**9, where="the command line")


def parse_spec(spec: str) -> str:
    """``spec`` normalised: a built-in form in lower case with its number as digits, else ``spec`` stripped
    (a path, checked when loaded). ``ValueError`` for a non-string or empty spec, or a bad number."""
    return _parse(spec)[0]


def check_limits(spec: str, limits: SpecLimits | None) -> str:
    """:func:`parse_spec`, then ``ValueError`` if the search asked for is over ``limits``; returns the normal form."""
    text, kind, number = _parse(spec)
    if limits is None:
        return text
    if kind == "minimax" and limits.depth is not None and number > limits.depth:
        raise ValueError(f"minimax depth {number} is more than {limits.where} allows ({limits.depth})")
    if kind in ENGINES and limits.nodes is not None and number > limits.nodes:
        raise ValueError(f"{kind} with {number:,} nodes is more than {limits.where} allows ({limits.nodes:,})")
    return text


def _parse(spec) -> tuple[str, str | None, int | None]:
    """``(normal form, built-in kind or None, its depth or node count)``."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent spec must be a non-empty string, not {spec!r}")
    spec = spec.strip()
    kind, colon, arg = spec.partition(":")
    kind, arg = kind.strip().lower(), arg.strip()
    if kind in ("random", "greedy", "perfect") and not colon:
        return kind, kind, None
    if kind == "minimax":
        depth = _positive(spec, arg, 2, "depth")
        return (f"minimax:{depth}" if colon else kind), kind, depth
    if kind in ENGINES:
        nodes = _positive(spec, arg, 1000, "node count")
        return (f"{kind}:{nodes}" if colon else kind), kind, nodes
    return spec, None, None


def from_spec(spec: str, variant: str | Variant, *, seed: int | None = None, allow_paths: bool = True,
              limits: SpecLimits | None = LOCAL_LIMITS) -> Agent:
    """A new agent for ``variant`` from its spec (see the module docstring); ``allow_paths=False``: built-in forms only.
    ``ValueError`` names the problem: an unknown form, a bad number, a search over ``limits`` (:func:`check_limits`), an
    engine that does not play the variant, a saved agent of another variant."""
    v = get_variant(variant)
    spec = check_limits(spec, limits)  # normalised before the check: "MINIMAX:9" is "minimax:9"
    _, kind, number = _parse(spec)
    if kind == "random":
        return RandomAgent(seed)
    if kind == "greedy":
        return GreedyAgent(seed)
    if kind == "perfect":
        if v.name != "3x3":
            raise ValueError(f"'perfect' plays from the tablebase, which exists for 3x3 only, not {v.name!r}")
        return PerfectAgent(v.name, seed)
    if kind == "minimax":
        return MinimaxAgent(number, seed)
    if kind in ENGINES:
        return UCIEngineAgent(v.name, kind, nodes=number)
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
    """``{name: directory}`` of every saved agent (a directory with ``agent.json``) under ``root``, named relative
    to ``root``; nothing is loaded. Symbolic links are followed, except to a directory they are inside (a loop)."""
    found = {}
    if not os.path.isdir(root):
        return found
    inside = {root: frozenset([os.path.realpath(root)])}  # directory -> the real directories on its path
    for directory, subdirs, files in os.walk(root, followlinks=True):
        subdirs.sort()
        if MANIFEST in files:
            found[os.path.relpath(directory, root)] = directory
        kept = []
        for name in subdirs:
            real = os.path.realpath(os.path.join(directory, name))
            if real not in inside[directory]:  # else a loop (a link up to a parent, or a cycle of links)
                kept.append(name)
                inside[os.path.join(directory, name)] = inside[directory] | {real}
        subdirs[:] = kept
        del inside[directory]  # walked top-down: no longer needed
    return found


def _positive(spec: str, text: str, default: int, what: str) -> int:
    if not text:
        return default
    # isascii: "²".isdigit() is true but int("²") fails; the length check comes before int()
    if not (text.isascii() and text.isdigit()) or len(text.lstrip("0")) > MAX_DIGITS or int(text) < 1:
        shown = text if len(text) <= 20 else f"{text[:20]}... ({len(text)} characters)"
        raise ValueError(f"agent {spec[:40]!r}: the {what} must be a positive integer of at most "
                         f"{MAX_DIGITS} digits, not {shown!r}")
    return int(text)
