"""Re-checks of issue 34: a training run killed with SIGKILL resumes to the weights of a run never killed, and
memory stays flat over many env episodes and searches.

(A killed Ray self-play actor is replaced: ``test_alphazero.py::test_a_killed_self_play_actor_is_replaced_and_its_games_replayed``,
marked slow; a killed worker process: ``test_boardgames.py``.)
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest

import minichess_envs  # noqa: F401  (registers the environments)

HERE = os.path.dirname(os.path.abspath(__file__))


def rss_bytes() -> int:
    """This process's resident set size now (Linux ``/proc``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from Linux /proc")


def tiny_config(run_dir: str, iterations: int):
    """A 3x3 AlphaZero run of a few seconds an iteration, one torch thread (so two runs are bitwise equal)."""
    from agents.alphazero.train import Config, with_changes

    config = with_changes(Config(), game="3x3", run_dir=run_dir, iterations=iterations, games_per_iteration=32,
                          random_start_fraction=0.5, blocks=1, channels=16, batch_size=64, sample_reuse=8.0,
                          buffer_size=5000, threads=1)
    return with_changes(config, search=dataclasses.replace(config.search, simulations=16, leaves_per_tree=2))


TRAIN = """
import sys
sys.path.insert(0, {here!r})
from test_durability import tiny_config
from agents.alphazero.train import train
if __name__ == "__main__":
    train(tiny_config(sys.argv[1], int(sys.argv[2])), verbose=False)
"""


def test_a_run_killed_with_sigkill_resumes_to_the_weights_of_a_run_never_killed(tmp_path):
    torch = pytest.importorskip("torch", reason="AlphaZero needs torch: pip install -e '.[agents]'")
    from agents.alphazero.train import train
    from agents.runs import checkpoint_dir, read_state

    iterations = 8  # enough that the run cannot end between the first checkpoint and the kill
    killed_dir = str(tmp_path / "killed")
    proc = subprocess.Popen([sys.executable, "-c", TRAIN.format(here=HERE), killed_dir, str(iterations)],
                            cwd=os.path.dirname(HERE))
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            checkpoint = checkpoint_dir(killed_dir)
            if checkpoint and read_state(checkpoint).iteration >= 1:
                break
            time.sleep(0.02)
        time.sleep(0.1)  # into iteration 2's self-play or training
        assert proc.poll() is None, "the run ended before the kill"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done = read_state(checkpoint_dir(killed_dir)).iteration
    assert 1 <= done < iterations, "the kill should land mid-run"

    resumed = train(tiny_config(killed_dir, iterations), resume=True, verbose=False)
    straight = train(tiny_config(str(tmp_path / "straight"), iterations), verbose=False)
    assert resumed["iteration"] == straight["iteration"] == iterations
    assert [m["samples"] for m in resumed["metrics"]] == [m["samples"] for m in straight["metrics"]]
    assert resumed["model"].keys() == straight["model"].keys()
    for name, tensor in straight["model"].items():
        assert torch.equal(tensor, resumed["model"][name]), name


def play_random_episodes(env, episodes: int, rng: np.random.Generator) -> int:
    plies = 0
    for _ in range(episodes):
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            plies += 1
    return plies


@needs_proc
def test_memory_stays_flat_over_many_env_episodes():
    env = gym.make("MiniChess-Gardner-v0")
    rng = np.random.default_rng(0)
    play_random_episodes(env, 100, rng)  # warm-up: caches, allocator pools, the first observations
    before = rss_bytes()
    plies = play_random_episodes(env, 1500, rng)
    growth = rss_bytes() - before
    # a leak of one observation (5x5 squares x 18 planes, float32: 1.8 kB) per ply would grow RSS by > 50 MB
    assert plies > 30_000
    assert growth < 4 * 2**20, f"RSS grew {growth / 2**20:.1f} MiB over {plies} plies"


@needs_proc
def test_memory_stays_flat_over_many_searches():
    pytest.importorskip("torch", reason="the search module imports torch: pip install -e '.[agents]'")
    sys.path.insert(0, HERE)
    from test_alphazero import search_move  # the search as its own tests drive it

    fen = "r1b1k/pp1pp/n1NP1/Pq3/R1BKQ b - - 3 7"
    for _ in range(20):  # warm-up
        search_move(fen, "gardner", 200)
    before = rss_bytes()
    for _ in range(300):
        search_move(fen, "gardner", 400)
    growth = rss_bytes() - before
    # each search builds a tree of 400 nodes, each with its children's statistics: a tree kept per search
    # would add tens of MB
    assert growth < 4 * 2**20, f"RSS grew {growth / 2**20:.1f} MiB over 300 searches of 400 simulations"
