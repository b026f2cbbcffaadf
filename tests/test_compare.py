"""experiments/compare.py: its progress-showing evaluation plays the same games, and it draws its plot."""

from __future__ import annotations

import argparse

import pytest

pytest.importorskip("torch", reason="experiments/compare.py needs the [agents] extra")

from agents import GreedyAgent  # noqa: E402
from agents.arena.evaluation import versus_random  # noqa: E402
from agents.runs import Progress  # noqa: E402
from experiments import compare  # noqa: E402


def test_shown_in_batches_the_games_are_the_same():
    bar = Progress(2 * 600, "test", unit="game", verbose=False)
    for k, color in enumerate(compare.COLORS):
        shown = compare.versus_random_shown(GreedyAgent(0), "3x3", 600, color, bar, k * 600)
        assert shown == versus_random(GreedyAgent(0), "3x3", games=600, color=color, seed=0)
    assert bar.done == 1200


def test_an_evaluation_row_and_the_report_with_its_plot(tmp_path):
    args = argparse.Namespace(games=300, out=str(tmp_path))
    player = compare.Player("greedy", GreedyAgent(0), "baseline")
    row = compare.evaluate_player(player, "gardner", args)
    assert row["vs_random_white_wins"] + row["vs_random_white_draws"] + row["vs_random_white_losses"] == 300
    text = compare.report([row], [], [], argparse.Namespace(games=300, h2h_games=0, opening_plies=2), 1.0, "here")
    assert "compare.png" in text
