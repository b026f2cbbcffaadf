"""benchmarks/bench_scale.py's quick run (AlphaZero self-play in local and Ray workers, RLlib PPO with remote
EnvRunners, the bytes per iteration) and the multi-machine plan it backs: docs/scale.md and docs/ray-cluster.yaml."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER_YAML = os.path.join(ROOT, "docs", "ray-cluster.yaml")


@pytest.mark.slow
def test_the_quick_scale_benchmark_reports_rates_shares_and_bytes(tmp_path):
    pytest.importorskip("torch", reason="the benchmark needs the agents extra (pip install -e '.[agents]')")
    pytest.importorskip("ray.rllib", reason="the benchmark needs the rllib extra (pip install -e '.[rllib]')")
    out = tmp_path / "scale.json"
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "benchmarks/bench_scale.py", "--quick", "--json", str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["quick"] and results["cores"] == os.cpu_count() and results["cpu"]
    assert len(results["machine"]["load_average"]) == 3 and len(results["machine_end"]["load_average"]) == 3

    assert set(results["alphazero"]) == {"3x3", "gardner"}
    for game, expected in (("3x3", {("local", 2), ("ray", 2)}), ("gardner", {("local", 1)})):
        part = results["alphazero"][game]
        assert {(p["kind"], p["workers"]) for p in part["points"]} == expected
        for p in part["points"]:
            assert p["samples"] > 0 and p["selfplay_positions_per_s"] > 0 and p["loop_positions_per_s"] > 0
            assert p["loop_positions_per_s"] < p["selfplay_positions_per_s"]  # the loop also waits for the learner
            assert 0 < p["learner_share"] < 1 and p["learner_s_per_position"] > 0
        net = part["network"]
        assert net["workers"] == 2 and net["share_positions"] > 0 and net["parameters"] > 0
        assert net["weights_bytes"] > 4 * net["parameters"]  # float32 parameters and their names
        assert net["out_bytes_per_iteration"] == 2 * net["weights_bytes"] + net["jobs_bytes"] > 0
        assert 0 < net["samples_bytes_per_position"] <= net["back_bytes_per_position"]  # results add the games
        assert net["back_bytes_per_iteration"] == pytest.approx(
            net["back_bytes_per_position"] * net["positions_per_iteration"])
    gardner, small = results["alphazero"]["gardner"]["network"], results["alphazero"]["3x3"]["network"]
    assert gardner["samples_bytes_per_position"] > small["samples_bytes_per_position"]  # 1,225 actions against 3x3's
    by = {(p["kind"], p["workers"]): p for p in results["alphazero"]["3x3"]["points"]}
    assert results["alphazero"]["3x3"]["ray2_over_local2"] == pytest.approx(
        by["ray", 2]["selfplay_positions_per_s"] / by["local", 2]["selfplay_positions_per_s"])

    (ppo,) = results["ppo"]
    assert ppo["runners"] == 1 and ppo["env_steps"] > 0
    assert 0 < ppo["env_steps_per_s"] < ppo["sample_steps_per_s"]  # the iteration also waits for the learner
    assert 0 < ppo["learner_share"] < 1 and 0 < ppo["sample_s"] < ppo["iteration_s"]
    assert ppo["network"]["weights_bytes"] > 0 and ppo["network"]["episodes_bytes"] > 0
    assert ppo["network"]["episode_steps"] > 0 and ppo["network"]["back_bytes_per_step"] > 0

    projections = [part["projection"] for part in results["alphazero"].values()] + [results["ppo_projection"]]
    for projected in projections:  # Amdahl: more workers never slower, never past the learner's bound
        rates = [projected[str(n)] for n in (1, 2, 4, 16, 64)]
        assert all(a < b for a, b in zip(rates, rates[1:])) and rates[-1] < projected["bound"]

    for heading in ("| workers | n |", "| direction | what | bytes an iteration |", "| EnvRunners |", "Ray 2 / local 2",
                    "| loop | r (per worker, /s) |", "load average"):
        assert heading in done.stdout, heading


def cluster_config() -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with Ray: pip install -e '.[rllib]'")
    with open(CLUSTER_YAML) as f:
        return yaml.safe_load(f)


def test_the_cluster_yaml_has_what_the_launcher_needs():
    config = cluster_config()
    assert config["cluster_name"]
    provider = config["provider"]
    assert provider["type"] == "local" and provider["head_ip"] and provider["worker_ips"]
    assert any("ray start --head" in c for c in config["head_start_ray_commands"])
    assert any("ray start --address" in c for c in config["worker_start_ray_commands"])
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):  # every node in token mode, one token
        starts = [c for c in config[key] if "ray start" in c]
        assert all("RAY_AUTH_MODE=token" in c and "RAY_AUTH_TOKEN_PATH=" in c for c in starts), key
    installs = [c for c in config["setup_commands"] if "pip install" in c and "minichess-envs" in c]
    assert installs, "setup_commands must install minichess-envs"
    import minichess_envs

    pinned = re.search(r"minichess-envs\[[a-z,]*\]==([\w.]+)", installs[0])
    assert pinned and pinned.group(1) == minichess_envs.__version__, "the driver's version on every node"
    ray_pin = re.search(r"ray\[[a-z,]*\]==([\w.]+)", " ".join(config["setup_commands"]))
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        extra = re.search(r'rllib = \["ray\[rllib\]==([\w.]+)"', f.read())
    assert ray_pin and extra and ray_pin.group(1) == extra.group(1), "the Ray of the rllib extra"


def test_the_cluster_yaml_passes_rays_own_schema():
    cluster_config()
    util = pytest.importorskip("ray.autoscaler._private.util", reason="needs Ray's cluster launcher")
    util.validate_config(util.prepare_config(cluster_config()))  # what `ray up` checks; raises when invalid


def test_the_scale_docs_link_the_cluster_yaml_and_the_measurements():
    with open(os.path.join(ROOT, "docs", "scale.md")) as f:
        text = f.read()
    assert "(ray-cluster.yaml)" in text and "(results/scale.md)" in text
    for needle in ("ray start --head", "ray start --address", "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN_PATH",
                   "--ray-address", "https://docs.ray.io/"):
        assert needle in text, needle
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "dated figures belong in docs/results/scale.md"
    with open(os.path.join(ROOT, "docs", "results", "README.md")) as f:
        assert "(scale.md)" in f.read()
