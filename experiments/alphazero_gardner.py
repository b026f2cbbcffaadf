"""AlphaZero learns Gardner 5x5 minichess by self-play; scored against random, minimax and Fairy-Stockfish.

    python experiments/alphazero_gardner.py                  # about 17 minutes on 2 CPU cores
    python experiments/alphazero_gardner.py --pretrain-games 0 --iterations 30   # pure self-play, from scratch
    python experiments/alphazero_gardner.py --preset 2h      # the 2-hour 6x64 run at 1,024 judged simulations
    python experiments/alphazero_gardner.py --preset losalamos   # Los Alamos 6x6 with the same settings
    python experiments/alphazero_gardner.py --resume         # continue an interrupted run
    python experiments/alphazero_gardner.py --device cuda --workers 14   # learner on a GPU, self-play in 14 CPU processes
    python -m experiments.alphazero_gardner --preset quick   # a smoke test, as a module from the repository root

First (unless ``--pretrain-games 0``) the network learns Fairy-Stockfish's moves
and results from engine games (``agents.supervised.engine_games``,
``agents.supervised``): in our runs this start doubled the score against
Fairy-Stockfish at 100 nodes for the same self-play (docs/alphazero.md). Then
AlphaZero self-play. Every iteration the raw policy (no search) plays a quick
match against the random player with each color; every few iterations the
searching agent plays a short strength ladder (Fairy-Stockfish at fixed node
budgets from the published openings, agents/arena/ladder.py), so the report
plots Elo against training wall-clock. At the end the agent plays the full
ladder (both colors of every published opening, 200 games a level), 200 games
with each color against random, and short matches against minimax.
Writes runs/alphazero_gardner/: report.md, metrics.csv, *.png, checkpoint/, tensorboard/, agent/.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
import time

from agents.runs import command_line, machine, machine_text, read_state  # first: the OpenMP setting, before torch

import torch
import tyro

from agents import MinimaxAgent
from agents.alphazero.agent import AlphaZeroAgent
from agents.alphazero.search import MOVE_CHOICES
from agents.alphazero.train import Config, gardner_config, train, write_agent
from agents.arena import play_match
from agents.arena.evaluation import baselines, versus_random
from agents.arena.ladder import engine_ladder, ladder_table, play_ladder
from agents.devices import resolve_device
from agents.reports import baseline_table, curves_plot, line_plot, losses_plot, markdown_table, selfplay_text, \
    settings_text
from agents.supervised import SupervisedSettings, train_supervised
from agents.supervised.engine_games import GenerationSettings, generate_games
from agents.workers import ClusterError
from minichess_envs.variants import get_variant

Hidden = tyro.conf.Suppress  # not a flag: fixed here, changed by a preset


@dataclasses.dataclass
class Options:
    """AlphaZero learns Gardner 5x5 minichess by self-play; scored against random, minimax and Fairy-Stockfish."""

    out: str = "runs/alphazero_gardner"  # the run directory: report.md, metrics.csv, plots, checkpoint/, agent/
    iterations: int | None = None  # self-play iterations (None: 32, or no limit when hours are given)
    hours: float | None = None  # stop training once self-play and learning have run this long (resumable)
    eval_simulations: int = 256  # per move of the final agent (its matches and the final ladder)
    pretrain_games: int = 4000  # Fairy-Stockfish games the network first learns from (0: self-play from scratch)
    seed: int = 0
    workers: int = 2  # self-play worker processes, one per core (0: self-play in this process)
    device: str = "auto"  # where the learner and search run: auto | cpu | cuda | mps
    ray_address: str | None = None  # run the workers as Ray actors on this cluster ("local": a new local one)
    resume: bool = False  # continue an interrupted run
    # fixed here, changed by a preset
    variant: Hidden[str] = "gardner"  # the chess variant (its ladder: agents/arena/ladders/<variant>.json)
    games: Hidden[int] = 256  # self-play games per iteration
    simulations: Hidden[int] = 48  # per move in self-play and the short ladders
    blocks: Hidden[int] = 3  # residual blocks of the network
    channels: Hidden[int] = 48
    root: Hidden[str] = "puct"  # root search of self-play and the agent: puct or gumbel (Gumbel AlphaZero)
    pretrain_epochs: Hidden[int] = 6
    eval_games: Hidden[int] = 100  # raw-policy games per color against random, each iteration
    final_games: Hidden[int] = 200  # games per color against random at the end
    opponent_games: Hidden[int] = 20  # games against minimax depth 2 and 3
    ladder_every: Hidden[int] = 8  # iterations between short ladders (0: none)
    ladder_openings: Hidden[int] = 20  # published openings in a short ladder (2 games each per level)
    ladder_levels: Hidden[tuple[int, ...]] = (10, 100, 1000)  # Fairy-Stockfish node budgets of the short ladders
    final_levels: Hidden[tuple[int, ...]] = (10, 100)  # ... and of the final ladder
    final_openings: Hidden[int | None] = None  # published openings in the final ladder (None: all 100)


PRESETS = {
    "quick": dict(iterations=2, games=4, simulations=4, blocks=1, channels=8, pretrain_games=6, pretrain_epochs=1,
                  eval_simulations=4, eval_games=2, final_games=2, opponent_games=2, ladder_every=2,
                  ladder_openings=1, ladder_levels=(1,), final_levels=(1,), final_openings=2, device="cpu"),
    # docs/results/alphazero-gardner.md, "Two hours with a 6-block, 64-channel network"
    "2h": dict(hours=2.0, blocks=6, channels=64, ladder_every=32, final_levels=(100, 1000, 10000),
               eval_simulations=1024, out="runs/alphazero_gardner_2h"),
    # Los Alamos 6x6 with Gardner's settings (the zoo's losalamos-alphazero)
    "losalamos": dict(variant="losalamos", out="runs/alphazero_losalamos"),
    # Gumbel AlphaZero's root in self-play and play (docs/alphazero.md, "Gumbel root search")
    "gumbel": dict(root="gumbel", out="runs/alphazero_gardner_gumbel"),
}
PRETRAIN_NODES = 100  # Fairy-Stockfish's budget in the pretraining games
MOVE_CHOICE = "lcb"  # the final agent's move: lcb scored 0.620 against 100 nodes where the most visited scored 0.560


def settings(args: Options) -> Config:
    """The run's AlphaZero settings: experiments' Gardner settings (gardner_config), one torch thread (faster
    than two on 2 cores: the search runs between small batches), workers playing the next iteration's games
    while the network learns."""
    iterations = args.iterations or (32 if args.hours is None else 1_000_000)
    config = gardner_config(args.out, iterations=iterations, games=args.games, simulations=args.simulations,
                            game=args.variant, seed=args.seed, threads=1, blocks=args.blocks,
                            channels=args.channels, workers=args.workers, overlap=args.workers > 0,
                            ray_address=args.ray_address, device=args.device, hours=args.hours, learning_rate=2e-3)
    return dataclasses.replace(config, search=dataclasses.replace(config.search, root=args.root))


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    started = machine()
    start = time.perf_counter()
    config = settings(args)
    pretrained = None
    if args.pretrain_games > 0:
        pretrained = pretrain(args, config)
        config = dataclasses.replace(config, init_from=pretrained["agent"])
    ladder = engine_ladder(args.variant)

    def evaluate(net, iteration):
        """The raw policy (argmax, no search) against random with both colors; now and then a short ladder."""
        raw = AlphaZeroAgent(net, args.variant, simulations=0)
        row = {}
        for color in ("white", "black"):
            match = versus_random(raw, args.variant, games=args.eval_games, color=color, seed=10_000 * iteration)
            row[f"raw_{color}_win_rate"] = match.win_rate
            row[f"raw_{color}_score"] = match.score
        if ladder is not None and args.ladder_every > 0 and iteration % args.ladder_every == 0:
            # a CPU copy: the ladder's worker processes get the agent pickled
            agent = AlphaZeroAgent(copy.deepcopy(net).cpu(), args.variant, simulations=args.simulations,
                                   search=config.search)
            result = play_ladder(agent, args.variant, args.ladder_levels, ladder, openings=args.ladder_openings)
            row.update(ladder_elo=result.elo.elo, ladder_elo_low=result.elo.low, ladder_elo_high=result.elo.high)
            for level in result.levels:
                row[f"ladder_{level}_score"] = result.tally(level).score
        return row

    state = train(config, evaluate=evaluate, resume=args.resume)
    agent_path = write_agent(args.out, state, simulations=args.eval_simulations, move_choice=MOVE_CHOICE)
    print(f"final matches (search with {args.eval_simulations} simulations) ...", flush=True)
    t0 = time.perf_counter()
    agent = AlphaZeroAgent.from_checkpoint(state, simulations=args.eval_simulations, move_choice=MOVE_CHOICE)
    # the final matches' games as each ends: --resume goes on from there for the same weights and search
    journal = os.path.join(args.out, f"final-games-{state['iteration']}-{args.eval_simulations}.jsonl")
    vs_random = {color: versus_random(agent, args.variant, games=args.final_games, color=color, seed=1_000_000)
                 for color in ("white", "black")}
    head_to_head = []
    for opponent in (MinimaxAgent(depth=2, seed=1), MinimaxAgent(depth=3, seed=1)):
        match = play_match(agent, opponent, args.variant, games=args.opponent_games, seed=7, opening_plies=2,
                           workers=os.cpu_count() or 1, journal=journal)
        head_to_head.append((opponent.name, match.tally(agent.name)))
        print(f"vs {opponent.name}: {match.tally(agent.name)}", flush=True)
    final_ladder = None
    if ladder is not None:
        print(f"ladder: Fairy-Stockfish at {args.final_levels} nodes ...", flush=True)
        final_ladder = play_ladder(agent, args.variant, args.final_levels, ladder, openings=args.final_openings,
                                   journal=journal)
        print(ladder_table(final_ladder), flush=True)
    print(f"baselines: random and greedy against random, {args.final_games} games per color ...", flush=True)
    baseline_rows = baselines(args.variant, games=args.final_games, seed=1_000_000)
    final_seconds = time.perf_counter() - t0
    write_report(args, config, pretrained, state, vs_random, head_to_head, final_ladder, baseline_rows,
                 final_seconds, time.perf_counter() - start, agent_path, machine_text(started))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def pretrain(args: Options, config: Config) -> dict:
    """Fairy-Stockfish's games, then supervised training of the run's network on them (both resumable).

    Returns the saved agent's path, the last epoch's metrics and the stage's seconds.
    """
    t0 = time.perf_counter()
    data_dir = os.path.join(args.out, "pretrain_data")
    print(f"pretraining: {args.pretrain_games} Fairy-Stockfish games at {PRETRAIN_NODES} nodes ...", flush=True)
    generate_games(data_dir, GenerationSettings(args.variant, games=args.pretrain_games, nodes=PRETRAIN_NODES,
                                                seed=args.seed))
    run_dir = os.path.join(args.out, "pretrain")
    net = config.network
    settings = SupervisedSettings(data=data_dir, epochs=args.pretrain_epochs, blocks=net.blocks, channels=net.channels,
                                  policy_channels=net.policy_channels, history=net.history, last_move=net.last_move,
                                  simulations=args.simulations, seed=args.seed, threads=config.scale.threads)
    train_supervised(run_dir, settings, resume=os.path.exists(os.path.join(run_dir, "checkpoint")))
    metrics = read_state(os.path.join(run_dir, "checkpoint")).metrics
    return {"agent": os.path.join(run_dir, "agent"), "metrics": metrics[-1] if metrics else {},
            "seconds": time.perf_counter() - t0}


def write_report(args, config, pretrained, state, vs_random, head_to_head, final_ladder, baseline_rows,
                 final_seconds, wall_seconds, agent_path, measured_on: str) -> None:
    metrics, out = state["metrics"], args.out
    line_plot(os.path.join(out, "raw_vs_random.png"), [m["iteration"] for m in metrics],
              {f"raw policy as {c}, win rate": [m[f"raw_{c}_win_rate"] for m in metrics] for c in ("white", "black")},
              "iteration", f"win rate ({args.eval_games} games)", f"{args.variant}: raw policy against random")
    losses_plot(os.path.join(out, "losses.png"), metrics)
    rows = [[f"random ({color})", m.games, f"{m.wins}-{m.draws}-{m.losses}",
             "{:.3f} [{:.3f}, {:.3f}]".format(m.win_rate, *m.win_interval),
             "{:.3f} [{:.3f}, {:.3f}]".format(m.score, *m.interval), f"{m.mean_plies:.0f}"]
            for color, m in vs_random.items()]
    rows += [[name, t.games, f"{t.wins}-{t.draws}-{t.losses}", f"{t.wins / t.games:.3f}",
              "{:.3f} [{:.3f}, {:.3f}]".format(t.score, *t.interval), "-"] for name, t in head_to_head]
    table = markdown_table(["opponent", "games", "W-D-L", "win rate [95% CI]", "score [95% CI]", "mean plies"], rows)
    ladder_text = "Fairy-Stockfish is not installed here: no ladder was played."
    n100_row = ""
    if final_ladder is not None:
        games = final_ladder.tally(next(iter(final_ladder.levels))).games
        ladder_text = f"""The agent against Fairy-Stockfish at fixed node budgets (`agents.arena.ladder.play_ladder`), both colors of
