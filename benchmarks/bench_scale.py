"""Scaling: AlphaZero self-play positions/s and RLlib PPO env steps/s against the number of workers, the learner's
share of each iteration, and what crosses the network per iteration.

    python benchmarks/bench_scale.py --json runs/bench_scale.json   # ~6 minutes on 2 cores
    python benchmarks/bench_scale.py --quick                        # a smoke run: about 30 s
    python benchmarks/bench_scale.py --3x3-points local:2 ray:2 --gardner-points --ppo-runners 2

AlphaZero runs through the real loop, :func:`agents.alphazero.train.train`, with each game's experiment settings
(3x3: experiments/alphazero_3x3.py, 1,024 games an iteration; Gardner: ``gardner_config`` as in
experiments/alphazero_gardner.py, 128 games an iteration, without its overlap so that self-play and learning are
timed apart) at each point: ``local:N`` is N worker processes (``workers=N``, ``ray_address=None``), ``ray:N`` is N
Ray actors on a local Ray started here with ``num_cpus`` = the largest N (an actor takes one CPU, so 4 actors fit
on 2 cores and share them). The first iteration of a point is warm-up (workers starting); the figures are medians
over the others: self-play positions/s (the loop's ``positions_per_s``: samples / the time from submitting the
games to collecting them), whole-loop positions/s (samples / (self-play + learning)) and the learner's share of an
iteration, ``train_s / (selfplay_s + train_s)``.

Network: the pickled size (``pickle.HIGHEST_PROTOCOL``) of what an iteration sends out (the weights,
:func:`agents.alphazero.selfplay.numpy_weights`, to every worker, and the jobs: each share's start positions and
seed) and of what comes back (what :meth:`agents.alphazero.train.SelfPlayer.play` returns: the samples and the
games' results), the latter measured on one share played in this process with the weights the last point trained,
per position, and scaled to the positions of an iteration. Local workers get the same objects pickled through a
pipe; Ray serializes numpy arrays out of band, to about the same size.

PPO: RLlib's PPO (``PPOSettings()``: Gardner king capture, 32 games an EnvRunner, 4,000 env steps an iteration,
one torch thread) with ``num_env_runners`` of ``--ppo-runners``, on a local Ray with a CPU for each runner and one
for the learner. Env steps/s overall (steps / ``time_this_iter_s``) and while sampling (steps / the slowest
runner's ``sample`` wall-clock: the runners sample in parallel), and the learner's share, 1 - sampling / iteration
(the update, the weight sync and the batch's transfer). Weights out and episodes back are measured as pickled
sizes too.

Projection (not a measurement): with a per-worker rate ``r`` (the 1-worker point) and the learner's seconds a
position or env step ``l`` (the median over the points), n workers on n cores give at most
``1 / (1 / (n r) + l)``, bounded by ``1 / l``: Amdahl's law with the learner as the serial part. With ``overlap``
the learner trains while the workers play the next games; the bound stays ``1 / l``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import pickle
import statistics
import sys
import tempfile
import time


from agents.runs import write_json  # first: its OpenMP setting applies before torch loads
import numpy as np
import torch

from agents.runs import cpu_model, machine, machine_text

#: Each game's AlphaZero settings: its experiment's network and search (experiments/alphazero_<game>.py), the games an
#: iteration, iterations a point (the first: warm-up) and the points. Gardner's games are ~10x longer than 3x3's, so
#: it runs at fewer points.
GAMES = {"3x3": dict(games=1024, simulations=64, iterations=7, points=["local:1", "ray:1", "local:2", "ray:2", "ray:4"],
                     net=dict(blocks=3, channels=64, policy_channels=32)),
         "gardner": dict(games=128, simulations=48, iterations=3, points=["local:2"],
                         net=dict(blocks=3, channels=48, policy_channels=8))}
TINY_NET = dict(blocks=1, channels=16, policy_channels=4)
QUICK = {"3x3": dict(games=16, simulations=8, iterations=2, points=["local:2", "ray:2"], net=TINY_NET),
         "gardner": dict(games=4, simulations=4, iterations=2, points=["local:1"], net=TINY_NET),
         "ppo": dict(ppo_runners=[1], ppo_iterations=2, train_batch=256, minibatch=64)}


def az_config(game: str, spec: dict, threads: int, run_dir: str, kind: str, workers: int):
    """The game's experiment settings (experiments/alphazero_3x3.py; agents.alphazero.train.gardner_config, as in
    experiments/alphazero_gardner.py less its overlap) at ``spec``'s games, simulations, network and iterations."""
    from agents.alphazero.search import SearchConfig
    from agents.alphazero.train import Config, gardner_config, with_changes
    from minichess_envs.positions import START_POSITIONS

    scale = dict(threads=threads, workers=workers, ray_address="local" if kind == "ray" else None)
    if game == "gardner":
        return gardner_config(run_dir, iterations=spec["iterations"], games=spec["games"],
                              simulations=spec["simulations"], **spec["net"], **scale)
    starts = START_POSITIONS["3x3"]
    return with_changes(
        Config(), game="3x3", run_dir=run_dir, seed=0, iterations=spec["iterations"],
        games_per_iteration=spec["games"], random_start_fraction=0.75, start_fens=(starts["white"], starts["black"]),
        search=SearchConfig(simulations=spec["simulations"], leaves_per_tree=4, c_puct=1.5, discount=0.99),
        **spec["net"], sample_reuse=4.0, batch_size=256, learning_rate=2e-3, weight_decay=1e-4, **scale)


