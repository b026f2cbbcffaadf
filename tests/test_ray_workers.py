"""Ray workers of :class:`agents.workers.WorkerPool` on a local Ray instance: a lost actor's job goes to the others
when the cluster has no room for its replacement, a cluster with no room at all is named, an unreachable address
is named at once. The same on a real two-node cluster: tests/test_ray_cluster.py."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[rllib]'")
pytest.importorskip("torch", reason="the self-play workers need torch: pip install -e '.[agents]'")

from agents.alphazero import train as train_module  # noqa: E402
from agents.alphazero.selfplay import numpy_weights, share_jobs  # noqa: E402
from agents.games import new_game  # noqa: E402
from agents.players.random_agent import RandomAgent  # noqa: E402
from agents.workers import ClusterError, WorkerPool, connect_ray  # noqa: E402
from test_alphazero import make_net, tiny_config  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def two_cpus():
    """A fresh local Ray instance with two CPUs, shut down afterwards."""
    ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def jobs_and_weights(tmp_path, shares: int):
    config = tiny_config(tmp_path, workers=shares)
    starts = [(new_game("3x3"), None) for _ in range(8)]
    return config, numpy_weights(make_net(config)), share_jobs(starts, shares, np.random.default_rng(0))


def test_a_lost_actors_job_goes_to_the_others_when_no_room_is_left(tmp_path, two_cpus):
    config, weights, jobs = jobs_and_weights(tmp_path, 4)
    settings = dataclasses.asdict(config)
    with WorkerPool(train_module.SelfPlayer, settings, 2, "local") as pool:
        expected = pool.play(weights, jobs)
        pool.submit(weights, jobs)
        ray.kill(pool.workers[0])
        blocker = ray.remote(num_cpus=1)(RandomAgent).remote(0)  # takes the lost actor's CPU: no room to replace it
        ray.get(blocker.__ray_ready__.remote())
        # played again from its seed by the other worker
        assert pickle.dumps(pool.collect()) == pickle.dumps(expected)
        assert pool.restarts == 1
        ray.kill(blocker)


def test_a_cluster_with_no_room_for_any_worker_is_named(tmp_path, two_cpus):
    config, weights, jobs = jobs_and_weights(tmp_path, 1)
    blockers = [ray.remote(num_cpus=1)(RandomAgent).remote(k) for k in range(2)]
    ray.get([b.__ray_ready__.remote() for b in blockers])
    pool = WorkerPool(train_module.SelfPlayer, dataclasses.asdict(config), 1, "local", start_timeout=3)
    started = time.monotonic()
    with pytest.raises(ClusterError, match=r"no Ray worker has started in 3 s: the cluster has 1 live node\(s\) "
                                           r"with 2 CPUs, 0 free; each worker needs 1 CPU"):
        pool.play(weights, jobs)
    assert time.monotonic() - started < 60
    pool.stop()


def test_an_unreachable_or_malformed_address_is_named_at_once():
    ray.shutdown()
    started = time.monotonic()
    with pytest.raises(ClusterError, match=r"cannot reach a Ray cluster at 127\.0\.0\.1:9 \(Connection refused\)"):
        connect_ray("127.0.0.1:9")
    assert time.monotonic() - started < 10
    with pytest.raises(ClusterError, match="'somewhere' is not host:port"):
        connect_ray("somewhere")


def test_the_experiment_names_an_unreachable_cluster_in_one_line_and_keeps_its_checkpoint(tmp_path):
    script = os.path.join(ROOT, "experiments", "alphazero_3x3.py")
    options = ["--preset", "quick", "--workers", "1", "--out", str(tmp_path / "run")]
    first = subprocess.run([sys.executable, script, *options, "--iterations", "1"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    checkpoint = tmp_path / "run" / "checkpoint"
    saved = {p.name: p.read_bytes() for p in checkpoint.iterdir()}
    run = subprocess.run([sys.executable, script, *options, "--resume", "--ray-address", "127.0.0.1:9"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith(
        "error: cannot reach a Ray cluster at 127.0.0.1:9 (Connection refused): start its head with")
    assert {p.name: p.read_bytes() for p in checkpoint.iterdir()} == saved
