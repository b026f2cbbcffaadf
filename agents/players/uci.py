"""A real engine over UCI: Fairy-Stockfish for the minichess variants, Stockfish for 8x8.

>>> with UCIEngineAgent("gardner", nodes=100) as engine:      # doctest: +SKIP
...     action = engine.act(observation, mask, position)

The engine starts on the first move and stops on :meth:`close` (also on ``with`` exit and garbage collection);
a pickled copy starts its own. Search is single-threaded and ``reset`` clears the hash, so with a node or depth
limit the engine's moves depend only on the game: arena results are reproducible.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import subprocess
import threading
import warnings
from typing import NamedTuple

import numpy as np

from agents.base import Agent, check_settings, need_position, read_manifest, write_manifest
from minichess_envs.engine import IllegalMoveError
from minichess_envs.variants import VARIANTS, get_variant

#: The engines spoken to (each also the name of its Debian/Ubuntu package).
ENGINES = ("fairy-stockfish", "stockfish")
#: Each engine's short name, which starts its agents' default names (``fsf-n100``, ``stockfish-d2``).
SHORT_NAMES = {"fairy-stockfish": "fsf", "stockfish": "stockfish"}
SEARCH_DIRS = ("/usr/games", "/usr/local/games")  # Debian installs games here, often not on PATH
#: Options naming files the engine writes or reads (refused unless ``file_options=True``); lower case: UCI option
#: names are case-insensitive.
FILE_OPTIONS = frozenset({"debug log file", "evalfile", "evalfilesmall", "syzygypath", "variantpath"})
#: Options the agent sets itself.
OWN_OPTIONS = frozenset({"uci_variant", "threads"})
#: An ``info`` line's score: the first ``score`` word, then ``cp`` or ``mate`` and a number.
SCORE = re.compile(r"info(?:\s.*?)?\sscore\s+(cp|mate)\s+([+-]?\d+)(?:\s|$)")


def check_engine_options(options: dict, file_options: bool = False) -> dict:
    """``options`` as ``{name: value}`` checked for ``setoption``: ``ValueError`` naming the bad one. Names and values
    must be plain text on one line (so nothing can smuggle a second command into the engine), names may not contain the
    words ``name`` or ``value``, values are str, int, float or bool; file options need ``file_options=True``."""
    if not isinstance(options, dict):
        raise ValueError(f"engine options must be a dict of name -> value, got {type(options).__name__}")
    for key, value in options.items():
        if not isinstance(key, str) or not key.strip() or not key.isprintable():
            raise ValueError(f"engine option name {key!r} is not a printable one-line name")
        if {"name", "value"} & set(key.lower().split()):
            raise ValueError(f"engine option name {key!r} contains the UCI keyword 'name' or 'value'")
        if not isinstance(value, (str, int, float, bool)) or (isinstance(value, str) and not value.isprintable()):
            raise ValueError(f"engine option {key!r} has value {value!r}: expected a one-line str, int, float or bool")
        lower = " ".join(key.lower().split())
        if lower in OWN_OPTIONS:
            raise ValueError(f"engine option {key!r} is set by the agent itself (use its arguments)")
        if lower in FILE_OPTIONS and not file_options:
            raise ValueError(f"engine option {key!r} names a file the engine reads or writes: pass "
                             "file_options=True to allow it")
    return dict(options)


class EngineResult(NamedTuple):
    """An engine's move (UCI) and score from the side to move: centipawns, or moves to mate (negative: mated)."""

    move: str
    cp: int | None
    mate: int | None


class EngineError(RuntimeError):
    """The engine process failed: it died, did not answer in time, or said something unexpected."""


class EngineNotFoundError(FileNotFoundError):
    """The engine binary is not installed."""


def default_engine(variant: str) -> str:
    """The engine that plays ``variant`` when none is named: Stockfish for 8x8 chess, else Fairy-Stockfish."""
    return "stockfish" if get_variant(variant).name == "chess" else "fairy-stockfish"


