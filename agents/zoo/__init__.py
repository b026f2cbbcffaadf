"""The zoo: trained agents shipped inside the package, each with its model card (docs/zoo.md), so that an agent
can be played and measured against without training first, and offline.

>>> from agents import zoo
>>> "tictactoe-alphazero" in zoo.names()
True
>>> agent = zoo.load("tictactoe-alphazero")             # or agents.load("zoo:tictactoe-alphazero")
>>> agent.game
'tictactoe'

An entry is a saved agent (``agent.json``, ``weights.pt``) with ``card.json``, every file checked against the
entry's ``SHA256SUMS`` before it is read; the weights are read as tensors only (``agents.weights``), so loading
an entry runs no code from it. ``experiments/zoo.py --entry NAME`` retrains an entry with the command its card
records and rates it again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil

from agents.base import MANIFEST, Agent, agent_class, load as load_saved, read_manifest
from minichess_envs.checksums import read_checksums, verify_checksum, write_checksums

#: Where the entries are: one directory each, named as the entry.
ENTRIES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "entries")
CARD = "card.json"
#: An agent spec naming a zoo entry: ``zoo:NAME``, or ``zoo:NAME:casual`` for its faster setting.
PREFIX = "zoo:"
CASUAL = "casual"
MAX_CARD_BYTES = 100_000
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


@dataclasses.dataclass(frozen=True)
class Card:
    """What an entry is and how strong it measured: ``command`` trained it (from a checkout, seed ``seed``)
    in ``training`` (``minutes`` of training: games and learning; ``command_minutes`` the whole command took, where it
    was measured: pretraining and the run's own final matches too; ``machine``, ``date``); ``strength`` holds one
    dict per measure (``measure``, ``player``: the setting measured, ``score``, its 95% interval ``low``/``high``,
    ``count`` of games or positions, ``elo``: the score is an Elo, ``date``); ``casual`` the load settings of the
    faster setting (empty: none); ``speed`` the seconds to load it and to choose a move at each setting on one
    core (medians), as measured when it was rated."""

    name: str
    game: str
    algorithm: str
    network: str
    command: str
    seed: int
    training: dict
    strength: list
    casual: dict
    speed: dict = dataclasses.field(default_factory=dict)
    notes: str = ""

    @classmethod
    def from_dict(cls, data: dict, file: str) -> Card:
        """The card in ``data``; ``ValueError`` naming ``file`` for a missing field or one of the wrong type."""
        if not isinstance(data, dict):
            raise ValueError(f"corrupt zoo card {file}: expected a JSON object")
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        kinds = {"str": str, "int": int, "dict": dict, "list": list}
        unknown = set(data) - set(types)
        if unknown:
            raise ValueError(f"zoo card {file}: unknown fields {sorted(unknown)}")
        for name, kind in types.items():
            if name not in data and name not in ("notes", "speed"):
                raise ValueError(f"zoo card {file}: no {name!r} field")
            if name in data and (not isinstance(data[name], kinds[kind]) or isinstance(data[name], bool)):
                raise ValueError(f"zoo card {file}: {name!r} must be a JSON {kind}, got {type(data[name]).__name__}")
        if not all(isinstance(s, dict) for s in data["strength"]):
            raise ValueError(f"zoo card {file}: 'strength' must be a list of objects")
        return cls(**data)


def names() -> list[str]:
    """The entries' names, sorted."""
    if not os.path.isdir(ENTRIES_DIR):
        return []
    return sorted(n for n in os.listdir(ENTRIES_DIR) if os.path.isfile(os.path.join(ENTRIES_DIR, n, CARD)))


def entry_dir(name: str) -> str:
    """The directory of entry ``name``; ``ValueError`` naming the known entries for any other name."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name not in names():
        shown = name if isinstance(name, str) and len(name) <= 80 else f"{str(name)[:80]}..."
        raise ValueError(f"no zoo entry {shown!r}; the zoo has {', '.join(names()) or 'no entries'}")
    return os.path.join(ENTRIES_DIR, name)


def card(name: str) -> Card:
    """Entry ``name``'s model card, checked against its checksum."""
    directory = entry_dir(name)
    verify_checksum(directory, CARD, required=True)
    file = os.path.join(directory, CARD)
    with open(file, encoding="utf-8") as f:
        text = f.read(MAX_CARD_BYTES + 1)
    if len(text) > MAX_CARD_BYTES:
        raise ValueError(f"zoo card {file} is longer than {MAX_CARD_BYTES} characters")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"corrupt zoo card {file}: {exc}") from None
    return Card.from_dict(data, file)


def load(name: str, casual: bool = False) -> Agent:
    """Entry ``name`` as an agent, at its rated setting or (``casual``) its faster one; every file of the entry
    is checked against ``SHA256SUMS`` first (``ValueError`` naming a corrupt or missing one)."""
    directory = entry_dir(name)
    entry = card(name)
    for file in sorted((set(read_checksums(directory)) | {MANIFEST}) - {CARD}):  # card() checked the card
        verify_checksum(directory, file, required=True)
    if not casual:
        agent = load_saved(directory)
    elif not entry.casual:
        raise ValueError(f"zoo entry {name!r} has no casual setting: it plays one way")
    else:
        agent = agent_class(read_manifest(directory)["class"]).load(directory, **entry.casual)
    agent.name = f"{PREFIX}{name}" + (f":{CASUAL}" if casual else "")
    return agent


def load_spec(spec: str) -> Agent:
    """The agent of a spec ``zoo:NAME`` or ``zoo:NAME:casual``."""
    name, _, setting = spec[len(PREFIX):].strip().partition(":")
    if setting not in ("", CASUAL):
        raise ValueError(f"agent {spec[:60]!r}: a zoo entry's setting is {CASUAL!r} or none, not {setting[:20]!r}")
    return load(name.strip().lower(), casual=bool(setting))


