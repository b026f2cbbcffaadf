"""The experiment scripts run both ways the README documents: ``python experiments/x.py`` and
``python -m experiments.x``, from the repository root, with no ``sys.path`` edits of their own."""

from __future__ import annotations

import csv
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


def quick_run(args: list[str], out) -> None:
    """The experiment ``args`` at its quick preset, writing ``out``; the test fails with its stderr if it fails."""
    done = run([*args, "--preset", "quick", "--out", str(out)])
    assert done.returncode == 0, done.stderr[-2000:]


def read_rows(path) -> list[dict]:
    """A CSV file's rows."""
    with open(path) as f:
        return list(csv.DictReader(f))


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


def test_a_quick_ppo_gardner_run_trains_and_judges_both_rule_sets(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    import agents

    quick_run(["experiments/ppo_gardner.py"], tmp_path)
    results = read_rows(tmp_path / "results.csv")
    assert {(r["trained_rules"], r["eval_rules"], r["color"]) for r in results} == {
        (t, e, c) for t in ("kingcapture", "checkmate") for e in ("kingcapture", "checkmate")
        for c in ("white", "black")}
    assert all(int(r["games"]) == 10 and 0 <= float(r["win_rate"]) <= 1 for r in results)
    assert len(read_rows(tmp_path / "baselines.csv")) == 16  # 4 players, 2 colors, 2 rule sets
    assert {int(m["games"]) for m in read_rows(tmp_path / "matches.csv")} == {2}
    for rules in ("kingcapture", "checkmate"):
        metrics = read_rows(tmp_path / f"native_{rules}_random" / "metrics.csv")
        assert len(metrics) == 1 and "win_rate_white" in metrics[0]
        assert agents.load(str(tmp_path / f"native_{rules}_random" / "agent")) is not None


def test_a_tiny_leaderboard_runs_both_ways_and_states_the_machine(tmp_path):
    for k, launch in enumerate((["experiments/leaderboard.py"], ["-m", "experiments.leaderboard"])):
        out = tmp_path / f"out{k}"
        done = run([*launch, "--preset", "quick", "--variant", "3x3", "--runs", str(tmp_path / "runs"),
                    "--out", str(out), "--workers", "1"])
        assert done.returncode == 0, done.stderr[-2000:]
        report = (out / "leaderboard.md").read_text()
        assert "load average" in report and f"({os.cpu_count()} cores)" in report


@pytest.mark.needs_engine("fairy-stockfish")
def test_a_tiny_gardner_run_plays_the_ladder_as_it_goes_and_at_the_end(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    import agents

    out = tmp_path / "gardner"
    quick_run(["experiments/alphazero_gardner.py"], out)
    agent = agents.load(str(out / "agent"))
    assert agent.search.move_choice == "lcb" and agent.simulations == 4  # the quick preset's judged search
    rows = read_rows(out / "metrics.csv")
    assert [int(r["iteration"]) for r in rows] == [1, 2]
    assert rows[-1]["ladder_elo"] and float(rows[-1]["training_s"]) > 0 and rows[-1]["ladder_fsf-n1_score"]
    assert not rows[0]["ladder_elo"]  # a short ladder every 2 iterations
    assert (out / "elo_vs_time.png").exists() and (out / "pretrain" / "agent").is_dir()
    assert agents.load(str(out / "pretrain" / "agent")).net.config == agent.net.config
    # the final matches' games, kept for --resume: 2 against each minimax, 2 openings x 2 colours on the ladder
    assert len((out / "final-games-2-4.jsonl").read_text().splitlines()) == 2 * 2 + 2 * 2


@pytest.mark.needs_engine("fairy-stockfish")
def test_the_leaderboard_plays_checkpoints_through_the_ladder(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    import agents
    from agents.alphazero.train import Config, make_net, with_changes
    from agents.alphazero.agent import AlphaZeroAgent

    net = make_net(with_changes(Config(), game="gardner", blocks=1, channels=8, policy_channels=2))
    AlphaZeroAgent(net, "gardner", simulations=0).save(str(tmp_path / "runs" / "tiny"))
    assert agents.load(str(tmp_path / "runs" / "tiny")).simulations == 0
    out = tmp_path / "board"
    done = run(["experiments/leaderboard.py", "--preset", "quick", "--variant", "gardner", "--runs",
                str(tmp_path / "runs"), "--out", str(out), "--workers", "2", "--ladder"])  # quick: fsf-n1, 2 openings
    assert done.returncode == 0, done.stderr[-2000:]
    report = (out / "leaderboard.md").read_text()
    assert "## Strength ladder: tiny (gardner)" in report and "| fsf-n1 | +0 | 4 |" in report


def test_a_tiny_connect_four_run_reports_the_value_head_against_the_solver(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    pytest.importorskip("bitbully", reason="the judge needs the games extra (pip install -e '.[games]')")
    out = tmp_path / "c4"
    quick_run(["experiments/alphazero_connect4.py"], out)
    rows = read_rows(out / "metrics.csv")
    assert len(rows) == 2 and all(0 <= float(r["value_agreement"]) <= 1 and float(r["value_mse"]) >= 0 for r in rows)
    scores = {(r["player"], r["to move"]): r for r in read_rows(out / "scores.csv")}
    assert int(scores[("MCTS 8, LCB", "all")]["positions"]) == 40
    assert 0 <= float(scores[("raw policy", "all")]["value_preserving"]) <= 1
    matches = read_rows(out / "matches.csv")
    assert {(m["player"], m["opponent"], m["player moves"]) for m in matches} == {
        (p, o, s) for p in ("MCTS 8, LCB", "raw policy") for o in ("alpha-beta depth 4", "perfect solver")
        for s in ("first", "second")}
    import agents

    assert agents.load(str(out / "agent")).search.move_choice == "lcb"  # the agent plays as it was judged


def test_a_tiny_tictactoe_run_scores_every_position(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    import agents

    out = tmp_path / "ttt"
    quick_run(["-m", "experiments.alphazero_tictactoe"], out)
    rows = read_rows(out / "metrics.csv")
    assert len(rows) == 2 and all(0 <= float(r["score_mcts_value_preserving"]) <= 1 for r in rows)
    scores = {(r["player"], r["to move"]): r for r in read_rows(out / "scores.csv")}
    assert int(scores[("raw policy", "all")]["positions"]) == 4520
    assert float(scores[("raw policy", "all")]["value_preserving"]) == float(rows[-1]["score_policy_value_preserving"])
    matches = read_rows(out / "matches.csv")
    assert len(matches) == 8 and all(int(m["games"]) == 2 for m in matches)
    assert agents.load(str(out / "agent")).simulations == 8


def test_a_tiny_checkers_run_plays_every_judge_with_both_colours(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    pytest.importorskip("open_spiel", reason="a judge is OpenSpiel's MCTS bot (pip install open-spiel)")
    import agents

    out = tmp_path / "checkers"
    quick_run(["experiments/alphazero_checkers.py"], out)
    rows = read_rows(out / "metrics.csv")
    assert [int(r["iteration"]) for r in rows] == [1, 2] and all(0 <= float(r["score_policy_vs_ab2"]) <= 1
                                                                 for r in rows)
    matches = read_rows(out / "matches.csv")
    fast = {"random", "alpha-beta depth 4", "openspiel mcts 4"}
    assert {(m["player"], m["opponent"], m["player moves"]) for m in matches} == {
        (p, o, s) for p in ("MCTS 4, LCB", "raw policy") for o in fast for s in ("first", "second")} | {
        ("MCTS 4, LCB", "openspiel mcts 8", s) for s in ("first", "second")}
    assert all(0 <= float(m["score_low"]) <= float(m["score"]) <= float(m["score_high"]) <= 1 for m in matches)
    assert {m["opponent"]: int(m["games"]) for m in matches} == {"random": 2, "alpha-beta depth 4": 1,
                                                                 "openspiel mcts 4": 1, "openspiel mcts 8": 1}
    agent = agents.load(str(out / "agent"))
    assert agent.search.move_choice == "lcb" and agent.simulations == 4  # the agent plays as it was judged


def test_a_tiny_ppo_checkers_run_is_judged_by_alpha_beta(tmp_path):
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    import agents

    out = tmp_path / "ppo_checkers"
    quick_run(["experiments/ppo_boardgames.py", "--game", "checkers"], out)
    metrics = read_rows(out / "metrics.csv")
    assert len(metrics) == 1 and int(metrics[0]["env_steps"]) >= 512 and 0 <= float(metrics[0]["win_rate_first"]) <= 1
    matches = read_rows(out / "matches.csv")
    assert {(m["player"], m["opponent"], m["player moves"]) for m in matches} == {
        (p, o, s) for p in ("PPO", "baseline: random") for o in ("random", "alpha-beta depth 2")
        for s in ("first", "second")}
    assert all(int(m["games"]) == (10 if m["opponent"] == "random" else 2) for m in matches)
    assert not (out / "scores.csv").exists()  # no solver for checkers: matches only
    assert agents.load(str(out / "agent")).game == "checkers"


def test_a_tiny_3x3_run_scores_every_position_and_saves_its_agent(tmp_path):
    # the README's main job, end to end: training, the tablebase judging every position, the saved agent
    pytest.importorskip("torch", reason="the experiment needs the agents extra (pip install -e '.[agents]')")
    import agents

    out = tmp_path / "3x3"
    quick_run(["experiments/alphazero_3x3.py"], out)
    rows = read_rows(out / "metrics.csv")
    assert [int(r["iteration"]) for r in rows] == [1, 2]
    assert all(0 <= float(r["score_policy_value_preserving"]) <= 1 for r in rows)
    assert agents.load(str(out / "agent")).simulations == 8 and (out / "report.md").stat().st_size > 0
