"""Env and search speed of two or more commits, measured in one run, rounds interleaved.

    python benchmarks/compare_commits.py a29ea6f HEAD            # ~3 minutes
    python benchmarks/compare_commits.py a29ea6f HEAD --rounds 7 --seconds 3 --json runs/compare.json

Each commit is checked out into a temporary git worktree and its C core built there; every round
then runs the same measurements once per commit (the order alternates between rounds, so that other
jobs' load falls on all alike), each in a fresh process importing only that commit's code. Figures:
the single env and the native vector env (64 envs) in steps/s, timed by this folder's bench_envs.py loops,
and the AlphaZero tree with the rules alone as evaluator (uniform priors, value 0: no network is
timed) in simulations/s on Gardner, 64 trees of 200 simulations, 4 leaves waiting per tree. The
table gives medians and each commit's ratio to the first; the load average is printed with it.

Each round pads the measuring processes' environment by another number of bytes, the same for every commit:
the same machine code runs up to ~10% faster or slower as the environment's size moves the stack (Mytkowicz et
al., "Producing wrong data without doing anything obviously wrong!", ASPLOS 2009), and with one fixed size one
commit's worktree path could favour it throughout (docs/results/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile

import peers

# One measurement, run inside a commit's worktree. The search moved in the redesign (issue 33):
# commits before it have ``agents.alphazero.mcts.run_search`` over positions, later ones ``search`` over games.
MEASURE = r"""
import json, sys, time
import numpy as np
what, seconds = sys.argv[1], float(sys.argv[2])
if what == "single_env":
    import bench_envs
    print(json.dumps(bench_envs.single_env(seconds)["steps_per_s"]))
elif what == "vector_env":
    import bench_envs
    print(json.dumps(bench_envs.vector_env(seconds, 64, "vector_entry_point")["steps_per_s"]))
else:
    import minichess_envs
    from minichess_envs.encoding import ObservationEncoding
    from minichess_envs.positions import random_walk_positions
    encoding = ObservationEncoding(minichess_envs.get_variant("gardner"))
    try:
        from agents.alphazero.search import SearchConfig, UniformEvaluator, search
        from agents.games.chess import chess_games
        run = lambda positions, config: search(chess_games(positions, encoding), UniformEvaluator(), config)
    except ImportError:
        from agents.alphazero.mcts import SearchConfig, UniformEvaluator, run_search
        run = lambda positions, config: run_search(positions, UniformEvaluator(), config, encoding)
    config = SearchConfig(simulations=200, leaves_per_tree=4)
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run(random_walk_positions("gardner", 64, rng, max_plies=6), config)
        steps += 64 * 200
    print(json.dumps(steps / (time.perf_counter() - start)))
"""
MEASUREMENTS = {"single_env": "steps/s", "vector_env": "steps/s", "search": "simulations/s"}


def worktree(rev: str, root: str, into: str) -> str:
    """A worktree of ``rev`` under ``into`` with its C core built in place."""
    path = os.path.join(into, rev.replace("/", "_"))
    subprocess.run(["git", "-C", root, "worktree", "add", "-q", "--detach", path, rev], check=True)
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=path, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def measure(path: str, what: str, seconds: float, padding: int = 0) -> float:
    # the commit's code first, then this folder (bench_envs' loops, timing that commit's minichess_envs)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, os.path.dirname(os.path.abspath(__file__))]),
           "MEASURE_PADDING": "x" * padding}
    out = subprocess.run([sys.executable, "-c", MEASURE, what, str(seconds)], cwd=path, env=env, check=True,
                         capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revs", nargs="+", help="commits to compare; the first is the reference")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement")
    parser.add_argument("--json", help="also write all figures to this file")
    args = parser.parse_args(argv)
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True).stdout.strip()
    paddings = [random.Random(r).randrange(4096) for r in range(args.rounds)]  # bytes, one size a round
    results = {**peers.machine(), "revs": {}, "paddings": paddings}
    print(f"# {results['date']}  {results['machine']}  load {results['load_start'][0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        try:
            for rev in args.revs:
                paths[rev] = worktree(rev, root, tmp)
                commit = subprocess.run(["git", "-C", paths[rev], "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True, check=True).stdout.strip()
                results["revs"][rev] = {"commit": commit, **{what: [] for what in MEASUREMENTS}}
            for round in range(args.rounds):
                order = args.revs if round % 2 == 0 else args.revs[::-1]
                for what in MEASUREMENTS:
                    for rev in order:
                        results["revs"][rev][what].append(measure(paths[rev], what, args.seconds, paddings[round]))
                print(f"round {round + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", flush=True)
        finally:
            for path in paths.values():
                subprocess.run(["git", "-C", root, "worktree", "remove", "--force", path], check=False)
    first = results["revs"][args.revs[0]]
    print(f"\nmedians of {args.rounds} rounds of {args.seconds:g} s")
    print(f"{'commit':<12} " + " ".join(f"{what + ' (' + unit + ')':>28}" for what, unit in MEASUREMENTS.items()))
    for rev, figures in results["revs"].items():
        cells = []
        for what in MEASUREMENTS:
            median = statistics.median(figures[what])
            figures[f"{what}_median"] = median
            ratio = median / statistics.median(first[what])
            cells.append(f"{median:>18,.0f} ({ratio:.3f}x)")
        print(f"{figures['commit']:<12} " + " ".join(f"{cell:>28}" for cell in cells))
    peers.finish(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