def describe(name: str) -> str:
    """Entry ``name``'s card as text (``minichess zoo describe NAME``)."""
    c = card(name)
    t = c.training
    lines = [f"{c.name}: {c.algorithm} on {c.game}", f"  network:  {c.network}",
             f"  trained:  {c.command}  (seed {c.seed}; {_training_time(t)} on {t.get('machine', '?')}, "
             f"{t.get('date', '?')})",
             f"  casual:   {', '.join(f'{k}={v}' for k, v in c.casual.items()) or 'none (plays one way)'}",
             "  strength:"]
    for s in c.strength:
        lines.append(f"    {strength_text(s)}")
    if c.speed:
        lines.append(f"  speed:    {_speed_text(c.speed)}")
    if c.notes:
        lines.append(f"  notes:    {c.notes}")
    return "\n".join(lines)


def strength_text(s: dict) -> str:
    """One measure of a card: ``player: measure score [low, high] (count, date)``."""
    return (f"{s.get('player', '?')}: {s.get('measure', '?')} {_score(s)}{_interval(s, ' ')} "
            f"({s.get('count', '?'):,} {s.get('unit', 'games')}, {s.get('date', '?')})")


def _training_time(t: dict) -> str:
    """``11.0 min of training (35.0 min the whole command)``."""
    text = f"{t.get('minutes', '?')} min of training"
    return text + (f" ({t['command_minutes']} min the whole command)" if "command_minutes" in t else "")


def _speed_text(speed: dict) -> str:
    """``load rated 0.017 s, move rated 0.085 s``."""
    return ", ".join(f"{k.replace('_', ' ')} {v:.2g} s" for k, v in speed.items())


def _score(s: dict) -> str:
    """A measure's score: an Elo (``elo`` true) as ``+505``, else a share as ``0.9765``."""
    return f"{s.get('score', float('nan')):+.0f}" if s.get("elo") else f"{s.get('score', float('nan')):.4f}"


def _interval(s: dict, before: str = "") -> str:
    """A measure's 95% interval, ``[0.513, 0.649]`` or for an Elo ``[+487, +550]``; empty where it has none."""
    if "low" not in s or "high" not in s:
        return ""
    return before + (f"[{s['low']:+.0f}, {s['high']:+.0f}]" if s.get("elo") else f"[{s['low']:.3f}, {s['high']:.3f}]")


def markdown() -> str:
    """docs/zoo.md: every card (``python experiments/zoo.py --docs`` writes it)."""
    parts = ["# The zoo: trained agents in the package", "",
             "Generated from the entries' cards (`agents/zoo/entries/*/card.json`) by "
             "`python experiments/zoo.py --docs`; do not edit by hand.", "",
             "Play one: `minichess play GAME --opponent zoo:NAME` (`zoo:NAME:casual`: the faster setting); load "
             "one: `agents.load(\"zoo:NAME\")`; list them: `minichess zoo list`. Retrain and re-rate one: "
             "`python experiments/zoo.py --entry NAME` (resumable with `--resume`; a rating stopped part way goes on "
             "from its last finished game with `--rate-only`).", ""]
    for name in names():
        c = card(name)
        t = c.training
        parts += [f"## {c.name}", "", f"{c.algorithm} on `{c.game}`; network: {c.network}.", "",
                  f"Trained by `{c.command}` (seed {c.seed}) in {_training_time(t)} on "
                  f"{t.get('machine', '?')}, {t.get('date', '?')}.", "",
                  "Casual setting: " + (", ".join(f"`{k}={v}`" for k, v in c.casual.items()) or "none") + ".", "",
                  "| player | measure | score | 95% interval | count | date |", "|---|---|---:|---|---:|---|"]
        for s in c.strength:
            parts.append(f"| {s.get('player', '')} | {s.get('measure', '')} | {_score(s)} | {_interval(s)} "
                         f"| {s.get('count', ''):,} {s.get('unit', 'games')} | {s.get('date', '')} |")
        if c.speed:
            parts += ["", f"Speed (one core, medians, when rated): {_speed_text(c.speed)}."]
        if c.notes:
            parts += ["", c.notes]
        parts.append("")
    return "\n".join(parts)


def install(name: str, agent_path: str, entry: Card) -> str:
    """Copy the saved agent at ``agent_path`` into entry ``name`` with ``entry`` as its card (replacing an older
    entry), checksums recorded; returns the entry's directory."""
    if not _NAME.fullmatch(name) or entry.name != name:
        raise ValueError(f"a zoo entry's name is lower-case letters, digits and hyphens, and its card's: {name!r}")
    directory = os.path.join(ENTRIES_DIR, name)
    tmp = directory + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    files = [f for f in (MANIFEST, "weights.pt") if os.path.exists(os.path.join(agent_path, f))]
    for f in files:
        if f != MANIFEST:  # a manifest is JSON, checked when it is read; saved agents record no checksum of it
            verify_checksum(agent_path, f)
        shutil.copyfile(os.path.join(agent_path, f), os.path.join(tmp, f))
    with open(os.path.join(tmp, CARD), "w", encoding="utf-8") as f:
        json.dump(dataclasses.asdict(entry), f, indent=2)
        f.write("\n")
    write_checksums(tmp, files + [CARD])
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(tmp, directory)
    return directory


__all__ = ["CARD", "Card", "PREFIX", "card", "describe", "entry_dir", "install", "load", "load_spec",
           "markdown", "names"]
