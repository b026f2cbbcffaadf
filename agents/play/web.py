"""``minichess serve``: a local web app to play any agent, watch two agents, replay PGN and see what a search thinks.

The page (``static/``: plain HTML, CSS and one JavaScript file, nothing from
the network) talks to a small JSON API:

=======================================  ================================================================
``GET  /api/options``                    variants, and the agents this server offers
``POST /api/games``                      new game ``{variant, white, black, fen?}`` (``"human"`` or an agent)
``POST /api/pgn``                        a game read from PGN text ``{pgn}``, to replay (and play on)
``GET  /api/games/ID``                   the game: moves with SAN, legal moves, result
``POST /api/games/ID/move``              a person's move ``{move}`` (UCI or SAN)
``POST /api/games/ID/agent``             the agent to move plays (computed off the event loop)
``POST /api/games/ID/undo``              take back to the person's previous turn
``POST /api/games/ID/resign``            the side to move (the person, against an agent) resigns
``GET  /api/games/ID/pgn``               the game as a PGN file
``GET  /api/games/ID/analysis?ply=N``    3x3 tablebase verdicts; an AlphaZero agent's search
=======================================  ================================================================

Safety: agents come from built-in specs or from saved-agent directories named
on the command line or found under the runs directory, looked up by name;
nothing the browser sends is used as a path. Bad requests get a 4xx JSON
``{"error": ...}`` and change nothing; POSTs must be ``application/json``, so
another web site cannot send them from a visitor's browser (no CORS).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import threading
import time

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agents.arena import PLY_LIMIT
from agents.base import Agent, read_manifest
from agents.spec import from_spec, load_for_variant, saved_agents
from agents.uci import EngineNotFoundError, find_engine
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, WHITE, Move, Position
from minichess_envs.pgn import PgnStats, game_pgn, parse_san, read_pgn, san
from minichess_envs.players import choose_action
from minichess_envs.variants import VARIANTS, Variant, get_variant

STATIC = os.path.join(os.path.dirname(__file__), "static")
HUMAN = "human"
MAX_BODY = 1 << 20  # bytes of a request (a long PGN is ~10 kB)
MAX_DEPTH = 4  # minimax deeper than this takes minutes on 8x8
MAX_NODES = 1_000_000
RESIGNATION = "resignation"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class Game:
    """One game on the server: the position, who plays each side, and how it ended if it did."""

    def __init__(self, game_id: str, position: Position, players: tuple[str, str], agents: list[Agent | None],
                 names: tuple[str, str], ply_limit: int, headers: dict | None = None):
        self.id = game_id
        self.position = position
        self.players = players
        self.agents = agents
        self.names = names
        self.ply_limit = ply_limit
        self.headers = dict(headers or {})
        self.encoding = ObservationEncoding(position.variant)
        self.resigned: int | None = None
        self.busy = False  # an agent is thinking; the game does not change meanwhile
        self.agent_lock = threading.Lock()  # agents are not thread-safe: one call at a time (move or analysis)
        self.touched = time.monotonic()
        self.history: list[dict] = []
        replay, self.position = position, Position(position.variant, position.root_fen)
        for move in replay.move_stack:
            self.push(move)

    def push(self, move: Move) -> None:
        entry = {"uci": move.uci(), "san": san(self.position, move)}
        self.position.push(move)
        entry["fen"] = self.position.fen()
        self.history.append(entry)

    def pop(self) -> None:
        self.position.pop()
        self.history.pop()

    def status(self) -> tuple[str, str | None]:
        """``(result, termination)``; ``("*", None)`` while the game goes on."""
        if self.resigned is not None:
            return ("0-1" if self.resigned == WHITE else "1-0"), RESIGNATION
        outcome = self.position.outcome()
        if outcome is not None:
            return outcome.result(), outcome.termination.name.lower().replace("_", " ")
        if self.position.ply >= self.ply_limit:
            return "1/2-1/2", PLY_LIMIT
        return "*", None

    def state(self) -> dict:
        pos = self.position
        result, termination = self.status()
        over = termination is not None
        legal = [] if over else [
            {"uci": m.uci(), "san": san(pos, m), "from": m.from_square, "to": m.to_square, "promotion": m.promotion}
            for m in pos.legal_moves
        ]
        v = pos.variant
        return {
            "id": self.id,
            "variant": {"name": v.name, "width": v.width, "height": v.height},
            "players": dict(zip(COLOR_NAMES, self.players)),
            "names": dict(zip(COLOR_NAMES, self.names)),
            "start_fen": pos.root_fen,
            "fen": pos.fen(),
            "ply": pos.ply,
            "turn": COLOR_NAMES[pos.turn],
            "to_move": self.players[pos.turn],
            "check": pos.is_check() and not over,
            "history": self.history,
            "legal": legal,
            "result": result,
            "termination": termination,
            "over": over,
            "busy": self.busy,
            "ply_limit": self.ply_limit,
        }

    def pgn(self) -> str:
        result, termination = self.status()
        headers = {**self.headers, "Event": self.headers.get("Event", "minichess serve"),
                   "White": self.names[0], "Black": self.names[1], "Result": result}
        if termination:
            headers["Termination"] = termination
        return game_pgn(self.position, headers)

    def choose(self, position: Position) -> Move:
        """The agent to move's choice (run in a worker thread)."""
        with self.agent_lock:
            action = choose_action(self.agents[position.turn], position, self.encoding)
        return position.action_to_move(action)

    def close(self) -> None:
        for agent in self.agents:
            close = getattr(agent, "close", None)
            if close:
                close()


