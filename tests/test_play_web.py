"""`minichess serve`'s HTTP API through Starlette's test client: games, bad requests, agents, PGN, parallel games."""

from __future__ import annotations

import concurrent.futures
import importlib.util
import io
import json
import random
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="the web app needs the [play] extra: pip install 'minichess-envs[play]'")
from starlette.testclient import TestClient  # noqa: E402

from agents import MinimaxAgent, RandomAgent  # noqa: E402
from agents.play.web import PlayServer  # noqa: E402
from minichess_envs import Position  # noqa: E402
from minichess_envs.engine import WHITE  # noqa: E402
from minichess_envs.pgn import PgnStats, read_pgn, san  # noqa: E402


def read_game(text: str):
    """The one game in PGN ``text``, read by our reader (which skips games it cannot read)."""
    stats = PgnStats()
    games = list(read_pgn(io.StringIO(text), stats=stats))
    assert len(games) == 1, str(stats)
    return games[0]


def client(runs=None, **options) -> TestClient:
    return TestClient(PlayServer(runs, **options).app)


def new_game(c: TestClient, variant="gardner", white="human", black="random", **extra) -> dict:
    r = c.post("/api/games", json={"variant": variant, "white": white, "black": black, **extra})
    assert r.status_code == 201, r.text
    return r.json()


def replay(state: dict) -> Position:
    """The game's moves replayed by the engine: each must be legal."""
    pos = Position(state["variant"]["name"], state["start_fen"])
    for entry in state["history"]:
        pos.push_uci(entry["uci"])
        assert pos.fen() == entry["fen"]
    return pos


def test_new_game_and_legal_moves():
    c = client()
    options = c.get("/api/options").json()
    assert {v["name"] for v in options["variants"]} >= {"3x3", "gardner", "chess"}
    assert {"random", "greedy", "minimax:2", "perfect"} <= {a["name"] for a in options["agents"]}
    for variant in ("3x3", "gardner", "losalamos", "chess"):
        state = new_game(c, variant)
        start = Position(variant)
        assert state["fen"] == start.fen() and state["ply"] == 0 and state["to_move"] == "human"
        assert sorted(m["uci"] for m in state["legal"]) == sorted(m.uci() for m in start.legal_moves)
        assert c.get(f"/api/games/{state['id']}").json() == state


def test_moves_agent_replies_undo_resign_and_pgn():
    c = client()
    state = new_game(c, "chess", black="minimax:1")
    gid = state["id"]
    state = c.post(f"/api/games/{gid}/move", json={"move": "e4"}).json()  # SAN
    assert state["history"][0]["uci"] == "e2e4" and state["to_move"] == "minimax:1"
    state = c.post(f"/api/games/{gid}/agent", json={}).json()
    assert state["ply"] == 2 and state["to_move"] == "human"
    replay(state)
    state = c.post(f"/api/games/{gid}/move", json={"move": "g1f3"}).json()  # UCI
    state = c.post(f"/api/games/{gid}/agent", json={}).json()
    assert c.post(f"/api/games/{gid}/undo", json={}).json()["ply"] == 2  # the reply and the person's move
    pgn = c.get(f"/api/games/{gid}/pgn")
    assert pgn.headers["content-disposition"].startswith("attachment;")
    game = read_game(pgn.text)
    assert [m.uci() for m in game.position().move_stack] == [e["uci"] for e in state["history"][:2]]
    assert game.headers["White"] == "human" and game.headers["Black"] == "minimax-d1"
    resigned = c.post(f"/api/games/{gid}/resign", json={}).json()
    assert resigned["over"] and resigned["result"] == "0-1" and resigned["termination"] == "resignation"
    assert c.post(f"/api/games/{gid}/move", json={"move": "d4"}).status_code == 409
    assert '[Termination "normal"]' in c.get(f"/api/games/{gid}/pgn").text


