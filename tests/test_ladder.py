"""The strength ladder: openings, both colors per opening, calibrated levels, the agent's Elo."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess

import pytest

from agents.arena import run_tournament
from agents.players.greedy import GreedyAgent
from agents.players.random_agent import RandomAgent
from minichess_envs import Position

HAVE_FSF = bool(shutil.which("fairy-stockfish") or shutil.which("fairy-stockfish", path="/usr/games"))
needs_fsf = pytest.mark.needs_engine("fairy-stockfish")


def test_every_opening_is_played_once_with_each_color():
    position = Position("gardner")
    position.push_uci("a2a3")
    position.push_uci("e4e3")
    starts = [Position("gardner").fen(), position.fen()]
    match, = run_tournament([RandomAgent(1), GreedyAgent(2)], "gardner", games=8, seed=3, openings=starts)
    for m in range(4):
        first, second = match.games[2 * m], match.games[2 * m + 1]
        assert first.start_fen == second.start_fen == starts[m % 2]
        assert (first.white, first.black) == (second.black, second.white)


@needs_fsf
def test_openings_are_deterministic_distinct_and_near_equal():
    from agents.arena.ladder import balanced_openings

    openings = balanced_openings("gardner", 6, plies=4, seed=5, nodes=200, max_cp=50)
    assert openings == balanced_openings("gardner", 6, plies=4, seed=5, nodes=200, max_cp=50)
    assert openings != balanced_openings("gardner", 6, plies=4, seed=6, nodes=200, max_cp=50)
    assert len({o.fen for o in openings}) == 6
    for o in openings:
        position = Position("gardner")
        for move in o.moves:
            position.push_uci(move)
        assert position.fen() == o.fen and len(o.moves) == 4 and abs(o.cp) <= 50


@needs_fsf
def test_a_ladder_is_calibrated_published_and_played(tmp_path):
    from agents.arena.ladder import (
        Ladder, balanced_openings, calibrate, ladder_table, node_engines, play_ladder, write_ladder)

    openings = balanced_openings("gardner", 3, seed=0, nodes=100)
    engines = node_engines("gardner", (1, 100))
    ratings, matches = calibrate("gardner", openings, engines, games=6, workers=1)
    assert ratings["fsf-n1"].elo == 0 and ratings["fsf-n100"].elo > 0
    assert [(m.a, m.b, len(m.games)) for m in matches] == [("fsf-n1", "fsf-n100", 6)]
    path = write_ladder("gardner", openings, ratings, {"test": True}, engines, "fsf-n1 = 0", matches,
                        path=str(tmp_path / "gardner.json"))
    ladder = Ladder.load("gardner", path)
    assert ladder.openings == openings and ladder.levels["fsf-n1"] == 0 and ladder.engines == engines
    assert play_ladder(GreedyAgent(), "gardner", levels=["fsf-n100"], ladder=ladder, workers=1).levels == \
        {"fsf-n100": ratings["fsf-n100"].elo}
    result = play_ladder(GreedyAgent(), "gardner", levels=(1, 100), ladder=ladder, workers=1)
    assert [m.b for m in result.matches] == ["fsf-n1", "fsf-n100"]
    assert all(len(m.games) == 6 for m in result.matches)  # every opening with both colors
    assert result.elo.games == 12 and result.elo.low <= result.elo.elo <= result.elo.high
    assert "| fsf-n100 |" in ladder_table(result)
    with pytest.raises(ValueError, match="no calibrated level 10 nodes; its levels: fsf-n1, fsf-n100"):
        play_ladder(GreedyAgent(), "gardner", levels=(10,), ladder=ladder)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="bad.json"):
        Ladder.load("gardner", str(tmp_path / "bad.json"))


def test_the_engine_ladder_is_the_published_one_or_none_saying_why(capsys):
    from agents.arena.ladder import Ladder, engine_ladder

    ladder = engine_ladder("gardner")
    if HAVE_FSF:
        assert ladder == Ladder.load("gardner") and len(ladder.openings) == 100
    else:
        assert ladder is None and "no strength ladder: fairy-stockfish not found" in capsys.readouterr().out


@pytest.mark.parametrize("spec, problem", [({"engine": "stockfish", "path": "/bin/sh"}, "sets path"),
                                           ({"engine": "stockfish", "depth": 2, "options": {"EvalFile": "x"}},
                                            "names a file")])
def test_a_ladder_file_cannot_choose_the_program_or_a_file_the_engine_reads(tmp_path, spec, problem):
    from agents.arena.ladder import Ladder

    data = json.load(open(os.path.join("agents", "arena", "ladders", "chess.json")))
    data["engines"]["stockfish-elo1350"] = spec
    (tmp_path / "chess.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=problem):
        Ladder.load("chess", str(tmp_path / "chess.json")).agents()


def test_the_8x8_ladder_levels_follow_stockfish_elo_to_skill_mapping():
    """Stockfish 15.1's search.cpp: UCI_Elo 1346.6 + 143.4 * level ** 0.806 (skill level 0 = UCI_Elo 1346.6)."""
    from agents.arena.ladder import ELO_LEVELS, Ladder, elo_engines, skill_level

    for level in range(20):
        assert skill_level(1346.6 + 143.4 * level ** 0.806) == pytest.approx(level)
    ladder = Ladder.load("chess")
    assert ladder.engines == elo_engines(ELO_LEVELS) and list(ladder.levels) and not ladder.node_levels()
    assert ladder.levels["stockfish-elo1350"] == 1350 and "CCRL" in ladder.scale


