"""AlphaZero learns Gardner 5x5 minichess by self-play; scored against random, minimax and Fairy-Stockfish.

    python experiments/alphazero_gardner.py                  # about 17 minutes on 2 CPU cores
    python experiments/alphazero_gardner.py --pretrain-games 0 --iterations 30   # pure self-play, from scratch
    python experiments/alphazero_gardner.py --hours 2        # a longer run: training stops after 2 hours
    python experiments/alphazero_gardner.py --resume         # continue an interrupted run
    python experiments/alphazero_gardner.py --device cuda --workers 14   # learner on a GPU, self-play in 14 CPU processes
    python -m experiments.alphazero_gardner --iterations 2   # as a module, from the repository root

First (unless ``--pretrain-games 0`` or ``--init-from``) the network learns
Fairy-Stockfish's moves and results from ``--pretrain-games`` engine games
(``agents.supervised.engine_games``, ``agents.supervised``), as seed 003 did: in our runs this
start doubled the score against Fairy-Stockfish at 100 nodes for the same
self-play (docs/alphazero.md). Then AlphaZero self-play. Every iteration the
raw policy (no search) plays a quick match against the random player with
each color; every ``--ladder-every`` iterations the searching
agent plays a short strength ladder (Fairy-Stockfish at fixed node budgets from
the published openings, agents/arena/ladder.py), so the report plots Elo against
training wall-clock. At the end the agent plays the full ladder (both colors of
every published opening, 200 games a level), ``--final-games`` games with each
color against random, and short matches against minimax.
Writes runs/alphazero_gardner/: report.md, metrics.csv, *.png, checkpoint/, tensorboard/, agent/.
"""

from __future__ import annotations

