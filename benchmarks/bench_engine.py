"""Engine speed, side by side with the peers, in one run.

    python benchmarks/bench_engine.py              # 3 s per measurement
    python benchmarks/bench_engine.py --seconds 5 --json runs/bench_engine.json

Our random play counts one ply as everything an RL step needs from the engine:
the legal-action mask, the observation planes, the legal action list, a
uniformly random legal action played, and the outcome check. Peers (from
benchmarks/peers.py) run only where installed: ``pip install -e ".[bench]"``.
Targets: gardner >= 3x pgx's best batched CPU figure,
8x8 >= 10x PettingZoo chess_v6.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import numpy as np

import peers  # noqa: E402

from minichess_envs import Position, get_variant  # noqa: E402

PERFT_CASES = [
    ("3x3", None, 14),
    ("gardner", None, 6),
    ("losalamos", None, 5),
    ("chess", None, 5),
    ("chess", peers.KIWIPETE_FEN, 4),
]


def random_play(variant: str, seconds: float, history: int = 1, seed: int = 0) -> dict:
    """Plies per second of random play with mask + observation at every ply."""
    v = get_variant(variant)
    rng = random.Random(seed)
    pos = Position(v)
    channels = pos.observation_channels(history, True)
    plies = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(500):
            mask = np.empty(v.num_actions, np.int8)
            pos.write_action_mask(mask)
            obs = np.empty((v.height, v.width, channels), np.float32)
            pos.write_observation(obs, history, True)
            actions = pos.legal_actions()
            pos.push_action(actions[rng.randrange(len(actions))])
            plies += 1
            if pos.outcome_code()[0] or pos.ply >= v.ply_limit:
                pos = Position(v)
                games += 1
    elapsed = time.perf_counter() - start
    return {"plies_per_s": plies / elapsed, "plies": plies, "games": games, "seconds": elapsed}


def perft_speed(variant: str, fen: str | None, depth: int) -> dict:
    pos = Position(variant, fen)
    start = time.perf_counter()
    nodes = pos.perft(depth)
    elapsed = time.perf_counter() - start
    return {"nodes": nodes, "seconds": elapsed, "nodes_per_s": nodes / elapsed}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each throughput measurement")
    parser.add_argument("--no-peers", action="store_true", help="measure only minichess-envs")
    parser.add_argument("--json", help="also write all figures to this file")
    args = parser.parse_args(argv)

    results = {**peers.machine(), "ours": {}, "peers": {}}
    rows = []
    print(f"# {results['date']}  {results['machine']}  load {results['load_start'][0]:.2f}", flush=True)
    for variant in ("3x3", "gardner", "chess"):
        r = random_play(variant, args.seconds)
        results["ours"][f"random_play_{variant}"] = r
        rows.append((f"minichess-envs random play {variant}", r["plies_per_s"], "plies/s, mask + obs + move + outcome"))
        print(f"{rows[-1][0]:<44} {rows[-1][1]:>14,.0f}  {rows[-1][2]}", flush=True)
    for variant, fen, depth in PERFT_CASES:
        r = perft_speed(variant, fen, depth)
        label = f"minichess-envs perft {variant}{' kiwipete' if fen else ''} d{depth}"
        results["ours"][label] = r
        rows.append((label, r["nodes_per_s"], f"nodes/s ({r['nodes']:,} nodes)"))
        print(f"{rows[-1][0]:<44} {rows[-1][1]:>14,.0f}  {rows[-1][2]}", flush=True)

    if not args.no_peers:
        pgx = peers.pgx_gardner(batch_sizes=(1, 8, 64, 256), seconds=args.seconds)
        pz = peers.pettingzoo_chess(seconds=args.seconds)
        pc = peers.python_chess_random_play(seconds=args.seconds)
        results["peers"] = {"pgx_gardner": pgx, "pettingzoo_chess_v6": pz, "python_chess_random_play": pc}
        peer_rows = []
        if pgx.get("available"):
            for b, r in pgx["by_batch"].items():
                peer_rows.append((f"pgx gardner_chess batch {b}", r["steps_per_s"], "plies/s"))
        else:
            peer_rows.append(("pgx gardner_chess", None, pgx["reason"]))
        for name, r in (("PettingZoo chess_v6", pz), ("python-chess random play", pc)):
            peer_rows.append((name, r.get("plies_per_s"), "plies/s" if r.get("available") else r["reason"]))
        for fen, depth, label in ((peers.START_FEN, 4, "start d4"), (peers.KIWIPETE_FEN, 3, "kiwipete d3")):
            r = peers.python_chess_perft(fen, depth, bulk=True)
            results["peers"][f"python_chess_perft {label}"] = r
            peer_rows.append((f"python-chess perft {label}", r.get("nodes_per_s"),
                              "nodes/s (bulk)" if r.get("available") else r.get("reason", "")))
        for name, rate, note in peer_rows:
            print(f"{name:<44} {rate:>14,.0f}  {note}" if rate else f"{name:<44} {'n/a':>14}  {note}", flush=True)

        print()
        ours_g = results["ours"]["random_play_gardner"]["plies_per_s"]
        ours_c = results["ours"]["random_play_chess"]["plies_per_s"]
        if pgx.get("available"):
            ratio = ours_g / pgx["best_steps_per_s"]
            print(f"gardner vs pgx best (batch {pgx['best_batch']}): {ratio:.1f}x  (target >= 3x)")
        if pz.get("available"):
            print(f"8x8 vs PettingZoo chess_v6: {ours_c / pz['plies_per_s']:.1f}x  (target >= 10x)")
        if pc.get("available"):
            print(f"8x8 vs python-chess (no mask, no observation): {ours_c / pc['plies_per_s']:.1f}x")

    peers.finish(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
