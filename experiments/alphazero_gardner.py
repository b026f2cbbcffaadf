"""AlphaZero learns Gardner 5x5 minichess by self-play; scored against random, minimax and Fairy-Stockfish.

    python experiments/alphazero_gardner.py                  # under an hour on 2 CPU cores
    python experiments/alphazero_gardner.py --resume         # continue an interrupted run
    python experiments/alphazero_gardner.py --workers 2      # self-play in Ray actors
    python -m experiments.alphazero_gardner --iterations 2   # as a module, from the repository root

Every iteration the raw policy (no search) plays a quick match against the
random player with each color; at the end the searching agent plays
``--final-games`` games with each color against random (Wilson intervals),
and shorter matches against minimax and Fairy-Stockfish (if installed).
Writes runs/alphazero_gardner/: report.md, metrics.csv, *.png, checkpoint/, tensorboard/, agent/.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

# Idle OpenMP threads sleep instead of spinning: with other work on a 2-core machine,
# spinning threads slowed training 20-50x in our runs. Set before torch loads OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from agents import MinimaxAgent  # noqa: E402
from agents.alphazero.agent import AlphaZeroAgent  # noqa: E402
from agents.alphazero.train import gardner_config, train, write_agent  # noqa: E402
from agents.arena import play_match  # noqa: E402
from agents.evaluation import versus_random  # noqa: E402
from agents.reports import baseline_table, baselines, line_plot, markdown_table  # noqa: E402
from agents.runs import machine, machine_text  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/alphazero_gardner")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--games", type=int, default=256, help="self-play games per iteration")
    parser.add_argument("--simulations", type=int, default=48, help="per move, in self-play and evaluation")
    parser.add_argument("--eval-games", type=int, default=100, help="raw-policy games per color, each iteration")
    parser.add_argument("--final-games", type=int, default=500, help="games per color against random at the end")
    parser.add_argument("--opponent-games", type=int, default=40, help="games against minimax / Fairy-Stockfish")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=0, help="Ray self-play actors (0: in process)")
    parser.add_argument("--ray-address", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--init-from", default=None,
                        help="a saved AlphaZero agent to start from (e.g. runs/supervised_gardner/agent)")
    args = parser.parse_args(argv)

    started = machine()
    config = gardner_config(args.out, iterations=args.iterations, games=args.games, simulations=args.simulations,
                            seed=args.seed, threads=args.threads, workers=args.workers,
                            ray_address=args.ray_address, init_from=args.init_from)

    def evaluate(net, encoding, iteration):
        """The raw policy (argmax, no search) against random with both colors."""
        raw = AlphaZeroAgent(net, "gardner", config.history, config.last_move, simulations=0)
        row = {}
        for color in ("white", "black"):
            match = versus_random(raw, "gardner", games=args.eval_games, color=color, seed=10_000 * iteration)
            row[f"raw_{color}_win_rate"] = match.win_rate
            row[f"raw_{color}_score"] = match.score
        return row

    start = time.perf_counter()
    state = train(config, evaluate=evaluate, resume=args.resume)
    agent_path = write_agent(args.out, state, simulations=args.simulations)
    print(f"final matches (search with {args.simulations} simulations) ...", flush=True)
    t0 = time.perf_counter()
    agent = AlphaZeroAgent.from_checkpoint(state, simulations=args.simulations)
    vs_random = {color: versus_random(agent, "gardner", games=args.final_games, color=color, seed=1_000_000)
                 for color in ("white", "black")}
    for match in vs_random.values():
        print(match, flush=True)
    opponents = [MinimaxAgent(depth=2, seed=1), MinimaxAgent(depth=3, seed=1)]
    try:
        from agents import UCIEngineAgent

        for nodes in (1, 10, 100):
            opponents.append(UCIEngineAgent("gardner", nodes=nodes))
    except Exception as exc:  # the engine is optional: report why it is missing
        print(f"Fairy-Stockfish not used: {exc}", flush=True)
    head_to_head = []
    for opponent in opponents:
        match = play_match(agent, opponent, "gardner", games=args.opponent_games, seed=7, opening_plies=2)
        head_to_head.append((opponent.name, match.tally(agent.name)))
        print(f"vs {opponent.name}: {match.tally(agent.name)}", flush=True)
        if hasattr(opponent, "close"):
            opponent.close()
    print(f"baselines: random and greedy against random, {args.final_games} games per color ...", flush=True)
    baseline_rows = baselines("gardner", games=args.final_games, seed=1_000_000)
    final_seconds = time.perf_counter() - t0
    write_report(args, config, state, vs_random, head_to_head, baseline_rows, final_seconds,
                 time.perf_counter() - start, agent_path, machine_text(started))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def write_report(args, config, state, vs_random, head_to_head, baseline_rows, final_seconds, wall_seconds, agent_path,
                 measured_on: str) -> None:
    metrics = state["metrics"]
    out = args.out
    iters = [m["iteration"] for m in metrics]
    line_plot(os.path.join(out, "raw_vs_random.png"), iters,
              {f"raw policy as {c}, win rate": [m[f"raw_{c}_win_rate"] for m in metrics] for c in ("white", "black")},
              "iteration", f"win rate ({args.eval_games} games)", "Gardner: raw policy against random")
    line_plot(os.path.join(out, "losses.png"), iters,
              {"policy loss": [m["policy_loss"] for m in metrics], "value loss": [m["value_loss"] for m in metrics]},
              "iteration", "loss", "training losses")
    rows = []
    for color, m in vs_random.items():
        wlo, whi = m.win_interval
        slo, shi = m.score_interval
        rows.append([f"random ({color})", m.games, f"{m.wins}-{m.draws}-{m.losses}", f"{m.win_rate:.3f} [{wlo:.3f}, {whi:.3f}]",
                     f"{m.score:.3f} [{slo:.3f}, {shi:.3f}]", f"{m.mean_plies:.0f}"])
    for name, t in head_to_head:
        lo, hi = t.interval
        rows.append([name, t.games, f"{t.wins}-{t.draws}-{t.losses}", f"{t.wins / t.games:.3f}",
                     f"{t.score:.3f} [{lo:.3f}, {hi:.3f}]", "-"])
    table = markdown_table(["opponent", "games", "W-D-L", "win rate [95% CI]", "score [95% CI]", "mean plies"], rows)
    selfplay = sum(m["selfplay_s"] for m in metrics)
    positions = sum(m["samples"] for m in metrics)
    train_seconds = metrics[-1]["elapsed_s"]
    white, black = vs_random["white"], vs_random["black"]
    text = f"""# AlphaZero on Gardner 5x5 minichess

