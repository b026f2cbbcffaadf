"""`minichess serve`'s HTTP API through Starlette's test client: games, bad requests, agents, PGN, parallel games."""

from __future__ import annotations

import concurrent.futures
import io
import random
import threading
import time

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web app needs the [play] extra: pip install 'minichess-envs[play]'")
from starlette.testclient import TestClient  # noqa: E402

from agents import MinimaxAgent, RandomAgent  # noqa: E402
from agents.play.web import PlayServer  # noqa: E402
from minichess_envs import Position  # noqa: E402
from minichess_envs.pgn import PgnStats, read_pgn  # noqa: E402


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
    assert '[Termination "resignation"]' in c.get(f"/api/games/{gid}/pgn").text


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
        (c.post("/api/pgn", json={"pgn": "1. e4 e5 2. Ke3"}), 422, "cannot read this PGN: 0 games read; skipped 1 illegal move"),
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