def find_engine(engine: str, path: str | None = None) -> str:
    """Path of the engine binary: ``path`` if given, else ``engine`` on PATH, then in /usr/games."""
    if path is not None:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise EngineNotFoundError(f"{engine} binary {path!r} does not exist or is not executable")
        return path
    found = shutil.which(engine) or shutil.which(engine, path=os.pathsep.join(SEARCH_DIRS))
    if found is None:
        raise EngineNotFoundError(f"{engine} not found on PATH or in {', '.join(SEARCH_DIRS)}: install Debian's "
                                  f"{engine} package (apt install {engine}) or pass path=")
    return found


class UCIEngineAgent(Agent):
    """Plays the moves of a UCI engine, searching to a node, depth or time limit.

    :param variant: the variant played; Fairy-Stockfish gets its ``UCI_Variant`` (``gardner``, ``losalamos``,
        ``chess``; others need ``variant_config``).
    :param engine: ``"fairy-stockfish"`` or ``"stockfish"`` (default: stockfish for chess, else fairy-stockfish).
    :param path: the engine binary (default: searched on PATH, then /usr/games).
    :param nodes, depth, movetime: the search limit, exactly one (movetime in ms); default ``nodes=1000``.
    :param options: extra ``setoption`` values, e.g. ``{"Hash": 64}`` (:func:`check_engine_options`).
        ``Skill Level`` below 20 picks moves with a clock-seeded generator: games stop being reproducible.
    :param file_options: allow options that name files (``Debug Log File``, ``EvalFile``, ...).
    :param variant_config: a Fairy-Stockfish ``variants.ini`` to load (``VariantPath``) for variants it does not
        build in; name the section with ``uci_variant``.
    :param timeout: seconds to wait for any answer (on top of ``movetime``).
    :param random_moves: the share of moves played uniformly at random among the legal ones instead of the engine's
        (seeded by ``reset``): the 8x8 ladder's levels below Stockfish's weakest."""

    def __init__(self, variant: str = "gardner", engine: str | None = None, path: str | None = None, *,
                 nodes: int | None = None, depth: int | None = None, movetime: int | None = None,
                 options: dict | None = None, variant_config: str | None = None, uci_variant: str | None = None,
                 name: str | None = None, timeout: float = 30.0, file_options: bool = False,
                 random_moves: float = 0.0):
        v = get_variant(variant)
        self.variant = v.name
        self.engine = engine or default_engine(v.name)
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be 'fairy-stockfish' or 'stockfish', not {self.engine!r}")
        if self.engine == "stockfish":
            if v.name != "chess":
                raise ValueError(f"stockfish plays only standard chess, not {v.name!r}: use engine='fairy-stockfish'")
            if variant_config or uci_variant:
                raise ValueError("variant_config and uci_variant are Fairy-Stockfish options; stockfish has none")
        self.uci_variant = uci_variant or (v.fairy_stockfish if self.engine == "fairy-stockfish" else None)
        if self.engine == "fairy-stockfish" and self.uci_variant is None:
            built_in = ", ".join(name for name, w in VARIANTS.items() if w.fairy_stockfish)
            raise ValueError(f"Fairy-Stockfish has no built-in variant for {v.name!r} (built in: {built_in}); pass "
                             "variant_config= (a variants.ini defining it) and uci_variant= (its section name)")
        if variant_config is not None and not os.path.isfile(variant_config):
            raise ValueError(f"variant_config {variant_config!r} is not a file")
        self.variant_config = variant_config
        limits = {k: val for k, val in (("nodes", nodes), ("depth", depth), ("movetime", movetime)) if val is not None}
        limits = limits or {"nodes": 1000}
        if len(limits) > 1:
            raise ValueError(f"give one search limit (nodes, depth or movetime), got {', '.join(limits)}")
        (self.limit, self.limit_value), = limits.items()
        if not isinstance(self.limit_value, int) or self.limit_value < 1:
            raise ValueError(f"{self.limit} must be a positive integer, got {self.limit_value!r}")
        self.options = check_engine_options(options or {}, file_options)
        self.file_options = file_options
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if not isinstance(random_moves, (int, float)) or isinstance(random_moves, bool) \
                or not 0.0 <= random_moves <= 1.0:
            raise ValueError(f"random_moves must be a share in [0, 1], got {random_moves!r}")
        self.random_moves = float(random_moves)
        self._rng = np.random.default_rng()
        self.path = path  # as given: a saved agent searches again where it is loaded
        self.binary = find_engine(self.engine, path)
        self.timeout = float(timeout)
        unit = {"nodes": "n", "depth": "d", "movetime": "ms"}[self.limit]
        self.name = name or f"{SHORT_NAMES[self.engine]}-{unit}{self.limit_value}"
        self._proc = self._lines = self.id_name = None

    def start(self) -> None:
        """Start the engine and configure it (done by the first move if not called)."""
        if self._proc is not None and self._proc.poll() is None:
            return
        try:
            self._proc = subprocess.Popen([self.binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, text=True, bufsize=1)
        except OSError as exc:
            raise EngineError(f"cannot start {self.engine} ({self.binary}): {exc}") from None
        # A reader thread lets every wait have a timeout (a hung engine must not hang the arena).
        self._lines = queue.Queue()
        threading.Thread(target=_pump, args=(self._proc.stdout, self._lines), daemon=True).start()
        self._send("uci")
        lines = self._read_until("uciok")
        #: The engine's own name and version (its ``id name``), e.g. ``Stockfish 15.1``.
        self.id_name = next((line[len("id name "):] for line in lines if line.startswith("id name ")), None)
        options = [line for line in lines if line.startswith("option name UCI_Variant ")]
        known = options[0].split(" var ")[1:] if options else []
        if self.uci_variant and not self.variant_config and self.uci_variant not in known:
            self.close()
            raise EngineError(f"{self.engine} ({self.binary}) does not know UCI_Variant {self.uci_variant!r}"
                              + (f"; it knows: {', '.join(known)}" if known else ""))
        settings = {"Threads": 1, **self.options}
        if self.variant_config:
            settings["VariantPath"] = os.path.abspath(self.variant_config)
        if self.uci_variant:
            settings["UCI_Variant"] = self.uci_variant
        for key, value in settings.items():
            self._send(f"setoption name {key} value {str(value).lower() if isinstance(value, bool) else value}")
        self._send("ucinewgame")
        self._sync()

    def close(self) -> None:
        """Send ``quit`` and wait for the engine to exit (killing it after 2 s)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                with contextlib.suppress(OSError, ValueError):
                    proc.stdin.write("quit\n")
                    proc.stdin.flush()
                try:
                    proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=2)
        finally:
            # stdout belongs to the reader thread, which closes it at end of output; closing it here
            # could block on (or, at interpreter exit, abort over) the lock that thread holds.
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()

    def __del__(self):
        with contextlib.suppress(Exception):  # interpreter shutdown: best effort only
            self.close()

    def __getstate__(self) -> dict:
        # A copy (pickled into a worker) gets its own engine, started on its first move.
        return {**self.__dict__, "_proc": None, "_lines": None}

    def _send(self, line: str) -> None:
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        except (OSError, ValueError, AttributeError):
            raise EngineError(f"{self.engine} ({self.binary}) is not running (exit code "
                              f"{self._proc.poll() if self._proc else None}) while sending {line!r}") from None

    def _read_until(self, token: str, timeout: float | None = None) -> list[str]:
        """Output lines up to and including the first that starts with ``token``."""
        timeout = self.timeout if timeout is None else timeout
        seen = []
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise EngineError(f"{self.engine} did not answer {token!r} within {timeout:g} s") from None
            if line is None:
                raise EngineError(f"{self.engine} exited (code {self._proc.wait()}) before answering {token!r}")
            seen.append(line)
            if line.startswith(token):
                return seen

    def _sync(self) -> None:
        self._send("isready")
        self._read_until("readyok")

    def reset(self, seed: int | None = None) -> None:
        """A new game: clear the engine's hash (its search is deterministic); ``seed`` seeds the random moves."""
        self._rng = np.random.default_rng(seed)
        if self._proc is not None and self._proc.poll() is None:
            self._send("ucinewgame")
            self._sync()

    def bestmove(self, position) -> str:
        """The engine's move in ``position`` (UCI)."""
        return self.search(position).move

    def search(self, position) -> EngineResult:
        """The engine's move in ``position`` and its last reported score (from the side to move), searched from
        the game's root so that it sees repetitions."""
        self.start()
        moves = " ".join(m.uci() for m in position.move_stack)
        self._send(f"position fen {position.root_fen}" + (f" moves {moves}" if moves else ""))
        self._send(f"go {self.limit} {self.limit_value}")
        wait = self.timeout + (self.limit_value / 1000 if self.limit == "movetime" else 0)
        lines = self._read_until("bestmove", wait)
        fields = lines[-1].split()
        if len(fields) < 2 or fields[1] in ("(none)", "0000"):
            raise EngineError(f"{self.engine} found no move in {position.fen()}: {' '.join(fields)!r}")
        score = next(filter(None, map(SCORE.match, reversed(lines[:-1]))), None)  # the last one reported
        kind, value = (score[1], int(score[2])) if score else (None, None)
        return EngineResult(fields[1], value if kind == "cp" else None, value if kind == "mate" else None)

    def act(self, observation, action_mask, position=None) -> int:
        if need_position(self, position).variant.name != self.variant:
            raise ValueError(f"{self.name} is set up for {self.variant!r}, not {position.variant.name!r}")
        if self.random_moves and self._rng.random() < self.random_moves:
            return int(self._rng.choice(np.flatnonzero(action_mask)))
        move = self.bestmove(position)
        try:
            return position.move_to_action(move)
        except (ValueError, IllegalMoveError) as exc:
            raise EngineError(f"{self.engine} played {move!r}, not legal here ({position.fen()}): {exc}") from None

    def save(self, path: str) -> None:
        """Write ``agent.json`` with the settings; not the binary, which is found again on load."""
        write_manifest(path, self, variant=self.variant, engine=self.engine,
                       **{self.limit: self.limit_value}, options=self.options, variant_config=self.variant_config,
                       uci_variant=self.uci_variant, name=self.name, timeout=self.timeout,
                       random_moves=self.random_moves)

    @classmethod
    def load(cls, path: str, binary: str | None = None, file_options: bool = False) -> UCIEngineAgent:
        """The saved engine agent; the engine binary is ``binary`` if given, else found by name on PATH. A manifest
        cannot choose the program that runs, nor allow file options: only the caller can (``binary=``,
        ``file_options=True``)."""
        settings = read_manifest(path)["settings"]
        if settings.pop("binary", None) is not None:
            warnings.warn(f"{path}: the saved engine binary is ignored; the engine is found on PATH "
                          "(pass binary= to choose one)", stacklevel=2)
        settings = check_settings(path, settings, {"variant": str, "engine": str},
                                  {"nodes": (int, None), "depth": (int, None), "movetime": (int, None),
                                   "options": dict, "variant_config": (str, None), "uci_variant": (str, None),
                                   "name": (str, None), "timeout": float, "random_moves": float})
        if settings.get("variant_config") is not None and not file_options:
            raise ValueError(f"{path}: the saved agent has the engine read variant_config "
                             f"{settings['variant_config']!r}: pass file_options=True to allow it")
        return cls(path=binary, file_options=file_options, **settings)


def _pump(stream, lines: queue.Queue) -> None:
    """Reader thread: engine output lines into ``lines``; ``None`` at end of output."""
    with contextlib.suppress(OSError, ValueError), stream:
        for line in stream:
            lines.put(line.strip())
    lines.put(None)
