"""Env steps per second inside PPO training (built-in, RLlib, SB3) against our raw env throughput, in one run,
and the wall-clock each of the built-in PPO and RLlib needs to reach 97% against random.

    python benchmarks/bench_ppo.py                        # a few minutes on 2 cores, up to ~25 with time-to-97%
    python benchmarks/bench_ppo.py --iterations 5 --json runs/bench_ppo.json
    python benchmarks/bench_ppo.py --skip sb3 time        # throughput only, built-in and RLlib

The env is Alpha-Mini's setting (``MiniChess-GardnerKingCapture-v0``, material
shaping, White against the random player); one env step is the learner's move
and the random reply. Rows, from the bare env up to whole PPO iterations:

* raw env: uniformly random legal actions from the mask, single ``gym.make``
  env and the native vector env (``--num-envs`` games stepped in C);
* + policy: the same vector env, actions sampled from the PPO network's
  masked logits (one forward pass per step for all games, ``torch.multinomial``
  over all 1,225 masked logits): the straightforward sampler;
* RLlib sampling: ``EnvRunner.sample`` (episodes, connectors, the module's
  forward pass), with our native vector env (gymnasium's ``SyncVectorEnv`` was
  within noise of it inside RLlib and was removed: docs/decisions.md);
* built-in PPO (``agents/ppo/native.py``) sampling: its rollout (network forward
  pass, sampling over each game's legal actions, the vector env's C step);
* training: whole PPO iterations of the built-in PPO, RLlib and SB3 (sampling +
  GAE + 4 epochs of minibatch updates on ``--train-batch`` steps), one iteration
  of each backend in turn so that other jobs' load falls on all alike; env
  steps per wall-clock second and per CPU second of this process (all its
  threads: the figure least moved by load).

The same settings for every backend: network, ``train_batch``, ``minibatch``,
``epochs``, ``num_envs``, one torch thread. The work per iteration still differs a
little by design: RLlib's learner runs an extra forward pass over the batch for
GAE's values (the others keep the rollout's) and cycles through the batch for
about 4 x 4000 / 256 = 63 minibatches where the built-in PPO takes 4 x 15 = 60
(the last 160 shuffled samples of each epoch sit out).

Time to 97% (``time``): Alpha-Mini's setting with each backend's defaults
(``PPOSettings()``), iterations until the greedy policy wins >= 97% of 1,000
games as White against the random player (``versus_random``, seed 0, checked
after every iteration); the training wall-clock up to that point (the checks
excluded), or "not reached" within ``--time-minutes``.

All in one process with one torch thread (the PPO runs' setting). On a shared
machine the wall-clock figures move by 10-30% between runs; ratios are from the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time


import gymnasium as gym
from agents.runs import write_json  # first: its OpenMP setting applies before torch loads
import numpy as np
import torch

import minichess_envs  # noqa: F401  (registers the env ids)
from agents.ppo.task import task_for
from bench_envs import sample_batch

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
    net = PPONet(task_for(PPOSettings()).net_config()).eval()
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


def rllib_sampling(args) -> float:
    """RLlib's ``EnvRunner.sample`` throughput on our native vector env."""
    from agents.ppo.common import PPOSettings
    from agents.ppo.rllib_train import build

    algo = build(PPOSettings(num_envs=args.num_envs, train_batch=args.train_batch))
    try:
        algo.env_runner.sample(num_timesteps=args.num_envs * 20)  # warm up
        t = time.perf_counter()
        episodes = algo.env_runner.sample(num_timesteps=args.train_batch)
        return sum(len(e) for e in episodes) / (time.perf_counter() - t)
    finally:
        algo.stop()


def native_sampling(args) -> float:
    """The built-in PPO's rollout (:func:`agents.ppo.native.collect`) throughput."""
    from agents.ppo.common import PPOSettings
    from agents.ppo.native import NativeBackend, collect

    settings = PPOSettings(num_envs=args.num_envs, train_batch=args.train_batch)
    backend = NativeBackend(settings, task_for(settings))
    try:
        backend.iterate()  # warm up
        t = time.perf_counter()
        collect(backend.net, backend.envs, args.train_batch // args.num_envs, seed=0,
                generator=torch.Generator().manual_seed(0))
        return args.train_batch / (time.perf_counter() - t)
    finally:
        backend.close()