def ray_session(num_cpus: int):
    """A quiet local Ray with ``num_cpus`` CPUs (shut down on leaving)."""
    import logging

    import ray

    @contextlib.contextmanager
    def session():
        if ray.is_initialized():
            ray.shutdown()
        # address="local": a new Ray here, never a cluster that `ray start` left in /tmp/ray/ray_current_cluster
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
        try:
            yield
        finally:
            ray.shutdown()

    return session()


def median_after_warmup(rows: list[dict], key) -> float:
    values = [key(r) for r in (rows[1:] if len(rows) > 1 else rows)]
    return statistics.median(values)


def az_point(config) -> tuple[dict, dict]:
    """One point: the config's iterations of the loop; the medians after the first, and the final state."""
    from agents.alphazero.train import train

    with tempfile.TemporaryDirectory() as run_dir:
        began = time.perf_counter()
        state = train(dataclasses.replace(config, run_dir=run_dir), verbose=False)
        wall = time.perf_counter() - began
    rows = state["metrics"]
    point = {"kind": "ray" if config.scale.ray_address else "local", "workers": config.scale.workers,
             "iterations": len(rows), "wall_s": wall,
             "samples": median_after_warmup(rows, lambda r: r["samples"]),
             "selfplay_positions_per_s": median_after_warmup(rows, lambda r: r["positions_per_s"]),
             "loop_positions_per_s": median_after_warmup(
                 rows, lambda r: r["samples"] / (r["selfplay_s"] + r["train_s"])),
             "selfplay_s": median_after_warmup(rows, lambda r: r["selfplay_s"]),
             "train_s": median_after_warmup(rows, lambda r: r["train_s"]),
             "learner_share": median_after_warmup(rows, lambda r: r["train_s"] / (r["selfplay_s"] + r["train_s"])),
             "learner_s_per_position": median_after_warmup(rows, lambda r: r["train_s"] / r["samples"])}
    return point, state


def az_network(config, weights: dict, positions_per_iteration: float, threads: int) -> dict:
    """Pickled bytes of one iteration in 2 shares: the weights (to each worker) and all jobs out; back, what
    :meth:`SelfPlayer.play` returns, measured on the first share (played here) and scaled to the iteration's
    positions."""
    from agents.alphazero.selfplay import share_jobs
    from agents.alphazero.train import SelfPlayer, start_games

    config = dataclasses.replace(config, scale=dataclasses.replace(config.scale, workers=2, ray_address=None))
    player = SelfPlayer(dataclasses.asdict(config))
    rng = np.random.default_rng(1)
    jobs = share_jobs(start_games(config, rng), 2, rng)
    samples, games = result = player.play(weights, jobs[0])
    torch.set_num_threads(threads)  # SelfPlayer sets one thread (it expects a process of its own)
    size = lambda x: len(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL))  # noqa: E731
    weights_b, jobs_b, result_b, samples_b = size(weights), sum(size(job) for job in jobs), size(result), size(samples)
    return {"workers": len(jobs), "games": config.selfplay.games_per_iteration, "share_games": len(games),
            "share_positions": len(samples), "parameters": int(sum(np.asarray(v).size for v in weights.values())),
            "weights_bytes": weights_b, "jobs_bytes": jobs_b, "share_result_bytes": result_b,
            "share_samples_bytes": samples_b, "out_bytes_per_iteration": weights_b * len(jobs) + jobs_b,
            "samples_bytes_per_position": samples_b / len(samples), "back_bytes_per_position": result_b / len(samples),
            "positions_per_iteration": positions_per_iteration,
            "back_bytes_per_iteration": result_b / len(samples) * positions_per_iteration}


