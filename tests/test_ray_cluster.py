"""The distributed path on a real two-node Ray cluster (tests/cluster.py: a head and a second raylet, each in its own
network namespace): AlphaZero self-play, the arena, the zoo's rating, RLlib's PPO and a Ray Tune sweep run on both
nodes, and a node killed mid-run costs only the games it was playing. Slow: ``.ci/run-slow`` runs them."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from cluster import ROOT, RayCluster, cluster_unavailable

pytestmark = pytest.mark.slow
pytest.importorskip("ray", reason="needs ray[rllib]: pip install -e '.[rllib]'")
torch = pytest.importorskip("torch", reason="the agents need torch: pip install -e '.[agents]'")

PYTHON = sys.executable


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = cluster_unavailable()
    if why:
        pytest.skip(f"no two-node Ray cluster here: {why}")
    made = RayCluster(str(tmp_path_factory.mktemp("ray_cluster")))
    try:
        yield made
    finally:
        print("\n".join(made.log))  # shown with -s, and in the report of a failed test
        made.close()


@pytest.fixture
def two_nodes(cluster):
    """The cluster with both nodes up (a test before may have killed the second)."""
    if cluster.alive_nodes() < 2:
        cluster.start_node()
    return cluster


def rows(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def wait_until(condition, process: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the run ended (rc {process.returncode}) before {what}:\n{process.stdout.read()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"no {what} in {timeout:.0f} s")
        time.sleep(0.2)


def test_alphazero_self_play_survives_a_lost_node_and_equals_the_run_that_lost_none(two_nodes, tmp_path):
    """The 3x3 experiment's smallest preset (more games) on both nodes' actors; the second node is killed while an
    iteration's games are played; the run ends with every iteration's samples and the final weights of the same run
    on two local worker processes."""
    from agents.alphazero.train import load_checkpoint

    options = ["--preset", "quick", "--iterations", "4", "--games", "256", "--simulations", "64", "--workers", "2"]
    script = os.path.join(ROOT, "experiments", "alphazero_3x3.py")
    reference = subprocess.run([PYTHON, script, *options, "--out", str(tmp_path / "local")], cwd=tmp_path,
                               capture_output=True, text=True, timeout=600)
    assert reference.returncode == 0, reference.stderr[-3000:]

    out = tmp_path / "cluster"
    run = two_nodes.popen([PYTHON, script, *options, "--ray-address", two_nodes.address, "--out", str(out)],
                          cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # an iteration's row is written after its evaluation: the next iteration's games are being played
    wait_until(lambda: any(r["worker_nodes"] == "2" for r in rows(str(out / "metrics.csv"))), run, 300,
               "iteration played on both nodes")
    time.sleep(0.3)
    killed = two_nodes.kill_node()
    output, _ = run.communicate(timeout=600)
    print(output[-2000:])
    assert run.returncode == 0, output[-3000:]
    assert killed > 0

    metrics = rows(str(out / "metrics.csv"))
    for name, table in (("two local processes", rows(str(tmp_path / "local" / "metrics.csv"))), ("cluster", metrics)):
        print(f"{name}: " + "; ".join(
            f"iteration {r['iteration']}: {r['samples']} samples, games {float(r['games_s']):.2f} s"
            + (f", nodes {r['worker_nodes']}, restarts {r['worker_restarts']}" if "worker_nodes" in r else "")
            for r in table))
    assert len(metrics) == 4 and int(metrics[-1]["worker_restarts"]) >= 1  # the lost node's actor was replaced
    straight, survived = load_checkpoint(str(tmp_path / "local")), load_checkpoint(str(out))
    assert [m["samples"] for m in survived["metrics"]] == [m["samples"] for m in straight["metrics"]]
    for name, tensor in straight["model"].items():
        assert torch.equal(tensor, survived["model"][name]), name


ARENA_DRIVER = """
import json, os, sys, time
import agents.arena as arena
from agents import GreedyAgent, MinimaxAgent

