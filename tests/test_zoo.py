"""The zoo: shipped entries load, play and are described; a corrupt, foreign or unknown entry is refused by name.

CI runs this file against the installed wheel too (`.ci/run`: without torch, the entries' files and cards;
`.ci/run-slow`: with it, a game with every entry)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import types

import pytest

import agents
from agents import zoo
from agents.arena import play_match
from agents.games import board_game
from agents.players.random_agent import RandomAgent
from agents.spec import from_spec

SHIPPED = zoo.names()
MAX_ZOO_BYTES = 15 * 2**20  # the bound on the zoo's size in the package


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="zoo entries are networks (the agents extra)")


def test_the_shipped_zoo_is_small_and_every_file_is_checksummed():
    assert SHIPPED, "the package ships no zoo entry"
    total = 0
    for name in SHIPPED:
        directory = zoo.entry_dir(name)
        files = set(os.listdir(directory))
        assert files == {"agent.json", "weights.pt", "card.json", "SHA256SUMS"}, (name, files)
        sums = open(os.path.join(directory, "SHA256SUMS")).read()
        assert all(f"  {f}\n" in sums for f in files - {"SHA256SUMS"}), name
        total += sum(os.path.getsize(os.path.join(directory, f)) for f in files)
    assert total <= MAX_ZOO_BYTES


@pytest.mark.parametrize("name", SHIPPED)
def test_every_entry_plays_a_game_and_its_card_says_what_it_is(name, torch):
    card = zoo.card(name)
    assert card.name == name and card.command.startswith("python experiments/") and card.strength
    agent = agents.load(f"zoo:{name}")
    assert agent.name == f"zoo:{name}" and (getattr(agent, "game", None) or agent.variant.name) == card.game
    assert from_spec(f"ZOO:{name}", card.game).name == f"zoo:{name}"
    # chess: 4 plies a game, enough to see the rated search (up to 8,192 simulations) play legal moves; whole
    # games at that setting took over a minute of the default suite
    options = {} if board_game(card.game) else {"ply_limit": 4}
    for setting in ([False, True] if card.casual else [False]):
        player = zoo.load(name, casual=setting)
        match = play_match(player, RandomAgent(0), card.game, 2, names=("zoo", "random"), **options)
        assert match.tally().games == 2
    text = zoo.describe(name)
    assert card.game in text and card.command in text and f"## {name}" in zoo.markdown()


def test_the_docs_page_is_the_cards():
    page = os.path.join(os.path.dirname(__file__), "..", "docs", "zoo.md")
    if not os.path.exists(page):
        pytest.skip("no docs/ here")
    with open(page) as f:
        assert f.read() == zoo.markdown(), "docs/zoo.md is stale: python experiments/zoo.py --docs"


@pytest.fixture
def scratch_zoo(tmp_path, monkeypatch):
    """A zoo of one shipped entry copied to ``tmp_path`` (so that it can be damaged)."""
    name = SHIPPED[0]
    shutil.copytree(zoo.entry_dir(name), tmp_path / name)
    monkeypatch.setattr(zoo, "ENTRIES_DIR", str(tmp_path))
    return name, tmp_path / name


def test_a_changed_file_is_refused_naming_it(scratch_zoo, torch):
    name, directory = scratch_zoo
    with open(directory / "weights.pt", "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(ValueError, match="weights.pt is corrupt"):
        zoo.load(name)


def test_a_card_with_a_foreign_field_or_a_bad_type_is_refused(scratch_zoo):
    from minichess_envs.checksums import write_checksums

    name, directory = scratch_zoo
    data = json.loads((directory / "card.json").read_text())
    for bad, message in (({**data, "code": "import os"}, "unknown fields"), ({**data, "seed": "0"}, "'seed' must be"),
                         ({k: v for k, v in data.items() if k != "game"}, "no 'game' field")):
        (directory / "card.json").write_text(json.dumps(bad))
        write_checksums(str(directory), ["card.json"])
        with pytest.raises(ValueError, match=message):
            zoo.card(name)


def test_unknown_names_and_settings_are_refused():
    for spec, message in (("zoo:no-such-agent", "no zoo entry 'no-such-agent'; the zoo has"),
                          ("zoo:../../etc", "no zoo entry"), (f"zoo:{SHIPPED[0]}:fast", "setting is 'casual'")):
        with pytest.raises(ValueError, match=message):
            agents.load(spec)


def test_an_entry_of_another_game_is_refused_by_spec(torch):
    name = SHIPPED[0]
    other = "checkers" if zoo.card(name).game != "checkers" else "tictactoe"
    with pytest.raises(ValueError, match=f"plays '{zoo.card(name).game}', not '{other}'"):
        from_spec(f"zoo:{name}", other)


def test_install_writes_checksums_and_the_card(tmp_path, monkeypatch, torch):
    name = SHIPPED[0]
    source, card = zoo.entry_dir(name), dataclasses.replace(zoo.card(name), name="copy", notes="a copy")
    monkeypatch.setattr(zoo, "ENTRIES_DIR", str(tmp_path / "entries"))
    zoo.install("copy", source, card)
    assert zoo.names() == ["copy"] and zoo.card("copy").notes == "a copy"
    assert zoo.load("copy").name == "zoo:copy"


def test_the_command_line_lists_and_describes():
    listed = subprocess.run([sys.executable, "-m", "minichess_envs.cli", "zoo", "list"], capture_output=True, text=True)
    assert listed.returncode == 0 and all(name in listed.stdout for name in SHIPPED)
    described = subprocess.run([sys.executable, "-m", "minichess_envs.cli", "zoo", "describe", SHIPPED[0]],
                               capture_output=True, text=True)
    assert described.returncode == 0 and zoo.card(SHIPPED[0]).command in described.stdout
    bad = subprocess.run([sys.executable, "-m", "minichess_envs.cli", "zoo", "describe", "nope"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "no zoo entry 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_the_web_app_offers_every_entry_and_plays_one(torch):
    pytest.importorskip("starlette", reason="the web app needs the [play] extra")
    from starlette.testclient import TestClient

    from agents.play.web import PlayServer

    c = TestClient(PlayServer(None).app)
    offered = {a["name"]: a for a in c.get("/api/options").json()["agents"]}
    for name in SHIPPED:
        card = zoo.card(name)
        assert card.game in (offered[f"zoo:{name}"]["games"] or []) + (offered[f"zoo:{name}"]["variants"] or [])
        assert (f"zoo:{name}:casual" in offered) == bool(card.casual)
    name = next(n for n in SHIPPED if zoo.card(n).game == "tictactoe")
    r = c.post("/api/games", json={"variant": "tictactoe", "first": f"zoo:{name}", "second": "human"})
    assert r.status_code == 201, r.text


def test_the_leaderboard_enters_each_entry_at_its_casual_setting_or_its_only_one(torch):
    from agents.arena.leaderboard import zoo_players

    for casual in (True, False):
        players = {spec: (game, agent) for game, spec, agent in zoo_players(casual)}
        assert len(players) == len(SHIPPED)
        for name in SHIPPED:
            card = zoo.card(name)
            spec = f"zoo:{name}:casual" if casual and card.casual else f"zoo:{name}"
            game, agent = players[spec]
            assert game == card.game and agent.name == spec
            for key, value in (card.casual.items() if spec.endswith(":casual") else ()):
                assert getattr(agent, key) == value


def test_an_entry_rated_at_another_setting_keeps_its_network(tmp_path, torch):
    from experiments import zoo as script

    shutil.copytree(zoo.entry_dir("connect4-alphazero"), tmp_path / "agent")
    rated = script.with_settings(str(tmp_path / "agent"), {"simulations": 16}, str(tmp_path / "rated"))
    before, after = agents.load(str(tmp_path / "agent")), agents.load(rated)
    assert after.simulations == 16 != before.simulations and after.game == before.game
    weights = zip(before.net.state_dict().items(), after.net.state_dict().items())
    assert all(k == j and torch.equal(a, b) for (k, a), (j, b) in weights)


def test_a_rating_goes_on_from_the_measures_it_finished(tmp_path, monkeypatch, torch, capsys):
    from experiments import zoo as script

    class Refuses(RandomAgent):  # the same name as the opponent measured: asked to move, the test fails
        def act(self, observation, action_mask, position=None) -> int:
            raise AssertionError("a finished measure was played again")

    monkeypatch.chdir(tmp_path)  # the rating's file goes under runs/zoo/ here
    name = "tictactoe-alphazero"
    agent, casual = zoo.load(name), zoo.card(name).casual
    first = script.match(script.Finished(name, casual), "rated", agent, RandomAgent(1), "tictactoe", 4, "second")
    assert first["count"] == 4 and first["date"]
    again = script.Finished(name, casual)  # as a rating run again after a lost machine
    assert "1 measures done" in capsys.readouterr().out
    assert script.match(again, "rated", agent, Refuses(1), "tictactoe", 4, "second") == first
    with pytest.raises(AssertionError, match="played again"):  # another measure is played
        script.match(again, "rated", agent, Refuses(1), "tictactoe", 6, "second")
    path = tmp_path / "runs" / "zoo" / f"{name}-rating.json"
    journal = tmp_path / "runs" / "zoo" / f"{name}-games.jsonl"
    saved = json.loads(path.read_text())
    # Stopped in a measure after its games: they are read back from the journal, not played again.
    path.write_text(json.dumps({"of": saved["of"], "done": {}}))
    assert script.match(script.Finished(name, casual), "rated", agent, Refuses(1), "tictactoe", 4, "second")["score"] \
        == first["score"]
    saved["of"]["files"]["weights.pt"] = "0" * 64  # measures and games of other weights are not this entry's
    path.write_text(json.dumps(saved))
    assert journal.exists() and script.Finished(name, casual).done == {} and not journal.exists()
    path.write_text('{"of": ')  # cut short: measured afresh, the problem named
    assert script.Finished(name, casual).done == {}
    assert f"cannot read runs/zoo/{name}-rating.json" in capsys.readouterr().out
    again.close()
    assert not path.exists()


def test_an_8x8_rating_climbs_up_to_the_first_level_where_it_scores_nothing(tmp_path, monkeypatch, torch):
    from agents.arena.ladder import Ladder
    from experiments import zoo as script

    monkeypatch.chdir(tmp_path)
    ladder = Ladder.load("chess")
    scores, played = [0.9, 0.5, 0.0], []

    def level(done, label, agent, ladder, name):
        score = scores[len(played)]
        played.append(name)
        wins = round(20 * score)
        results = [("random", name, 1.0)] * wins + [("random", name, 0.0)] * (20 - wins)
        return dict(player=label, measure=name, score=score, level=name, level_elo=ladder.levels[name],
                    results=results, date="2026-12-07")

    monkeypatch.setattr(script, "ladder_level", level)
    monkeypatch.setattr(script, "match", lambda *args, **kwargs: {"measure": "against random"})
    monkeypatch.setattr(script, "settings", lambda name, casual: [("rated setting", False, RandomAgent())])
    monkeypatch.setattr(script, "Finished", lambda *args: None)
    rows = script.rate_chess("chess-supervised", False, types.SimpleNamespace(workers=1))
    assert played == sorted(ladder.engines, key=ladder.levels.get)[:3]  # weakest first, none above a zero
    elo = rows[-1]
    assert elo["measure"] == f"Elo on the Stockfish ladder ({ladder.scale})" and elo["count"] == 60
    assert ladder.levels[played[0]] < elo["score"] < ladder.levels[played[2]]
