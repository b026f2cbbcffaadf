"""EnvPool as a benchmark peer (benchmarks/peers.py's envpool_chess, bench_envs.py's equal-history rows): the
structure and invariants of tiny runs, not figures. Skips where envpool is missing (the bench extra)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import peers  # noqa: E402

NEEDS_ENVPOOL = "the EnvPool peer needs envpool (pip install -e '.[bench]')"


def test_the_sampler_draws_legal_actions_uniformly_and_zero_where_none_is_legal():
    rng = np.random.default_rng(0)
    masks = rng.random((500, 40)) < 0.2
    masks[::7] = False  # rows with no legal action
    actions = peers.sample_legal(masks, rng)
    has_legal = masks.any(1)
    assert masks[np.arange(len(masks)), actions][has_legal].all()
    assert (actions[~has_legal] == 0).all()

    row = np.zeros(10, bool)
    row[[1, 4, 5, 9]] = True
    draws = peers.sample_legal(np.tile(row, (40_000, 1)), rng)
    counts = np.bincount(draws, minlength=10)
    assert set(np.flatnonzero(counts)) == {1, 4, 5, 9}
    assert np.abs(counts[[1, 4, 5, 9]] / len(draws) - 0.25).max() < 0.02


def test_the_envpool_peer_reports_rates_and_the_observation_it_writes():
    envpool = pytest.importorskip("envpool", reason=NEEDS_ENVPOOL)
    res = peers.envpool_chess("GardnerChess-v1", batch_sizes=(4, 8), threads=(1, 2), seconds=0.2, warmup_s=0.05)
    assert res["available"], res.get("reason")
    assert res["versions"]["envpool"] == envpool.__version__

    # what EnvPool itself returns
    env = envpool.make("GardnerChess-v1", env_type="gymnasium", num_envs=3, batch_size=3, num_threads=1, seed=0)
    obs, info = env.reset()
    env.close()
    assert tuple(res["obs_shape"]) == obs.shape[1:] == (5, 5, 115)
    assert res["obs_dtype"] == str(obs.dtype) == "float32"
    assert res["obs_per_env_step"] == obs.shape[0] // 3 == 2  # both players' views of every game
    assert res["num_actions"] == info["legal_action_mask"].shape[1] == 1225

    assert {(r["batch"], r["threads"]) for r in res["runs"]} == {(4, 1), (4, 2), (8, 1), (8, 2)}
    for r in res["runs"]:
        assert r["plies"] > 0 and r["env_steps"] % r["batch"] == 0
        assert r["obs_rows"] == 2 * r["batch"]
        for key in ("plies_per_s", "env_steps_per_s", "plies_per_s_in_step", "env_steps_per_s_in_step"):
            assert r[key] > 0
        assert r["plies_per_s_in_step"] >= r["plies_per_s"]  # step() is part of the loop
        # an env step is a ply, or the reset of a game that ended on the step before
        assert r["plies"] <= r["env_steps"] <= r["plies"] + r["games_finished"] + r["batch"]
        assert abs(r["plies_per_s"] / r["env_steps_per_s"] - r["plies"] / r["env_steps"]) < 1e-9
        # the masks are respected: every sampled action of a running game was legal, and every running game
        # had a legal move
        assert r["illegal_actions_sampled"] == 0 and r["live_games_without_legal_move"] == 0
    best = max(res["runs"], key=lambda r: r["plies_per_s"])
    assert res["best"] == {"batch": best["batch"], "threads": best["threads"]}
    assert res["best_plies_per_s"] == best["plies_per_s"]
    json.dumps(res)  # bench_envs.py --json writes it


def test_the_envpool_peer_plays_8x8_and_reports_a_missing_task():
    pytest.importorskip("envpool", reason=NEEDS_ENVPOOL)
    res = peers.envpool_chess("Chess-v1", batch_sizes=(2,), threads=(1,), seconds=0.1, warmup_s=0.02)
    assert res["available"] and tuple(res["obs_shape"]) == (8, 8, 119) and res["num_actions"] == 4672
    assert res["runs"][0]["illegal_actions_sampled"] == 0 and res["runs"][0]["plies"] > 0
    missing = peers.envpool_chess("NoSuchChess-v1", seconds=0.01)
    assert missing["available"] is False and "NoSuchChess-v1" in missing["reason"]


def test_our_vector_env_counts_plies_exactly_at_history_8():
    import bench_envs

    r = bench_envs.vector_env(0.2, 8, "vector_entry_point", "MiniChess-Gardner-v0", history=8)
    assert r["obs_shape"] == (5, 5, 116) and r["history"] == 8
    # our env step is the learner's move and the opponent's reply, fewer at a game's end or reset
    assert 0 < r["plies"] <= 2 * r["steps"] and r["plies"] > r["steps"]
    assert r["plies_per_s_in_step"] >= r["plies_per_s"] > 0


def test_bench_envs_prints_envpool_beside_ours_at_equal_history(tmp_path, capsys):
    pytest.importorskip("envpool", reason=NEEDS_ENVPOOL)
    import bench_envs

    out = tmp_path / "envs.json"
    assert bench_envs.main(["--seconds", "0.05", "--batches", "1", "--envpool-batches", "2",
                            "--envpool-threads", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    for line in ("ours gardner native vector x2, history 8", "EnvPool GardnerChess-v1 batch 2, 1 thread",
                 "ours chess native vector x2, history 8", "EnvPool Chess-v1 batch 2, 1 thread",
                 "gardner, history 8: ours", "target >= 5x"):
        assert line in printed, line
    results = json.loads(out.read_text())
    ratios = results["equal_history"]["ratios"]
    assert set(ratios) >= {"gardner", "chess"}
    gardner = ratios["gardner"]
    assert gardner["ratio"] == pytest.approx(gardner["ours_plies_per_s"] / gardner["envpool_plies_per_s"])
    assert gardner["target_met"] == (gardner["ratio"] >= 5)
    assert results["envpool"]["gardner"]["obs_shape"] == [5, 5, 115]