def test_bad_requests_get_4xx_and_leave_the_game_alone(tmp_path):
    c = client()
    gid = new_game(c, "gardner", black="greedy")["id"]
    before = c.get(f"/api/games/{gid}").json()
    bad = [
        (c.post(f"/api/games/{gid}/move", json={"move": "a2a4"}), 422, "illegal move 'a2a4'"),
        (c.post(f"/api/games/{gid}/move", json={"move": "Qd4"}), 422, "illegal move 'Qd4'"),
        (c.post(f"/api/games/{gid}/move", json={"move": "zz"}), 422, "not SAN or UCI"),
        (c.post(f"/api/games/{gid}/move", json={"move": 12}), 422, "must be a string"),
        (c.post(f"/api/games/{gid}/move", json={}), 422, "missing field 'move'"),
        (c.post(f"/api/games/{gid}/move", content=b"{not json", headers={"content-type": "application/json"}),
         400, "malformed JSON"),
        (c.post(f"/api/games/{gid}/move", json=["a3"]), 400, "expected a JSON object"),
        (c.post(f"/api/games/{gid}/move", content=b'{"move": "a3"}', headers={"content-type": "text/plain"}),
         415, "application/json"),
        (c.post(f"/api/games/{gid}/agent", json={}), 409, "the person's move"),
        (c.post(f"/api/games/{gid}/undo", json={}), 409, "nothing to undo"),
        (c.get(f"/api/games/{gid}/analysis?ply=5"), 422, "ply must be"),
        (c.post("/api/games/no-such-game/move", json={"move": "a3"}), 404, "no game 'no-such-game'"),
        (c.post("/api/games", json={"variant": "nope"}), 422, "unknown variant"),
        (c.post("/api/games", json={"variant": "gardner", "fen": "8/8 w"}), 422, "FEN"),
        (c.post("/api/games", json={"white": "minimax:9"}), 422, "more than this server allows"),
        (c.post("/api/games", json={"white": "perfect"}), 422, "3x3 only"),
        (c.post("/api/games", json={"white": "alphago"}), 422, "unknown agent 'alphago'"),
        (c.post("/api/pgn", json={"pgn": "1. e4 e5 2. Ke3"}), 422,
         "cannot read this PGN: 0 games read; skipped 1 illegal move"),
    ]
    for response, status, message in bad:
        assert response.status_code == status and message in response.json()["error"], response.text
    assert c.get(f"/api/games/{gid}").json() == before