import argparse
import copy
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
from agents.alphazero.search import MOVE_CHOICES  # noqa: E402
from agents.alphazero.train import gardner_config, train, write_agent  # noqa: E402
from agents.arena import play_match  # noqa: E402
from agents.devices import DEVICES, resolve_device  # noqa: E402
from agents.arena.ladder import Ladder, ladder_table, play_ladder  # noqa: E402
from agents.arena.evaluation import versus_random  # noqa: E402
from agents.arena.evaluation import baselines
from agents.reports import baseline_table, curves_plot, line_plot, markdown_table  # noqa: E402
from agents.supervised.engine_games import GenerationSettings, generate_games  # noqa: E402
from agents.runs import machine, machine_text, read_state  # noqa: E402
from agents.supervised import SupervisedSettings, train_supervised  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/alphazero_gardner")
    parser.add_argument("--iterations", type=int, default=None,
                        help="self-play iterations (default: 32, or no limit with --hours)")
    parser.add_argument("--hours", type=float, default=None,
                        help="stop training once self-play and learning have run this long (resumable)")
    parser.add_argument("--device", default="auto", choices=DEVICES, help="where the learner and search run")
    parser.add_argument("--games", type=int, default=256, help="self-play games per iteration")
    parser.add_argument("--simulations", type=int, default=48, help="per move in self-play and the short ladders")
    parser.add_argument("--blocks", type=int, default=3, help="residual blocks of the network")
    parser.add_argument("--channels", type=int, default=48, help="channels of the network")
    parser.add_argument("--eval-simulations", type=int, default=256,
                        help="per move of the final agent (its matches and the final ladder)")
    parser.add_argument("--eval-move-choice", default="lcb", choices=MOVE_CHOICES,
                        help="the final agent's move: the most visited, or KataGo's lower confidence bound "
                             "(lcb scored 0.620 against 100 nodes where the most visited scored 0.560)")
    parser.add_argument("--pretrain-games", type=int, default=4000,
                        help="Fairy-Stockfish games the network first learns from (0: self-play from scratch)")
    parser.add_argument("--pretrain-nodes", type=int, default=100, help="the engine's budget in those games")
    parser.add_argument("--pretrain-epochs", type=int, default=6)
    parser.add_argument("--eval-games", type=int, default=100, help="raw-policy games per color, each iteration")
    parser.add_argument("--final-games", type=int, default=200, help="games per color against random at the end")
    parser.add_argument("--opponent-games", type=int, default=20, help="games against minimax")
    parser.add_argument("--ladder-every", type=int, default=8, help="iterations between short ladders (0: none)")
    parser.add_argument("--ladder-openings", type=int, default=20,
                        help="published openings in a short ladder (2 games each per level)")
    parser.add_argument("--ladder-levels", default="10,100,1000",
                        help="Fairy-Stockfish node budgets of the short ladders")
    parser.add_argument("--final-levels", default="10,100",
                        help="Fairy-Stockfish node budgets of the final ladder")
    parser.add_argument("--final-openings", type=int, default=None,
                        help="published openings in the final ladder (default: all 100, 200 games a level)")
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--final-learning-rate", type=float, default=None,
                        help="decay the learning rate on a cosine to this over the iterations or --hours "
                             "(default: constant)")
    parser.add_argument("--root", default="puct", choices=("puct", "gumbel"),
                        help="root search of self-play and the agent: PUCT or Gumbel AlphaZero")
    parser.add_argument("--value-target-q", type=float, default=0.0,
                        help="value target: (1 - w) * game result + w * the search's root value")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2,
                        help="self-play worker processes, one per core (0: self-play in this process)")
    parser.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=True,
                        help="workers play the next iteration's games (with weights one iteration old) while "
                             "the network learns")
    parser.add_argument("--ray-address", default=None,
                        help="run the workers as Ray actors on this cluster (\"local\": a new local one)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1 was measured faster than 2 on 2 cores: the search runs between small batches)")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--init-from", default=None,
                        help="a saved AlphaZero agent to start from (e.g. runs/supervised_gardner/agent)")
    args = parser.parse_args(argv)

    started = machine()
    start = time.perf_counter()
    iterations = args.iterations or (32 if args.hours is None else 1_000_000)
    config = gardner_config(args.out, iterations=iterations, games=args.games, simulations=args.simulations,
                            seed=args.seed, threads=args.threads, blocks=args.blocks, channels=args.channels,
                            workers=args.workers, overlap=args.overlap,
                            ray_address=args.ray_address, init_from=args.init_from, device=args.device,
                            hours=args.hours, learning_rate=args.learning_rate,
                            final_learning_rate=args.final_learning_rate,
                            value_target_q=args.value_target_q)
    config = dataclasses.replace(config, search=dataclasses.replace(config.search, root=args.root))
    pretrained = None
    if args.init_from is None and args.pretrain_games > 0:
        pretrained = pretrain(args, config)
        config = dataclasses.replace(config, init_from=pretrained["agent"])
    ladder_levels = tuple(int(n) for n in args.ladder_levels.split(","))
    final_levels = tuple(int(n) for n in args.final_levels.split(","))
    ladder = engine_ladder()

    def evaluate(net, iteration):
        """The raw policy (argmax, no search) against random with both colors; now and then a short ladder."""
        raw = AlphaZeroAgent(net, "gardner", config.network.history, config.network.last_move, simulations=0)
        row = {}
        for color in ("white", "black"):
            match = versus_random(raw, "gardner", games=args.eval_games, color=color, seed=10_000 * iteration)
            row[f"raw_{color}_win_rate"] = match.win_rate
            row[f"raw_{color}_score"] = match.score
        if ladder is not None and args.ladder_every > 0 and iteration % args.ladder_every == 0:
            # a CPU copy: the ladder's worker processes get the agent pickled
            net_cpu = copy.deepcopy(net).cpu()
            agent = AlphaZeroAgent(net_cpu, "gardner", config.network.history, config.network.last_move, args.simulations,
                                   config.search)
            result = play_ladder(agent, "gardner", ladder_levels, ladder, openings=args.ladder_openings)
            row.update(ladder_elo=result.elo.elo, ladder_elo_low=result.elo.low, ladder_elo_high=result.elo.high)
            for level in result.levels:
                row[f"ladder_{level}_score"] = result.tally(level).score
        return row

    state = train(config, evaluate=evaluate, resume=args.resume)
    agent_path = write_agent(args.out, state, simulations=args.eval_simulations, move_choice=args.eval_move_choice)
    print(f"final matches (search with {args.eval_simulations} simulations) ...", flush=True)
    t0 = time.perf_counter()
    agent = AlphaZeroAgent.from_checkpoint(state, simulations=args.eval_simulations, move_choice=args.eval_move_choice)
    vs_random = {color: versus_random(agent, "gardner", games=args.final_games, color=color, seed=1_000_000)
                 for color in ("white", "black")}
    for match in vs_random.values():
        print(match, flush=True)
    head_to_head = []
    for opponent in (MinimaxAgent(depth=2, seed=1), MinimaxAgent(depth=3, seed=1)):
        match = play_match(agent, opponent, "gardner", games=args.opponent_games, seed=7, opening_plies=2,
                           workers=os.cpu_count() or 1)
        head_to_head.append((opponent.name, match.tally(agent.name)))
        print(f"vs {opponent.name}: {match.tally(agent.name)}", flush=True)
    final_ladder = None
    if ladder is not None:
        games = 2 * len(ladder.openings[:args.final_openings] if args.final_openings else ladder.openings)
        print(f"ladder: Fairy-Stockfish at {args.final_levels} nodes, {games} games a level ...", flush=True)
        final_ladder = play_ladder(agent, "gardner", final_levels, ladder, openings=args.final_openings)
        print(ladder_table(final_ladder), flush=True)
    print(f"baselines: random and greedy against random, {args.final_games} games per color ...", flush=True)
    baseline_rows = baselines("gardner", games=args.final_games, seed=1_000_000)
    final_seconds = time.perf_counter() - t0
    write_report(args, config, pretrained, state, vs_random, head_to_head, final_ladder, baseline_rows,
                 final_seconds, time.perf_counter() - start, agent_path, machine_text(started))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def pretrain(args, config) -> dict:
    """Fairy-Stockfish's games, then supervised training of the run's network on them (both resumable).

    Returns the saved agent's path, the last epoch's metrics and the stage's seconds.
    """
    t0 = time.perf_counter()
    data_dir = os.path.join(args.out, "pretrain_data")
    print(f"pretraining: {args.pretrain_games} Fairy-Stockfish games at {args.pretrain_nodes} nodes ...", flush=True)
    generate_games(data_dir, GenerationSettings("gardner", games=args.pretrain_games, nodes=args.pretrain_nodes,
                                                seed=args.seed))
    run_dir = os.path.join(args.out, "pretrain")
    settings = SupervisedSettings(data=data_dir, epochs=args.pretrain_epochs, blocks=config.network.blocks,
                                  channels=config.network.channels, policy_channels=config.network.policy_channels,
                                  history=config.network.history, last_move=config.network.last_move, simulations=args.simulations,
                                  seed=args.seed, threads=args.threads)
    train_supervised(run_dir, settings, resume=os.path.exists(os.path.join(run_dir, "checkpoint")))
    metrics = read_state(os.path.join(run_dir, "checkpoint")).metrics
    return {"agent": os.path.join(run_dir, "agent"), "metrics": metrics[-1] if metrics else {},
            "seconds": time.perf_counter() - t0}