pools = []
class Recorded(arena.WorkerPool):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pools.append(self)
arena.WorkerPool = Recorded

def progress(record, done, total):
    if done == 4:  # a quarter through: the test kills the second node, then lets the match go on
        print("KILL", flush=True)
        while not os.path.exists("killed"):
            time.sleep(0.1)

result = arena.play_match(MinimaxAgent(2, seed=1), GreedyAgent(2), "gardner", 16, seed=5, workers=2,
                          ray_address=sys.argv[1], progress=progress)
print(json.dumps({"games": [[g.result, list(g.moves)] for g in result.games], "restarts": pools[0].restarts,
                  "nodes": sorted(pools[0].nodes)}))
"""


def test_an_arena_match_on_the_cluster_survives_a_lost_node_with_the_same_games(two_nodes, tmp_path):
    from agents import GreedyAgent, MinimaxAgent
    from agents.arena import play_match

    (tmp_path / "driver.py").write_text(ARENA_DRIVER)
    run = two_nodes.popen([PYTHON, "driver.py", two_nodes.address], cwd=str(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    line = run.stdout.readline()
    assert line.strip() == "KILL", line + run.stderr.read()[-3000:]
    two_nodes.kill_node()
    (tmp_path / "killed").touch()
    output, errors = run.communicate(timeout=600)
    assert run.returncode == 0, errors[-3000:]
    played = json.loads(output.strip().splitlines()[-1])
    assert played["nodes"] == sorted([two_nodes.head_ip, two_nodes.node_ip]) and played["restarts"] >= 1

    here = play_match(MinimaxAgent(2, seed=1), GreedyAgent(2), "gardner", 16, seed=5)  # one process, no Ray
    assert played["games"] == [[g.result, list(g.moves)] for g in here.games]


ZOO_DRIVER = """
import json, sys
from agents import zoo
from agents.players.random_agent import RandomAgent
from experiments import zoo as script