def test_the_browser_cannot_name_a_path(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    MinimaxAgent(1).save(str(outside))
    runs = tmp_path / "runs"
    MinimaxAgent(2, name="mm2").save(str(runs / "mm" / "agent"))
    c = client(str(runs))
    names = {a["name"] for a in c.get("/api/options").json()["agents"]}
    assert "mm/agent" in names and str(outside) not in names
    loaded = []
    import agents.spec

    real_load = agents.spec.load
    monkeypatch.setattr(agents.spec, "load", lambda path: loaded.append(path) or real_load(path))
    for name in (str(outside), "../outside", str(runs / "mm" / "agent"), "runs/../outside"):
        r = c.post("/api/games", json={"white": name})
        assert r.status_code == 422 and "unknown agent" in r.json()["error"], r.text
    assert loaded == []  # nothing was even opened
    state = new_game(c, "gardner", white="mm/agent", black="human")
    assert state["names"]["white"] == "mm2" and loaded == [str(runs / "mm" / "agent")]
    state = c.post(f"/api/games/{state['id']}/agent", json={}).json()
    assert state["ply"] == 1


def test_agents_named_on_the_command_line_are_offered(tmp_path):
    path = tmp_path / "my-agent"
    MinimaxAgent(1, name="mine").save(str(path))
    c = client(None, agent_paths=[str(path)])
    assert str(path) in {a["name"] for a in c.get("/api/options").json()["agents"]}
    assert new_game(c, white=str(path))["names"]["white"] == "mine"
    with pytest.raises(ValueError, match="no saved agent"):
        PlayServer(None, [str(tmp_path / "missing")])


def test_pgn_upload_replays_the_game():
    c = client()
    pos = Position("gardner")
    rng = random.Random(1)
    while pos.ply < 12 and not pos.is_game_over():
        pos.push(rng.choice(pos.legal_moves))
    from minichess_envs.pgn import game_pgn

    text = game_pgn(pos, {"White": "alpha", "Black": "beta", "Event": "arena"})
    state = c.post("/api/pgn", json={"pgn": text}).json()
    assert [e["uci"] for e in state["history"]] == [m.uci() for m in pos.move_stack]
    assert state["names"] == {"white": "alpha", "black": "beta"} and state["to_move"] == "human"
    assert replay(state).fen() == pos.fen()
    assert '[Event "arena"]' in c.get(f"/api/games/{state['id']}/pgn").text


def test_ply_limit_and_watch_mode():
    c = client(ply_limit=6)
    state = new_game(c, "gardner", white="random", black="greedy")
    while not state["over"]:
        r = c.post(f"/api/games/{state['id']}/agent", json={})
        assert r.status_code == 200, r.text
        state = r.json()
    assert state["ply"] <= 6 and state["legal"] == []
    if state["ply"] == 6:
        assert state["termination"] == "ply limit" and state["result"] == "1/2-1/2"
    replay(state)
    assert c.post(f"/api/games/{state['id']}/resign", json={}).status_code == 409


def test_tablebase_verdicts_on_3x3():
    from minichess_envs.tablebase import Tablebase

    c = client()
    state = new_game(c, "3x3", black="perfect")
    data = c.get(f"/api/games/{state['id']}/analysis").json()
    tb = Tablebase.load("3x3")
    start = Position("3x3")
    assert data["tablebase"]["value"] == tb.probe(start)[0] == 0
    verdicts = {m["uci"]: m for m in data["tablebase"]["moves"]}
    assert set(verdicts) == {m.uci() for m in start.legal_moves}
    for move in start.legal_moves:  # each verdict is the negated value of the position after the move
        after = start.copy()
        after.push(move)
        value, dtm = tb.probe(after)
        n = None if dtm is None else (dtm + 2) // 2  # moves, counted from before this move
        expected = "draw" if value == 0 else f"loses, mated in {n}" if value > 0 else f"wins, mate in {n}"
        assert (verdicts[move.uci()]["value"], verdicts[move.uci()]["verdict"]) == (-value, expected)
    assert data["search"] is None


def test_alphazero_search_view(tmp_path):
    torch = pytest.importorskip("torch")
    from agents.alphazero.agent import AlphaZeroAgent
    from agents.alphazero.network import NetConfig, PolicyValueNet
    from minichess_envs.encoding import ObservationEncoding

    torch.manual_seed(0)
    encoding = ObservationEncoding("3x3", history=1, last_move=False)  # the agent's default encoding
    net = PolicyValueNet(NetConfig(3, 3, encoding.shape[-1], encoding.variant.num_actions, blocks=1, channels=8,
                                   policy_channels=4, value_hidden=8))
    AlphaZeroAgent(net, "3x3", simulations=24, name="tiny-az").save(str(tmp_path / "runs" / "az"))
    c = client(str(tmp_path / "runs"))
    options = {a["name"]: a for a in c.get("/api/options").json()["agents"]}
    assert options["az"]["variants"] == ["3x3"]
    assert c.post("/api/games", json={"variant": "gardner", "white": "az"}).status_code == 422  # a 3x3 agent
    state = new_game(c, "3x3", white="human", black="az")
    data = c.get(f"/api/games/{state['id']}/analysis").json()
    search = data["search"]
    assert search["agent"] == "tiny-az" and search["simulations"] == 24 and -1 <= search["value"] <= 1
    legal = {m.uci() for m in Position("3x3").legal_moves}
    assert {m["move"] for m in search["moves"]} <= legal and len(search["moves"]) == 5
    shares = [m["visits"] for m in search["moves"]]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1.0 + 1e-6
    assert all(-1 <= m["q"] <= 1 for m in search["moves"])
    direct = AlphaZeroAgent.load(str(tmp_path / "runs" / "az")).analyse(Position("3x3"))
    assert [m["move"] for m in direct["moves"]] == [m["move"] for m in search["moves"]]  # the search is deterministic
    # asked by name, for a game it does not play in
    other = new_game(c, "3x3", white="human", black="random")
    assert c.get(f"/api/games/{other['id']}/analysis").json()["search"] is None
    named = c.get(f"/api/games/{other['id']}/analysis?agent=az").json()["search"]
    assert named["agent"] == "tiny-az"
    assert c.get(f"/api/games/{other['id']}/analysis?agent=/etc/passwd").status_code == 404


class SlowAgent(RandomAgent):
    name = "slow"

    def act(self, observation, action_mask, position=None):
        time.sleep(1.5)
        return super().act(observation, action_mask, position)


def test_a_slow_agent_does_not_block_other_games():
    server = PlayServer(None, extra_agents={"slow": lambda variant: SlowAgent(0)})
    with TestClient(server.app) as c, concurrent.futures.ThreadPoolExecutor(4) as pool:
        slow = new_game(c, "gardner", white="slow", black="human")
        fast = new_game(c, "gardner", white="random", black="human")
        started = time.monotonic()
        slow_move = pool.submit(c.post, f"/api/games/{slow['id']}/agent", json={})
        time.sleep(0.3)
        assert c.get(f"/api/games/{slow['id']}").json()["busy"] is True
        r = c.post(f"/api/games/{slow['id']}/undo", json={})
        assert r.status_code == 409 and "thinking" in r.json()["error"]
        assert c.post(f"/api/games/{slow['id']}/agent", json={}).status_code == 409
        fast_state = c.post(f"/api/games/{fast['id']}/agent", json={}).json()
        fast_done = time.monotonic() - started
        slow_state = slow_move.result().json()
        slow_done = time.monotonic() - started
    assert fast_state["ply"] == 1 and slow_state["ply"] == 1 and not slow_state["busy"]
    assert fast_done < 1.2 < slow_done, (fast_done, slow_done)


def test_many_games_in_parallel():
    server = PlayServer(None)
    games = 16

    def play(c: TestClient, seed: int) -> tuple[dict, str]:
        rng = np.random.default_rng(seed)
        state = new_game(c, ("3x3", "gardner", "silverman", "chess")[seed % 4], black=("random", "minimax:1")[seed % 2])
        while not state["over"] and state["ply"] < 40:
            if state["to_move"] == "human":
                move = state["legal"][rng.integers(len(state["legal"]))]["uci"]
                r = c.post(f"/api/games/{state['id']}/move", json={"move": move})
            else:
                r = c.post(f"/api/games/{state['id']}/agent", json={})
            assert r.status_code == 200, r.text
            state = r.json()
        return state, c.get(f"/api/games/{state['id']}/pgn").text

    threads_seen = set()
    with TestClient(server.app) as c, concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda s: (threads_seen.add(threading.get_ident()), play(c, s))[1], range(games)))
        assert len(server.games) == games and len(threads_seen) > 1
    assert server.games == {}  # closed with the app
    ids = {state["id"] for state, _ in results}
    assert len(ids) == games
    for state, pgn in results:
        pos = replay(state)
        assert [m.uci() for m in read_game(pgn).position().move_stack] == [m.uci() for m in pos.move_stack]