class PlayServer:
    """The games and the agents on offer; :attr:`app` is the ASGI application."""

    def __init__(self, runs_dir: str | None = "runs", agent_paths: list[str] = (), *, ply_limit: int | None = None,
                 max_games: int = 200, allowed_hosts: list[str] | None = None, extra_agents: dict | None = None):
        self.runs_dir = runs_dir
        self.named = {}  # saved agents named on the command line: display name -> directory
        for path in agent_paths:
            read_manifest(path)  # fails now, with the problem named, not when a browser asks
            self.named[os.path.normpath(path)] = path
        self.extra_agents = dict(extra_agents or {})  # name -> factory(variant) (tests, embedding)
        self.ply_limit = ply_limit
        self.max_games = max_games
        self.games: dict[str, Game] = {}
        self._tablebase = None
        self._tablebase_lock = threading.Lock()
        self._analysers: dict[str, tuple[Agent, threading.Lock]] = {}
        routes = [
            Route("/", self.index),
            Route("/api/options", self.options),
            Route("/api/games", self.new_game, methods=["POST"]),
            Route("/api/pgn", self.load_pgn, methods=["POST"]),
            Route("/api/games/{id}", self.get_game),
            Route("/api/games/{id}/move", self.move, methods=["POST"]),
            Route("/api/games/{id}/agent", self.agent_move, methods=["POST"]),
            Route("/api/games/{id}/undo", self.undo, methods=["POST"]),
            Route("/api/games/{id}/resign", self.resign, methods=["POST"]),
            Route("/api/games/{id}/pgn", self.pgn),
            Route("/api/games/{id}/analysis", self.analysis),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
        middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)] if allowed_hosts else []
        self.app = Starlette(routes=routes, middleware=middleware, lifespan=self._lifespan,
                             exception_handlers={HTTPException: _error, Exception: _crash})

    @contextlib.asynccontextmanager
    async def _lifespan(self, app):
        yield
        self.close()

    # -- agents -------------------------------------------------------------------

    def saved(self) -> dict[str, str]:
        """Saved agents on offer: those named on the command line, then those under the runs directory."""
        found = dict(self.named)
        if self.runs_dir:
            for name, path in saved_agents(self.runs_dir).items():
                found.setdefault(name, path)
        return found

    def builtin(self) -> list[dict]:
        """The built-in agents on offer, each with the variants it plays (``None``: all)."""
        out = [{"name": "random", "variants": None}, {"name": "greedy", "variants": None}]
        out += [{"name": f"minimax:{d}", "variants": None} for d in range(1, MAX_DEPTH + 1)]
        for engine, nodes in (("fairy-stockfish", (100, 1000, 10000)), ("stockfish", (1000, 100000))):
            try:
                find_engine(engine)
            except EngineNotFoundError:
                continue
            plays = ["chess"] if engine == "stockfish" else [n for n, v in VARIANTS.items() if v.fairy_stockfish]
            out += [{"name": f"{engine}:{n}", "variants": plays} for n in nodes]
        out.append({"name": "perfect", "variants": ["3x3"]})
        out += [{"name": name, "variants": None} for name in self.extra_agents]
        return out

    def make_agent(self, name: str, variant: Variant) -> Agent:
        """A new agent from a name the browser sent (a spec or a saved agent's name, never a path)."""
        saved = self.saved()
        if name in saved:
            return load_for_variant(saved[name], variant)
        if name in self.extra_agents:
            return self.extra_agents[name](variant)
        kind, _, arg = name.partition(":")
        if kind == "minimax" and arg.isdigit() and int(arg) > MAX_DEPTH:
            raise ValueError(f"minimax depth {arg} is more than this server allows ({MAX_DEPTH})")
        if kind in ("fairy-stockfish", "stockfish") and arg.isdigit() and int(arg) > MAX_NODES:
            raise ValueError(f"{arg} nodes is more than this server allows ({MAX_NODES:,})")
        try:
            return from_spec(name, variant, allow_paths=False)
        except EngineNotFoundError as exc:
            raise ValueError(str(exc)) from None

    def analyser(self, name: str, game: Game) -> tuple[Agent, threading.Lock] | None:
        """The agent whose search the analysis shows: ``name`` (a player or saved agent), else a player that can."""
        for colour, player in enumerate(game.players):
            if game.agents[colour] is not None and hasattr(game.agents[colour], "analyse") and name in (None, player):
                return game.agents[colour], game.agent_lock
        if name is None:
            return None
        if name not in self._analysers:
            saved = self.saved()
            if name not in saved:
                raise HTTPException(404, f"no saved agent named {name!r}")
            agent = load_for_variant(saved[name], game.position.variant)
            if not hasattr(agent, "analyse"):
                raise HTTPException(422, f"{name!r} has no search to show")
            self._analysers[name] = (agent, threading.Lock())
        return self._analysers[name]

    @property
    def tablebase(self):
        with self._tablebase_lock:
            if self._tablebase is None:
                from minichess_envs.tablebase import Tablebase

                self._tablebase = Tablebase.load("3x3")
            return self._tablebase

    # -- games ---------------------------------------------------------------------

    def game(self, request: Request) -> Game:
        game = self.games.get(request.path_params["id"])
        if game is None:
            raise HTTPException(404, f"no game {request.path_params['id']!r} (this server keeps "
                                f"{self.max_games} games, dropping the least recently used)")
        game.touched = time.monotonic()
        return game

    def make_agents(self, players: tuple[str, str], variant: Variant) -> list[Agent | None]:
        """An agent for each non-human player (loading may take a while: called in a worker thread)."""
        agents = []
        for player in players:
            if not isinstance(player, str) or not player:
                raise HTTPException(422, f"a player must be {HUMAN!r} or an agent's name, not {player!r}")
            try:
                agents.append(None if player == HUMAN else self.make_agent(player, variant))
            except ValueError as exc:  # unknown name, wrong variant, engine missing, broken saved agent
                for agent in agents:
                    getattr(agent, "close", lambda: None)()
                raise HTTPException(422, str(exc)) from None
        return agents

    def add(self, position: Position, players: tuple[str, str], agents: list[Agent | None],
            headers: dict | None = None, names: tuple[str, str] | None = None) -> Game:
        """Register a new game (on the event loop: the games dict is only changed there)."""
        v = position.variant
        if names is None:
            names = tuple(HUMAN if a is None else getattr(a, "name", p) for a, p in zip(agents, players))
        limit = v.ply_limit if self.ply_limit is None else min(self.ply_limit, v.ply_limit)
        while len(self.games) >= self.max_games:
            idle = [g for g in self.games.values() if not g.busy]
            if not idle:
                raise HTTPException(503, "too many games in progress: try again shortly")
            oldest = min(idle, key=lambda g: g.touched)
            del self.games[oldest.id]
            oldest.close()
        game = Game(secrets.token_urlsafe(9), position, players, agents, names, limit, headers)
        self.games[game.id] = game
        return game

    def close(self) -> None:
        """End every game (engine processes stop)."""
        for game in self.games.values():
            game.close()
        self.games.clear()

    # -- handlers ------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return FileResponse(os.path.join(STATIC, "index.html"))

    async def options(self, request: Request) -> Response:
        saved = []
        for name, path in self.saved().items():
            try:
                variant = read_manifest(path)["settings"].get("variant")
            except ValueError:
                continue  # a broken directory is not offered
            saved.append({"name": name, "variants": None if variant is None else [get_variant(variant).name]})
        variants = [{"name": v.name, "width": v.width, "height": v.height, "start_fen": v.start_fen}
                    for v in VARIANTS.values()]
        return JSONResponse({"variants": variants, "agents": self.builtin() + saved, "human": HUMAN})

    async def new_game(self, request: Request) -> Response:
        data = await _json(request)
        try:
            v = get_variant(_field(data, "variant", "gardner"))
            position = Position(v, _field(data, "fen", None, optional=True))
        except (ValueError, TypeError) as exc:  # unknown variant, bad FEN
            raise HTTPException(422, str(exc)) from None
        players = (_field(data, "white", HUMAN), _field(data, "black", HUMAN))
        agents = await run_in_threadpool(self.make_agents, players, v)
        game = self.add(position, players, agents)
        return JSONResponse(game.state(), status_code=201)

    async def load_pgn(self, request: Request) -> Response:
        data = await _json(request)
        stats = PgnStats()
        loaded = next(read_pgn(io.StringIO(_field(data, "pgn", None)), stats=stats), None)  # the first good game
        if loaded is None:
            raise HTTPException(422, f"cannot read this PGN: {stats}")
        names = (loaded.headers.get("White", "?"), loaded.headers.get("Black", "?"))
        keep = {k: val for k, val in loaded.headers.items() if k in ("Event", "Site", "Date", "Round")}
        game = self.add(loaded.position(), (HUMAN, HUMAN), [None, None], keep, names)
        state = game.state()
        if loaded.headers.get("Result", "*") != "*" and not state["over"]:
            state["pgn_result"] = loaded.headers["Result"]  # e.g. a resignation: shown, the game stays playable
        return JSONResponse(state, status_code=201)

    async def get_game(self, request: Request) -> Response:
        return JSONResponse(self.game(request).state())

    async def move(self, request: Request) -> Response:
        game = self.game(request)
        data = await _json(request)
        text = _field(data, "move", None)
        self._check_turn(game, human=True)
        try:
            move = parse_san(game.position, text)  # SAN or UCI
        except ValueError as exc:  # illegal, ambiguous or not a move
            raise HTTPException(422, str(exc)) from None
        game.push(move)
        return JSONResponse(game.state())

    async def agent_move(self, request: Request) -> Response:
        game = self.game(request)
        self._check_turn(game, human=False)
        game.busy = True
        try:
            move = await run_in_threadpool(game.choose, game.position.copy())
        except Exception as exc:  # a crashed engine or checkpoint: say so, keep the game
            raise HTTPException(502, f"{game.names[game.position.turn]} failed to move: "
                                f"{type(exc).__name__}: {exc}") from None
        finally:
            game.busy = False
        game.push(move)
        return JSONResponse(game.state())

    def _check_turn(self, game: Game, human: bool) -> None:
        if game.busy:
            raise HTTPException(409, "an agent is thinking about its move in this game")
        result, termination = game.status()
        if termination:
            raise HTTPException(409, f"the game is over ({result}, {termination})")
        mover = game.players[game.position.turn]
        if human and mover != HUMAN:
            raise HTTPException(409, f"it is {mover}'s move ({COLOR_NAMES[game.position.turn]}), not a person's")
        if not human and mover == HUMAN:
            raise HTTPException(409, f"it is the person's move ({COLOR_NAMES[game.position.turn]})")

    async def undo(self, request: Request) -> Response:
        game = self.game(request)
        await _json(request)
        if game.busy:
            raise HTTPException(409, "an agent is thinking about its move in this game")
        if game.position.ply == 0:
            raise HTTPException(409, "nothing to undo: no move has been played")
        game.resigned = None
        game.pop()
        if HUMAN in game.players:  # back to a person's turn
            while game.position.ply and game.players[game.position.turn] != HUMAN:
                game.pop()
        return JSONResponse(game.state())

    async def resign(self, request: Request) -> Response:
        game = self.game(request)
        await _json(request)
        if game.busy:
            raise HTTPException(409, "an agent is thinking about its move in this game")
        if game.status()[1]:
            raise HTTPException(409, "the game is already over")
        humans = [c for c, p in enumerate(game.players) if p == HUMAN]
        if not humans:
            raise HTTPException(409, "agents do not resign")
        game.resigned = game.position.turn if len(humans) == 2 else humans[0]
        return JSONResponse(game.state())

    async def pgn(self, request: Request) -> Response:
        game = self.game(request)
        v = game.position.variant.name
        return Response(game.pgn(), media_type="application/x-chess-pgn",
                        headers={"Content-Disposition": f'attachment; filename="minichess-{v}-{game.id}.pgn"'})

    async def analysis(self, request: Request) -> Response:
        game = self.game(request)
        ply = request.query_params.get("ply")
        if ply is None:
            ply = game.position.ply
        elif not ply.isdigit() or int(ply) > game.position.ply:
            raise HTTPException(422, f"ply must be a number from 0 to {game.position.ply}, not {ply!r}")
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

            view = await run_in_threadpool(search)
            view["agent"] = getattr(agent, "name", name)
            for entry in view["moves"]:
                entry["san"] = san(position, entry["move"])
            out["search"] = view
        return JSONResponse(out)

    def verdicts(self, position: Position) -> dict | None:
        tb = self.tablebase
        try:
            value, dtm = tb.probe(position)
        except ValueError:  # a position outside the table (other armies)
            return None
        moves = [{"uci": m.move.uci(), "san": san(position, m.move), "value": m.value, "dtm": m.dtm,
                  "verdict": _verdict(m.value, m.dtm)} for m in tb.move_values(position)]
        moves.sort(key=lambda m: (-m["value"], m["dtm"] if m["value"] > 0 else -(m["dtm"] or 0)))
        return {"value": value, "dtm": dtm, "verdict": _verdict(value, dtm), "moves": moves}


