"""Agents named by a short text (:data:`SPEC_FORMS` for chess variants, :data:`BOARD_GAME_FORMS` for board games,
or a saved agent's directory), as the command line and the web app take them (docs/play.md). Built-in forms ignore
case and surrounding spaces; :func:`check_limits` bounds them.

>>> from_spec("minimax:3", "gardner")
MinimaxAgent(name='minimax-d3')
>>> from_spec("alpha-beta:2", "checkers").name
'alpha-beta depth 2'
"""

from __future__ import annotations

import dataclasses
import os

from agents.base import MANIFEST, Agent, load, manifest_game
from agents.games import Checkers, ConnectFour, Gomoku, TicTacToe, board_game
from agents.games.checkers import CheckersAlphaBeta
from agents.games.connect_four import ConnectFourAlphaBeta, ConnectFourSolver
from agents.games.gomoku import GomokuAlphaBeta, GomokuSolver
from agents.games.tictactoe import TicTacToeSolver
from agents.players.greedy import GreedyAgent
from agents.players.minimax import MAX_DEPTH, MinimaxAgent
from agents.players.perfect import PerfectAgent
from agents.players.random_agent import RandomAgent
from agents.players.uci import ENGINES, UCIEngineAgent
from agents import zoo
from minichess_envs.variants import Variant, get_variant

#: The built-in forms of chess variants, for help texts and error messages.
SPEC_FORMS = ("random", "greedy", "minimax[:DEPTH]", "fairy-stockfish[:NODES]", "stockfish[:NODES]", "perfect",
              "zoo:NAME[:casual]")
#: The built-in forms of board games: ``perfect`` where a game has an exact solver (Tic-Tac-Toe; Connect Four with
#: the ``[games]`` extra; Gomoku up to 4x4), ``alpha-beta`` where it has a depth-limited judge, OpenSpiel's MCTS
#: bot (``pip install open-spiel``) for those that can hand OpenSpiel their position (Gomoku, checkers).
BOARD_GAME_FORMS = ("random", "alpha-beta[:DEPTH]", "openspiel-mcts[:SIMULATIONS]", "perfect", "zoo:NAME[:casual]")
#: Each board game's judges (looked up along its classes, so every Gomoku size finds Gomoku's): ``alpha-beta``
#: built from (depth, seed), ``perfect`` from (class, seed).
JUDGES = {
    TicTacToe: {"perfect": lambda cls, seed: TicTacToeSolver(seed=seed)},
    ConnectFour: {"alpha-beta": ConnectFourAlphaBeta, "perfect": lambda cls, seed: ConnectFourSolver(seed)},
    Gomoku: {"alpha-beta": GomokuAlphaBeta, "perfect": lambda cls, seed: GomokuSolver(cls, seed)},
    Checkers: {"alpha-beta": CheckersAlphaBeta},
}
#: The largest Gomoku board the exact solver answers in seconds (5x5 does not finish in minutes).
SOLVED_GOMOKU = 4
#: Digits a spec's number may have: more cannot be a sensible search and ``int()`` of thousands is slow.
MAX_DIGITS = 12
#: The forms that take a number: its default and what it counts (for the error message).
NUMBERED = {"minimax": (2, "depth"), "alpha-beta": (2, "depth"), "openspiel-mcts": (1000, "simulation count"),
            **{engine: (1000, "node count") for engine in ENGINES}}


@dataclasses.dataclass(frozen=True)
class SpecLimits:
    """The largest minimax or alpha-beta ``depth``, engine ``nodes`` and OpenSpiel MCTS ``simulations`` a spec may
    ask for (``None``: no bound); ``where`` names who sets them, for the error message."""

    depth: int | None = None
    nodes: int | None = None
    simulations: int | None = None
    where: str = "this program"


#: ``minichess serve``: what a stranger's browser may ask for (minimax deeper than 4 takes minutes on 8x8;
#: OpenSpiel's MCTS takes about a second a move at 1,000 simulations of checkers).
SERVER_LIMITS = SpecLimits(depth=4, nodes=1_000_000, simulations=2000, where="this server")
#: The command line and experiments: a typo such as ``minimax:99`` must not start a search that never ends
#: (the depth bound is the one a saved minimax agent's ``agent.json`` is held to).
LOCAL_LIMITS = SpecLimits(depth=MAX_DEPTH, nodes=10**9, simulations=10**7, where="the command line")


def parse_spec(spec: str) -> str:
    """``spec`` normalised: a built-in form in lower case with its number as digits, else ``spec`` stripped
    (a path, checked when loaded). ``ValueError`` for a non-string or empty spec, or a bad number."""
    return _parse(spec)[0]


def check_limits(spec: str, limits: SpecLimits | None) -> str:
    """:func:`parse_spec`, then ``ValueError`` if the search asked for is over ``limits``; returns the normal form."""
    text, kind, number = _parse(spec)
    if limits is None:
        return text
    if kind in ("minimax", "alpha-beta") and limits.depth is not None and number > limits.depth:
        raise ValueError(f"{kind} depth {number} is more than {limits.where} allows ({limits.depth})")
    if kind == "openspiel-mcts" and limits.simulations is not None and number > limits.simulations:
        raise ValueError(f"openspiel-mcts with {number:,} simulations is more than {limits.where} allows "
                         f"({limits.simulations:,})")
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
    if kind == "zoo":  # zoo:NAME[:casual]: entry names are lower case
        return spec.lower(), kind, None
    if kind in NUMBERED:
        number = _positive(spec, arg, *NUMBERED[kind])
        return (f"{kind}:{number}" if colon else kind), kind, number
    return spec, None, None


