"""``minichess serve``: a local web app to play any agent, watch two agents, replay PGN and see what a search thinks,
in a chess variant (:class:`WebGame`) or a board game of :mod:`agents.games` (:class:`BoardWebGame`).
The page is ``static/``; the JSON API (:class:`PlayServer`'s routes) and what the server trusts: docs/play.md."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import secrets
import sys
import threading
import time

from minichess_envs.extras import extra_hint, require

with extra_hint("the web app (agents.play.web)", only="starlette", extra="play"):  # names the extra
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.datastructures import Headers
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

from agents import zoo
from agents.arena import WIN_RESULTS, board_outcome, chess_outcome, close_agents
from agents.base import Agent, manifest_game, read_manifest
from agents.games import BOARD_GAMES, SEAT_NAMES, Game, GridGame, new_game
from agents.play.terminal import RESIGNATION, chess_pgn, loss
from agents.players.uci import EngineNotFoundError, find_engine
from agents.spec import SERVER_LIMITS, from_spec, is_board_game, load_for_game, parse_spec, saved_agents
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, Move, Position
from minichess_envs.pgn import PgnStats, parse_san, read_pgn, san
from minichess_envs.players import choose_action
from minichess_envs.tablebase import Tablebase
from minichess_envs.variants import VARIANTS, Variant, get_variant

STATIC = os.path.join(os.path.dirname(__file__), "static")
HUMAN = "human"
MAX_BODY = 1 << 20  # bytes of a request (a long PGN is ~10 kB)
MOVE_SECONDS = 20.0  # an agent's move or analysis; built-in agents within SERVER_LIMITS need well under 1 s
PGN_SECONDS = 5.0  # reading an upload: a 1 MiB file of games each illegal at its last move took 17.7 s
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_THREADING = threading.__dict__
#: Work under bounded() pauses this long after each YIELD_EVERY seconds, so the event loop gets the GIL within
#: ~2 ms (not the 5 ms switch interval per waiting thread) and requests are answered while searches run.
YIELD_EVERY, YIELD_PAUSE = 0.002, 0.0005


class Stopped(Exception):
    """Work under :func:`bounded` stopped before its end: ``timed_out``, or asked to stop."""

    def __init__(self, message: str, timed_out: bool):
        super().__init__(message)
        self.timed_out = timed_out


class _Stop(BaseException):
    """Raised into the worker's code; not an ``Exception``, so an agent's ``except Exception`` lets it through."""


def bounded(fn, *args, seconds: float, stops: tuple[threading.Event, ...] = ()):
    """``fn(*args)``, raising :class:`Stopped` at its next Python call once ``seconds`` pass or a ``stops`` event
    is set (a trace function: pure-Python search stops within milliseconds; closing an engine ends a wait in C)."""
    deadline = time.monotonic() + seconds
    paused = [time.monotonic()]

    def check(frame, event, arg):
        now = time.monotonic()
        # Not inside threading's own Python code: stopping between a Condition's
        # acquire and release would leave a lock held (the hazard of KeyboardInterrupt).
        if frame.f_globals is not _THREADING and (now > deadline or any(e.is_set() for e in stops)):
            raise _Stop
        if now - paused[0] > YIELD_EVERY:
            time.sleep(YIELD_PAUSE)  # releases the GIL
            paused[0] = time.monotonic()
        return None  # calls only, no line events: minimax runs ~1.5x slower, not several times

    previous = sys.gettrace()  # a debugger's or coverage's: restored after (the work itself goes untraced by it)
    sys.settrace(check)
    try:
        return fn(*args)
    except _Stop:
        if time.monotonic() > deadline:
            raise Stopped(f"took more than {seconds:g} s (this server's limit)", True) from None
        raise Stopped("stopped: the game was deleted or the server is stopping", False) from None
    finally:
        sys.settrace(previous)


class ServerGame:
    """What every game on the server has, a chess variant's (:class:`WebGame`) or a board game's
    (:class:`BoardWebGame`): who plays each seat, the agents, whether one is thinking, how the game ended. A subclass
    says how a move is read, played (:meth:`push`) and taken back (:meth:`pop_turn`), how the rules end the game
    (:meth:`outcome`), and what the :meth:`state` lists as legal and shows besides (:meth:`details`)."""

    kind: str  # "chess" or "board", in the state
    seat_names: tuple[str, str]  # the keys of players and names in the state: white/black, first/second

    def __init__(self, players: tuple[str, str], agents: list[Agent | None], names: tuple[str, str] | None = None):
        self.id = secrets.token_urlsafe(9)  # in the game's URLs
        self.players = players
        self.agents = agents
        # shown for each seat (default: the agent's name, else its spec, or "human")
        self.names = names or tuple(HUMAN if a is None else getattr(a, "name", p) for a, p in zip(agents, players))
        self.resigned: int | None = None
        self.busy = False  # an agent is thinking; the game does not change meanwhile
        self.agent_lock = threading.Lock()  # agents are not thread-safe: one call at a time (move or analysis)
        self.stop = threading.Event()  # set when the game ends on the server: its agents' work stops
        self.touched = time.monotonic()
        self.history: list[dict] = []

    @property
    def ply(self) -> int:
        """Moves played (a board game: actions, each jump of a multi-jump one)."""
        raise NotImplementedError

    @property
    def turn(self) -> int:
        """The seat to move: 0 (White, the first player) or 1."""
        raise NotImplementedError

    def status(self) -> tuple[str, str | None]:
        """``(result, termination)``, the first seat's points first; ``("*", None)`` while the game goes on."""
        if self.resigned is not None:
            return loss(self.resigned), RESIGNATION
        return self.outcome()

    def outcome(self) -> tuple[str, str | None]:
        """:meth:`status` by the rules alone (no resignation)."""
        raise NotImplementedError

    def state(self) -> dict:
        """The game as the page sees it (docs/play.md): what every game has, and its :meth:`details`."""
        result, termination = self.status()
        over = termination is not None
        seats = self.seat_names
        return {"id": self.id, "kind": self.kind, "players": dict(zip(seats, self.players)),
                "names": dict(zip(seats, self.names)), "ply": self.ply, "turn": seats[self.turn],
                "to_move": self.players[self.turn], "history": self.history, "legal": [] if over else self.legal(),
                "result": result, "termination": termination, "over": over, "busy": self.busy, **self.details(over)}

    def legal(self) -> list[dict]:
        """The legal moves, as the state lists them."""
        raise NotImplementedError

    def details(self, over: bool) -> dict:
        """What the state shows of this kind of game (``over``: whether it has ended)."""
        raise NotImplementedError

    def snapshot(self):
        """A copy of the game for the agent to move to think about (in a worker thread)."""
        raise NotImplementedError

    def choose(self, snapshot):
        """The agent to move's choice in ``snapshot`` (run in a worker thread), for :meth:`push`."""
        raise NotImplementedError

    def push(self, move) -> None:
        raise NotImplementedError

    def read_move(self, data: dict):
        """The move in a request's JSON, as sent (422 if it is missing or of the wrong type)."""
        raise NotImplementedError

    def human_move(self, move) -> None:
        """Play the person's move (from :meth:`read_move`); 422 naming the problem if it is no legal move."""
        raise NotImplementedError

    def pop_turn(self) -> None:
        """Take back the last turn (a move; a board game's whole multi-jump)."""
        raise NotImplementedError

    def undo(self) -> None:
        """Take back the last turn, then more while an agent is to move in a game a person plays (409 if no
        move was played)."""
        if self.ply == 0:
            raise HTTPException(409, "nothing to undo: no move has been played")
        self.resigned = None
        self.pop_turn()
        while HUMAN in self.players and self.ply and self.players[self.turn] != HUMAN:
            self.pop_turn()  # back to a person's turn

    def close(self) -> None:
        """Stop the agents' work and close them (an engine may take ~2 s to quit: not on the event loop)."""
        self.stop.set()
        close_agents(self.agents)


