"""The web app in a real browser: headless Chromium, driven by Selenium, plays whole games by clicking squares.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them)
and the ``selenium`` package; skips with a message where they are missing.
Screenshots go to ``tmp_path``, and also to ``$MINICHESS_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import socket
import threading
import time
import urllib.request

import pytest

PLAY_EXTRA = "the web app needs the [play] extra: pip install 'minichess-envs[play]'"
pytest.importorskip("starlette", reason=PLAY_EXTRA)
uvicorn = pytest.importorskip("uvicorn", reason=PLAY_EXTRA)
webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium: pip install selenium")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from agents.play.web import PlayServer  # noqa: E402
from minichess_envs import Position  # noqa: E402
from minichess_envs.pgn import PgnStats, read_pgn  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="the browser test needs Debian's chromium and chromium-driver (apt install chromium chromium-driver)",
)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1000,900")


def read_game(text: str):
    """The one game in PGN ``text``, read by our reader (which skips games it cannot read)."""
    stats = PgnStats()
    games = list(read_pgn(io.StringIO(text), stats=stats))
    assert len(games) == 1, str(stats)
    return games[0]


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    except WebDriverException as exc:
        pytest.skip(f"chromium did not start: {exc.msg}")
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


class Server:
    """The app served by uvicorn on 127.0.0.1 and a free port, in a thread."""

    def __init__(self, **options):
        self.play = PlayServer(None, allowed_hosts=["127.0.0.1"], **options)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.uvicorn = uvicorn.Server(uvicorn.Config(self.play.app, host="127.0.0.1", port=self.port,
                                                     log_level="warning"))
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.uvicorn.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return response.read().decode()

    def stop(self):
        self.uvicorn.should_exit = True
        self.thread.join(10)


@pytest.fixture
def serve():
    servers = []

    def start(**options) -> Server:
        servers.append(Server(**options))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def status(driver) -> tuple[str, int]:
    """The page's state and ply, read together (the page may redraw between two reads)."""
    state, ply = driver.execute_script(
        "const s = document.getElementById('status'); return [s.dataset.state, s.dataset.ply || '-1'];")
    return state, int(ply)


def wait_for_turn(driver, after_ply: int, timeout: float = 30) -> str:
    """Wait until the person is to move (or the game is over) at a ply after ``after_ply``."""
    seen = []

    def ready(d):
        seen[:] = [status(d)]
        return seen[0][0] in ("your-move", "over") and seen[0][1] > after_ply

    WebDriverWait(driver, timeout, poll_frequency=0.05).until(ready, message=f"no move after ply {after_ply}")
    return seen[0][0]


def start_game(driver, server: Server, variant: str, white: str = "human", black: str = "random") -> str:
    driver.get(server.url + "/")
    WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#variant option"))
    Select(driver.find_element(By.ID, "variant")).select_by_value(variant)
    Select(driver.find_element(By.ID, "white")).select_by_value(white)
    Select(driver.find_element(By.ID, "black")).select_by_value(black)
    driver.find_element(By.ID, "new-game").click()
    WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "status").get_attribute("data-ply") == "0"
                                    or status(d)[0] != "idle")
    return driver.find_element(By.ID, "status").get_attribute("data-game")


def square(driver, name: str):
    return driver.find_element(By.CSS_SELECTOR, f'rect.square[data-square="{name}"]')


def check_screenshot(driver, path) -> None:
    from PIL import Image

    driver.save_screenshot(str(path))
    image = Image.open(path).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert image.size[0] > 300 and image.size[1] > 300
    assert colours is not None and len(colours) > 50, "the screenshot is (nearly) blank"
    # the board's light and dark squares are both there
    present = {c for _, c in colours}
    assert (240, 217, 181) in present and (181, 136, 99) in present
    if os.environ.get("MINICHESS_SCREENSHOTS"):
        shutil.copy(path, os.path.join(os.environ["MINICHESS_SCREENSHOTS"], os.path.basename(path)))


