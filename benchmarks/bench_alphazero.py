"""AlphaZero speed: MCTS simulations/s and self-play positions/s, batched against one leaf at a time.

    python benchmarks/bench_alphazero.py                     # 3x3, gardner and the board games, ~4 minutes
    python benchmarks/bench_alphazero.py --games connect_four gomoku checkers --json runs/bench_alphazero.json

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
from agents.alphazero.selfplay import play_games
from agents.alphazero.train import Config, make_net, start_game, with_changes
from minichess_envs.variants import VARIANTS

# The networks and simulations of the experiments (experiments/alphazero_<game>.py)
NETS = {"3x3": dict(blocks=3, channels=64, policy_channels=32),
        "gardner": dict(blocks=3, channels=48, policy_channels=8),
        "connect_four": dict(blocks=3, channels=48, policy_channels=8),
        "gomoku": dict(blocks=3, channels=48, policy_channels=8, history=2),
        "checkers": dict(blocks=3, channels=48, policy_channels=8)}
SIMULATIONS = {"3x3": 64, "gardner": 48, "connect_four": 48, "gomoku": 48, "checkers": 48}
OPENSPIEL_STATES_PER_S = 55  # OpenSpiel's Python AlphaZero, as reported (50-60)


def game_config(game: str) -> Config:
    """The game with its experiment's network; chess games stop at 120 plies, as in self-play."""
    return with_changes(Config(), game=game, **NETS[game], **({"ply_limit": 120} if game in VARIANTS else {}))


def search_speed(game: str, trees: int, leaves: int, simulations: int, seconds: float) -> dict:
    """Simulations per second; each call searches fresh positions (1-6 random moves from the start) with an
    empty cache."""
    config = game_config(game)
    net, start = make_net(config), start_game(config)
    config = SearchConfig(simulations=simulations, leaves_per_tree=leaves)
    rng = np.random.default_rng(0)
    done = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        evaluator = NetworkEvaluator(net)
        search([start.random_start(rng, 6) for _ in range(trees)], evaluator, config)
        done += trees * simulations
    elapsed = time.perf_counter() - began
    return {"simulations_per_s": done / elapsed}


def selfplay_speed(game: str, games: int, leaves: int, simulations: int, seconds: float) -> dict:
    config = game_config(game)
    net, start = make_net(config), start_game(config)
    evaluator = NetworkEvaluator(net)
    config = SearchConfig(simulations=simulations, leaves_per_tree=leaves)
    rng = np.random.default_rng(0)
    positions = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        samples, _ = play_games([start.copy() for _ in range(games)], evaluator, config, rng, temperature_plies=12)
        positions += len(samples)
        evaluator.clear()  # as after every training iteration
    elapsed = time.perf_counter() - began
    return {"positions_per_s": positions / elapsed}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--games", nargs="+", default=list(NETS), choices=list(NETS))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}, torch {torch.__version__}"}
    results["load_average_start"] = os.getloadavg()
    print(f"# {results['date']}  {results['machine']}; load average {results['load_average_start'][0]:.2f}")
    for game in args.games:
        sims = SIMULATIONS[game]
        rows = {
            "search batched (256 trees x 4 leaves)": search_speed(game, 256, 4, sims, args.seconds),
            "search one leaf at a time": search_speed(game, 1, 1, sims, args.seconds),
            "self-play batched (256 games)": selfplay_speed(game, 256, 4, sims, args.seconds),
            "self-play one leaf at a time (1 game)": selfplay_speed(game, 1, 1, sims, args.seconds),
        }
        results[game] = rows
        print(f"\n{game} ({sims} simulations a move, network {NETS[game]})")
        for name, r in rows.items():
            figure = r.get("simulations_per_s") or r.get("positions_per_s")
            unit = "simulations/s" if "simulations_per_s" in r else "positions/s"
            print(f"  {name:<40} {figure:>12,.0f} {unit}")
        batched = rows["self-play batched (256 games)"]["positions_per_s"]
        single = rows["self-play one leaf at a time (1 game)"]["positions_per_s"]
        print(f"  self-play: batched {batched / single:.1f}x one leaf at a time; "
              f"{batched / OPENSPIEL_STATES_PER_S:.0f}x OpenSpiel's Python AlphaZero (~{OPENSPIEL_STATES_PER_S}/s)")
    results["load_average_end"] = os.getloadavg()
    print(f"\nload average at the end {results['load_average_end'][0]:.2f} (1 min)")
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
