"""Game datasets: which on-disk format, how fast it reads, whether memory stays flat, engine game throughput.

    python benchmarks/bench_dataset.py                       # gardner, 2,000 random games
    python benchmarks/bench_dataset.py --games 20000 --engine-games 20 --json runs/bench_dataset.json

Two formats are compared on the same games, each producing what training
needs (observation planes, legal-move mask, move played):

* ``moves``: our shards (start FEN + action index per ply, replayed through the
  C engine; :mod:`minichess_envs.dataset`);
* ``fen``: one FEN per position in a text file, each parsed into a ``Position``.

Then RSS is sampled while streaming the whole dataset several times (a leak
grows it), and Fairy-Stockfish self-play is timed (games/s and positions/s
per worker; ``--engine-games 0`` skips it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import tempfile
import time

import numpy as np

from minichess_envs import Position
from minichess_envs.dataset import GameDataset, ShardWriter


def random_games(variant: str, count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        position = Position(variant)
        actions = []
        while position.outcome() is None and len(actions) < 120:
            legal = position.legal_actions()
            actions.append(int(legal[rng.integers(len(legal))]))
            position.push_action(actions[-1])
        yield Position(variant).fen(), actions, rng.integers(-300, 300, len(actions)), "*"


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="gardner")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--passes", type=int, default=5, help="streaming passes for the memory check")
    parser.add_argument("--engine-games", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    results = {"variant": args.variant, "games": args.games, "cpu": platform.processor() or platform.machine(),
               "cores": os.cpu_count(), "load_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        shard_dir, fen_file = os.path.join(tmp, "shards"), os.path.join(tmp, "positions.fen")
        with ShardWriter(shard_dir, args.variant, games_per_shard=1000) as writer, open(fen_file, "w") as fens:
            for root, actions, scores, result in random_games(args.variant, args.games, seed=0):
                writer.add_game(root, actions, scores, result)
                position = Position(args.variant, root)
                for action in actions:
                    fens.write(f"{position.fen()} {action}\n")
                    position.push_action(action)
        data = GameDataset(shard_dir, validation=0.0)
        positions = data.num_positions
        shard_bytes = sum(os.path.getsize(os.path.join(shard_dir, f)) for f in os.listdir(shard_dir))
        results["positions"] = positions
        results["bytes_per_position"] = {"moves": shard_bytes / positions, "fen": os.path.getsize(fen_file) / positions}

        start = time.perf_counter()
        n = sum(len(b.actions) for b in data.batches(256, split="train", seed=0))
        results["positions_per_s"] = {"moves": n / (time.perf_counter() - start)}
        start, n = time.perf_counter(), 0
        with open(fen_file) as f:
            for line in f:
                fen, action = line.rsplit(" ", 1)
                position = Position(args.variant, fen)
                position.observation()
                position.action_mask()
                n += 1
        results["positions_per_s"]["fen"] = n / (time.perf_counter() - start)

        samples = []
        for _ in range(args.passes):
            for i, _batch in enumerate(data.batches(256, split="train", seed=1)):
                if i % 20 == 0:
                    samples.append(rss_mib())
        third = max(1, len(samples) // 3)
        results["rss_mib"] = {"first_third_median": float(np.median(samples[:third])),
                              "last_third_median": float(np.median(samples[-third:])), "max": max(samples),
                              "positions_streamed": positions * args.passes}

        if args.engine_games:
            from agents.supervised.engine_games import GenerationSettings, generate_games

            summary = generate_games(os.path.join(tmp, "engine"), GenerationSettings(
                args.variant, games=args.engine_games, nodes=args.nodes, games_per_chunk=1), workers=1)
            results["engine_generation"] = {"nodes": args.nodes, **summary}
    results["load_end"] = os.getloadavg()

    bpp, pps = results["bytes_per_position"], results["positions_per_s"]
    print(f"{args.variant}: {args.games} random games, {positions} positions")
    print(f"{'format':8} {'bytes/position':>15} {'positions/s':>12}")
    for name in ("moves", "fen"):
        print(f"{name:8} {bpp[name]:15.1f} {pps[name]:12.0f}")
    print(f"moves vs fen: {bpp['fen'] / bpp['moves']:.1f}x smaller, {pps['moves'] / pps['fen']:.1f}x faster")
    rss = results["rss_mib"]
    print(f"RSS over {rss['positions_streamed']} streamed positions: {rss['first_third_median']:.1f} MiB -> "
          f"{rss['last_third_median']:.1f} MiB (max {rss['max']:.1f})")
    if "engine_generation" in results:
        e = results["engine_generation"]
        print(f"Fairy-Stockfish self-play at {e['nodes']} nodes: {e['games_per_s_per_worker']:.2f} games/s and "
              f"{e['positions_per_s_per_worker']:.0f} positions/s per worker")
    print(f"load average {results['load_start'][0]:.2f} at start, {results['load_end'][0]:.2f} at end")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
