"""AlphaZero speed: MCTS simulations/s and self-play positions/s, batched against one leaf at a time.

    python benchmarks/bench_alphazero.py                     # 3x3 and gardner, ~2 minutes
    python benchmarks/bench_alphazero.py --json runs/bench_alphazero.json

"Batched" is how the self-play loop runs: many games' trees searched together,
each tree keeping up to 4 leaves waiting (virtual loss), one network call per
round. "One leaf at a time" is the textbook loop: one tree, one leaf, one
network call per simulation. Both use the same C tree, the same network (the
sizes of the experiments, random weights) and the same evaluation cache.
For scale: OpenSpiel's Python AlphaZero reports about 50-60 self-play
states/s; the target is 20x that (>= 1,000-1,200 states/s).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time


from agents.runs import write_json  # first: its OpenMP setting applies before torch loads
import numpy as np
import torch


from agents.alphazero.search import NetworkEvaluator, SearchConfig, search
from agents.games.chess import ChessGame, chess_games
from agents.alphazero.selfplay import play_games
from agents.alphazero.train import Config, make_net, start_game, with_changes
from minichess_envs import Position
from minichess_envs.positions import random_walk_positions

NETS = {  # as in experiments/alphazero_3x3.py and experiments/alphazero_gardner.py
    "3x3": dict(blocks=3, channels=64, policy_channels=32),
    "gardner": dict(blocks=3, channels=48, policy_channels=8),
}
OPENSPIEL_STATES_PER_S = 55  # OpenSpiel's Python AlphaZero, as reported (50-60)


def positions_for(variant: str, count: int, rng: np.random.Generator) -> list[Position]:
    """Start positions with a few random plies, so the searches differ."""
    return random_walk_positions(variant, count, rng, max_plies=6)


def search_speed(variant: str, trees: int, leaves: int, simulations: int, seconds: float) -> dict:
    """Simulations per second; each call searches fresh positions with an empty cache."""
    config = with_changes(Config(), game=variant, **NETS[variant])
    net, encoding = make_net(config), start_game(config).encoding
    config = SearchConfig(simulations=simulations, leaves_per_tree=leaves)
    rng = np.random.default_rng(0)
    done = hits = misses = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        evaluator = NetworkEvaluator(net)
        search(chess_games(positions_for(variant, trees, rng), encoding), evaluator, config)
        done += trees * simulations
        hits, misses = hits + evaluator.hits, misses + evaluator.misses
    elapsed = time.perf_counter() - start
    return {"simulations_per_s": done / elapsed, "cache_hit_rate": hits / max(1, hits + misses)}


def selfplay_speed(variant: str, games: int, leaves: int, simulations: int, seconds: float) -> dict:
    config = with_changes(Config(), game=variant, **NETS[variant])
    net, encoding = make_net(config), start_game(config).encoding
    evaluator = NetworkEvaluator(net)
    config = SearchConfig(simulations=simulations, leaves_per_tree=leaves)
    rng = np.random.default_rng(0)
    positions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        starts = [ChessGame(Position(variant), encoding, ply_limit=120) for _ in range(games)]
        samples, _ = play_games(starts, evaluator, config, rng, temperature_plies=12)
        positions += len(samples)
        evaluator.clear()  # as after every training iteration
    elapsed = time.perf_counter() - start
    return {"positions_per_s": positions / elapsed}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--variants", nargs="+", default=["3x3", "gardner"])
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}, torch {torch.__version__}"}
    print(f"# {results['date']}  {results['machine']}")
    for variant in args.variants:
        sims = {"3x3": 64, "gardner": 48}[variant]
        rows = {
            "search batched (256 trees x 4 leaves)": search_speed(variant, 256, 4, sims, args.seconds),
            "search one leaf at a time": search_speed(variant, 1, 1, sims, args.seconds),
            "self-play batched (256 games)": selfplay_speed(variant, 256, 4, sims, args.seconds),
            "self-play one leaf at a time (1 game)": selfplay_speed(variant, 1, 1, sims, args.seconds),
        }
        results[variant] = rows
        print(f"\n{variant} ({sims} simulations a move, network {NETS[variant]})")
        for name, r in rows.items():
            figure = r.get("simulations_per_s") or r.get("positions_per_s")
            unit = "simulations/s" if "simulations_per_s" in r else "positions/s"
            extra = f"  (cache hits {r['cache_hit_rate']:.0%})" if "cache_hit_rate" in r else ""
            print(f"  {name:<40} {figure:>12,.0f} {unit}{extra}")
        batched = rows["self-play batched (256 games)"]["positions_per_s"]
        single = rows["self-play one leaf at a time (1 game)"]["positions_per_s"]
        print(f"  self-play: batched {batched / single:.1f}x one leaf at a time; "
              f"{batched / OPENSPIEL_STATES_PER_S:.0f}x OpenSpiel's Python AlphaZero (~{OPENSPIEL_STATES_PER_S}/s)")
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