def planes_text(config) -> str:
    """The network's input, in words."""
    shown = "the current position" if config.network.history == 1 else f"the last {config.network.history} positions"
    return shown + (" and the last move" if config.network.last_move else "")


def selfplay_text(config) -> str:
    """The self-play options that differ from plain AlphaZero, in words ('' if none)."""
    search = config.search
    parts = []
    if search.root == "gumbel":
        parts.append(f"Gumbel AlphaZero at the root ({search.gumbel_considered} moves considered)")
    if config.selfplay.value_target_q > 0:
        parts.append(f"value targets mixing the root value at weight {config.selfplay.value_target_q:g}")
    return " Self-play: " + "; ".join(parts) + "." if parts else ""


def engine_ladder() -> Ladder | None:
    """The published Gardner ladder, or ``None`` (saying why) where Fairy-Stockfish is not installed."""
    from agents.players.uci import EngineNotFoundError, find_engine

    try:
        find_engine("fairy-stockfish")
    except EngineNotFoundError as exc:
        print(f"no strength ladder: {exc}", flush=True)
        return None
    return Ladder.load("gardner")


def write_report(args, config, pretrained, state, vs_random, head_to_head, final_ladder, baseline_rows,
                 final_seconds, wall_seconds, agent_path, measured_on: str) -> None:
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
    ladder_text = "Fairy-Stockfish is not installed here: no ladder was played."
    if final_ladder is not None:
        games = final_ladder.tally(next(iter(final_ladder.levels))).games
        ladder_text = f"""The agent against Fairy-Stockfish at fixed node budgets (`agents.arena.ladder.play_ladder`), both colors of
each of {games // 2} published balanced openings (`agents/arena/ladders/gardner.json`), {games} games a level; the levels'
Elo is their published calibration (fsf-n1 = 0) and the agent's Elo is fitted to its games with the levels
held there (95% profile-likelihood interval).

{ladder_table(final_ladder)}
"""
    points = [m for m in metrics if "ladder_elo" in m]
    if points:
        minutes = [m["training_s"] / 60 for m in points]
        curves = {"agent (short ladder)": (minutes, [m["ladder_elo"] for m in points]),
                  "95% low": (minutes, [m["ladder_elo_low"] for m in points]),
                  "95% high": (minutes, [m["ladder_elo_high"] for m in points])}
        if final_ladder is not None:
            curves["final ladder"] = ([minutes[-1]], [final_ladder.elo.elo])
        curves_plot(os.path.join(out, "elo_vs_time.png"), curves, "training wall-clock (minutes)",
                    "Elo (fsf-n1 = 0)", "Gardner: Elo against Fairy-Stockfish levels, during training")
        elo_rows = [[m["iteration"], f"{m['training_s'] / 60:.1f}",
                     f"{m['ladder_elo']:+.0f} [{m['ladder_elo_low']:+.0f}, {m['ladder_elo_high']:+.0f}]",
                     *(f"{m[k]:.3f}" for k in m if k.startswith("ladder_fsf"))] for m in points]
        level_names = [k[len("ladder_"):-len("_score")] for k in points[-1] if k.startswith("ladder_fsf")]
        ladder_text += f"""
During training, every {args.ladder_every} iterations, a short ladder ({args.ladder_openings} openings, both
colors, {2 * args.ladder_openings} games a level) — `elo_vs_time.png`:

{markdown_table(["iteration", "training min", "Elo [95%]", *(f"score vs {n}" for n in level_names)], elo_rows)}
"""
    selfplay = sum(m["selfplay_s"] for m in metrics)  # the learner's wait for games
    games = sum(m.get("games_s", m["selfplay_s"]) for m in metrics)  # the games' own wall-clock
    overlap_text = "" if not config.scale.overlap else (
        f", overlapping the learning, which waited {selfplay / 60:.1f} min for them (games played with the weights"
        " of one iteration before)")
    positions = sum(m["samples"] for m in metrics)
    train_seconds = metrics[-1]["elapsed_s"]
    white, black = vs_random["white"], vs_random["black"]
    pretrain_time = "" if pretrained is None else f", pretraining {pretrained['seconds'] / 60:.1f} min"
    n100_row = ""
    if final_ladder is not None and "fsf-n100" in final_ladder.levels:
        t = final_ladder.tally("fsf-n100")
        lo, hi = t.interval
        n100_row = (f"| against Fairy-Stockfish at 100 nodes, {t.games} games (ladder) | **{t.score:.3f}** "
                    f"[{lo:.3f}, {hi:.3f}] | >= 0.5 |\n")
    if pretrained is not None:
        m = pretrained["metrics"]
        start_text = (f"The network first learned from {args.pretrain_games:,} Fairy-Stockfish games at "
                      f"{args.pretrain_nodes} nodes a move ({args.pretrain_epochs} epochs; held-out agreement with "
                      f"the engine's move {m.get('validation_top1', float('nan')):.3f}; "
                      f"{pretrained['seconds'] / 60:.1f} min in this session), then played ")
    elif config.init_from is not None:
        start_text = f"Starting from the network of `{config.init_from}`: "
    else:
        start_text = "From scratch: "
    text = f"""# AlphaZero on Gardner 5x5 minichess

{start_text}{len(metrics)} iterations of {config.selfplay.games_per_iteration} self-play games ({config.search.simulations} simulations a
move, games adjudicated drawn at {config.selfplay.ply_limit} plies), a {config.network.blocks}-block, {config.network.channels}-channel residual
network on {planes_text(config)}.{selfplay_text(config)} The agent below searches with {args.eval_simulations} simulations a move and plays {MOVE_CHOICES[args.eval_move_choice]}.

| the agent | score | target |
|---|---|---|
| against random as White, {white.games} games | **{white.score:.3f}** (wins {white.win_rate:.3f}) | >= 0.99 |
| against random as Black, {black.games} games | **{black.score:.3f}** (wins {black.win_rate:.3f}) | >= 0.99 |
{n100_row}
Baselines, same games (seeds 1,000,000 + i) under the same rules:

{baseline_table(baseline_rows)}

Time: training {train_seconds / 60:.1f} min including the evaluations during training (self-play
{games / 60:.1f} min of games, {positions:,} positions, {positions / max(games, 1e-9):,.0f} positions/s{overlap_text}; learning
{sum(m["train_s"] for m in metrics) / 60:.1f} min){pretrain_time}, final matches {final_seconds / 60:.1f} min, whole run
{wall_seconds / 60:.1f} min (a resumed run counts only its own part). Device: {config.scale.device}
({resolve_device(config.scale.device)}), self-play workers: {config.scale.workers or "in process"}. {measured_on}

## Matches

Against random: the environments' seeded random player, game i seeded 1,000,000 + i. Against minimax:
`agents.arena.play_match`, colors alternating, two random opening plies per game (minimax is
deterministic), seed 7. Intervals are Wilson 95%.

{table}

## Strength ladder

{ladder_text}

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
