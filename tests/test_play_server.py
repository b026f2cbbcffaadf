"""`minichess serve` as a process on loopback: SIGTERM, IPv6, oversized bodies over real sockets, and a load test.

Every server here listens on 127.0.0.1 (or ::1) and a free port, and is stopped by the test that started it.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("starlette", reason="the web app needs the [play] extra: pip install 'minichess-envs[play]'")
pytest.importorskip("uvicorn", reason="the web app needs the [play] extra: pip install 'minichess-envs[play]'")
httpx = pytest.importorskip("httpx2", reason="the load test needs an HTTP client: pip install httpx2")

from agents import MinimaxAgent  # noqa: E402
from agents.play.web import MAX_BODY  # noqa: E402
from minichess_envs import Position  # noqa: E402
from minichess_envs.pgn import PgnStats, read_pgn  # noqa: E402
from test_play_web import bad_games_block  # noqa: E402


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Serve:
    """``minichess serve`` in a subprocess on ``host`` and a free port; :meth:`stop` sends SIGTERM."""

    def __init__(self, tmp_path, *args: str, host: str = "127.0.0.1"):
        self.host, self.port = host, free_port(host)
        self.log = open(tmp_path / f"serve-{self.port}.log", "w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minichess_envs.cli", "serve", "--host", host, "--port", str(self.port),
             "--runs", str(tmp_path / "no-runs"), *args], stdout=self.log, stderr=subprocess.STDOUT)
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}"
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None and time.monotonic() < deadline, self.output()
            try:
                if httpx.get(self.url + "/api/options", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def rss(self, field: str = "VmRSS") -> int:
        """The server's resident memory (``VmHWM``: its peak) in bytes."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field}")

    def cpu(self) -> float:
        """CPU seconds the server has used (user and system)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout: float = 10) -> float:
        """SIGTERM; the seconds until the process ended."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
        return time.monotonic() - started


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(*args, **kwargs) -> Serve:
        servers.append(Serve(tmp_path, *args, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def test_sigterm_stops_a_long_search_within_2_s(tmp_path, serve):
    # a saved agent the operator offers (--agent) is not held to the spec limits: depth 8 on 8x8 takes minutes
    MinimaxAgent(8, name="deep").save(str(tmp_path / "deep"))
    server = serve("--agent", str(tmp_path / "deep"))
    name = os.path.normpath(str(tmp_path / "deep"))
    r = httpx.post(server.url + "/api/games", json={"variant": "chess", "white": name, "black": "human"})
    assert r.status_code == 201, r.text
    answers = []
    thinking = threading.Thread(target=lambda: answers.append(
        _post_or_error(f"{server.url}/api/games/{r.json()['id']}/agent")))
    thinking.start()
    deadline = time.monotonic() + 10
    while not httpx.get(f"{server.url}/api/games/{r.json()['id']}").json()["busy"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    seconds = server.stop()
    thinking.join(10)
    print(f"\nSIGTERM during a depth-8 search: the server ended in {seconds:.2f} s ({answers})")
    assert server.proc.returncode in (0, -signal.SIGTERM), server.output()
    assert seconds < 2, seconds
    assert answers and answers[0] != 200  # the move was not made: a 503 saying why, or the connection closed


def _post_or_error(url: str):
    try:
        return httpx.post(url, json={}, timeout=30).status_code
    except httpx.TransportError as exc:
        return type(exc).__name__


def test_serve_on_ipv6_loopback(serve):
    try:
        free_port("::1")
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    server = serve(host="::1")
    assert f"http://[::1]:{server.port}/" in server.output()
    r = httpx.get(server.url + "/api/options")  # Host: [::1]:PORT
    assert r.status_code == 200 and r.json()["human"] == "human"
    r = httpx.get(server.url + "/api/options", headers={"host": "evil.example"})
    assert r.status_code == 400


def _raw(port: int, head: bytes, body_chunks, pause: float = 0.0) -> tuple[bytes, int]:
    """Send ``head`` and the chunks over one connection until the server answers; (answer, body bytes sent)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        for chunk in body_chunks:
            s.settimeout(0.0)
            try:
                if s.recv(1, socket.MSG_PEEK):
                    break  # answered before the body was all sent
            except BlockingIOError:
                pass
            except OSError:
                break
            s.settimeout(10)
            try:
                s.sendall(chunk)
            except OSError:  # the server closed the connection
                break
            sent += len(chunk)
            time.sleep(pause)
        s.settimeout(60)  # a maximal upload is read for up to PGN_SECONDS after it arrives
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                data = s.recv(65536)
                if not data:
                    break
                answer += data
        except OSError:
            pass
    return answer, sent


def test_oversized_bodies_are_refused_before_they_are_in_memory(serve):
    server = serve()
    before = server.rss()
    big = 64 << 20
    head = (f"POST /api/pgn HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {big}\r\n\r\n").encode()
    answer, sent = _raw(server.port, head, (b" " * 65536 for _ in range(big // 65536)))
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 16 << 20, sent  # answered from the header, not after 64 MiB
    head = (f"POST /api/pgn HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    chunk = b"10000\r\n" + b" " * 65536 + b"\r\n"
    answer, sent = _raw(server.port, head, (chunk for _ in range(big // 65536)))
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 16 << 20, sent  # stopped soon after MAX_BODY (what it sent beyond sat in socket buffers)
    assert server.rss() - before < 16 << 20, (before, server.rss())


# -- the load test ----------------------------------------------------------------------------------------------


def slow_upload_body() -> bytes:
    """A JSON body of nearly MAX_BODY bytes: PGN of long games each illegal at its last move (all read, all skipped)."""
    block = bad_games_block(seed=1)
    room = MAX_BODY - len(json.dumps({"pgn": ""}).encode())
    text = block * (room // len(json.dumps(block)))
    body = json.dumps({"pgn": text}).encode()
    assert MAX_BODY - len(json.dumps(block)) < len(body) <= MAX_BODY
    return body


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def _load(url: str, port: int, games: int, moves: int, seed: int, stats: dict) -> None:
    """``games`` concurrent games of random moves against ``random`` (``moves`` each), polling ``/api/options``,
    while one client uploads a 1 MiB PGN slowly and one game runs minimax:4 (the deepest allowed) on 8x8."""
    rng = random.Random(seed)
    latency = {"options": [], "random": [], "move": [], "other": []}
    errors = stats["errors"]
    done = asyncio.Event()

    async def timed(kind, call, *args, expect=200, **kwargs):
        started = time.perf_counter()
        try:
            r = await call(*args, **kwargs)
        except httpx.HTTPError as exc:
            errors.append(f"{kind}: {type(exc).__name__}: {exc}")
            return None
        latency[kind].append(time.perf_counter() - started)
        if r.status_code != expect:
            errors.append(f"{kind}: {r.status_code} {r.text[:200]}")
            return None
        return r.json()

    async def game(c, i):
        variant = ("gardner", "3x3", "silverman", "chess", "losalamos")[i % 5]
        state = await timed("other", c.post, "/api/games", expect=201,
                            json={"variant": variant, "white": "human", "black": "random"})
        if state is None:
            return
        ours = Position(variant)
        for _ in range(moves):
            await asyncio.sleep(rng.uniform(0.2, 0.8))  # a person, or the page's autoplay (0.35 s), between moves
            if state["over"]:
                break
            if state["to_move"] == "human":
                move = rng.choice(state["legal"])["uci"]
                state = await timed("move", c.post, f"/api/games/{state['id']}/move", json={"move": move})
            else:
                state = await timed("random", c.post, f"/api/games/{state['id']}/agent", json={})
            if state is None:
                return
            ours.push_uci(state["history"][-1]["uci"])
        # the server's game replays to the same moves and positions, and its PGN holds the same moves
        final = await timed("other", c.get, f"/api/games/{state['id']}")
        if final is not None:
            replayed = Position(variant, final["start_fen"])
            for entry in final["history"]:
                replayed.push_uci(entry["uci"])
                if replayed.fen() != entry["fen"]:
                    errors.append(f"game {i}: history does not replay at {entry}")
            if [m.uci() for m in replayed.move_stack] != [m.uci() for m in ours.move_stack]:
                errors.append(f"game {i}: the server's moves differ from the moves played")
        r = await c.get(f"/api/games/{state['id']}/pgn")
        read = list(read_pgn(io.StringIO(r.text), stats=PgnStats()))
        if len(read) != 1 or [m.uci() for m in read[0].position().move_stack] != [m.uci() for m in ours.move_stack]:
            errors.append(f"game {i}: the PGN does not hold the moves played")
        stats["games"] += 1

    async def poll_options(c):
        while not done.is_set():
            await timed("options", c.get, "/api/options")
            await asyncio.sleep(0.05)

    async def deep_search(c):
        state = await timed("other", c.post, "/api/games", expect=201,
                            json={"variant": "chess", "white": "minimax:4", "black": "minimax:4"})
        while state is not None and not done.is_set() and not state["over"]:
            await asyncio.sleep(0.35)  # the page's pace when it watches two agents
            started = time.perf_counter()
            state = await timed("other", c.post, f"/api/games/{state['id']}/agent", json={}, timeout=60)
            stats["deep_moves"].append(time.perf_counter() - started)

    def slow_upload():  # a thread: plain blocking sockets, 1 MiB over about 5 s
        body = slow_upload_body()
        head = (f"POST /api/pgn HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        step = len(body) // 100 + 1
        answer, sent = _raw(port, head, (body[i:i + step] for i in range(0, len(body), step)), pause=0.05)
        stats["upload"] = (len(body), sent, answer.split(b"\r\n", 1)[0].decode())

    limits = httpx.Limits(max_connections=games + 8, max_keepalive_connections=games + 8)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as c:
        upload = asyncio.get_running_loop().run_in_executor(None, slow_upload)
        background = [asyncio.create_task(poll_options(c)), asyncio.create_task(deep_search(c))]
        await asyncio.gather(*(game(c, i) for i in range(games)))
        await upload
        done.set()
        await asyncio.gather(*background)
    stats["latency"] = latency


def run_load(serve, games: int, moves: int) -> dict:
    server = serve()
    # warm up: first requests import and compile; the test measures the server at work, not its start
    for variant in ("gardner", "3x3", "silverman", "chess", "losalamos"):
        r = httpx.post(server.url + "/api/games", json={"variant": variant, "white": "human", "black": "random"})
        assert r.status_code == 201
    stats = {"errors": [], "games": 0, "deep_moves": []}
    rss_before, cpu_before, client_before = server.rss(), server.cpu(), time.process_time()
    started = time.perf_counter()
    asyncio.run(_load(server.url, server.port, games, moves, 0, stats))
    stats["seconds"] = time.perf_counter() - started
    stats["server_cpu"], stats["client_cpu"] = server.cpu() - cpu_before, time.process_time() - client_before
    stats["rss_before"], stats["rss_peak"] = rss_before, server.rss("VmHWM")
    stats["stop_seconds"] = server.stop()
    lat = stats["latency"]
    stats["requests"] = sum(len(v) for v in lat.values())
    summary = {k: (len(v), round(1000 * p99(v), 1), round(1000 * max(v), 1)) for k, v in lat.items() if v}
    print(f"\nload: {games} games, {stats['requests']} requests in {stats['seconds']:.1f} s; "
          f"(count, p99 ms, max ms): {summary}; upload (body, sent, answer): {stats['upload']}; "
          f"minimax:4 moves: {len(stats['deep_moves'])}, longest {max(stats['deep_moves'], default=0):.2f} s; "
          f"RSS {stats['rss_before'] / 2**20:.0f} MiB before, peak {stats['rss_peak'] / 2**20:.0f} MiB; "
          f"stopped in {stats['stop_seconds']:.2f} s; CPU s: server {stats['server_cpu']:.1f}, "
          f"client {stats['client_cpu']:.1f}; loadavg {open('/proc/loadavg').read().split()[:3]}")
    assert stats["errors"] == [], stats["errors"][:10]
    assert stats["games"] == games
    assert stats["upload"][2].startswith("HTTP/1.1 422"), stats["upload"]  # read off the loop, all games skipped
    assert stats["upload"][1] == stats["upload"][0]  # the whole body went in: a maximal upload, not a refusal
    assert stats["deep_moves"], "the deep search made no move"
    for kind in ("options", "random"):
        assert p99(lat[kind]) < 0.2, (kind, summary)
    assert stats["rss_peak"] - stats["rss_before"] < 200 << 20, (stats["rss_before"], stats["rss_peak"])
    assert stats["stop_seconds"] < 2
    return stats


def test_load_small(serve):
    """The default suite's load test: 20 games (about 400 requests), well under 30 s."""
    run_load(serve, games=20, moves=16)


@pytest.mark.slow
def test_load_full(serve):
    """100 concurrent games, a few thousand requests."""
    stats = run_load(serve, games=100, moves=30)
    assert stats["requests"] >= 2500  # games end early at random, so the count varies around 3,000
