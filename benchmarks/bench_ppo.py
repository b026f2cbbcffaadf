"""Env steps per second inside PPO training (RLlib, SB3) against our raw env throughput, in one run.

    python benchmarks/bench_ppo.py                        # about a minute on 2 cores
    python benchmarks/bench_ppo.py --iterations 5 --json runs/bench_ppo.json

The env is Alpha-Mini's setting (``MiniChess-GardnerKingCapture-v0``, material
shaping, White against the random player); one env step is the learner's move
and the random reply. Rows, from the bare env up to whole PPO iterations:

* raw env: uniformly random legal actions from the mask, single ``gym.make``
  env and the native vector env (``--num-envs`` games stepped in C);
* + policy: the same vector env, actions sampled from the PPO network's
  masked logits (one forward pass per step for all games): the floor for any
  PPO sampler with this network;
* RLlib sampling: ``EnvRunner.sample`` (episodes, connectors, the module's
  forward pass), with our native vector env and with gymnasium's
  ``SyncVectorEnv`` over single envs;
* RLlib / SB3 training: whole PPO iterations (sampling + GAE + 4 epochs of
  minibatch updates on ``--train-batch`` steps), env steps per wall-clock second.

All in one process with one torch thread (the PPO runs' setting). On a shared
machine the figures move by 10-30% between runs; ratios are from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import minichess_envs  # noqa: E402,F401
from bench_envs import sample_batch  # noqa: E402

ENV_ID = "MiniChess-GardnerKingCapture-v0"
ENV_KWARGS = {"reward": "material", "agent_color": "white"}


def raw_single(seconds: float) -> float:
    env = gym.make(ENV_ID, **ENV_KWARGS)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        legal = np.flatnonzero(obs["action_mask"])
        obs, _, terminated, truncated, _ = env.step(int(legal[rng.integers(len(legal))]))
        steps += 1
        if terminated or truncated:
            obs, _ = env.reset()
    return steps / (time.perf_counter() - start)


def raw_vector(seconds: float, num_envs: int, policy: bool = False) -> float:
    """Native vector env; random legal actions, or samples from the PPO network's masked logits."""
    from agents.ppo.common import PPOSettings
    from agents.ppo.network import PPONet

    envs = gym.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode="vector_entry_point", **ENV_KWARGS)
    net = PPONet(PPOSettings().net_config()).eval()
    rng = np.random.default_rng(0)
    obs, _ = envs.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if policy:
            with torch.inference_mode():
                logits, _ = net(torch.from_numpy(obs["observation"]), torch.from_numpy(obs["action_mask"]))
                actions = torch.distributions.Categorical(logits=logits).sample().numpy()
        else:
            actions = sample_batch(obs["action_mask"], rng)
        obs, *_ = envs.step(actions)
        steps += num_envs
    envs.close()
    return steps / (time.perf_counter() - start)


def rllib_figures(args) -> dict:
    """Sampling-only throughput (native and sync vector envs) and whole-iteration training throughput."""
    from agents.ppo.common import PPOSettings
    from agents.ppo.rllib_train import build

    out = {}
    for vectorize in ("native", "sync"):
        settings = PPOSettings(num_envs=args.num_envs, train_batch=args.train_batch, vectorize=vectorize)
        algo = build(settings)
        try:
            algo.env_runner.sample(num_timesteps=args.num_envs * 20)  # warm up
            t = time.perf_counter()
            episodes = algo.env_runner.sample(num_timesteps=args.train_batch)
            dt = time.perf_counter() - t
            out[f"sample_{vectorize}"] = sum(len(e) for e in episodes) / dt
            if vectorize == "native":
                algo.train()  # the first iteration builds the learner's buffers: not timed
                steps, t = 0, time.perf_counter()
                for _ in range(args.iterations):
                    steps += int(algo.train()["env_runners"]["num_env_steps_sampled"])
                out["train"] = steps / (time.perf_counter() - t)
        finally:
            algo.stop()
    return out


def sb3_figures(args) -> dict:
    from agents.ppo.common import PPOSettings
    from agents.ppo.sb3_train import _RolloutTimer, make_model, make_vec_env

    settings = PPOSettings(num_envs=args.num_envs, train_batch=args.train_batch)
    env = make_vec_env(settings)
    model = make_model(settings, env)
    model.learn(settings.train_batch)  # warm up
    timer = _RolloutTimer()
    t = time.perf_counter()
    before = model.num_timesteps
    model.learn(args.iterations * settings.train_batch, reset_num_timesteps=False, callback=timer)
    dt = time.perf_counter() - t
    steps = model.num_timesteps - before
    env.close()
    return {"sample": steps / timer.sample_s, "train": steps / dt}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="per raw-env measurement")
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--train-batch", type=int, default=4000)
    parser.add_argument("--iterations", type=int, default=4, help="timed PPO iterations per backend")
    parser.add_argument("--skip", nargs="*", default=[], choices=("rllib", "sb3"))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results = {"date": time.strftime("%Y-%m-%d"),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
               "torch": torch.__version__}
    try:
        import ray

        results["ray"] = ray.__version__
    except ImportError:
        pass
    print(f"# {results['date']}  {results['machine']}  {ENV_ID} (material), learner White vs random; "
          f"{args.num_envs} games, train batch {args.train_batch}")

    def show(key, name, value, base=None):
        results[key] = value
        ratio = f"  ({value / base:.2f}x the native vector env)" if base else ""
        print(f"{name:<58} {value:>10,.0f} env steps/s{ratio}", flush=True)

    show("raw_single", "raw env: gym.make, random legal actions", raw_single(args.seconds))
    base = raw_vector(args.seconds, args.num_envs)
    show("raw_vector", f"raw env: native vector x{args.num_envs}, random legal actions", base)
    show("raw_vector_policy", f"native vector x{args.num_envs} + PPO network sampling",
         raw_vector(args.seconds, args.num_envs, policy=True), base)
    if "rllib" not in args.skip:
        r = rllib_figures(args)
        show("rllib_sample_native", "RLlib EnvRunner.sample, native vector env", r["sample_native"], base)
        show("rllib_sample_sync", "RLlib EnvRunner.sample, SyncVectorEnv of gym.make envs", r["sample_sync"], base)
        show("rllib_train", "RLlib PPO training (whole iterations)", r["train"], base)
    if "sb3" not in args.skip:
        r = sb3_figures(args)
        show("sb3_sample", "SB3 MaskablePPO rollouts, native vector env", r["sample"], base)
        show("sb3_train", "SB3 MaskablePPO training (whole iterations)", r["train"], base)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
