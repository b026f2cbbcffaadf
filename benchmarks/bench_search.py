"""The one AlphaZero tree over each kind of game: simulations/s with the rules alone as evaluator.

    python benchmarks/bench_search.py          # ~1 minute

The same batched PUCT (64 trees of 200 simulations, 4 leaves per tree waiting) with uniform
priors and value 0, so only the tree and the games are timed, not a network: Gardner chess,
whose moves the tree plays in C, and the Python games (Connect Four, Tic-Tac-Toe, Gomoku, Checkers), whose nodes
the tree makes through the game's own ``copy`` and ``step``. Medians of ``--repeats`` runs; the
load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from agents.alphazero.search import SearchConfig, UniformEvaluator, search
from agents.games import new_game


def simulations_per_second(game: str, trees: int, config: SearchConfig, repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        games = [new_game(game) for _ in range(trees)]
        start = time.perf_counter()
        search(games, UniformEvaluator(), config)
        rates.append(trees * config.simulations / (time.perf_counter() - start))
    return float(np.median(rates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", type=int, default=64)
    parser.add_argument("--simulations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = SearchConfig(simulations=args.simulations, leaves_per_tree=4)
    print(f"{args.trees} trees x {args.simulations} simulations, 4 leaves per tree, uniform evaluator; "
          f"median of {args.repeats}")
    for game in ("gardner", "connect_four", "tictactoe", "gomoku", "checkers"):
        rate = simulations_per_second(game, args.trees, config, args.repeats)
        print(f"{game:<14} {rate:>10,.0f} simulations/s", flush=True)
    print("load average (1 / 5 / 15 min): " + " / ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
