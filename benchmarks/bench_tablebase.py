"""Tablebase speed: build, cache read, probes, agent scoring.

    python benchmarks/bench_tablebase.py                  # 3x3, 5 builds
    python benchmarks/bench_tablebase.py --repeat 10 --json runs/bench_tablebase.json
    python benchmarks/bench_tablebase.py --army KQRN --repeat 1    # 3x3 with knights too (720k positions)

Build time is from nothing to a solved table in memory: enumerating the legal
positions, linking every move to its child with the C engine, and the
retrograde solve (numpy). Target: under 10 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

from agents.runs import write_json  # first: the OpenMP setting, before torch
import numpy as np

from minichess_envs import get_variant, positions
from minichess_envs.tablebase import Tablebase, score_agent

from agents.players.perfect import PerfectAgent  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """(best, median) seconds of ``repeat`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="3x3")
    parser.add_argument("--army", help="each side's army, e.g. KQRN (default: one of each piece of the variant)")
    parser.add_argument("--repeat", type=int, default=5, help="builds to time (best and median reported)")
    parser.add_argument("--json", help="also write all figures to this file")
    args = parser.parse_args(argv)

    variant = get_variant(args.variant)
    if args.army:  # the same board and rules with these pieces in play
        variant = variant.replace(name=f"{variant.name}-{args.army.lower()}", pieces=args.army.upper())
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
               f"Python {platform.python_version()}", "variant": variant.name}
    print(f"# {results['date']}  {results['machine']}", flush=True)

    def enumerate_only():
        positions._legal_positions.cache_clear()  # time the enumeration, not the cache
        return positions.legal_positions(variant)

    def build():
        positions._legal_positions.cache_clear()
        return Tablebase.build(variant)

    best, median, found = timed(enumerate_only, args.repeat)
    results["enumerate"] = {"best_s": best, "median_s": median, "positions": len(found)}
    best, median, tb = timed(build, args.repeat)
    n = len(tb)
    results["build"] = {"best_s": best, "median_s": median, "positions": n, "positions_per_s": n / median}
    rows = [
        ("enumerate legal positions", f"{results['enumerate']['median_s'] * 1e3:,.0f} ms", f"{n:,} positions"),
        ("build (enumerate + link moves + solve)", f"{median:.3f} s",
         f"best {best:.3f} s, {n / median:,.0f} positions/s"),
    ]
    with tempfile.TemporaryDirectory() as cache:
        Tablebase.load(variant, cache_dir=cache)
        best, median, _ = timed(lambda: Tablebase.load(variant, cache_dir=cache), args.repeat)
    results["load_cached"] = {"best_s": best, "median_s": median}
    rows.append(("load from the cache (checksum checked)", f"{median * 1e3:,.0f} ms", f"best {best * 1e3:,.0f} ms"))

    rng = np.random.default_rng(0)
    sample = rng.choice(tb.non_terminal(), 2000, replace=False)
    pos_list = [tb.position(int(i)) for i in sample]
    fens = [p.fen() for p in pos_list]
    for label, fn, items in (
        ("probe(Position)", tb.probe, pos_list),
        ("probe(FEN)", tb.probe, fens),
        ("move_values(Position)", tb.move_values, pos_list),
        ("fastest_moves(Position)", tb.fastest_moves, pos_list),
    ):
        best, median, _ = timed(lambda: [fn(x) for x in items], max(3, args.repeat))
        rate = len(items) / median
        results[label] = {"per_s": rate, "us_per_call": 1e6 / rate}
        rows.append((label, f"{1e6 / rate:,.1f} us", f"{rate:,.0f} calls/s"))

    start = time.perf_counter()
    score = score_agent(PerfectAgent(seed=0, tablebase=tb), tb)
    seconds = time.perf_counter() - start
    results["score_perfect_agent"] = {"positions": len(score.index), "seconds": seconds,
                                      "positions_per_s": len(score.index) / seconds}
    rows.append(("score_agent(PerfectAgent), all positions", f"{seconds:.2f} s",
                 f"{len(score.index):,} positions, {len(score.index) / seconds:,.0f}/s (mask + obs + act + lookup)"))

    for label, figure, note in rows:
        print(f"{label:<44} {figure:>12}  {note}", flush=True)
    print(f"\nbuild target: under 10 s -> {results['build']['median_s']:.2f} s")
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
