"""The experiment scripts run both ways the README documents: ``python experiments/x.py`` and
``python -m experiments.x``, from the repository root, with no ``sys.path`` edits of their own."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "experiments", "*.py"))
                 if not p.endswith("__init__.py"))


def run(args: list[str]) -> subprocess.CompletedProcess:
    # The package must be importable, as `pip install -e .` makes it; PYTHONPATH points at this checkout
    # so that the test runs this checkout's code wherever the package is installed from.
    env = {**os.environ, "PYTHONPATH": ROOT, "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_no_script_imports_another_script():
    # `python experiments/x.py` puts experiments/ (not the repository root) on sys.path, so shared code
    # must live in the installed packages, not in a sibling script.
    for path in glob.glob(os.path.join(ROOT, "experiments", "*.py")):
        text = open(path).read()
        assert "from experiments" not in text and "import experiments" not in text, path


def test_no_script_edits_sys_path():
    for folder in ("experiments", "benchmarks"):
        for path in glob.glob(os.path.join(ROOT, folder, "*.py")):
            assert "sys.path" not in open(path).read(), path


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_experiment_starts_as_a_script_and_as_a_module(name):
    pytest.importorskip("torch", reason="the experiments need the agents extra (pip install -e '.[agents]')")
    for args in ([f"experiments/{name}.py", "--help"], ["-m", f"experiments.{name}", "--help"]):
        done = run(args)
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stderr[-2000:]}"
        assert "usage:" in done.stdout


def test_a_tiny_leaderboard_runs_both_ways_and_states_the_machine(tmp_path):
    for k, launch in enumerate((["experiments/leaderboard.py"], ["-m", "experiments.leaderboard"])):
        out = tmp_path / f"out{k}"
        done = run([*launch, "--variant", "3x3", "--games", "2", "--reference-games", "20", "--depths", "1",
                    "--no-engines", "--runs", str(tmp_path / "runs"), "--out", str(out), "--workers", "1"])
        assert done.returncode == 0, done.stderr[-2000:]
        report = (out / "leaderboard.md").read_text()
        assert "load average" in report and f"({os.cpu_count()} cores)" in report


def test_a_tiny_gardner_run_plays_the_ladder_as_it_goes_and_at_the_end(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    from agents.players.uci import EngineNotFoundError, find_engine

    try:
        find_engine("fairy-stockfish")
    except EngineNotFoundError as exc:
        pytest.skip(str(exc))
    out = tmp_path / "gardner"
    done = run(["experiments/alphazero_gardner.py", "--out", str(out), "--iterations", "2", "--games", "4",
                "--simulations", "4", "--eval-games", "2", "--final-games", "2", "--opponent-games", "2",
                "--ladder-every", "2", "--ladder-openings", "1", "--ladder-levels", "1", "--final-levels", "1",
                "--final-openings", "2", "--pretrain-games", "6", "--pretrain-epochs", "1", "--eval-simulations", "4",
                "--device", "cpu", "--threads", "1", "--blocks", "1", "--channels", "8",
                "--eval-move-choice", "lcb"])
    assert done.returncode == 0, done.stderr[-2000:]
    report = (out / "report.md").read_text()
    assert "searches with 4 simulations a move and plays the move with the best lower confidence bound" in report
    import agents

    assert agents.load(str(out / "agent")).search.move_choice == "lcb"
    assert "| fsf-n1 | +0 | 4 |" in report  # both colors of each opening
    assert "a short ladder (1 openings, both" in report and (out / "elo_vs_time.png").exists()
    header = (out / "metrics.csv").read_text().splitlines()[0]
    assert "ladder_elo" in header and "training_s" in header
    assert "The network first learned from 6 Fairy-Stockfish games" in report and (out / "pretrain" / "agent").is_dir()


def test_the_leaderboard_plays_checkpoints_through_the_ladder(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    from agents.players.uci import EngineNotFoundError, find_engine

    try:
        find_engine("fairy-stockfish")
    except EngineNotFoundError as exc:
        pytest.skip(str(exc))
    import agents
    from agents.alphazero.train import Config, make_net, with_changes
    from agents.alphazero.agent import AlphaZeroAgent

    net = make_net(with_changes(Config(), game="gardner", blocks=1, channels=8, policy_channels=2))
    AlphaZeroAgent(net, "gardner", simulations=0).save(str(tmp_path / "runs" / "tiny"))
    assert agents.load(str(tmp_path / "runs" / "tiny")).simulations == 0
    out = tmp_path / "board"
    done = run(["experiments/leaderboard.py", "--variant", "gardner", "--games", "2", "--reference-games", "2",
                "--depths", "1", "--no-engines", "--runs", str(tmp_path / "runs"), "--out", str(out),
                "--workers", "2", "--ladder", "--ladder-levels", "1", "--ladder-openings", "2"])
    assert done.returncode == 0, done.stderr[-2000:]
    report = (out / "leaderboard.md").read_text()
    assert "## Strength ladder: tiny (gardner)" in report and "| fsf-n1 | +0 | 4 |" in report


def test_a_tiny_connect_four_run_reports_the_value_head_against_the_solver(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    pytest.importorskip("bitbully", reason="the judge needs the games extra (pip install -e '.[games]')")
    import csv

    out = tmp_path / "c4"
    done = run(["experiments/alphazero_connect4.py", "--out", str(out), "--iterations", "2", "--games", "8",
                "--simulations", "8", "--sample", "40", "--match-games", "2", "--solver-games", "1",
                "--eval-simulations", "8"])
    assert done.returncode == 0, done.stderr[-2000:]
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    assert len(rows) == 2 and all(0 <= float(r["value_agreement"]) <= 1 and float(r["value_mse"]) >= 0 for r in rows)
    report = (out / "report.md").read_text()
    assert f"agrees with the solver's value of {float(rows[-1]['value_agreement']):.3f} of the sample" in report
    assert "| MCTS 8, LCB |" in report and "best lower confidence bound" in report
    import agents

    assert agents.load(str(out / "agent")).search.move_choice == "lcb"  # the agent plays as it was judged
