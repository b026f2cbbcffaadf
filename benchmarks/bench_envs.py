"""Environment throughput on gardner (and 8x8 beside EnvPool), side by side with the peers, in one run.

    python benchmarks/bench_envs.py                 # 3 s per measurement
    python benchmarks/bench_envs.py --seconds 5 --json runs/bench_envs.json

Every loop picks uniformly random legal actions from the observation's mask
and auto-resets finished games. One of our env steps is two plies (the
learner's move and the random opponent's reply); a pgx, EnvPool or PettingZoo
step is one ply. We report steps/s (the target's unit, which favours the peers) and
plies/s. "in step()" counts only the time spent inside ``step``; the loop
figure includes choosing the actions with NumPy. Targets: single env >= 3x
pgx's best CPU figure, native vector env >= 5x, and the native vector env
faster than ``SyncVectorEnv``.

At equal observation history (``--history``, default 8: AlphaZero's, and the
115 planes of pgx's and EnvPool's GardnerChess) the native vector env runs
beside EnvPool's ``GardnerChess-v1`` and ``Chess-v1`` (batch 64 and 256, 1 and
2 threads), counting plies exactly. Target: ours >= 5x EnvPool's best plies/s
on Gardner. Each EnvPool step writes an observation for both players (two per
ply); ours writes the learner's (one per two plies), and our engine's random
play, also shown, writes the mover's at every ply.
"""

from __future__ import annotations

import argparse
import sys
import time

import gymnasium as gym
import numpy as np

import bench_engine  # noqa: E402
import peers  # noqa: E402

import minichess_envs  # noqa: E402,F401  (registers the ids)

#: A uniformly random legal action per row of a mask batch (0 where none is legal): the peers' sampler too.
sample_batch = peers.sample_legal

ENVPOOL_TASKS = {"gardner": ("MiniChess-Gardner-v0", "GardnerChess-v1"), "chess": ("MiniChess-Chess-v0", "Chess-v1")}
TARGET_ENVPOOL = 5.0  # ours >= 5x EnvPool's best plies/s on Gardner at equal history


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


def vector_env(seconds: float, num_envs: int, mode: str, env_id: str = "MiniChess-Gardner-v0",
               history: int = 1) -> dict:
    """Steps/s of a vector env; for the native one also plies/s, counted exactly from the games' positions.

    A game's plies are read from its position when it ends (before the next step resets it) and, for the
    games still running, at the end; the few attribute reads are in the loop figure, not in step()'s.
    """
    kwargs = {"history": history} if history != 1 else {}
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **kwargs)
    duels = getattr(envs, "duels", None)  # the native env's games (SyncVectorEnv has none)
    rng = np.random.default_rng(0)
    obs, _ = envs.reset(seed=0)
    steps = plies = games = 0
    ended = np.zeros(num_envs, bool)
    inside = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        actions = sample_batch(obs["action_mask"], rng)
        t = time.perf_counter()
        obs, _, terminated, truncated, _ = envs.step(actions)
        inside += time.perf_counter() - t
        steps += num_envs
        if duels is not None:
            ended = terminated | truncated
            for i in np.flatnonzero(ended):
                plies += duels[i].position.ply
                games += 1
    elapsed = time.perf_counter() - start
    result = {"steps_per_s": steps / elapsed, "steps_per_s_in_step": steps / inside, "class": type(envs).__name__,
              "history": history, "obs_shape": tuple(obs["observation"].shape[1:])}
    if duels is not None:
        plies += sum(duels[i].position.ply for i in np.flatnonzero(~ended))  # the games still running
        result.update(plies=plies, steps=steps, games_finished=games, plies_per_s=plies / elapsed,
                      plies_per_s_in_step=plies / inside)
    envs.close()
    return result