def alphazero(game: str, spec: dict, threads: int) -> dict:
    """The game's points, the Ray-2 / local-2 ratio, the bytes per iteration and the projection; printed."""
    points = [parse_point(p) for p in spec["points"]]
    print(f"\n## AlphaZero self-play, {game}: {spec['games']} games an iteration, {spec['simulations']} simulations a "
          f"move, network {spec['net']}, the learner on {threads} torch threads; {spec['iterations']} iterations a "
          f"point, the first one warm-up", flush=True)
    out, state, config = {"settings": spec, "points": []}, None, None
    ray_cpus = max([n for kind, n in points if kind == "ray"], default=0)  # 1 CPU an actor: 4 actors on 2 cores
    for kind, n in points:
        config = az_config(game, spec, threads, "unused", kind, n)
        with (ray_session(ray_cpus) if kind == "ray" else contextlib.nullcontext()):
            point, state = az_point(config)
        out["points"].append(point)
        print(f"  {'Ray actors' if kind == 'ray' else 'local processes'} {n}: {point['selfplay_positions_per_s']:,.0f} "
              f"self-play positions/s, learner share {point['learner_share']:.3f} ({point['wall_s']:.0f} s)",
              flush=True)
    az = out["points"]
    by = {(p["kind"], p["workers"]): p for p in az}
    rows = [[f"{'Ray actors' if p['kind'] == 'ray' else 'local processes'}", p["workers"],
             f"{p['samples']:,.0f}", f"{p['selfplay_positions_per_s']:,.0f}", f"{p['loop_positions_per_s']:,.0f}",
             f"{p['selfplay_s']:.2f}", f"{p['train_s']:.2f}", f"{p['learner_share']:.3f}"] for p in az]
    print("\n" + table(["workers", "n", "positions / iteration", "self-play positions/s", "loop positions/s",
                        "self-play s", "learner s", "learner share"], rows))
    if ("local", 2) in by and ("ray", 2) in by:
        ratio = by["ray", 2]["selfplay_positions_per_s"] / by["local", 2]["selfplay_positions_per_s"]
        out["ray2_over_local2"] = ratio
        print(f"\nRay 2 / local 2 self-play positions/s: {ratio:.3f} (target >= 0.9: "
              f"{'met' if ratio >= 0.9 else 'missed'})")

    weights = {k: v.numpy() for k, v in state["model"].items()}
    positions = statistics.median(p["samples"] for p in az)
    net = out["network"] = az_network(config, weights, positions, threads)
    print(f"\n### What crosses the network per {game} iteration ({net['games']} games in {net['workers']} shares; "
          f"pickled, protocol {pickle.HIGHEST_PROTOCOL}; back: measured on one share of {net['share_games']} games, "
          f"{net['share_positions']:,} positions, scaled to {positions:,.0f} positions an iteration)\n")
    print(table(["direction", "what", "bytes an iteration", "per position"], [
        ["out", f"weights ({net['parameters']:,} float32 parameters), to each worker", f"{net['weights_bytes']:,}", ""],
        ["out", "jobs: start positions and a seed, all shares", f"{net['jobs_bytes']:,}", ""],
        ["out", f"total at {net['workers']} workers", f"{net['out_bytes_per_iteration']:,}",
         f"{net['out_bytes_per_iteration'] / positions:,.0f}"],
        ["back", "samples (observations, masks, policies, values)",
         f"{net['samples_bytes_per_position'] * positions:,.0f}", f"{net['samples_bytes_per_position']:,.0f}"],
        ["back", "samples and game results", f"{net['back_bytes_per_iteration']:,.0f}",
         f"{net['back_bytes_per_position']:,.0f}"]]))

    one = by.get(("local", 1)) or by.get(("ray", 1)) or az[0]
    rate_1 = one["selfplay_positions_per_s"] / one["workers"]
    learner = statistics.median(p["learner_s_per_position"] for p in az)
    out["projection"] = {"rate_per_worker": rate_1, "learner_s_per_position": learner, "bound": 1 / learner,
                         **{str(n): projection(rate_1, learner, n) for n in (1, 2, 4, 16, 64)}}
    return out


