"""Gumbel root search against PUCT with the same network: at equal simulations and at equal time.

    python -m benchmarks.bench_gumbel --agent runs/supervised_gardner/pretrain/agent   # ~6 minutes on 2 cores
    python -m benchmarks.bench_gumbel --agent PATH --games 20 --sims 8 16 --json runs/bench_gumbel.json

One saved Gardner AlphaZero agent (its network, read-only) plays with both
roots, no noise (evaluation play), ``leaves_per_tree`` 4:

1. speed: milliseconds and network rounds per move of a one-position search
   (how an agent plays), and per position when 64 are searched together (how
   self-play runs), the best of 3 runs;
2. equal simulations: Gumbel at S against PUCT at S, head to head;
3. equal time: PUCT at ``--time-sims`` against Gumbel at the most simulations
   that take no longer (measured);
4. against Fairy-Stockfish at 10 nodes: each root at ``--fsf-sims`` (skipped
   without the binary).

Games start from random openings of ``--opening-plies`` plies, each opening
played twice with colours swapped; scores are Gumbel's (draws half) with 95%
Wilson intervals.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time


import agents.runs  # noqa: F401  (first: its OpenMP setting applies before torch loads)
import numpy as np
import torch

from agents.alphazero.agent import AlphaZeroAgent
from agents.alphazero.search import search
from agents.games.chess import chess_games
from agents.arena import close_agents, play_match
from minichess_envs import Position
from minichess_envs.positions import random_walk_positions


def random_positions(count: int, plies: tuple[int, int], rng: np.random.Generator) -> list[Position]:
    """Gardner positions after ``plies[0]`` to ``plies[1] - 1`` random moves."""
    return random_walk_positions("gardner", count, rng, max_plies=plies[1], min_plies=plies[0])


def with_root(base: AlphaZeroAgent, root: str, simulations: int) -> AlphaZeroAgent:
    search = dataclasses.replace(base.search, root=root)
    return AlphaZeroAgent(base.net, base.variant.name, base.encoding.history, base.encoding.last_move, simulations,
                          search, name=f"{root}-{simulations}")


class CountingEvaluator:
    """The agent's evaluator, counting network rounds (calls)."""

    def __init__(self, evaluator):
        self.evaluator, self.calls = evaluator, 0

    def __call__(self, observations, masks, keys):
        self.calls += 1
        return self.evaluator(observations, masks, keys)


def search_cost(agent: AlphaZeroAgent, positions: list[Position], together: bool = False) -> tuple[float, float]:
    """Milliseconds and network rounds per searched position (one search each, or one for all)."""
    agent.evaluator.clear()
    counting = CountingEvaluator(agent.evaluator)
    start = time.perf_counter()
    for batch in ([positions] if together else [[pos] for pos in positions]):
        search(chess_games(batch, agent.encoding), counting, agent.search)
    return 1000 * (time.perf_counter() - start) / len(positions), counting.calls / (1 if together else len(positions))


def ms_per_move(agent: AlphaZeroAgent, positions: list[Position], repeats: int = 3) -> float:
    """The best of ``repeats`` runs (the machine may be shared)."""
    return min(search_cost(agent, positions)[0] for _ in range(repeats))


def match(a, b, games: int, openings: list[str], workers: int, seed: int) -> dict:
    start = time.perf_counter()
    result = play_match(a, b, "gardner", games, seed, openings=openings, workers=workers, pgn=False)
    t = result.tally(a.name)
    low, high = t.interval
    return {"player": a.name, "opponent": b.name, "games": t.games, "wins": t.wins, "draws": t.draws,
            "losses": t.losses, "score": t.score, "wilson95": [low, high],
            "seconds": time.perf_counter() - start}


