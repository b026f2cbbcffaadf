"""Checkpoint tournaments: pairings, Elo anchored at the first checkpoint, table and plot."""

from __future__ import annotations

import math
import shutil

import pytest

pytest.importorskip("torch")

from agents.players.greedy import GreedyAgent  # noqa: E402
from agents.players.random_agent import RandomAgent  # noqa: E402
from agents.arena.tournament import checkpoint_tournament, pairings_table, tournament_plot, tournament_table  # noqa: E402


def test_a_stronger_checkpoint_rates_higher_and_every_pair_is_linked(tmp_path):
    RandomAgent().save(str(tmp_path / "epoch-000"))
    GreedyAgent().save(str(tmp_path / "epoch-001"))
    result = checkpoint_tournament([str(tmp_path / "epoch-000"), str(tmp_path / "epoch-001")],
                                   "gardner-kingcapture", engine_nodes=(), games=40, seed=1)
    assert result.ratings["epoch-000"].elo == 0  # the anchor
    assert result.ratings["epoch-001"].low > 0  # greedy beats random under king capture, clearly
    assert [(m.a, m.b) for m in result.matches] == [("epoch-000", "epoch-001")]
    table = tournament_table(result)
    assert "| epoch-001 |" in table and "95% interval" in table
    # the pairing's own Elo: with two players the fit is closed-form, the score with one virtual draw added
    t = result.matches[0].tally()
    score = (t.wins + t.draws / 2 + 0.5) / (t.games + 1)
    row = next(line for line in pairings_table(result).splitlines() if line.startswith("| epoch-000 vs epoch-001"))
    assert f"| {t.wins}-{t.draws}-{t.losses} |" in row
    assert f"| {400 * math.log10(score / (1 - score)):+.0f} [" in row
    tournament_plot(result, str(tmp_path / "elo.png"))
    assert (tmp_path / "elo.png").stat().st_size > 1000


@pytest.mark.skipif(shutil.which("fairy-stockfish") is None and shutil.which("fairy-stockfish", path="/usr/games") is None,
                    reason="Fairy-Stockfish is not installed (apt install fairy-stockfish)")
def test_engine_levels_join_the_rating(tmp_path):
    RandomAgent().save(str(tmp_path / "a"))
    GreedyAgent().save(str(tmp_path / "b"))
    result = checkpoint_tournament([str(tmp_path / "a"), str(tmp_path / "b")], "gardner", engine_nodes=(1, 50),
                                   games=4, seed=0)
    pairs = {(m.a, m.b) for m in result.matches}
    assert pairs == {("a", "b"), ("a", "fsf-n1"), ("a", "fsf-n50"), ("b", "fsf-n1"), ("b", "fsf-n50"),
                     ("fsf-n1", "fsf-n50")}
    assert set(result.ratings) == {"a", "b", "fsf-n1", "fsf-n50"}
    assert result.ratings["fsf-n50"].elo > result.ratings["a"].elo  # the engine is far stronger than random


def test_every_checkpoint_also_plays_the_first(tmp_path):
    paths = []
    for i, agent in enumerate((RandomAgent(), RandomAgent(seed=1), GreedyAgent(), GreedyAgent(seed=2))):
        paths.append(str(tmp_path / f"epoch-{i:03d}"))
        agent.save(paths[-1])
    result = checkpoint_tournament(paths, "gardner-kingcapture", engine_nodes=(), games=2, seed=0)
    assert sorted((m.a, m.b) for m in result.matches) == [
        ("epoch-000", "epoch-001"), ("epoch-000", "epoch-002"), ("epoch-000", "epoch-003"),
        ("epoch-001", "epoch-002"), ("epoch-002", "epoch-003")]