class WebGame(ServerGame):
    """One chess game on the server: the position, who plays each side, and how it ended if it did."""

    kind, seat_names = "chess", COLOR_NAMES

    def __init__(self, position: Position, players: tuple[str, str], agents: list[Agent | None],
                 names: tuple[str, str] | None, ply_limit: int, headers: dict | None = None):
        super().__init__(players, agents, names)
        self.ply_limit = ply_limit
        self.headers = dict(headers or {})
        self.encoding = ObservationEncoding(position.variant)
        self.position = Position(position.variant, position.root_fen)
        for move in position.move_stack:
            self.push(move)

    @property
    def ply(self) -> int:
        return self.position.ply

    @property
    def turn(self) -> int:
        return self.position.turn

    def push(self, move: Move) -> None:
        entry = {"uci": move.uci(), "san": san(self.position, move)}
        self.position.push(move)
        entry["fen"] = self.position.fen()
        self.history.append(entry)

    def pop_turn(self) -> None:
        self.position.pop()
        self.history.pop()

    def read_move(self, data: dict) -> str:
        return _field(data, "move", None)

    def human_move(self, text: str) -> None:
        try:
            self.push(parse_san(self.position, text))  # SAN or UCI
        except ValueError as exc:  # illegal, ambiguous or not a move
            raise HTTPException(422, str(exc)) from None

    def outcome(self) -> tuple[str, str | None]:
        return chess_outcome(self.position, self.ply_limit)

    def legal(self) -> list[dict]:
        pos = self.position
        return [{"uci": m.uci(), "san": san(pos, m), "from": m.from_square, "to": m.to_square, "promotion": m.promotion}
                for m in pos.legal_moves]

    def details(self, over: bool) -> dict:
        pos, v = self.position, self.position.variant
        return {"variant": {"name": v.name, "width": v.width, "height": v.height}, "start_fen": pos.root_fen,
                "fen": pos.fen(), "check": pos.is_check() and not over, "ply_limit": self.ply_limit}

    def pgn(self) -> str:
        return chess_pgn(self.position, {"Event": "minichess serve", **self.headers}, self.names, *self.status())

    def snapshot(self) -> Position:
        return self.position.copy()

    def choose(self, position: Position) -> Move:
        """The agent to move's choice (run in a worker thread)."""
        with self.agent_lock:
            return position.action_to_move(choose_action(self.agents[position.turn], position, self.encoding))


