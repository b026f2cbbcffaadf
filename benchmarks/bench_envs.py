"""Environment throughput on gardner, side by side with pgx and PettingZoo, in one run.

    python benchmarks/bench_envs.py                 # 3 s per measurement
    python benchmarks/bench_envs.py --seconds 5 --json runs/bench_envs.json

Every loop picks uniformly random legal actions from the observation's mask
and auto-resets finished games. One of our env steps is two plies (the
learner's move and the random opponent's reply); a pgx or PettingZoo step is
one ply. We report steps/s (the target's unit, which favours the peers) and
plies/s. "in step()" counts only the time spent inside ``step``; the loop
figure includes choosing the actions with NumPy. Targets: single env >= 3x
pgx's best CPU figure, native vector env >= 5x, and the native vector env
faster than ``SyncVectorEnv``.
"""

from __future__ import annotations

import argparse
import sys
import time

import gymnasium as gym
import numpy as np

import peers  # noqa: E402

import minichess_envs  # noqa: E402,F401  (registers the ids)


def sample_batch(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per row of a mask batch (0 where none is legal)."""
    counts = masks.sum(1, dtype=np.int64)
    pick = (rng.random(len(masks)) * counts).astype(np.int64)
    actions = (np.cumsum(masks, axis=1, dtype=np.int16) <= pick[:, None]).sum(1)
    return np.where(counts > 0, actions, 0)


def single_env(seconds: float, env_id: str = "MiniChess-Gardner-v0") -> dict:
    env = gym.make(env_id)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    steps = 0
    inside = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        legal = np.flatnonzero(obs["action_mask"])
        action = int(legal[rng.integers(len(legal))])
        t = time.perf_counter()
        obs, _, terminated, truncated, info = env.step(action)
        inside += time.perf_counter() - t
        steps += 1
        if terminated or truncated:
            obs, _ = env.reset()
    elapsed = time.perf_counter() - start
    return {"steps_per_s": steps / elapsed, "steps_per_s_in_step": steps / inside}


def vector_env(seconds: float, num_envs: int, mode: str, env_id: str = "MiniChess-Gardner-v0") -> dict:
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)
    rng = np.random.default_rng(0)
    obs, _ = envs.reset(seed=0)
    steps = 0
    inside = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        actions = sample_batch(obs["action_mask"], rng)
        t = time.perf_counter()
        obs, *_ = envs.step(actions)
        inside += time.perf_counter() - t
        steps += num_envs
    elapsed = time.perf_counter() - start
    envs.close()
    return {"steps_per_s": steps / elapsed, "steps_per_s_in_step": steps / inside, "class": type(envs).__name__}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    results = peers.machine()
    print(f"# {results['date']}  {results['machine']}  load {results['load_start'][0]:.2f}  "
          "(gardner; our step = 2 plies, peers' = 1 ply)")

    def show(name, steps, inside=None, note=""):
        extra = f"{inside:>12,.0f} in step()" if inside else " " * 22
        print(f"{name:<42} {steps:>12,.0f} steps/s {extra}  {note}", flush=True)

    r = single_env(args.seconds)
    results["single"] = r
    show("minichess-envs gym.make (single env)", r["steps_per_s"], r["steps_per_s_in_step"])
    for n in args.batches:
        for mode, label in (("vector_entry_point", "native vector"), ("sync", "SyncVectorEnv")):
            r = vector_env(args.seconds, n, mode)
            results[f"{mode}_{n}"] = r
            show(f"minichess-envs {label} x{n}", r["steps_per_s"], r["steps_per_s_in_step"])
    best_native = max(results[f"vector_entry_point_{n}"]["steps_per_s"] for n in args.batches)
    if not args.no_peers:
        pgx = peers.pgx_gardner(batch_sizes=tuple(args.batches), seconds=args.seconds)
        pz = peers.pettingzoo_chess(seconds=args.seconds)
        results["pgx"], results["pettingzoo_chess_v6"] = pgx, pz
        if pgx.get("available"):
            for b, r in pgx["by_batch"].items():
                show(f"pgx gardner_chess batch {b}", r["steps_per_s"], note="(1 ply per step, sampling in jit)")
            best = pgx["best_steps_per_s"]
            print(f"\nsingle env vs pgx best: {results['single']['steps_per_s'] / best:.1f}x (target >= 3x); "
                  f"native vector (best batch) vs pgx best: {best_native / best:.1f}x (target >= 5x)")
        else:
            print(f"pgx: n/a ({pgx['reason']})")
        if pz.get("available"):
            show("PettingZoo chess_v6 (8x8, AEC)", pz["plies_per_s"], note="(1 ply per step)")
        else:
            print(f"PettingZoo chess_v6: n/a ({pz['reason']})")
    peers.finish(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
