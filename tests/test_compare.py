"""experiments/compare.py: its progress-showing evaluation plays the same games, and it draws its plot."""

from __future__ import annotations

import argparse
import os
import time

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


def test_alphazero_cost_leaves_the_evaluations_out_and_names_the_workers(tmp_path):
    from agents.alphazero.search import SearchConfig
    from agents.alphazero.train import Config, train, with_changes
    from agents.runs import RunState, read_state, save_checkpoint

    config = with_changes(Config(), game="3x3", run_dir=str(tmp_path), iterations=2, games_per_iteration=8,
                          search=SearchConfig(simulations=4), blocks=1, channels=8, batch_size=16, threads=1)
    state = train(config, evaluate=lambda net, iteration: time.sleep(0.5) or {}, verbose=False)
    positions, seconds, cores = compare.alphazero_cost(str(tmp_path))
    assert positions == sum(m["samples"] for m in state["metrics"]) > 0
    elapsed = read_state(str(tmp_path / "checkpoint")).elapsed_s
    assert 0 < seconds <= elapsed - 2 * 0.5  # the two evaluations' sleeps are not training
    assert cores.startswith("1 torch threads, self-play in process")
    settings = {"scale": {"threads": 1, "workers": 2, "ray_address": None}}
    save_checkpoint(str(tmp_path / "workers"), RunState("alphazero", settings, 1, 10, 5.0, [
        {"samples": 10, "elapsed_s": 5.0, "training_s": 4.0}]))
    assert compare.alphazero_cost(str(tmp_path / "workers"))[1:] == (
        4.0, f"1 torch threads, self-play in 2 worker processes ({os.cpu_count()}-core machine)")