def board_game_info(game: Game) -> dict:
    """What a page needs to draw board game ``game`` (a :class:`~agents.games.Game`): its name and title, the grid's
    ``rows`` and ``columns``, ``checkered`` (checkers' dark squares), ``drop`` (a move names a column: Connect Four),
    what each seat's pieces are called (``sides``), the start's ``cells`` and checkers' square ``labels``."""
    cells = game.cells()
    labels = getattr(game, "square_labels", None)
    return {"name": game.name, "title": board_game_title(type(game)), "rows": len(cells), "columns": len(cells[0]),
            "checkered": labels is not None, "drop": bool(getattr(game, "gravity", False)),
            "sides": ["X", "O"] if isinstance(game, GridGame) else ["Black", "White"] if labels else list(SEAT_NAMES),
            "cells": cells, "labels": labels() if labels else None}


def board_game_title(cls: type[Game]) -> str:
    """``"Tic-Tac-Toe"``, ``"Gomoku 9x9, 5 in a row"``, ``"Checkers"``."""
    title = getattr(cls, "title", None) or cls.name.replace("_", " ").title()
    length = getattr(cls, "length", None)
    return f"{title} {cls.height}x{cls.width}, {length} in a row" if title == "Gomoku" and length else title


class BoardWebGame(ServerGame):
    """One board game (:mod:`agents.games`: Tic-Tac-Toe, Connect Four, Gomoku, checkers) on the server. A move is an
    action; a checkers multi-jump is several actions by the same player, undone together."""

    kind, seat_names = "board", SEAT_NAMES

    def __init__(self, game: Game, players: tuple[str, str], agents: list[Agent | None]):
        super().__init__(players, agents)
        self.game = game
        self.info = board_game_info(game)
        self.before: list[Game] = []  # the game before each action, for undo

    @property
    def ply(self) -> int:
        return len(self.history)

    @property
    def turn(self) -> int:
        return self.game.to_play()

    def describe(self, action: int) -> dict:
        """``{action, name, from, to}`` of ``action`` now (``from`` and ``to`` cells; ``from``: ``None`` for a drop)."""
        start, end = self.game.action_cells(action)
        return {"action": int(action), "name": self.game.action_name(action),
                "from": None if start is None else list(start), "to": list(end)}

    def push(self, action: int) -> None:
        entry = {**self.describe(action), "player": self.game.to_play()}
        self.before.append(self.game.copy())
        self.game.step(action)
        self.history.append({**entry, "cells": self.game.cells()})

    def pop_turn(self) -> None:
        player = self.history[-1]["player"]
        while self.history and self.history[-1]["player"] == player:  # the jumps of one multi-jump
            self.game = self.before.pop()
            self.history.pop()

    def read_move(self, data: dict) -> str | int:
        """``{"move": NAME}`` (a legal move's ``name``: ``"c3"``, ``"d"``, ``"11-15"``, ``"11x18"``) or
        ``{"action": INDEX}``: the name (a string) or the index (an int)."""
        text, action = data.get("move"), data.get("action")
        if text is not None and action is not None:
            raise HTTPException(422, "send the move's name as 'move' or its index as 'action', not both")
        if action is not None:
            if not isinstance(action, int) or isinstance(action, bool):
                raise HTTPException(422, f"field 'action' must be an integer, not {type(action).__name__}")
            return action
        if text is None:
            raise HTTPException(422, "missing field 'move' (a move's name, as in 'legal') or 'action' (its index)")
        if not isinstance(text, str):
            raise HTTPException(422, f"field 'move' must be a string (a move's name), not {type(text).__name__}; "
                                "send an index as 'action'")
        return text

    def human_move(self, move: str | int) -> None:
        legal = self.game.legal_actions()
        if isinstance(move, int):  # an index
            what, key, actions = "action", move, {a: a for a in legal}
        else:
            what, key, actions = "move", move.strip().lower(), {self.game.action_name(a): a for a in legal}
        if key not in actions:
            raise HTTPException(422, f"illegal {what} {_shown(move)} in this {self.info['title']} position; "
                                f"legal {what}s: {_listed(actions)}")
        self.push(actions[key])

    def outcome(self) -> tuple[str, str | None]:
        return board_outcome(self.game)

    def legal(self) -> list[dict]:
        return [self.describe(action) for action in self.game.legal_actions()]

    def details(self, over: bool) -> dict:
        info = {k: v for k, v in self.info.items() if k not in ("cells", "labels")}
        result = self.status()[0]
        return {"game": info, "start_cells": self.info["cells"], "labels": self.info["labels"],
                "cells": self.game.cells(), "to_play": self.turn,
                "winner": WIN_RESULTS.index(result) if result in WIN_RESULTS else None}

    def snapshot(self) -> Game:
        return self.game.copy()

    def choose(self, game: Game) -> int:
        """The agent to move's action (run in a worker thread)."""
        with self.agent_lock:
            return choose_action(self.agents[game.to_play()], game)