def test_old_games_are_dropped_beyond_the_limit():
    c = client(max_games=3)
    first = new_game(c)["id"]
    for _ in range(3):
        new_game(c)
    r = c.get(f"/api/games/{first}")
    assert r.status_code == 404 and "no game" in r.json()["error"]


def test_host_check_and_static_files():
    c = TestClient(PlayServer(None, allowed_hosts=["127.0.0.1", "localhost"]).app, base_url="http://127.0.0.1")
    page = c.get("/")
    assert page.status_code == 200 and '<script src="/static/app.js">' in page.text
    for name in ("app.js", "style.css"):
        assert c.get(f"/static/{name}").status_code == 200
    assert c.get("/static/../web.py").status_code == 404
    assert c.get("/", headers={"host": "evil.example"}).status_code == 400  # DNS rebinding


def test_serve_without_the_extra_says_what_to_install(monkeypatch, capsys):
    import sys

    from minichess_envs.cli import main

    monkeypatch.setitem(sys.modules, "agents.play.web", None)
    assert main(["serve"]) == 2
    assert "pip install 'minichess-envs[play]'" in capsys.readouterr().err


# -- what strangers can send (issue 34) ---------------------------------------------------------------------------


class EndlessAgent(RandomAgent):
    """Searches for ever in Python, swallowing every Exception on the way (as careless agent code might)."""

    name = "endless"

    def act(self, observation, action_mask, position=None):
        while True:
            try:
                self.think()
            except Exception:
                pass

    def think(self):
        return sum(range(100))


@pytest.mark.parametrize("spec", ["MINIMAX:9", " minimax:9", "Minimax:12", "Fairy-Stockfish:2000000000",
                                  "minimax:" + "9" * 5000, "minimax:²"])
def test_search_limits_hold_whatever_the_spelling(spec):
    c = client()
    r = c.post("/api/games", json={"variant": "chess", "white": "human", "black": spec})
    assert r.status_code == 422 and ("more than this server allows" in r.json()["error"]
                                     or "positive integer" in r.json()["error"]), r.text
    assert len(r.text) < 300


def test_specs_are_normalised_before_they_name_a_player():
    state = new_game(client(), "gardner", white=" Human ", black=" MINIMAX:2 ")
    assert state["players"] == {"white": "human", "black": "minimax:2"} and state["to_move"] == "human"


def test_an_agent_move_stops_at_the_time_limit_and_the_game_goes_on():
    server = PlayServer(None, move_seconds=0.5, extra_agents={"endless": lambda variant: EndlessAgent(0)})
    with TestClient(server.app) as c:
        state = new_game(c, "gardner", white="human", black="endless")
        gid = state["id"]
        c.post(f"/api/games/{gid}/move", json={"move": "b3"})
        started = time.monotonic()
        r = c.post(f"/api/games/{gid}/agent", json={})
        assert r.status_code == 503 and "took more than 0.5 s" in r.json()["error"], r.text
        assert time.monotonic() - started < 3
        after = c.get(f"/api/games/{gid}").json()
        assert after["ply"] == 1 and not after["busy"]  # unchanged, and not stuck "busy"
        assert c.post(f"/api/games/{gid}/undo", json={}).json()["ply"] == 0
        assert c.post(f"/api/games/{gid}/resign", json={}).json()["termination"] == "resignation"


def endless_move(c, pool):
    """A new game whose endless agent is thinking: (its id, the future of the agent-move request)."""
    gid = new_game(c, "gardner", white="endless", black="human")["id"]
    move = pool.submit(c.post, f"/api/games/{gid}/agent", json={})
    time.sleep(0.3)
    return gid, move


def test_deleting_a_game_stops_its_agent():
    server = PlayServer(None, move_seconds=60, extra_agents={"endless": lambda variant: EndlessAgent(0)})
    with TestClient(server.app) as c, concurrent.futures.ThreadPoolExecutor(1) as pool:
        gid, move = endless_move(c, pool)
        assert c.get(f"/api/games/{gid}").json()["busy"]
        started = time.monotonic()
        assert c.delete(f"/api/games/{gid}").json() == {"deleted": gid}
        r = move.result(timeout=5)
        assert r.status_code == 410 and "deleted" in r.json()["error"], r.text
        assert time.monotonic() - started < 2
        assert c.get(f"/api/games/{gid}").status_code == 404
        assert c.delete(f"/api/games/{gid}").status_code == 404