def play_by_clicking(driver, server: Server, variant: str, seed: int, drag_first: bool = False,
                     colour: str = "white") -> tuple[str, list]:
    """Play ``colour`` with random legal moves by clicking (or dragging) until the game ends against random.

    Returns the game's id and the moves clicked. As Black the board is seen flipped.
    """
    rng = random.Random(seed)
    players = {"white": "human", "black": "random"} if colour == "white" else {"white": "random", "black": "human"}
    gid = start_game(driver, server, variant, **players)
    played = []
    state = wait_for_turn(driver, -1)
    while state != "over":
        game = server.play.games[gid].state()
        legal = game["legal"]
        move = rng.choice(legal)
        ply = game["ply"]
        if drag_first and not played:
            # the page redraws the board on pointerdown: move by offsets, not to (then stale) elements
            source, target = square(driver, move["from"]), square(driver, move["to"])
            dx = target.location["x"] - source.location["x"]
            dy = target.location["y"] - source.location["y"]
            ActionChains(driver).click_and_hold(source).move_by_offset(dx // 2, dy // 2) \
                .move_by_offset(dx - dx // 2, dy - dy // 2).release().perform()
        else:
            square(driver, move["from"]).click()
            highlighted = {el.get_attribute("data-square") for el in driver.find_elements(By.CSS_SELECTOR, ".dest")}
            assert highlighted == {m["to"] for m in legal if m["from"] == move["from"]}
            square(driver, move["to"]).click()
        if move["promotion"]:
            WebDriverWait(driver, 5).until(lambda d: d.find_element(By.ID, "promotion").is_displayed())
            driver.find_element(By.CSS_SELECTOR, f'#promotion button[data-promotion="{move["promotion"]}"]').click()
        played.append(move["uci"])
        state = wait_for_turn(driver, ply)
    return gid, played


@pytest.mark.parametrize("variant, ply_limit, colour", [
    ("3x3", None, "white"), ("3x3", None, "black"), ("gardner", None, "white"), ("chess", 60, "white")])
def test_whole_games_by_clicking(browser, serve, tmp_path, variant, ply_limit, colour):
    server = serve(ply_limit=ply_limit)
    gid, played = play_by_clicking(browser, server, variant, seed=len(variant), drag_first=variant == "gardner",
                                   colour=colour)
    game = read_game(server.get(f"/api/games/{gid}/pgn"))
    moves = [m.uci() for m in game.position().move_stack]
    assert moves[0 if colour == "white" else 1::2] == played  # the person's moves are the ones clicked
    limit = ply_limit or Position(variant).variant.ply_limit
    assert game.position().is_game_over() or len(moves) == limit
    expected = game.position().result() if game.position().is_game_over() else "1/2-1/2"
    assert game.headers["Result"] == expected
    shown = browser.find_element(By.ID, "status").text
    assert expected in shown
    assert len(browser.find_elements(By.CSS_SELECTOR, "#moves span[data-ply]")) == len(moves)
    if variant == "chess":
        chess_pgn = pytest.importorskip("chess.pgn")
        replayed = chess_pgn.read_game(io.StringIO(server.get(f"/api/games/{gid}/pgn")))
        assert not replayed.errors and [m.uci() for m in replayed.mainline_moves()] == moves
    if colour == "black":
        bottom = browser.find_element(By.ID, "bottom-player").text
        assert bottom.startswith("Black"), bottom  # the board is turned for Black
    check_screenshot(browser, tmp_path / f"play-{variant}-{colour}.png")


@pytest.mark.slow
def test_a_whole_8x8_game_without_a_ply_cap(browser, serve, tmp_path):
    server = serve()
    gid, _ = play_by_clicking(browser, server, "chess", seed=11)
    game = read_game(server.get(f"/api/games/{gid}/pgn"))
    assert game.position().is_game_over() or game.position().ply == Position("chess").variant.ply_limit


def test_watch_replay_and_analysis(browser, serve, tmp_path):
    server = serve(ply_limit=40)
    gid = start_game(browser, server, "3x3", white="random", black="perfect")
    assert browser.find_element(By.ID, "watch").is_displayed()
    assert not browser.find_element(By.ID, "resign").is_enabled()  # agents do not resign
    browser.find_element(By.ID, "analyse").click()
    WebDriverWait(browser, 20).until(lambda d: "Tablebase" in d.find_element(By.ID, "analysis").text)
    rows = browser.find_elements(By.CSS_SELECTOR, "#analysis tr")
    assert len(rows) == len(Position("3x3").legal_moves)
    browser.find_element(By.ID, "step").click()
    WebDriverWait(browser, 20).until(lambda d: status(d)[1] == 1)
    browser.find_element(By.ID, "auto").click()
    WebDriverWait(browser, 60).until(lambda d: status(d)[0] == "over")
    final = server.play.games[gid].state()
    # replay: step back to the start through the move list and the buttons
    browser.find_element(By.ID, "first").click()
    assert "Viewing move 0" in browser.find_element(By.ID, "status").text
    pieces = {el.get_attribute("data-square"): el.get_attribute("data-piece")
              for el in browser.find_elements(By.CSS_SELECTOR, "#board g.piece")}
    assert pieces == Position("3x3").piece_map()
    browser.find_element(By.ID, "forward").click()
    assert "Viewing move 1" in browser.find_element(By.ID, "status").text or final["ply"] == 1
    browser.find_element(By.ID, "last").click()
    assert "Viewing" not in browser.find_element(By.ID, "status").text
    # the perfect player never lets a won or drawn position slip: Black scores at least a draw
    assert final["result"] in ("0-1", "1/2-1/2")
    # load the game back from a PGN file
    path = tmp_path / "game.pgn"
    path.write_text(server.get(f"/api/games/{gid}/pgn"))
    browser.find_element(By.ID, "pgn-file").send_keys(str(path))
    WebDriverWait(browser, 10).until(lambda d: "Viewing move 0" in d.find_element(By.ID, "status").text)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#moves span[data-ply]")) == final["ply"]
    assert not browser.find_element(By.ID, "watch").is_displayed()  # a replay has no agents to step
    check_screenshot(browser, tmp_path / "watch-3x3.png")


def cell(driver, row: int, col: int):
    return driver.find_element(By.CSS_SELECTOR, f'rect.cell[data-cell="{row},{col}"]')


@pytest.mark.parametrize("name, second, most", [("tictactoe", "perfect", None), ("connect_four", "random", None),
                                                ("checkers", "random", 12)])
def test_board_games_by_clicking(browser, serve, tmp_path, name, second, most):
    """Tic-Tac-Toe to its end against the perfect player by clicking cells; Connect Four by clicking the top cell
    of a column; checkers by clicking a piece and then where it goes (``most`` moves of it)."""
    server = serve()
    rng = random.Random(7)
    gid = start_game(browser, server, name, white="human", black=second)
    assert browser.find_element(By.ID, "white-label").text.startswith("First")
    state, played = wait_for_turn(browser, -1), []
    while state != "over" and (most is None or len(played) < most):
        game = server.play.games[gid].state()
        move = rng.choice(game["legal"])
        if move["from"] is not None:  # checkers: the piece (picked up already if it alone can move), then its square
            if len({tuple(m["from"]) for m in game["legal"]}) > 1:
                cell(browser, *move["from"]).click()
            shown = {el.get_attribute("data-cell") for el in browser.find_elements(By.CSS_SELECTOR, ".dest")}
            assert shown == {"{},{}".format(*m["to"]) for m in game["legal"] if m["from"] == move["from"]}
            cell(browser, *move["to"]).click()
        elif game["game"]["drop"]:
            cell(browser, 0, move["to"][1]).click()  # any cell of the column
        else:
            cell(browser, *move["to"]).click()
        played.append(move["name"])
        state = wait_for_turn(browser, game["ply"])
    final = server.play.games[gid].state()
    assert [e["name"] for e in final["history"] if e["player"] == 0] == played  # the person's moves: those clicked
    assert len(browser.find_elements(By.CSS_SELECTOR, "#moves span[data-ply]")) == final["ply"]
    pieces = browser.find_elements(By.CSS_SELECTOR, "#board g.piece")
    assert len(pieces) == sum(bool(c) for row in final["cells"] for c in row)
    if most is None:
        assert final["over"] and final["result"] in browser.find_element(By.ID, "status").text
    if name == "tictactoe":
        assert final["winner"] in (1, None)  # the perfect player does not lose
    if name == "checkers":
        assert browser.find_element(By.ID, "bottom-player").text.startswith("Black (first)")  # turned for the person
    assert "disabled" in browser.find_element(By.ID, "download").get_attribute("class")  # no PGN of a board game
    browser.find_element(By.ID, "first").click()
    assert "Viewing move 0" in browser.find_element(By.ID, "status").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#board g.piece")) == sum(
        bool(c) for row in final["start_cells"] for c in row)
    path = tmp_path / f"play-{name}.png"
    browser.save_screenshot(str(path))
    if os.environ.get("MINICHESS_SCREENSHOTS"):
        shutil.copy(path, os.path.join(os.environ["MINICHESS_SCREENSHOTS"], path.name))