def _shown(value) -> str:
    """``repr(value)``, cut short: an answer need not echo a long request."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"


def _listed(names, most: int = 30) -> str:
    names = [str(n) for n in names]
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


class HostCheck:
    """ASGI middleware: 400 unless the ``Host`` header names one of ``allowed_hosts`` (against DNS rebinding)."""

    def __init__(self, app, allowed_hosts: list[str]):
        self.app = app
        self.allowed = {_host_name(h) for h in allowed_hosts}

    async def __call__(self, scope, receive, send):
        checked = scope["type"] in ("http", "websocket")
        if checked and _host_name(Headers(scope=scope).get("host", "")) not in self.allowed:
            return await JSONResponse({"error": "Invalid host header"}, status_code=400)(scope, receive, send)
        await self.app(scope, receive, send)


def _host_name(host: str) -> str:
    """A ``Host`` header's or an address's host, lower case, without port or brackets: ``[::1]:80`` -> ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):  # an IPv6 literal: its colons are not the port's
        return host[1:host.find("]")] if "]" in host else ""
    return host if host.count(":") > 1 else host.partition(":")[0]  # more than one: a bare IPv6 address (--host)


class PlayServer:
    """The games and the agents on offer; :attr:`app` is the ASGI application."""

    def __init__(self, runs_dir: str | None = "runs", agent_paths: list[str] = (), *, ply_limit: int | None = None,
                 max_games: int = 200, allowed_hosts: list[str] | None = None, extra_agents: dict | None = None,
                 move_seconds: float = MOVE_SECONDS, pgn_seconds: float = PGN_SECONDS):
        self.runs_dir = runs_dir
        self.named = {}  # saved agents named on the command line: display name -> directory
        for path in agent_paths:
            read_manifest(path)  # fails now, with the problem named, not when a browser asks
            self.named[os.path.normpath(path)] = path
        # name -> factory(variant: a chess Variant, or a board game's name) (tests, embedding)
        self.extra_agents = dict(extra_agents or {})
        self.ply_limit = ply_limit
        self.max_games = max_games
        self.move_seconds = move_seconds
        self.pgn_seconds = pgn_seconds
        self.stopping = threading.Event()  # set when the server stops (see stop_all): all work in threads stops
        self.games: dict[str, ServerGame] = {}
        self._tablebase = None
        self._tablebase_lock = threading.Lock()
        self._analysers: dict[str, tuple[Agent, threading.Lock]] = {}
        game = "/api/games/{id}"
        routes = [
            Route("/", lambda request: FileResponse(os.path.join(STATIC, "index.html"))),
            Route("/api/options", self.options),
            Route("/api/games", self.new_game, methods=["POST"]),
            Route("/api/pgn", self.load_pgn, methods=["POST"]),
            Route(game, self.get_game),
            Route(game, self.delete_game, methods=["DELETE"]),
            Route(f"{game}/move", self.move, methods=["POST"]),
            Route(f"{game}/agent", self.agent_move, methods=["POST"]),
            Route(f"{game}/undo", self.undo, methods=["POST"]),
            Route(f"{game}/resign", self.resign, methods=["POST"]),
            Route(f"{game}/pgn", self.pgn),
            Route(f"{game}/analysis", self.analysis),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
        middleware = [Middleware(HostCheck, allowed_hosts=allowed_hosts)] if allowed_hosts else []
        self.app = Starlette(routes=routes, middleware=middleware, lifespan=self._lifespan,
                             exception_handlers={HTTPException: _error, Exception: _crash})

    @contextlib.asynccontextmanager
    async def _lifespan(self, app):
        yield
        self.stop_all()
        await run_in_threadpool(self.close)

    # -- agents -------------------------------------------------------------------

    def saved(self) -> dict[str, str]:
        """Saved agents on offer: those named on the command line, then those under the runs directory."""
        runs = saved_agents(self.runs_dir) if self.runs_dir else {}
        return {**self.named, **{name: path for name, path in runs.items() if name not in self.named}}

    def builtin(self) -> list[dict]:
        """The built-in agents on offer, each with the chess variants (``variants``) and the board games (``games``)
        it plays (``None``: all; a board game's forms are tried once, see :func:`_board_form_plays`)."""
        boards = list(BOARD_GAMES)
        out = [{"name": "random", "variants": None, "games": boards},
               {"name": "greedy", "variants": None, "games": []}]
        out += [{"name": f"minimax:{d}", "variants": None, "games": []} for d in range(1, SERVER_LIMITS.depth + 1)]
        searched = [g for g in boards if _board_form_plays("alpha-beta:1", g)]
        if searched:
            out += [{"name": f"alpha-beta:{d}", "variants": [], "games": searched}
                    for d in range(1, SERVER_LIMITS.depth + 1)]
        mcts = [g for g in boards if _board_form_plays("openspiel-mcts:1", g)]
        if mcts:
            out += [{"name": f"openspiel-mcts:{n}", "variants": [], "games": mcts}
                    for n in (100, 1000) if n <= SERVER_LIMITS.simulations]
        for engine, nodes in (("fairy-stockfish", (100, 1000, 10000)), ("stockfish", (1000, 100000))):
            try:
                find_engine(engine)
            except EngineNotFoundError:
                continue
            plays = ["chess"] if engine == "stockfish" else [n for n, v in VARIANTS.items() if v.fairy_stockfish]
            out += [{"name": f"{engine}:{n}", "variants": plays, "games": []} for n in nodes]
        solved = [g for g in boards if _board_form_plays("perfect", g)]
        out.append({"name": "perfect", "variants": ["3x3"], "games": solved})
        for name in zoo.names():  # the zoo's agents, at their rated and casual settings (cards read, nothing loaded)
            card = zoo.card(name)
            plays = {"variants": [], "games": [card.game]} if is_board_game(card.game) else {
                "variants": [card.game], "games": []}
            out += [{"name": f"zoo:{name}{setting}", **plays} for setting in ("", ":casual")[:1 + bool(card.casual)]]
        return out + [{"name": name, "variants": None, "games": None} for name in self.extra_agents]

    def make_agents(self, players: tuple[str, str], variant: Variant | str) -> tuple[tuple[str, str],
                                                                                   list[Agent | None]]:
        """The players' names (specs normalised) and an agent for each non-human of chess ``variant`` or board game
        ``variant`` (its name; loading is slow: a worker thread): a saved agent's or an extra's name, or a spec
        within SERVER_LIMITS; never a path."""
        names, agents, saved = [], [], self.saved()
        for player in players:
            if not isinstance(player, str) or not player.strip():
                raise HTTPException(422, f"a player must be {HUMAN!r} or an agent's name, not {player!r}")
            try:
                name = player if player in self.extra_agents or player in saved else (
                    HUMAN if player.strip().lower() == HUMAN else parse_spec(player))
                if name == HUMAN:
                    agents.append(None)
                elif name in saved:
                    agents.append(load_for_game(saved[name], variant))
                elif name in self.extra_agents:
                    agents.append(self.extra_agents[name](variant))
                else:
                    agents.append(from_spec(name, variant, allow_paths=False, limits=SERVER_LIMITS))
            # unknown name, wrong variant or game, engine missing, broken saved agent, an extra to install (torch,
            # bitbully, open-spiel)
            except (ValueError, ImportError, EngineNotFoundError) as exc:
                close_agents(agents)
                raise HTTPException(422, str(exc)) from None
            names.append(name)
        return tuple(names), agents

    def analyser(self, name: str | None, game: WebGame) -> tuple[Agent, threading.Lock] | None:
        """The agent whose search the analysis shows: ``name`` (a player or saved agent), else a player that can."""
        for agent, player in zip(game.agents, game.players):
            if agent is not None and hasattr(agent, "analyse") and name in (None, player):
                return agent, game.agent_lock
        if name is None:
            return None
        if name not in self._analysers:
            saved = self.saved()
            if name not in saved:
                raise HTTPException(404, f"no saved agent named {name!r}")
            agent = load_for_game(saved[name], game.position.variant)
            if not hasattr(agent, "analyse"):
                raise HTTPException(422, f"{name!r} has no search to show")
            self._analysers[name] = (agent, threading.Lock())
        return self._analysers[name]

    def verdicts(self, position: Position) -> dict | None:
        """The 3x3 tablebase's verdict on ``position`` and on each move (``None`` outside the table)."""
        with self._tablebase_lock:
            if self._tablebase is None:
                self._tablebase = Tablebase.load("3x3")
        try:
            value, dtm = self._tablebase.probe(position)
        except ValueError:  # a position outside the table (other armies)
            return None
        moves = [{"uci": m.move.uci(), "san": san(position, m.move), "value": m.value, "dtm": m.dtm,
                  "verdict": _verdict(m.value, m.dtm)} for m in self._tablebase.move_values(position)]
        moves.sort(key=lambda m: (-m["value"], m["dtm"] if m["value"] > 0 else -(m["dtm"] or 0)))
        return {"value": value, "dtm": dtm, "verdict": _verdict(value, dtm), "moves": moves}

    # -- games ---------------------------------------------------------------------

    def game(self, request: Request) -> ServerGame:
        game = self.games.get(request.path_params["id"])
        if game is None:
            raise HTTPException(404, f"no game {request.path_params['id']!r} (this server keeps "
                                f"{self.max_games} games, dropping the least recently used)")
        game.touched = time.monotonic()
        return game

    def make_game(self, position: Position, players: tuple[str, str], agents: list[Agent | None],
                  headers: dict | None = None, names: tuple[str, str] | None = None) -> WebGame:
        """A new game, not yet registered (replaying a long PGN's moves takes a while: a worker thread)."""
        v = position.variant
        limit = v.ply_limit if self.ply_limit is None else min(self.ply_limit, v.ply_limit)
        return WebGame(position, players, agents, names, limit, headers)

    async def add(self, game: ServerGame) -> ServerGame:
        """Register ``game``, dropping the least recently used idle games beyond ``max_games`` (on the event loop,
        where alone the games dict changes; games are closed in a worker thread)."""
        dropped = []
        while len(self.games) >= self.max_games:
            idle = [g for g in self.games.values() if not g.busy]
            if not idle:
                await run_in_threadpool(game.close)
                raise HTTPException(503, "too many games in progress: try again shortly")
            dropped.append(self.games.pop(min(idle, key=lambda g: g.touched).id))
        self.games[game.id] = game
        for old in dropped:
            await run_in_threadpool(old.close)
        return game

    def close(self) -> None:
        """End every game (their work stops, engine processes quit)."""
        games = list(self.games.values())
        self.games.clear()
        for game in games:
            game.close()

    def stop_all(self) -> None:
        """Make all work in worker threads stop at its next Python call; safe in a signal handler."""
        self.stopping.set()

    async def run(self, fn, *args, seconds: float, stops: tuple[threading.Event, ...] = ()):
        """``fn(*args)`` in a worker thread under :func:`bounded`, stopped also when the server stops."""
        return await run_in_threadpool(bounded, fn, *args, seconds=seconds, stops=(self.stopping, *stops))

    # -- handlers ------------------------------------------------------------------

    def saved_offered(self) -> list[dict]:
        """The saved agents on offer with what each plays (``variants``: ``None`` all chess variants; ``games``)."""
        saved = []
        for name, path in self.saved().items():
            try:
                game = manifest_game(path)
                if game is None or game in VARIANTS:
                    saved.append({"name": name, "variants": None if game is None else [get_variant(game).name],
                                  "games": []})
                elif is_board_game(game):
                    saved.append({"name": name, "variants": [], "games": [game]})
            except ValueError:
                continue  # a broken directory (or one naming no game there is) is not offered
        return saved

    async def options(self, request: Request) -> Response:
        """The chess variants, the board games, the agents (each with what it plays) and the person's name."""
        variants = [{"name": v.name, "width": v.width, "height": v.height, "start_fen": v.start_fen}
                    for v in VARIANTS.values()]
        agents = await run_in_threadpool(lambda: self.builtin() + self.saved_offered())  # the first call imports
        return JSONResponse({"variants": variants, "games": _board_games(), "agents": agents, "human": HUMAN})

    async def new_game(self, request: Request) -> Response:
        """``{variant, white, black, fen?}`` for a chess variant; ``{variant, first, second}`` for a board game
        (``game`` may name either instead of ``variant``; ``white``/``black`` stand for ``first``/``second``)."""
        data = await _json(request)
        name = _one_of(data, ("variant", "game"), "gardner")
        try:
            board = is_board_game(name)
        except ValueError as exc:  # e.g. gomoku25
            raise HTTPException(422, str(exc)) from None
        if board:
            if data.get("fen") is not None:
                raise HTTPException(422, f"{name} starts from its own start position: 'fen' is for chess variants")
            players = (_one_of(data, ("first", "white"), HUMAN), _one_of(data, ("second", "black"), HUMAN))
            players, agents = await run_in_threadpool(self.make_agents, players, name)
            game = BoardWebGame(new_game(name), players, agents)
        else:
            try:
                position = Position(get_variant(name), _field(data, "fen", None, optional=True))
            except (ValueError, TypeError) as exc:  # unknown variant, bad FEN
                message = str(exc)
                if "unknown" in message:
                    message += f"; board games: {', '.join(BOARD_GAMES)}, gomoku<size>[k<length>]"
                raise HTTPException(422, message) from None
            players = (_field(data, "white", HUMAN), _field(data, "black", HUMAN))
            players, agents = await run_in_threadpool(self.make_agents, players, position.variant)
            game = self.make_game(position, players, agents)
        return JSONResponse((await self.add(game)).state(), status_code=201)

    async def load_pgn(self, request: Request) -> Response:
        text = _field(await _json(request), "pgn", None)
        try:
            (game, result), stats = await self.run(self.read_first_game, text, seconds=self.pgn_seconds)
        except Stopped as exc:
            raise HTTPException(422 if exc.timed_out else 503, f"cannot read this PGN: reading {exc}") from None
        if game is None:
            raise HTTPException(422, f"cannot read this PGN: {stats}")
        state = (await self.add(game)).state()
        if result != "*" and not state["over"]:
            state["pgn_result"] = result  # e.g. a resignation: shown, the game stays playable
        return JSONResponse(state, status_code=201)

    def read_first_game(self, text: str) -> tuple[tuple[WebGame | None, str], PgnStats]:
        """``((game, its Result tag), stats)`` for the first good game in PGN ``text``; the game is not registered."""
        stats = PgnStats()
        loaded = next(read_pgn(io.StringIO(text), stats=stats), None)
        if loaded is None:
            return (None, "*"), stats
        names = (loaded.headers.get("White", "?"), loaded.headers.get("Black", "?"))
        keep = {k: val for k, val in loaded.headers.items() if k in ("Event", "Site", "Date", "Round")}
        game = self.make_game(loaded.position(), (HUMAN, HUMAN), [None, None], keep, names)
        return (game, loaded.headers.get("Result", "*")), stats

    async def get_game(self, request: Request) -> Response:
        return JSONResponse(self.game(request).state())

    async def delete_game(self, request: Request) -> Response:
        game = self.game(request)
        del self.games[game.id]
        await run_in_threadpool(game.close)  # an agent thinking in it stops
        return JSONResponse({"deleted": game.id})

    async def move(self, request: Request) -> Response:
        game = self.game(request)
        move = game.read_move(await _json(request))  # a bad field is named before the turn is checked
        _check_turn(game, human=True).human_move(move)
        return JSONResponse(game.state())

    async def agent_move(self, request: Request) -> Response:
        game = _check_turn(self.game(request), human=False)
        game.busy = True
        name = game.names[game.turn]
        try:
            move = await self.run(game.choose, game.snapshot(), seconds=self.move_seconds, stops=(game.stop,))
        except Stopped as exc:  # the game is unchanged
            if game.stop.is_set():
                raise HTTPException(410, f"{name} {exc}") from None
            raise HTTPException(503, f"{name} {exc}" + ("; try a weaker agent" if exc.timed_out else "")) from None
        except Exception as exc:  # a crashed engine or checkpoint: say so, keep the game
            if game.stop.is_set():  # an engine closed under it: the game was deleted
                raise HTTPException(410, f"{name} stopped: the game was deleted") from None
            raise HTTPException(502, f"{name} failed to move: {type(exc).__name__}: {exc}") from None
        finally:
            game.busy = False
        game.push(move)
        return JSONResponse(game.state())

    async def undo(self, request: Request) -> Response:
        game = self.game(request)
        await _json(request)
        _idle(game).undo()
        return JSONResponse(game.state())

    async def resign(self, request: Request) -> Response:
        game = self.game(request)
        await _json(request)
        _idle(game)
        if game.status()[1]:
            raise HTTPException(409, "the game is already over")
        humans = [c for c, p in enumerate(game.players) if p == HUMAN]
        if not humans:
            raise HTTPException(409, "agents do not resign")
        game.resigned = game.turn if len(humans) == 2 else humans[0]
        return JSONResponse(game.state())

    async def pgn(self, request: Request) -> Response:
        game = _chess_only(self.game(request), "PGN")
        name = f"minichess-{game.position.variant.name}-{game.id}.pgn"
        return Response(game.pgn(), media_type="application/x-chess-pgn",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    async def analysis(self, request: Request) -> Response:
        game = _chess_only(self.game(request), "analysis")
        ply = request.query_params.get("ply", str(game.position.ply))
        # isascii: "²".isdigit() is true but int("²") fails; the length check keeps int() off 5,000 digits
        if not (ply.isascii() and ply.isdigit()) or len(ply) > 9 or int(ply) > game.position.ply:
            shown = ply if len(ply) <= 20 else f"{ply[:20]}... ({len(ply)} characters)"
            raise HTTPException(422, f"ply must be a number from 0 to {game.position.ply}, not {shown!r}")
        position = game.position.copy()
        while position.ply > int(ply):
            position.pop()
        name = request.query_params.get("agent")
        out = {"ply": position.ply, "tablebase": None, "search": None}
        if position.is_game_over():
            return JSONResponse(out)
        if position.variant.name == "3x3":
            out["tablebase"] = await run_in_threadpool(self.verdicts, position)
        found = await run_in_threadpool(self.analyser, name, game)
        if found is not None:
            agent, lock = found

            def search():
                with lock:
                    return agent.analyse(position)

            try:
                view = await self.run(search, seconds=self.move_seconds, stops=(game.stop,))
            except Stopped as exc:
                raise HTTPException(410 if game.stop.is_set() else 503, f"the analysis {exc}") from None
            view["agent"] = getattr(agent, "name", name)
            for entry in view["moves"]:
                entry["san"] = san(position, entry["move"])
            out["search"] = view
        return JSONResponse(out)


def _idle(game: ServerGame) -> ServerGame:
    if game.busy:
        raise HTTPException(409, "an agent is thinking about its move in this game")
    return game


def _check_turn(game: ServerGame, human: bool) -> ServerGame:
    result, termination = _idle(game).status()
    if termination:
        raise HTTPException(409, f"the game is over ({result}, {termination})")
    mover, colour = game.players[game.turn], game.seat_names[game.turn]
    if human and mover != HUMAN:
        raise HTTPException(409, f"it is {mover}'s move ({colour}), not a person's")
    if not human and mover == HUMAN:
        raise HTTPException(409, f"it is the person's move ({colour})")
    return game


def _chess_only(game: ServerGame, what: str) -> WebGame:
    if not isinstance(game, WebGame):
        raise HTTPException(422, f"{what} is for chess variants only: this game is {game.game.name}, a board game")
    return game


@functools.cache
def _board_form_plays(spec: str, game: str) -> bool:
    """Does built-in form ``spec`` play board game ``game`` on this machine (its extra imports, its solver is
    there)? Tried once per process: making the agent imports bitbully or OpenSpiel."""
    try:
        close_agents([from_spec(spec, game, allow_paths=False, limits=SERVER_LIMITS)])
    except (ValueError, ImportError):
        return False
    return True


@functools.cache
def _board_games() -> list[dict]:
    """:func:`board_game_info` of each of :data:`~agents.games.BOARD_GAMES` (the options' ``games``)."""
    return [board_game_info(new_game(name)) for name in BOARD_GAMES]


def _verdict(value: int, dtm: int | None) -> str:
    if value == 0:
        return "draw"
    moves = (dtm + 1) // 2
    return f"wins, mate in {moves}" if value > 0 else f"loses, mated in {moves}"


async def _json(request: Request) -> dict:
    """The request's JSON object; 415 if not sent as JSON, 400 if malformed, 413 over :data:`MAX_BODY`."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise HTTPException(415, "send the request body as application/json")
    length = request.headers.get("content-length")
    if length is not None and not (length.isascii() and length.isdigit()):
        raise HTTPException(400, "the Content-Length header is not a number")
    if length is not None and (len(length) > 12 or int(length) > MAX_BODY):
        raise HTTPException(413, f"request body over {MAX_BODY} bytes")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise HTTPException(413, f"request body over {MAX_BODY} bytes")
    if not raw.strip():
        return {}
    # A big body takes milliseconds to decode: a worker thread, so other requests are not held up.
    return await run_in_threadpool(_decode, raw) if len(raw) > 65536 else _decode(raw)


def _decode(raw: bytearray) -> dict:
    try:
        data = json.loads(raw)
    except RecursionError:  # e.g. 100,000 nested brackets
        raise HTTPException(400, "malformed JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPException(400, f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HTTPException(400, f"expected a JSON object, got {type(data).__name__}")
    return data


def _one_of(data: dict, keys: tuple[str, str], default):
    """:func:`_field` under either of two names (422 if they differ)."""
    given = [key for key in keys if data.get(key) is not None]
    values = {_field(data, key, None) for key in given}
    if len(values) > 1:
        raise HTTPException(422, f"fields {keys[0]!r} and {keys[1]!r} name the same thing, and they differ: "
                                 "give one")
    return values.pop() if values else default


def _field(data: dict, key: str, default, optional: bool = False):
    value = data.get(key, default)
    if value is None and not optional:
        raise HTTPException(422, f"missing field {key!r}")
    if value is not None and not isinstance(value, str):
        raise HTTPException(422, f"field {key!r} must be a string, not {type(value).__name__}")
    return value


async def _error(request: Request, exc: HTTPException) -> Response:
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def _crash(request: Request, exc: Exception) -> Response:
    return JSONResponse({"error": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500)


def serve(args) -> int:
    """``minichess serve`` (``args`` from :func:`minichess_envs.cli.main`)."""
    uvicorn = require("uvicorn", "play", "minichess serve")
    loopback = args.host in LOOPBACK
    # Answer only requests addressed to this host (DNS rebinding); all interfaces accept any name.
    hosts = list(LOOPBACK) if loopback else None if args.host in ("0.0.0.0", "::") else [args.host]
    server = PlayServer(args.runs, args.agent, ply_limit=args.ply_limit, allowed_hosts=hosts)

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            # uvicorn waits for the requests in flight before it shuts down: their work must stop first.
            server.stop_all()
            super().handle_exit(sig, frame)

    if not loopback:
        print(f"warning: listening on {args.host}: anyone who can reach this machine can use the app")
    saved = server.saved()
    print(f"minichess: {len(saved)} saved agent(s) on offer" + (f" ({', '.join(saved)})" if saved else ""))
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"minichess: open http://{shown}:{args.port}/ in a browser (Ctrl+C stops)", flush=True)
    # The 1 s grace is a backstop: work under bounded() ends within milliseconds of stop_all().
    Server(uvicorn.Config(server.app, host=args.host, port=args.port, log_level="warning",
                          timeout_graceful_shutdown=1)).run()
    return 0