def ppo_point(args, runners: int) -> dict:
    """RLlib PPO with ``runners`` remote EnvRunners: medians over the iterations after the first."""
    from agents.ppo.common import PPOSettings
    from agents.ppo.rllib_train import RLlibBackend
    from agents.ppo.task import task_for

    settings = PPOSettings(env_runners=runners, train_batch=args.train_batch, minibatch=args.minibatch)
    began = time.perf_counter()
    backend = RLlibBackend(settings, task_for(settings))
    build_s = time.perf_counter() - began
    group = backend.algo.env_runner_group

    def runner_seconds() -> list[float]:
        return list(group.foreach_env_runner(lambda er: er.sample_seconds, local_env_runner=False))

    rows = []
    try:
        for _ in range(args.ppo_iterations):
            before = runner_seconds()
            row = backend.iterate()
            row["sample_wall_s"] = max(a - b for a, b in zip(runner_seconds(), before))
            rows.append(row)
        network = ppo_network(backend) if args.measure_ppo_network else None
    finally:
        backend.close()
    point = {"runners": runners, "iterations": len(rows), "build_s": build_s,
             "env_steps": median_after_warmup(rows, lambda r: r["iteration_env_steps"]),
             "env_steps_per_s": median_after_warmup(rows, lambda r: r["iteration_env_steps"] / r["iteration_s"]),
             "sample_steps_per_s": median_after_warmup(rows, lambda r: r["iteration_env_steps"] / r["sample_wall_s"]),
             "iteration_s": median_after_warmup(rows, lambda r: r["iteration_s"]),
             "sample_s": median_after_warmup(rows, lambda r: r["sample_wall_s"]),
             "learner_share": median_after_warmup(rows, lambda r: 1 - r["sample_wall_s"] / r["iteration_s"]),
             "learner_s_per_step": median_after_warmup(
                 rows, lambda r: (r["iteration_s"] - r["sample_wall_s"]) / r["iteration_env_steps"]),
             # RLlibBackend.iterate's own sample_s, kept to compare: with remote runners it reads the local runner,
             # which never samples (0), and would sum the remote ones' seconds, not take the slowest
             "summed_sample_s": median_after_warmup(rows, lambda r: r["sample_s"])}
    if network is not None:
        point["network"] = network
    return point


def ppo_network(backend) -> dict:
    """Pickled bytes of the weights a runner receives and of one runner's episodes of 1,000 env steps."""
    from agents.ppo.rllib_train import DEFAULT_MODULE

    weights = backend.algo.learner_group.get_weights(module_ids=[DEFAULT_MODULE])
    weights_b = len(pickle.dumps(weights, protocol=pickle.HIGHEST_PROTOCOL))

    def episodes_bytes(runner):
        import pickle

        episodes = runner.sample(num_timesteps=1000)
        return sum(len(e) for e in episodes), len(pickle.dumps(episodes, protocol=pickle.HIGHEST_PROTOCOL))

    steps, back_b = backend.algo.env_runner_group.foreach_env_runner(episodes_bytes, local_env_runner=False)[0]
    return {"weights_bytes": weights_b, "episode_steps": steps, "episodes_bytes": back_b,
            "back_bytes_per_step": back_b / steps}


def projection(rate_1: float, learner_per_unit: float, n: int) -> float:
    """Amdahl: units/s with n workers at ``rate_1`` each and a serial learner taking ``learner_per_unit`` s a unit."""
    return 1.0 / (1.0 / (n * rate_1) + learner_per_unit)


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(x) for x in row) + " |" for row in rows])