def line(r: dict) -> str:
    return (f"{r['player']:>10} vs {r['opponent']:<10} {r['games']:4d} games  +{r['wins']} ={r['draws']} "
            f"-{r['losses']}  score {r['score']:.3f} [{r['wilson95'][0]:.3f}, {r['wilson95'][1]:.3f}]"
            f"  ({r['seconds']:.0f} s)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent", required=True, help="a saved Gardner AlphaZero agent (directory with agent.json)")
    p.add_argument("--sims", type=int, nargs="+", default=[8, 16, 32, 64])
    p.add_argument("--games", type=int, default=40, help="games per match (even: both colours per opening)")
    p.add_argument("--time-sims", type=int, default=32, help="PUCT's simulations in the equal-time match")
    p.add_argument("--fsf-sims", type=int, default=16, help="simulations against Fairy-Stockfish (0: skip)")
    p.add_argument("--opening-plies", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    torch.set_num_threads(1)
    base = AlphaZeroAgent.load(args.agent)
    rng = np.random.default_rng(args.seed)
    openings = [pos.fen() for pos in random_positions(args.games // 2, (args.opening_plies, args.opening_plies + 1),
                                                      rng)]
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.platform(),
              "cpus": os.cpu_count(), "load_before": os.getloadavg(), "agent": args.agent, "games": args.games,
              "opening_plies": args.opening_plies, "speed": [], "equal_simulations": [], "equal_time": None,
              "fsf_n10": []}
    print(f"{report['date']}, {report['cpus']} CPUs, load {report['load_before'][0]:.2f}; network {args.agent}")

    probes = random_positions(24, (2, 14), rng)
    sims = sorted(set(args.sims) | {args.time_sims})
    print("\nspeed, one position a search (an agent's move): ms and network rounds per move, best of 3 runs;")
    print("and 64 positions searched together (self-play): ms per position, rounds per search")
    print(f"{'sims':>6} {'puct ms':>8} {'gumbel ms':>9} {'puct rounds':>11} {'gumbel rounds':>13}"
          f" {'puct x64':>9} {'gumbel x64':>10} {'rounds x64':>10}")
    speed = {}
    many = random_positions(64, (2, 14), rng)
    for s in sims:
        row = {"simulations": s}
        for _ in range(3):  # alternating, the best of 3
            for root in ("puct", "gumbel"):
                agent = with_root(base, root, s)
                ms, rounds = search_cost(agent, probes)
                row[root] = min(row.get(root, ms), ms)
                row[f"{root}_rounds"] = rounds
                ms, rounds = search_cost(agent, many, together=True)
                row[f"{root}_x64_ms"] = min(row.get(f"{root}_x64_ms", ms), ms)
                row[f"{root}_x64_rounds"] = rounds
        speed[s] = row
        report["speed"].append(row)
        print(f"{s:6d} {row['puct']:8.1f} {row['gumbel']:9.1f} {row['puct_rounds']:11.1f} {row['gumbel_rounds']:13.1f}"
              f" {row['puct_x64_ms']:9.2f} {row['gumbel_x64_ms']:10.2f}"
              f" {row['puct_x64_rounds']:4.0f}/{row['gumbel_x64_rounds']:<4.0f}")

    print("\nequal simulations, Gumbel's score against PUCT:")
    for s in args.sims:
        r = match(with_root(base, "gumbel", s), with_root(base, "puct", s), args.games, openings, args.workers,
                  args.seed)
        report["equal_simulations"].append(r)
        print(line(r))

    # Gumbel's simulations that take PUCT's time at --time-sims: the most whose measured time is not more.
    target = speed[args.time_sims]["puct"]
    gumbel_sims, gumbel_ms = 2, None
    for s in range(args.time_sims, 1, -max(1, args.time_sims // 16)):
        gumbel_ms = ms_per_move(with_root(base, "gumbel", s), probes)
        if gumbel_ms <= target:
            gumbel_sims = s
            break
    print(f"\nequal time (PUCT at {args.time_sims}: {target:.0f} ms a move): Gumbel at {gumbel_sims} simulations "
          f"({gumbel_ms:.0f} ms a move)")
    g = with_root(base, "gumbel", gumbel_sims)
    r = match(g, with_root(base, "puct", args.time_sims), args.games, openings, args.workers, args.seed)
    r["gumbel_ms_per_move"], r["puct_ms_per_move"] = gumbel_ms, target
    report["equal_time"] = r
    print(line(r))

    if args.fsf_sims:
        from agents.players.uci import EngineNotFoundError, UCIEngineAgent

        try:
            engine = UCIEngineAgent("gardner", nodes=10)
        except EngineNotFoundError as exc:
            print(f"\nFairy-Stockfish skipped: {exc}")
        else:
            print(f"\nagainst {engine.name}:")
            try:
                for root in ("puct", "gumbel"):
                    r = match(with_root(base, root, args.fsf_sims), engine, args.games, openings, args.workers,
                              args.seed)
                    report["fsf_n10"].append(r)
                    print(line(r))
            finally:
                close_agents([engine])
    report["load_after"] = os.getloadavg()
    print(f"\nload after: {report['load_after'][0]:.2f}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