def training_figures(args, names: list[str]) -> dict:
    """Whole PPO iterations of each backend in ``names``, interleaved (one iteration of each in turn), so
    that other jobs' load falls on all of them alike: env steps per wall-clock second and per CPU
    second of this process (all its threads; the figure the machine's load moves least)."""
    from agents.ppo.common import PPOSettings

    settings = PPOSettings(num_envs=args.num_envs, train_batch=args.train_batch)
    trainers, closers = {}, []
    try:
        if "native" in names:
            from agents.ppo.native import NativeBackend

            backend = NativeBackend(settings, task_for(settings))
            closers.append(backend.close)
            trainers["native"] = lambda: backend.iterate()["iteration_env_steps"]
        if "rllib" in names:
            from agents.ppo.rllib_train import build

            algo = build(settings)
            closers.append(algo.stop)
            trainers["rllib"] = lambda: int(algo.train()["env_runners"]["num_env_steps_sampled"])
        if "sb3" in names:
            from agents.ppo.sb3_train import SB3VecEnv, make_model

            env = SB3VecEnv(task_for(settings).make_envs())
            closers.append(env.close)
            model = make_model(settings, task_for(settings).net_config(), env)

            def sb3_iteration():
                before = model.num_timesteps
                model.learn(settings.train_batch, reset_num_timesteps=False)
                return model.num_timesteps - before

            trainers["sb3"] = sb3_iteration
        for train in trainers.values():
            train()  # the first iteration builds buffers (RLlib's learner, SB3's logger): not timed
        totals = {name: [0, 0.0, 0.0] for name in trainers}  # env steps, wall s, CPU s
        for _ in range(args.iterations):
            for name, train in trainers.items():
                wall, cpu = time.perf_counter(), time.process_time()
                steps = train()
                totals[name][0] += steps
                totals[name][1] += time.perf_counter() - wall
                totals[name][2] += time.process_time() - cpu
    finally:
        for close in closers:
            close()
    return {name: {"train": steps / wall, "train_cpu": steps / cpu} for name, (steps, wall, cpu) in totals.items()}


def time_to_target(backend_class, minutes: float, target: float = 0.97, games: int = 1000) -> dict:
    """Training wall-clock until the greedy policy wins ``target`` of ``games`` games as White against random."""
    from agents.arena.evaluation import versus_random
    from agents.ppo.common import PPOSettings

    settings = PPOSettings()
    task = task_for(settings)
    backend = backend_class(settings, task)
    train_s, steps, rate, iterations = 0.0, 0, 0.0, 0
    try:
        while train_s < 60 * minutes:
            t = time.perf_counter()
            steps += backend.iterate()["iteration_env_steps"]
            agent = task.agent(backend.policy_net(), backend.kind)
            train_s += time.perf_counter() - t
            iterations += 1
            rate = versus_random(agent, settings.variant, games=games, color="white", seed=0).win_rate
            print(f"  {backend.kind}: {steps:,} env steps, {train_s:.0f} s of training: win rate {rate:.3f}", flush=True)
            if rate >= target:
                return {"reached": True, "train_s": train_s, "env_steps": steps, "win_rate": rate,
                        "iterations": iterations}
    finally:
        backend.close()
    return {"reached": False, "train_s": train_s, "env_steps": steps, "win_rate": rate, "iterations": iterations}