name = "tictactoe-alphazero"
done = script.Finished(name, zoo.card(name).casual, ray_address=sys.argv[1])
row = script.match(done, "rated", zoo.load(name), RandomAgent(1), "tictactoe", 20, "second")
print(json.dumps({"row": row, "workers": done.workers}))
"""


def test_the_zoo_rates_an_entry_on_the_cluster_as_on_one_machine(two_nodes, tmp_path, monkeypatch):
    from agents import zoo
    from agents.players.random_agent import RandomAgent
    from experiments import zoo as script

    (tmp_path / "driver.py").write_text(ZOO_DRIVER)
    env = {"PYTHONPATH": ROOT}  # `experiments` is a folder of the checkout
    run = subprocess.run(["ip", "netns", "exec", two_nodes.head_ns, PYTHON, "driver.py", two_nodes.address],
                         cwd=tmp_path, env={**two_nodes.env, **env}, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    remote = json.loads(run.stdout.strip().splitlines()[-1])
    assert remote["workers"] == 2  # one a CPU of the cluster

    monkeypatch.chdir(tmp_path / "..")  # the rating's files under runs/zoo/ of another directory
    name = "tictactoe-alphazero"
    local = script.match(script.Finished(name, zoo.card(name).casual), "rated", zoo.load(name), RandomAgent(1),
                         "tictactoe", 20, "second")
    assert {k: remote["row"][k] for k in ("score", "count", "measure")} == \
        {k: local[k] for k in ("score", "count", "measure")}


def test_rllib_ppo_samples_on_both_nodes_and_goes_on_without_a_lost_one(two_nodes, tmp_path):
    """Two env runners (one a node) for the experiment's RLlib backend; the second node is killed after the first
    policy's first iteration; both policies end with every iteration and a saved agent."""
    out = tmp_path / "ppo"
    script = os.path.join(ROOT, "experiments", "ppo_gardner.py")
    run = two_nodes.popen([PYTHON, script, "--backend", "rllib", "--rules", "kingcapture", "--steps", "12000",
                           "--games", "10", "--env-runners", "2", "--ray-address", two_nodes.address,
                           "--out", str(out)], cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    metrics = out / "rllib_kingcapture_white" / "metrics.csv"
    wait_until(lambda: len(rows(str(metrics))) >= 1, run, 300, "first RLlib iteration")
    two_nodes.kill_node()
    output, _ = run.communicate(timeout=900)
    print(output[-2000:])
    assert run.returncode == 0, output[-3000:]
    for color in ("white", "black"):
        done = rows(str(out / f"rllib_kingcapture_{color}" / "metrics.csv"))
        print(f"RLlib {color}: " + "; ".join(f"{r['iteration_env_steps']} env steps in {float(r['iteration_s']):.1f} s"
                                             for r in done))
        assert len(done) == 3 and sum(int(r["iteration_env_steps"]) for r in done) >= 12000
        assert (out / f"rllib_kingcapture_{color}" / "agent" / "agent.json").exists()
    assert "win rate vs random" in (out / "report.md").read_text()
    # the second policy's runners: as many as the cluster that is left has CPUs, said, not waited for
    assert "RLlib: 2 env runners asked for, the Ray cluster has 1 CPUs: sampling with 1" in output


def test_the_gamma_lambda_sweep_runs_its_trials_on_the_cluster(two_nodes, tmp_path):
    out = tmp_path / "sweep_run"
    script = os.path.join(ROOT, "experiments", "ppo_gardner.py")
    run = two_nodes.run([PYTHON, script, "--experiment", "sweep", "--backend", "native", "--steps", "512",
                         "--games", "10", "--ray-address", two_nodes.address, "--out", str(out)], cwd=str(tmp_path),
                        timeout=900)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    table = rows(str(out / "sweep" / "sweep.csv"))
    assert len(table) == 9 and all(0.0 <= float(r["win_rate"]) <= 1.0 for r in table)
    assert "2 at a time" in (out / "sweep" / "sweep.md").read_text()  # one trial a CPU of the two nodes


def test_a_node_without_the_package_is_named_and_the_checkpoint_stands(two_nodes, tmp_path):
    """The second node restarted from a Python that has Ray but not minichess-envs: the run stops with one line that
    says so, and resumes from its checkpoint once the node is fixed."""
    import minichess_envs

    bare = tmp_path / "bare"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(bare)], check=True)
    site = next(p for p in sys.path if p.endswith("site-packages") and os.path.exists(os.path.join(p, "ray")))
    bare_site = next((bare / "lib").glob("python3*")) / "site-packages"
    (bare_site / "shared.pth").write_text(site + "\n")  # Ray, torch and numpy, but not the editable minichess-envs
    script = os.path.join(ROOT, "experiments", "alphazero_3x3.py")
    options = ["--preset", "quick", "--workers", "2", "--out", str(tmp_path / "run")]
    first = subprocess.run([PYTHON, script, *options, "--iterations", "1"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    saved = load_tensor_bytes(tmp_path / "run")

    two_nodes.kill_node()
    two_nodes.start_node(python=str(bare / "bin" / "python"))
    run = two_nodes.run([PYTHON, script, *options, "--resume", "--ray-address", two_nodes.address], timeout=600)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.stderr.strip().splitlines()[-1] == (
        f"error: a Ray worker could not be built on its node {two_nodes.node_ip}: ModuleNotFoundError: No module "
        f"named 'agents'. Every node of the cluster needs minichess-envs {minichess_envs.__version__} and its extras "
        f"installed, as in the driver's environment (docs/scale.md)")
    assert load_tensor_bytes(tmp_path / "run") == saved

    two_nodes.kill_node()
    two_nodes.start_node()
    again = two_nodes.run([PYTHON, script, *options, "--resume", "--ray-address", two_nodes.address], timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(rows(str(tmp_path / "run" / "metrics.csv"))) == 2


def test_a_node_with_another_minichess_envs_is_named(two_nodes, tmp_path):
    import minichess_envs
    shadow = tmp_path / "shadow"
    package = os.path.dirname(minichess_envs.__file__)
    shutil.copytree(package, shadow / "minichess_envs", ignore=shutil.ignore_patterns("csrc", "__pycache__"))
    init = shadow / "minichess_envs" / "__init__.py"
    init.write_text(init.read_text().replace(f'__version__ = "{minichess_envs.__version__}"',
                                             '__version__ = "0.0.1"'))
    two_nodes.kill_node()
    two_nodes.start_node(extra_env={"PYTHONPATH": str(shadow)})  # found before the installed one on that node
    script = os.path.join(ROOT, "experiments", "alphazero_3x3.py")
    run = two_nodes.run([PYTHON, script, "--preset", "quick", "--workers", "2", "--ray-address", two_nodes.address,
                         "--out", str(tmp_path / "run")], timeout=600)
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert (f"the Ray node {two_nodes.node_ip} runs minichess-envs 0.0.1, this process "
            f"{minichess_envs.__version__}") in run.stderr
    two_nodes.kill_node()


def load_tensor_bytes(run_dir) -> dict:
    from agents.runs import checkpoint_dir
    found = checkpoint_dir(str(run_dir))
    return {name: open(os.path.join(found, name), "rb").read() for name in sorted(os.listdir(found))}


def test_a_driver_without_the_clusters_token_is_named(two_nodes, tmp_path):
    script = os.path.join(ROOT, "experiments", "alphazero_3x3.py")
    env = {k: v for k, v in two_nodes.env.items() if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    run = subprocess.run(["ip", "netns", "exec", two_nodes.head_ns, PYTHON, script, "--preset", "quick", "--workers",
                          "1", "--ray-address", two_nodes.address, "--out", str(tmp_path / "run")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.stderr.strip().splitlines()[-1] == (
        f"error: the Ray cluster at {two_nodes.address} refused this process's token: set RAY_AUTH_MODE=token and "
        f"RAY_AUTH_TOKEN_PATH to the cluster's token file (docs/scale.md)")


def test_a_head_of_another_ray_version_is_named(two_nodes, tmp_path):
    """A head on the second machine whose Python says it is Ray 2.59.0 (a sitecustomize sets ``ray.__version__``
    before the head records the cluster's versions): the driver's Ray 2.60 meets Ray's own version check, and the
    experiment names it in one line."""
    import tempfile

    import ray
    fake = tmp_path / "other_ray"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text("import ray\nray.__version__ = '2.59.0'\n")
    two_nodes.kill_node()
    ray_dir = tempfile.mkdtemp(prefix="mce-ray-", dir="/tmp")
    try:
        two_nodes._ray_start(two_nodes.node_ns, ["--head", "--node-ip-address", two_nodes.node_ip, "--port", "6380",
                                                 "--num-cpus", "1", "--include-dashboard", "false",
                                                 "--disable-usage-stats", "--temp-dir", ray_dir],
                             env={**two_nodes.env, "PYTHONPATH": str(fake)})
        script = os.path.join(ROOT, "experiments", "alphazero_3x3.py")
        address = f"{two_nodes.node_ip}:6380"
        run = two_nodes.run([PYTHON, script, "--preset", "quick", "--workers", "1", "--ray-address", address,
                             "--out", str(tmp_path / "run")], timeout=300)
        assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr[-3000:]
        last = run.stderr.strip().splitlines()[-1]
        assert last.startswith(f"error: the Ray cluster at {address} runs another Ray or Python than this process: "
                               f"Version mismatch: The cluster was started with: Ray: 2.59.0"), last
        assert last.endswith(f"Install ray=={ray.__version__} on Python {sys.version.split()[0]} on every node "
                             f"(docs/scale.md)"), last
    finally:
        two_nodes.kill_node()  # the other head; the next test's fixture starts the second node again
        shutil.rmtree(ray_dir, ignore_errors=True)