def parse_point(text: str) -> tuple[str, int]:
    kind, _, n = text.partition(":")
    if kind not in ("local", "ray") or not n.isdigit() or int(n) < 1:
        raise argparse.ArgumentTypeError(f"a point is local:N or ray:N (N >= 1), got {text!r}")
    return kind, int(n)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for game, spec in GAMES.items():
        parser.add_argument(f"--{game}-games", type=int, default=spec["games"], help=f"{game}: games an iteration")
        parser.add_argument(f"--{game}-iterations", type=int, default=spec["iterations"],
                            help=f"{game}: iterations a point (the first: warm-up)")
        parser.add_argument(f"--{game}-points", nargs="*", default=spec["points"],
                            help=f"{game}: local:N (N worker processes) or ray:N (N Ray actors); none: skip the game")
    parser.add_argument("--threads", type=int, default=2, help="the AlphaZero learner's torch threads")
    parser.add_argument("--ppo-runners", nargs="*", type=int, default=[1, 2, 4])
    parser.add_argument("--ppo-iterations", type=int, default=5, help="PPO iterations a point (the first: warm-up)")
    parser.add_argument("--train-batch", type=int, default=4000)
    parser.add_argument("--minibatch", type=int, default=256)
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny settings, seconds a point")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    specs = {game: dict(spec, games=getattr(args, f"{game}_games"), iterations=getattr(args, f"{game}_iterations"),
                        points=getattr(args, f"{game}_points")) for game, spec in GAMES.items()}
    if args.quick:
        specs = {game: QUICK[game] for game in GAMES}
        for key, value in QUICK["ppo"].items():
            setattr(args, key, value)
    for spec in specs.values():
        for point in spec["points"]:
            try:
                parse_point(point)  # a bad point fails before anything runs
            except argparse.ArgumentTypeError as exc:
                parser.error(str(exc))
    args.measure_ppo_network = True
    torch.set_num_threads(args.threads)
    started = machine()
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv),
               "machine": started, "cpu": cpu_model(), "cores": os.cpu_count(), "quick": args.quick,
               "torch": torch.__version__}
    import ray

    results["ray"] = ray.__version__
    clock = time.perf_counter()
    print(f"# {results['date']}  {results['cpu']}, {results['cores']} cores; torch {torch.__version__}, "
          f"ray {ray.__version__}; load average (1 / 5 / 15 min) "
          + " / ".join(f"{x:.2f}" for x in started["load_average"]), flush=True)

    results["alphazero"] = {game: alphazero(game, spec, args.threads) for game, spec in specs.items()
                            if spec["points"]}

    # ------------------------------------------------------------------ PPO
    if args.ppo_runners:
        print(f"\n## RLlib PPO, Gardner king capture: {args.train_batch:,} env steps an iteration, 32 games an "
              f"EnvRunner, one torch thread; {args.ppo_iterations} iterations a point, the first one warm-up",
              flush=True)
    ppo = []
    for runners in args.ppo_runners:
        with ray_session(runners + 1):
            point = ppo_point(args, runners)
        args.measure_ppo_network = False
        ppo.append(point)
        print(f"  {runners} EnvRunner(s): {point['env_steps_per_s']:,.0f} env steps/s, learner share "
              f"{point['learner_share']:.3f}", flush=True)
    results["ppo"] = ppo
    if ppo:
        print("\n" + table(["EnvRunners", "env steps / iteration", "env steps/s", "env steps/s while sampling",
                            "iteration s", "sampling s", "learner share"],
                           [[p["runners"], f"{p['env_steps']:,.0f}", f"{p['env_steps_per_s']:,.0f}",
                             f"{p['sample_steps_per_s']:,.0f}", f"{p['iteration_s']:.2f}", f"{p['sample_s']:.2f}",
                             f"{p['learner_share']:.3f}"] for p in ppo]))
    network = next((p["network"] for p in ppo if "network" in p), None)
    if network:
        print(f"\nPPO per iteration: weights out {network['weights_bytes']:,} bytes to each EnvRunner; episodes "
              f"back {network['back_bytes_per_step']:,.0f} bytes an env step ({network['episodes_bytes']:,} bytes "
              f"for {network['episode_steps']:,} steps), {network['back_bytes_per_step'] * args.train_batch:,.0f} "
              f"bytes an iteration")

    # ------------------------------------------------------------------ projection
    if ppo:
        one = min(ppo, key=lambda p: p["runners"])
        rate_1 = one["sample_steps_per_s"] / one["runners"]
        learner = statistics.median(p["learner_s_per_step"] for p in ppo)
        results["ppo_projection"] = {"rate_per_runner": rate_1, "learner_s_per_step": learner, "bound": 1 / learner,
                                     **{str(n): projection(rate_1, learner, n) for n in (1, 2, 4, 16, 64)}}
    print("\n## Projection: Amdahl's law from the measured learner time (a projection, not a measurement)\n\n"
          "n workers on n cores of their own, the learner on its own: at most 1 / (1 / (n r) + l), bounded by 1 / l "
          "(r: one worker's rate; l: the learner's seconds a position or env step, the median over the points)\n")
    rows = []
    for game, part in results["alphazero"].items():
        p = part["projection"]
        rows.append([f"AlphaZero {game}, loop positions/s", f"{p['rate_per_worker']:,.0f}",
                     f"{p['learner_s_per_position'] * 1e3:.3f}", *(f"{p[str(n)]:,.0f}" for n in (1, 2, 4, 16, 64)),
                     f"{p['bound']:,.0f}"])
    if ppo:
        p = results["ppo_projection"]
        rows.append(["RLlib PPO, env steps/s", f"{p['rate_per_runner']:,.0f}", f"{p['learner_s_per_step'] * 1e3:.3f}",
                     *(f"{p[str(n)]:,.0f}" for n in (1, 2, 4, 16, 64)), f"{p['bound']:,.0f}"])
    print(table(["loop", "r (per worker, /s)", "l (ms)", "n=1", "n=2", "n=4", "n=16", "n=64", "bound 1/l"], rows))

    ended = machine()
    results["machine_end"] = ended
    results["wall_s"] = time.perf_counter() - clock
    results["measured_on"] = machine_text(started, ended)
    print(f"\n{results['measured_on']}\nTotal {results['wall_s']:.0f} s.")
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