def test_the_server_stopping_stops_an_agent():
    server = PlayServer(None, move_seconds=60, extra_agents={"endless": lambda variant: EndlessAgent(0)})
    with TestClient(server.app) as c, concurrent.futures.ThreadPoolExecutor(1) as pool:
        _, move = endless_move(c, pool)
        server.stop_all()  # what SIGTERM does (see serve)
        r = move.result(timeout=5)
        assert r.status_code == 503 and "server is stopping" in r.json()["error"], r.text


def bad_games_pgn(chars: int) -> str:
    """Whole PGN games, at most ``chars`` characters: long chess games each illegal at its last move (all read, all
    skipped: the most work per byte for the reader)."""
    block = bad_games_block(seed=0)
    return block * max(1, chars // len(block))


def bad_games_block(seed: int) -> str:
    """Four long random chess games in PGN, each with an illegal last move."""
    rng = random.Random(seed)
    games = []
    for _ in range(4):
        pos = Position("chess")
        words = []
        while pos.ply < 150 and not pos.is_game_over():
            move = rng.choice(pos.legal_moves)
            words += [f"{pos.fullmove_number}."] if pos.turn == WHITE else []
            words.append(san(pos, move))
            pos.push(move)
        games.append('[Variant "chess"]\n\n' + " ".join(words + ["Ke9", "*"]) + "\n\n")
    return "".join(games)


def test_a_pgn_upload_is_read_off_the_event_loop():
    server = PlayServer(None, pgn_seconds=3)
    text = bad_games_pgn(400_000)
    with TestClient(server.app) as c, concurrent.futures.ThreadPoolExecutor(1) as pool:
        upload = pool.submit(c.post, "/api/pgn", json={"pgn": text})
        waits = []
        while not upload.done():
            started = time.monotonic()
            assert c.get("/api/options").status_code == 200
            waits.append(time.monotonic() - started)
            time.sleep(0.05)
        r = upload.result()
    # all games skipped, or (on a slow machine) stopped at the limit: either way a 422 that says why
    assert r.status_code == 422 and ("illegal move" in r.json()["error"] or "took more than 3 s" in r.json()["error"])
    assert len(waits) >= 5 and max(waits) < 0.5, (len(waits), max(waits))


def test_json_nested_too_deep_and_bad_plies_are_4xx():
    c = client()
    gid = new_game(c, "gardner")["id"]
    deep = b'{"move": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    r = c.post(f"/api/games/{gid}/move", content=deep, headers={"content-type": "application/json"})
    assert r.status_code == 400 and "nested too deeply" in r.json()["error"]
    for ply in ("²", "٣", "9" * 5000, "-1", "1e3", ""):
        r = c.get(f"/api/games/{gid}/analysis", params={"ply": ply})
        assert r.status_code == 422 and "ply must be a number from 0 to 0" in r.json()["error"], (ply[:10], r.text)
        assert len(r.text) < 300


def test_bodies_over_the_limit_are_refused_before_they_are_read():
    from agents.play.web import MAX_BODY

    c = client()  # (the test client reads all of a body first: test_play_server.py checks over real sockets)

    def body():  # chunked: no Content-Length
        for _ in range(64):
            yield b" " * (1 << 20)

    r = c.post("/api/pgn", content=body(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and f"over {MAX_BODY} bytes" in r.json()["error"]
    r = c.post("/api/pgn", content=b"{}", headers={"content-type": "application/json",
                                                   "content-length": str(64 << 20)})
    assert r.status_code == 413
    r = c.post("/api/pgn", content=b"{}", headers={"content-type": "application/json", "content-length": "1e9"})
    assert r.status_code == 400
    largest = b'{"pgn": "' + b" " * (MAX_BODY - 20) + b'1. e4 *"}'
    assert len(largest) <= MAX_BODY
    assert c.post("/api/pgn", content=largest, headers={"content-type": "application/json"}).status_code == 201


@pytest.mark.parametrize("host, status", [("127.0.0.1:8000", 200), ("localhost", 200), ("[::1]:8000", 200),
                                          ("[::1]", 200), ("LOCALHOST:1", 200), ("[::1", 400), ("evil.example", 400),
                                          ("127.0.0.1.evil.example", 400), ("[::2]:80", 400), ("", 400)])
def test_the_host_check_reads_ipv6_literals(host, status):
    from agents.play.web import LOOPBACK

    c = TestClient(PlayServer(None, allowed_hosts=list(LOOPBACK)).app)
    assert c.get("/api/options", headers={"host": host}).status_code == status


PGN_PIECES = ['[Event "x"]', '[Variant "gardner"]', '[Variant "chess"]', '[Variant "nope"]', '[FEN "8/8 w"]',
              '[SetUp "1"]', '[FEN "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"]', "1.", "1...", "e4", "b3", "a3", "Nc3",
              "O-O", "exd5", "c5=Q", "a2a3", "{", "}", "(", ")", ";", "$1", "*", "1-0", "0-1", "1/2-1/2", "\n", "\n\n",
              " ", '"', "\\", "[", "]", "\x00", "\ufffd", "Ke9", "99999999999999999999."]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.lists(st.sampled_from(PGN_PIECES), max_size=60).map(" ".join), st.text(max_size=300)))
def test_pgn_upload_fuzz_gets_only_documented_answers(text):
    c = TestClient(PlayServer(None, max_games=2).app)  # raises on any server error (a 500)
    r = c.post("/api/pgn", json={"pgn": text})
    assert r.status_code in (201, 422), r.text
    if r.status_code == 201:
        replay(r.json())
    else:
        assert r.json()["error"].startswith("cannot read this PGN")


# -- board games (agents.games): Tic-Tac-Toe, Connect Four, Gomoku, checkers -------------------------------------

def board_game(c: TestClient, name: str, first="human", second="random") -> dict:
    r = c.post("/api/games", json={"variant": name, "first": first, "second": second})
    assert r.status_code == 201, r.text
    state = r.json()
    assert state["kind"] == "board" and state["game"]["name"] == name
    return state


def check_board_state(state: dict) -> None:
    """The state agrees with the game replayed from its actions: cells, legal moves, turn and result."""
    from agents.games import new_game as new_board_game

    game = new_board_game(state["game"]["name"])
    assert state["start_cells"] == game.cells()
    for entry in state["history"]:
        assert entry["player"] == game.to_play() and entry["name"] == game.action_name(entry["action"])
        game.step(entry["action"])  # legal, or ValueError
        assert entry["cells"] == game.cells()
    assert state["cells"] == game.cells() and state["ply"] == len(state["history"])
    if state["termination"] != "resignation":
        assert state["over"] == game.is_over()
        assert state["winner"] == (game.winner() if game.is_over() else None)
    if not state["over"]:
        assert state["to_play"] == game.to_play() and state["turn"] == ("first", "second")[game.to_play()]
        assert [m["action"] for m in state["legal"]] == game.legal_actions()
        for m in state["legal"]:
            start, end = game.action_cells(m["action"])
            assert m["name"] == game.action_name(m["action"]) and m["to"] == list(end)
            assert m["from"] == (None if start is None else list(start))


def test_options_list_the_board_games_and_who_plays_them(tmp_path):
    from agents.games import BOARD_GAMES

    runs = tmp_path / "runs"
    RandomAgent(0).save(str(runs / "c4"))  # a saved agent that says it plays Connect Four
    manifest = runs / "c4" / "agent.json"
    data = json.loads(manifest.read_text())
    data["settings"]["game"] = "connect_four"
    manifest.write_text(json.dumps(data))
    options = client(str(runs)).get("/api/options").json()
    games = {g["name"]: g for g in options["games"]}
    assert list(games) == list(BOARD_GAMES)
    assert (games["tictactoe"]["rows"], games["tictactoe"]["columns"]) == (3, 3)
    c4 = games["connect_four"]
    assert (c4["rows"], c4["columns"], c4["drop"], c4["sides"]) == (6, 7, True, ["X", "O"])
    assert (games["gomoku"]["rows"], games["gomoku"]["columns"]) == (9, 9)
    assert games["checkers"]["checkered"] and not games["tictactoe"]["checkered"]
    assert games["checkers"]["labels"][0][1] == "1" and games["checkers"]["cells"][0][1] == "b"
    agents = {a["name"]: a for a in options["agents"]}
    assert agents["random"]["games"] == list(BOARD_GAMES) and agents["random"]["variants"] is None
    assert agents["minimax:2"]["games"] == [] and agents["greedy"]["games"] == []
    assert {"connect_four", "checkers", "gomoku"} <= set(agents["alpha-beta:4"]["games"])
    assert "tictactoe" not in agents["alpha-beta:1"]["games"] and agents["alpha-beta:1"]["variants"] == []
    assert "alpha-beta:5" not in agents  # over SERVER_LIMITS
    assert agents["perfect"]["variants"] == ["3x3"] and {"tictactoe", "gomoku4k4"} <= set(agents["perfect"]["games"])
    assert "checkers" not in agents["perfect"]["games"] and "gomoku" not in agents["perfect"]["games"]
    if importlib.util.find_spec("pyspiel"):
        assert set(agents["openspiel-mcts:100"]["games"]) == {"checkers", "gomoku", "gomoku15", "gomoku4k4"}
    assert agents["c4"] == {"name": "c4", "variants": [], "games": ["connect_four"]}


def test_tictactoe_against_perfect_is_never_lost_by_the_agent():
    c = client()
    for seed in range(4):
        rng = random.Random(seed)
        first, second = ("human", "perfect") if seed % 2 == 0 else ("perfect", "human")
        state = board_game(c, "tictactoe", first, second)
        agent = 1 if first == "human" else 0
        while not state["over"]:
            if state["to_move"] == "human":
                move = rng.choice(state["legal"])
                body = {"action": move["action"]} if seed < 2 else {"move": move["name"].upper()}
                r = c.post(f"/api/games/{state['id']}/move", json=body)
            else:
                r = c.post(f"/api/games/{state['id']}/agent", json={})
            assert r.status_code == 200, r.text
            state = r.json()
        check_board_state(state)
        assert state["winner"] in (agent, None) and state["termination"] in ("win", "draw")
        assert state["result"] == {None: "1/2-1/2", 0: "1-0", 1: "0-1"}[state["winner"]] and state["legal"] == []
        r = c.post(f"/api/games/{state['id']}/move", json={"move": "a1"})
        assert r.status_code == 409 and "the game is over" in r.json()["error"]


def test_connect_four_by_action_names_against_random():
    c = client()
    rng = random.Random(3)
    state = board_game(c, "connect_four", "human", "random")
    assert state["names"] == {"first": "human", "second": "random"} and state["game"]["drop"]
    while not state["over"]:
        if state["to_move"] == "human":
            move = rng.choice(state["legal"])
            assert move["name"] in "abcdefg" and move["from"] is None
            r = c.post(f"/api/games/{state['id']}/move", json={"move": move["name"]})
            assert r.json()["history"][-1]["to"] == move["to"]  # the landing cell of the column
        else:
            r = c.post(f"/api/games/{state['id']}/agent", json={})
        assert r.status_code == 200, r.text
        state = r.json()
        check_board_state(state)
    assert state["result"] in ("1-0", "0-1", "1/2-1/2")
    # undo: the agent's last reply and the person's move, back to the person's turn
    ply = state["ply"]
    undone = c.post(f"/api/games/{state['id']}/undo", json={}).json()
    assert not undone["over"] and undone["to_move"] == "human" and undone["ply"] in (ply - 1, ply - 2)
    check_board_state(undone)


def test_a_checkers_multi_jump_keeps_the_turn_and_is_undone_whole():
    c = client()
    for seed in range(50):  # random play until the person's jump goes on (seed 1 finds one at ply 11)
        rng = random.Random(seed)
        state = board_game(c, "checkers", "human", "random")
        gid = state["id"]
        while not state["over"]:
            if state["to_move"] != "human":
                state = c.post(f"/api/games/{gid}/agent", json={}).json()
                continue
            before = state
            move = rng.choice(state["legal"])
            state = c.post(f"/api/games/{gid}/move", json={"move": move["name"]}).json()
            if "x" in move["name"] and state["to_play"] == 0 and not state["over"]:
                break
        if not state["over"]:
            break
    else:
        pytest.fail("no multi-jump in 50 random games")
    check_board_state(state)
    landing = move["to"]
    assert state["to_move"] == "human" and state["ply"] == before["ply"] + 1
    assert state["legal"] and all(m["from"] == landing and "x" in m["name"] for m in state["legal"])
    r = c.post(f"/api/games/{gid}/agent", json={})
    assert r.status_code == 409 and "the person's move (first)" in r.json()["error"]
    r = c.post(f"/api/games/{gid}/move", json={"move": before["legal"][0]["name"]})  # another piece: not now
    assert r.status_code == 422 and "illegal move" in r.json()["error"]
    while state["to_move"] == "human" and not state["over"]:  # the rest of the jump
        state = c.post(f"/api/games/{gid}/move", json={"action": state["legal"][0]["action"]}).json()
    jumps = [e for e in state["history"][before["ply"]:] if e["player"] == 0]
    assert len(jumps) >= 2 and all("x" in e["name"] for e in jumps)
    while not state["over"] and state["to_move"] != "human":  # the agent's reply (a jump of its own, maybe)
        state = c.post(f"/api/games/{gid}/agent", json={}).json()
    check_board_state(state)
    undone = c.post(f"/api/games/{gid}/undo", json={}).json()
    assert {k: undone[k] for k in ("cells", "history", "legal", "ply", "to_move")} == \
        {k: before[k] for k in ("cells", "history", "legal", "ply", "to_move")}
    # mid-jump, undo takes back the jumps made so far
    state = c.post(f"/api/games/{gid}/move", json={"move": move["name"]}).json()
    assert state["to_move"] == "human" and state["ply"] == before["ply"] + 1
    assert c.post(f"/api/games/{gid}/undo", json={}).json()["cells"] == before["cells"]


def test_board_game_bad_requests_get_4xx_naming_the_problem():
    c = client()
    state = board_game(c, "tictactoe", "human", "random")
    gid = state["id"]
    before = c.get(f"/api/games/{gid}").json()
    bad = [
        (c.post(f"/api/games/{gid}/move", json={"move": "d4"}), 422, "illegal move 'd4' in this Tic-Tac-Toe position"),
        (c.post(f"/api/games/{gid}/move", json={"move": "e2e4"}), 422, "legal moves: a3, b3, c3"),
        (c.post(f"/api/games/{gid}/move", json={"action": 9}), 422, "illegal action 9"),
        (c.post(f"/api/games/{gid}/move", json={"action": -1}), 422, "illegal action -1"),
        (c.post(f"/api/games/{gid}/move", json={"action": "4"}), 422, "'action' must be an integer"),
        (c.post(f"/api/games/{gid}/move", json={"action": True}), 422, "'action' must be an integer"),
        (c.post(f"/api/games/{gid}/move", json={"move": 4}), 422, "'move' must be a string"),
        (c.post(f"/api/games/{gid}/move", json={"move": "a1", "action": 6}), 422, "not both"),
        (c.post(f"/api/games/{gid}/move", json={}), 422, "missing field 'move'"),
        (c.post(f"/api/games/{gid}/move", json={"move": "x" * 5000}), 422, "(5002 characters)"),
        (c.post(f"/api/games/{gid}/agent", json={}), 409, "the person's move (first)"),
        (c.post(f"/api/games/{gid}/undo", json={}), 409, "nothing to undo"),
        (c.get(f"/api/games/{gid}/pgn"), 422, "PGN is for chess variants only: this game is tictactoe"),
        (c.get(f"/api/games/{gid}/analysis"), 422, "analysis is for chess variants only"),
        (c.post("/api/games", json={"variant": "gomoku25"}), 422, "Gomoku needs a size in 3..19"),
        (c.post("/api/games", json={"variant": "nope"}), 422, "board games: tictactoe"),
        (c.post("/api/games", json={"variant": "checkers", "fen": "8/8 w"}), 422, "'fen' is for chess variants"),
        (c.post("/api/games", json={"variant": "checkers", "second": "perfect"}), 422, "checkers has no 'perfect'"),
        (c.post("/api/games", json={"variant": "tictactoe", "second": "minimax:2"}), 422, "plays chess variants"),
        (c.post("/api/games", json={"variant": "checkers", "second": "alpha-beta:9"}), 422,
         "more than this server allows"),
        (c.post("/api/games", json={"variant": "tictactoe", "first": "random", "white": "human"}), 422,
         "'first' and 'white'"),
        (c.post("/api/games", json={"variant": "gardner", "game": "tictactoe"}), 422, "'variant' and 'game'"),
        (c.post("/api/games", json={"game": "tictactoe", "first": 3}), 422, "'first' must be a string"),
    ]
    for response, status, message in bad:
        assert response.status_code == status and message in response.json()["error"], response.text
        assert len(response.text) < 600
    assert c.get(f"/api/games/{gid}").json() == before
    # a chess game's requests are as before: white/black, no "game" needed
    assert new_game(c, "3x3", black="perfect")["kind"] == "chess"
    assert board_game(c, "gomoku4k4", "perfect", "human")["names"]["first"] == "perfect solver"
    state = c.post("/api/games", json={"game": "connect_four", "white": "random", "black": "human"}).json()
    assert state["players"] == {"first": "random", "second": "human"}


def test_board_game_agents_move_within_the_time_limit_and_resign_works():
    server = PlayServer(None, move_seconds=0.5, extra_agents={"endless": lambda game: EndlessAgent(0)})
    with TestClient(server.app) as c:
        state = board_game(c, "gomoku", "human", "endless")
        gid = state["id"]
        c.post(f"/api/games/{gid}/move", json={"move": "e5"})
        r = c.post(f"/api/games/{gid}/agent", json={})
        assert r.status_code == 503 and "took more than 0.5 s" in r.json()["error"], r.text
        after = c.get(f"/api/games/{gid}").json()
        assert after["ply"] == 1 and not after["busy"] and after["history"][0]["name"] == "e5"
        resigned = c.post(f"/api/games/{gid}/resign", json={}).json()
        assert resigned["over"] and resigned["result"] == "0-1" and resigned["winner"] == 1
        assert resigned["termination"] == "resignation" and resigned["legal"] == []
        assert c.post(f"/api/games/{gid}/undo", json={}).json()["ply"] == 0  # undo takes a resignation back too
    # two agents watched: checkers at alpha-beta depth 1 against random, to its end
    c = client()
    state = board_game(c, "checkers", "alpha-beta:1", "random")
    while not state["over"]:
        r = c.post(f"/api/games/{state['id']}/agent", json={})
        assert r.status_code == 200, r.text
        state = r.json()
    check_board_state(state)
    assert c.post(f"/api/games/{state['id']}/resign", json={}).status_code == 409