{len(metrics)} iterations of {config.games_per_iteration} self-play games ({config.search.simulations} simulations a
move, games adjudicated drawn at {config.ply_limit} plies), a {config.blocks}-block, {config.channels}-channel residual
network. The agent below searches with {args.simulations} simulations a move.

| against random | score | target |
|---|---|---|
| as White, {white.games} games | **{white.score:.3f}** (wins {white.win_rate:.3f}) | >= 0.99 |
| as Black, {black.games} games | **{black.score:.3f}** (wins {black.win_rate:.3f}) | >= 0.99 |

Baselines, same games (seeds 1,000,000 + i) under the same rules:

{baseline_table(baseline_rows)}

Time: training {train_seconds / 60:.1f} min (self-play {selfplay / 60:.1f} min, {positions:,} positions,
{positions / max(selfplay, 1e-9):,.0f} positions/s), final matches {final_seconds / 60:.1f} min, whole run
{wall_seconds / 60:.1f} min (a resumed run counts only its own part). {measured_on}

## Matches

Against random: the environments' seeded random player, game i seeded 1,000,000 + i. Against minimax
and Fairy-Stockfish: `agents.arena.play_match`, colors alternating, two random opening plies per game
(the engines and minimax are deterministic), seed 7. Intervals are Wilson 95%.

{table}

Plots: `raw_vs_random.png` (the raw policy, no search, each iteration), `losses.png`; every number per
iteration: `metrics.csv`.

## Settings

```
{chr(10).join(f"{k} = {v}" for k, v in dataclasses.asdict(config).items())}
```

The trained agent: `agents.load("{agent_path}")`.
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    torch.set_num_threads(2)
    sys.exit(main())