@pytest.mark.needs_engine("stockfish")
def test_each_8x8_level_searches_4_lines_to_the_depth_where_its_skill_chooses():
    """Skill level l chooses among 4 lines (searched behind the scenes; Stockfish reports one) when iteration 1 + l
    ends, l rounded up or down at random: the level's depth limit must let Stockfish finish that iteration at either
    rounding, and stop there."""
    from agents.arena.ladder import Ladder, skill_level
    from agents.players.uci import find_engine

    ladder = Ladder.load("chess")
    for name in ("stockfish-elo1350", "stockfish-elo1800", "stockfish-elo2400"):
        spec = ladder.engines[name]
        elo = spec["options"]["UCI_Elo"]
        script = (f"uci\nsetoption name UCI_LimitStrength value true\nsetoption name UCI_Elo value {elo}\n"
                  "isready\nposition startpos moves e2e4 c7c5\ngo depth " + str(spec["depth"]) + "\n")
        proc = subprocess.Popen([find_engine("stockfish")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        out = []
        proc.stdin.write(script)
        proc.stdin.flush()
        for line in proc.stdout:
            out.append(line)
            if line.startswith("bestmove"):
                break
        proc.stdin.write("quit\n")
        proc.stdin.close()
        proc.wait(timeout=10)
        depths = [int(line.split()[2]) for line in out if line.startswith("info depth")]
        assert spec["depth"] == 2 + math.floor(skill_level(elo))
        assert sorted(set(depths)) == list(range(1, spec["depth"] + 1))


@pytest.mark.needs_engine("stockfish")
def test_a_ladder_refuses_an_engine_other_than_the_one_it_was_calibrated_with(tmp_path):
    from agents.arena.ladder import Ladder, play_ladder

    ladder = Ladder.load("chess")
    assert ladder.engine_id == "Stockfish 15.1"  # Debian's, whose UCI_Elo formula skill_level follows
    engines = ladder.agents(["stockfish-elo1350"])
    assert engines[0].id_name == "Stockfish 15.1"
    engines[0].close()
    data = json.load(open(os.path.join("agents", "arena", "ladders", "chess.json")))
    data["engine_id"] = "Stockfish 16.1"
    (tmp_path / "chess.json").write_text(json.dumps(data))
    other = Ladder.load("chess", str(tmp_path / "chess.json"))
    with pytest.raises(ValueError, match="calibrated with Stockfish 16.1; .* is Stockfish 15.1"):
        play_ladder(RandomAgent(), "chess", ladder=other)