def _verdict(value: int, dtm: int | None) -> str:
    if value == 0:
        return "draw"
    moves = (dtm + 1) // 2
    return f"wins, mate in {moves}" if value > 0 else f"loses, mated in {moves}"


async def _json(request: Request) -> dict:
    """The request's JSON object; 415 if not sent as JSON, 400 if malformed, 413 if too big."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise HTTPException(415, "send the request body as application/json")
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise HTTPException(413, f"request body over {MAX_BODY} bytes")
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPException(400, f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HTTPException(400, f"expected a JSON object, got {type(data).__name__}")
    return data


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


def create_app(runs_dir: str | None = "runs", agent_paths: list[str] = (), **options) -> Starlette:
    """The ASGI app (see :class:`PlayServer` for the options)."""
    return PlayServer(runs_dir, agent_paths, **options).app


def serve(args) -> int:
    """``minichess serve`` (``args`` from :func:`minichess_envs.cli.main`)."""
    import uvicorn

    loopback = args.host in LOOPBACK
    # Answer only requests addressed to this host (DNS rebinding); all interfaces accept any name.
    hosts = list(LOOPBACK) if loopback else None if args.host in ("0.0.0.0", "::") else [args.host]
    server = PlayServer(args.runs, args.agent, ply_limit=args.ply_limit, allowed_hosts=hosts)
    if not loopback:
        print(f"warning: listening on {args.host}: anyone who can reach this machine can use the app")
    saved = server.saved()
    print(f"minichess: {len(saved)} saved agent(s) on offer" + (f" ({', '.join(saved)})" if saved else ""))
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"minichess: open http://{shown}:{args.port}/ in a browser (Ctrl+C stops)", flush=True)
    uvicorn.run(server.app, host=args.host, port=args.port, log_level="warning")
    return 0