each of {games // 2} published balanced openings (`agents/arena/ladders/{args.variant}.json`), {games} games a level; the levels'
Elo is their published calibration (fsf-n1 = 0) and the agent's Elo is fitted to its games with the levels
held there (95% profile-likelihood interval).

{ladder_table(final_ladder)}
"""
        if "fsf-n100" in final_ladder.levels:
            t = final_ladder.tally("fsf-n100")
            n100_row = (f"| against Fairy-Stockfish at 100 nodes, {t.games} games (ladder) | **{t.score:.3f}** "
                        "[{:.3f}, {:.3f}] | >= 0.5 |\n".format(*t.interval))
    points = [m for m in metrics if "ladder_elo" in m]
    if points:
        minutes = [m["training_s"] / 60 for m in points]
        curves = {"agent (short ladder)": (minutes, [m["ladder_elo"] for m in points]),
                  "95% low": (minutes, [m["ladder_elo_low"] for m in points]),
                  "95% high": (minutes, [m["ladder_elo_high"] for m in points])}
        if final_ladder is not None:
            curves["final ladder"] = ([minutes[-1]], [final_ladder.elo.elo])
        curves_plot(os.path.join(out, "elo_vs_time.png"), curves, "training wall-clock (minutes)",
                    "Elo (fsf-n1 = 0)", f"{args.variant}: Elo against Fairy-Stockfish levels, during training")
        levels = [k[len("ladder_"):-len("_score")] for k in points[-1] if k.startswith("ladder_fsf")]
        elo_rows = [[m["iteration"], f"{m['training_s'] / 60:.1f}",
                     f"{m['ladder_elo']:+.0f} [{m['ladder_elo_low']:+.0f}, {m['ladder_elo_high']:+.0f}]",
                     *(f"{m[f'ladder_{n}_score']:.3f}" for n in levels)] for m in points]
        ladder_text += f"""
During training, every {args.ladder_every} iterations, a short ladder ({args.ladder_openings} openings, both
colors, {2 * args.ladder_openings} games a level) — `elo_vs_time.png`:

{markdown_table(["iteration", "training min", "Elo [95%]", *(f"score vs {n}" for n in levels)], elo_rows)}
"""
    search, network = config.search, config.network
    options = [f"Gumbel AlphaZero at the root ({search.gumbel_considered} moves considered)"] * (search.root == "gumbel")
    white, black = vs_random["white"], vs_random["black"]
    pretrain_time = "" if pretrained is None else f", pretraining {pretrained['seconds'] / 60:.1f} min"
    if pretrained is not None:
        start_text = (f"The network first learned from {args.pretrain_games:,} Fairy-Stockfish games at "
                      f"{PRETRAIN_NODES} nodes a move ({args.pretrain_epochs} epochs; held-out agreement with "
                      f"the engine's move {pretrained['metrics'].get('validation_top1', float('nan')):.3f}; "
                      f"{pretrained['seconds'] / 60:.1f} min in this session), then played ")
    else:
        start_text = "From scratch: "
    v = get_variant(args.variant)
    text = f"""# AlphaZero on {v.title} ({v.width}x{v.height}) minichess

{start_text}{len(metrics)} iterations of {config.selfplay.games_per_iteration} self-play games ({search.simulations} simulations a
move, games adjudicated drawn at {config.selfplay.ply_limit} plies), a {network.blocks}-block, {network.channels}-channel residual
network on the current position.{" Self-play: " + "; ".join(options) + "." if options else ""} The agent below searches with {args.eval_simulations} simulations a move and plays {MOVE_CHOICES[MOVE_CHOICE]}.

| the agent | score | target |
|---|---|---|
| against random as White, {white.games} games | **{white.score:.3f}** (wins {white.win_rate:.3f}) | >= 0.99 |
| against random as Black, {black.games} games | **{black.score:.3f}** (wins {black.win_rate:.3f}) | >= 0.99 |
{n100_row}
Baselines, same games (seeds 1,000,000 + i) under the same rules:

{baseline_table(baseline_rows)}

Time: training {metrics[-1]["elapsed_s"] / 60:.1f} min including the evaluations during training
({selfplay_text(metrics, config.scale.workers, config.scale.overlap)}; learning
{sum(m["train_s"] for m in metrics) / 60:.1f} min){pretrain_time}, final matches {final_seconds / 60:.1f} min, whole run
{wall_seconds / 60:.1f} min (a resumed run counts only its own part). Device: {config.scale.device}
({resolve_device(config.scale.device)}). {measured_on}

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
{settings_text(config)}
```

The trained agent: `agents.load("{agent_path}")`.
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    torch.set_num_threads(2)
    try:
        sys.exit(main())
    except ClusterError as exc:  # the Ray cluster's problem, named without a traceback; the checkpoint stands
        sys.exit(f"error: {exc}")