def sb3_sampling(args) -> float:
    """SB3 ``MaskablePPO``'s rollout throughput (its rollout time inside ``learn``)."""
    from agents.ppo.common import PPOSettings
    from agents.ppo.sb3_train import SB3VecEnv, _RolloutTimer, make_model

    settings = PPOSettings(num_envs=args.num_envs, train_batch=args.train_batch)
    task = task_for(settings)
    env = SB3VecEnv(task.make_envs())
    try:
        model = make_model(settings, task.net_config(), env)
        model.learn(settings.train_batch)  # warm up
        timer = _RolloutTimer()
        before = model.num_timesteps
        model.learn(settings.train_batch, reset_num_timesteps=False, callback=timer)
        return (model.num_timesteps - before) / timer.sample_s
    finally:
        env.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="per raw-env measurement")
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--train-batch", type=int, default=4000)
    parser.add_argument("--iterations", type=int, default=4, help="timed PPO iterations per backend")
    parser.add_argument("--skip", nargs="*", default=[], choices=("native", "rllib", "sb3", "time"))
    parser.add_argument("--time-minutes", type=float, default=10.0,
                        help="training wall-clock cap per backend for time-to-97%%")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results = {"date": time.strftime("%Y-%m-%d"), "load_average_start": list(os.getloadavg()),
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
        ratio = f"  ({value / base:.3f}x the native vector env)" if base else ""
        print(f"{name:<66} {value:>10,.0f} env steps/s{ratio}", flush=True)

    show("raw_single", "raw env: gym.make, random legal actions", raw_single(args.seconds))
    base = raw_vector(args.seconds, args.num_envs)
    show("raw_vector", f"raw env: native vector x{args.num_envs}, random legal actions", base)
    show("raw_vector_policy", f"native vector x{args.num_envs} + PPO network, multinomial over all logits",
         raw_vector(args.seconds, args.num_envs, policy=True), base)
    if "native" not in args.skip:
        show("native_sample", "built-in PPO rollout, native vector env", native_sampling(args), base)
    if "rllib" not in args.skip:
        show("rllib_sample_native", "RLlib EnvRunner.sample, native vector env", rllib_sampling(args), base)
    if "sb3" not in args.skip:
        show("sb3_sample", "SB3 MaskablePPO rollouts, native vector env", sb3_sampling(args), base)
    names = [name for name in ("native", "rllib", "sb3") if name not in args.skip]
    labels = {"native": "built-in PPO", "rllib": "RLlib PPO", "sb3": "SB3 MaskablePPO"}
    print(f"training: {args.iterations} whole iterations of each of {', '.join(names)}, interleaved", flush=True)
    for name, r in training_figures(args, names).items():
        show(f"{name}_train", f"{labels[name]} training (whole iterations)", r["train"], base)
        show(f"{name}_train_cpu", f"{labels[name]} training, per CPU second of the process", r["train_cpu"])
    if "native_train" in results and "rllib_train" in results:
        results["native_vs_rllib_train"] = results["native_train"] / results["rllib_train"]
        results["native_vs_rllib_train_cpu"] = results["native_train_cpu"] / results["rllib_train_cpu"]
        results["native_vs_rllib_sample"] = results["native_sample"] / results["rllib_sample_native"]
        print(f"built-in / RLlib: training {results['native_vs_rllib_train']:.1f}x (wall-clock), "
              f"{results['native_vs_rllib_train_cpu']:.1f}x (CPU time); sampling "
              f"{results['native_vs_rllib_sample']:.1f}x (target: training >= 8x)", flush=True)
    if "time" not in args.skip:
        from agents.ppo.native import NativeBackend

        backends = [("native", NativeBackend)]
        if "rllib" not in args.skip:
            from agents.ppo.rllib_train import RLlibBackend

            backends.append(("rllib", RLlibBackend))
        for name, backend_class in backends:
            print(f"time to 97% (king capture, White, 1,000 games vs random): {name} ...", flush=True)
            r = time_to_target(backend_class, args.time_minutes)
            results[f"time_to_97_{name}"] = r
            print(f"{name}: " + (f"97% reached after {r['train_s']:.0f} s of training ({r['env_steps']:,} env steps, "
                                 f"win rate {r['win_rate']:.3f})" if r["reached"] else
                                 f"not reached within {r['train_s']:.0f} s ({r['env_steps']:,} env steps, last win "
                                 f"rate {r['win_rate']:.3f})"), flush=True)
    results["load_average_end"] = list(os.getloadavg())
    print("load average (1 / 5 / 15 min): " + " / ".join(f"{x:.2f}" for x in results["load_average_start"])
          + " at the start, " + " / ".join(f"{x:.2f}" for x in results["load_average_end"]) + " at the end")
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