def _judges(cls: type) -> dict:
    """Board game class ``cls``'s entry of :data:`JUDGES` (looked up along its classes)."""
    return next((JUDGES[c] for c in cls.__mro__ if c in JUDGES), {})


def board_game_kinds(name: str) -> list[str]:
    """The built-in forms board game ``name`` has: ``random``, its judges' (``alpha-beta``, ``perfect``) and
    ``openspiel-mcts`` where it can hand OpenSpiel its position."""
    cls = board_game(name)
    return ["random", *_judges(cls)] + (["openspiel-mcts"] if hasattr(cls, "openspiel_state") else [])


def is_board_game(game) -> bool:
    """Is ``game`` a board game's name (not a chess variant)?"""
    return isinstance(game, str) and board_game(game) is not None


def from_spec(spec: str, game: str | Variant, *, seed: int | None = None, allow_paths: bool = True,
              limits: SpecLimits | None = LOCAL_LIMITS) -> Agent:
    """A new agent for ``game`` (a chess variant or a board game) from its spec (see the module docstring);
    ``allow_paths=False``: built-in forms only. ``ValueError`` names the problem: an unknown form, a bad number, a
    search over ``limits`` (:func:`check_limits`), an engine or judge that does not play the game, a saved agent of
    another game."""
    spec = check_limits(spec, limits)  # normalised before the check: "MINIMAX:9" is "minimax:9"
    _, kind, number = _parse(spec)
    if kind == "zoo":  # package data, checked: offered where paths are not
        return _checked(zoo.load_spec(spec), game, spec)
    board = is_board_game(game)
    name = game if board else get_variant(game).name
    agent = (_board_game_agent if board else _chess_agent)(kind, number, name, seed)
    if agent is not None:
        return agent
    if allow_paths and (os.path.isdir(spec) or os.path.basename(spec) == MANIFEST):
        return load_for_game(spec, name)
    forms = ", ".join(BOARD_GAME_FORMS if board else SPEC_FORMS)
    if kind is not None:  # a form of the other family
        raise ValueError(f"{kind!r} plays chess variants, not {name}; expected {forms}" if board else
                         f"{kind!r} plays board games, not the chess variant {name!r}; expected {forms}")
    paths = " or a saved agent's directory" if allow_paths else ""
    raise ValueError(f"unknown agent {spec!r}{f' for {name}' if board else ''}: expected {forms}{paths}")


def _chess_agent(kind: str | None, number: int | None, variant: str, seed: int | None) -> Agent | None:
    """The chess variant's built-in agent of form ``kind``; ``None`` for another form."""
    if kind == "random":
        return RandomAgent(seed)
    if kind == "greedy":
        return GreedyAgent(seed)
    if kind == "perfect":
        if variant != "3x3":
            raise ValueError(f"'perfect' plays from the tablebase, which exists for 3x3 only, not {variant!r}")
        return PerfectAgent(variant, seed)
    if kind == "minimax":
        return MinimaxAgent(number, seed)
    if kind in ENGINES:
        return UCIEngineAgent(variant, kind, nodes=number)
    return None


def _board_game_agent(kind: str | None, number: int | None, name: str, seed: int | None) -> Agent | None:
    """Board game ``name``'s built-in agent of form ``kind``; ``None`` for another form."""
    cls = board_game(name)
    seed = 0 if seed is None else seed
    judges, kinds = _judges(cls), board_game_kinds(name)
    if kind == "random":
        return RandomAgent(seed)
    if kind == "openspiel-mcts":
        from agents.players.openspiel_mcts import OpenSpielMCTS  # an optional outside opponent

        if kind not in kinds:
            raise ValueError(f"'openspiel-mcts' plays the games that can hand OpenSpiel their position (Gomoku, "
                             f"checkers), not {name}")
        return OpenSpielMCTS(number, seed=seed)
    if kind == "perfect" and "perfect" in judges:
        if issubclass(cls, Gomoku) and cls.height > SOLVED_GOMOKU:
            raise ValueError(f"'perfect' plays Gomoku up to {SOLVED_GOMOKU}x{SOLVED_GOMOKU} (gomoku4k4): the exact "
                             f"solver does not finish on {cls.height}x{cls.width}")
        return judges["perfect"](cls, seed)
    if kind == "alpha-beta" and "alpha-beta" in judges:
        return judges["alpha-beta"](number, seed)
    if kind in ("perfect", "alpha-beta"):
        raise ValueError(f"{name} has no {kind!r} player; it has {', '.join(kinds)}")
    return None


def agent_game(agent: Agent, path: str | None = None) -> str | None:
    """The game a (saved) agent says it plays: a chess variant's name or a board game's, ``None`` if it does not
    say (then its manifest at ``path`` is asked)."""
    plays = getattr(agent, "game", None) or getattr(agent, "variant", None)
    if plays is None and path is not None:
        plays = manifest_game(path)
    if isinstance(plays, Variant):
        return plays.name
    if isinstance(plays, str) and not is_board_game(plays):
        return get_variant(plays).name
    return plays if isinstance(plays, str) else None


def load_for_game(path: str, game: str | Variant) -> Agent:
    """``agents.load(path)``, checked to play ``game`` (a chess variant or a board game; when the agent says)."""
    return _checked(load(path), game, f"the agent at {path!r}")


def _checked(agent: Agent, game: str | Variant, what: str) -> Agent:
    """``agent``, or ``ValueError`` if it says it plays another game than ``game``."""
    name = game if is_board_game(game) else get_variant(game).name
    plays = agent_game(agent)
    if plays is not None and plays != name:
        raise ValueError(f"{what} plays {plays!r}, not {name!r}")
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
