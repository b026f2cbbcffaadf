"""The generic (Python) AlphaZero tree against the C tree: simulations/s with the rules alone as evaluator.

    python benchmarks/bench_generic_search.py          # ~1 minute

Both trees run the same batched PUCT (64 trees of 200 simulations, 4 leaves per tree waiting) with
uniform priors and value 0, so only the trees are timed, not a network: the generic tree over
Connect Four (``agents.alphazero.game.ConnectFour``) and over Gardner chess (``ChessGame``), the C tree
over Gardner chess. Medians of ``--repeats`` runs; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from agents.alphazero.game import ChessGame, ConnectFour
from agents.alphazero.generic_search import run_game_search
from agents.alphazero.mcts import SearchConfig, UniformEvaluator, run_search
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import Position


def simulations_per_second(search, trees: int, simulations: int, repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        search()
        rates.append(trees * simulations / (time.perf_counter() - start))
    return float(np.median(rates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", type=int, default=64)
    parser.add_argument("--simulations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = SearchConfig(simulations=args.simulations, leaves_per_tree=4)
    encoding = ObservationEncoding("gardner", 1, False)
    cases = {
        "generic tree, Connect Four": lambda: run_game_search([ConnectFour() for _ in range(args.trees)],
                                                              UniformEvaluator(), config),
        "generic tree, Gardner": lambda: run_game_search(
            [ChessGame(Position("gardner"), encoding) for _ in range(args.trees)], UniformEvaluator(), config),
        "C tree, Gardner": lambda: run_search([Position("gardner") for _ in range(args.trees)],
                                              UniformEvaluator(), config, encoding),
    }
    print(f"{args.trees} trees x {args.simulations} simulations, 4 leaves per tree, uniform evaluator; "
          f"median of {args.repeats}")
    for name, search in cases.items():
        print(f"{name:<28} {simulations_per_second(search, args.trees, args.simulations, args.repeats):>10,.0f} "
              "simulations/s", flush=True)
    print("load average (1 / 5 / 15 min): " + " / ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
