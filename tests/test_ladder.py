"""The strength ladder: openings, both colors per opening, calibrated levels, the agent's Elo."""

from __future__ import annotations

import shutil

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
    from agents.arena.ladder import Ladder, balanced_openings, calibrate, ladder_table, play_ladder, write_ladder

    openings = balanced_openings("gardner", 3, seed=0, nodes=100)
    ratings = calibrate("gardner", openings, levels=(1, 100), games=6, workers=1)
    assert ratings["fsf-n1"].elo == 0 and ratings["fsf-n100"].elo > 0
    path = write_ladder("gardner", openings, ratings, {"test": True}, str(tmp_path / "gardner.json"))
    ladder = Ladder.load("gardner", path)
    assert ladder.openings == openings and ladder.levels["fsf-n1"] == 0
    result = play_ladder(GreedyAgent(), "gardner", levels=(1, 100), ladder=ladder, workers=1)
    assert [m.b for m in result.matches] == ["fsf-n1", "fsf-n100"]
    assert all(len(m.games) == 6 for m in result.matches)  # every opening with both colors
    assert result.elo.games == 12 and result.elo.low <= result.elo.elo <= result.elo.high
    assert "| fsf-n100 |" in ladder_table(result)
    with pytest.raises(ValueError, match="no calibrated rating for fsf-n10"):
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