def equal_history(args, results) -> None:
    """Ours at ``args.history`` beside EnvPool (and pgx) on Gardner and 8x8, with the ratios."""
    h = args.history
    print(f"\n# equal history: {h} positions. EnvPool writes 2 observations per ply (one per player); "
          "our vector env 1 per env step (2 plies); our engine's random play 1 per ply")
    print(f"{'':<50} {'env steps/s':>12} {'plies/s':>12} {'plies/s in step()':>18}  observation")

    def row(name, steps, plies, inside, note):
        steps_s = f"{steps:>12,.0f}" if steps else " " * 12
        inside_s = f"{inside:>18,.0f}" if inside else " " * 18
        print(f"{name:<50} {steps_s} {plies:>12,.0f} {inside_s}  {note}", flush=True)

    ours, envpool_res = {}, {}
    for variant, (env_id, task_id) in ENVPOOL_TASKS.items():
        for hist in sorted({1, h}):
            for n in args.envpool_batches:
                r = vector_env(args.seconds, n, "vector_entry_point", env_id, hist)
                ours[f"{variant}_vector_{n}_history_{hist}"] = r
                row(f"ours {variant} native vector x{n}, history {hist}", r["steps_per_s"], r["plies_per_s"],
                    r["plies_per_s_in_step"], f"{r['obs_shape']} float32, 1 per env step")
        r = bench_engine.random_play(variant, args.seconds, history=h)
        ours[f"{variant}_engine_random_play_history_{h}"] = r
        row(f"ours {variant} engine random play, history {h}", None, r["plies_per_s"], None,
            "mask + observation every ply, Python loop")
        if args.no_peers:
            continue
        ep = peers.envpool_chess(task_id, batch_sizes=tuple(args.envpool_batches),
                                 threads=tuple(args.envpool_threads), seconds=args.seconds)
        envpool_res[variant] = ep
        if not ep.get("available"):
            print(f"EnvPool {task_id}: n/a ({ep['reason']})", flush=True)
            continue
        for r in ep["runs"]:
            row(f"EnvPool {task_id} batch {r['batch']}, {r['threads']} thread{'s' * (r['threads'] > 1)}",
                r["env_steps_per_s"], r["plies_per_s"], r["plies_per_s_in_step"],
                f"{tuple(ep['obs_shape'])} {ep['obs_dtype']}, {ep['obs_per_env_step']} per env step")
    results["equal_history"] = {"history": h, "ours": ours}
    results["envpool"] = envpool_res

    ratios = {}
    print()
    for variant, (_, task_id) in ENVPOOL_TASKS.items():
        mine = [ours[f"{variant}_vector_{n}_history_{h}"] for n in args.envpool_batches]
        best = max(mine, key=lambda r: r["plies_per_s"])
        best_in = max(r["plies_per_s_in_step"] for r in mine)
        ep = envpool_res.get(variant, {})
        if ep.get("available"):
            ratio = best["plies_per_s"] / ep["best_plies_per_s"]
            ratio_in = best_in / ep["best_plies_per_s_in_step"]
            ratios[variant] = {"ours_plies_per_s": best["plies_per_s"], "envpool_plies_per_s": ep["best_plies_per_s"],
                               "ratio": ratio, "ratio_in_step": ratio_in}
            verdict = ""
            if variant == "gardner":
                ok = ratio >= TARGET_ENVPOOL
                ratios[variant]["target_met"] = ok
                verdict = f"  (target >= {TARGET_ENVPOOL:g}x: {'met' if ok else 'MISSED'})"
            b = ep["best"]
            print(f"{variant}, history {h}: ours {best['plies_per_s']:,.0f} plies/s (native vector) / EnvPool "
                  f"{task_id} best {ep['best_plies_per_s']:,.0f} (batch {b['batch']}, {b['threads']} thread{'s' * (b['threads'] > 1)}) = "
                  f"{ratio:.1f}x{verdict}; in step() alone {ratio_in:.1f}x")
    pgx = results.get("pgx", {})
    if pgx.get("available"):
        mine = max(ours[f"gardner_vector_{n}_history_{h}"]["plies_per_s"] for n in args.envpool_batches)
        ratios["gardner_pgx"] = mine / pgx["best_steps_per_s"]
        print(f"gardner, history {h}: ours {mine:,.0f} plies/s / pgx best {pgx['best_steps_per_s']:,.0f} "
              f"(115 planes too) = {ratios['gardner_pgx']:.1f}x")
    results["equal_history"]["ratios"] = ratios


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--history", type=int, default=8, help="observation history of the EnvPool comparison")
    parser.add_argument("--envpool-batches", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--envpool-threads", type=int, nargs="+", default=[1, 2])
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
            show(f"minichess-envs {label} x{n}", r["steps_per_s"], r["steps_per_s_in_step"],
                 f"({r['plies_per_s']:,.0f} plies/s)" if "plies_per_s" in r else "")
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
    equal_history(args, results)
    peers.finish(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
