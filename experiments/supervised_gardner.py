"""Learn Gardner from Fairy-Stockfish's games, then ask whether pretraining helps self-play.

    python experiments/supervised_gardner.py                 # the whole route, defaults sized for 2 CPU cores
    python experiments/supervised_gardner.py --resume        # continue an interrupted run (every stage resumes)
    python experiments/supervised_gardner.py --preset quick  # a smoke test: minutes
    python experiments/supervised_gardner.py --preset small-net  # the 3x48 network the default had before

1. Fairy-Stockfish plays itself at 100 nodes from balanced random openings (``agents.supervised.engine_games``); in a
   share of the games (two thirds) it plays a random mover instead, so the data shows how to
   finish off a weak defender (only the engine's moves are learnt).
2. The AlphaZero network (4 residual blocks of 64 channels) learns the engine's moves and the
   results (``agents.supervised``), one checkpoint per epoch; then ``--dagger-rounds`` (8) of DAgger: the raw
   policy plays random, the engine labels the positions it met, one more epoch each (the stalemates a policy
   learnt from balanced games walks into are where its own play leads, not where the engine's does).
   Where the engine says the side to move is winning, moves that draw at once are penalised; the learning rate falls on a cosine.
3. The checkpoints play each other and Fairy-Stockfish at 1/10/100 nodes (``agents.arena.tournament``).
4. The pretrained network is scored: raw policy against random (both colours), agreement with the
   engine on held-out games, and with search against minimax and on the ladder (``agents.arena.ladder``:
   Fairy-Stockfish at 1/10/100 nodes, the published openings with both colours, 200 games a level).
5. AlphaZero self-play runs twice with the same settings and iterations (so the same compute): from the
   pretrained network (``init_from``) and from scratch; both are scored the same way.

Writes runs/supervised_gardner/: report.md, *.png, *.csv, data/, pretrain/, selfplay_pretrained/,
selfplay_scratch/.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Annotated

from agents.runs import (  # first: the OpenMP setting
    command_line, machine, machine_text, read_state, training_seconds, write_csv)

import torch
import tyro

from agents import MinimaxAgent
from agents.alphazero.agent import AlphaZeroAgent
from agents.alphazero.train import gardner_config, train, write_agent
from agents.arena import play_match
from agents.arena.evaluation import baselines, versus_random
from agents.arena.ladder import ladder_table, play_ladder
from agents.arena.tournament import checkpoint_tournament, pairings_table, tournament_plot, tournament_table
from agents.reports import (
    Stages, baseline_table, dagger_text, draw_penalty_text, generation_throughput, markdown_table, random_match_table)
from agents.supervised import SupervisedSettings, dagger, dagger_table, train_supervised, write_pretraining_files
from agents.supervised.engine_games import GenerationSettings, generate_games

VARIANT = "gardner"
ENGINE_LEVELS = (1, 10, 100)
Fixed = tyro.conf.Suppress  # set by a preset, not a flag


@dataclasses.dataclass
class Options:
    """Learn Gardner from Fairy-Stockfish's games, then ask whether pretraining helps self-play."""

    out: str = "runs/supervised_gardner"  # report.md, *.png, *.csv, data/, pretrain/, selfplay_*/
    games: int = 12000  # Fairy-Stockfish games (two thirds against a random mover)
    epochs: int = 8  # of pretraining, before DAgger
    dagger_rounds: int = 8  # after pretraining: the policy plays, the engine labels, one more epoch
    selfplay_iterations: int = 6  # of each self-play run (from the pretrained network and from scratch)
    workers: int = 0  # processes for games and matches (0: all cores)
    seed: int = 0
    resume: bool = False  # continue an interrupted run (every stage resumes)
    blocks: Annotated[int, Fixed] = 4  # residual blocks (pretrained and self-play networks)
    channels: Annotated[int, Fixed] = 64
    policy_channels: Annotated[int, Fixed] = 32
    simulations: Annotated[int, Fixed] = 48  # search budget of self-play and of the scored agents
    selfplay_games: Annotated[int, Fixed] = 128  # self-play games per iteration
    dagger_games: Annotated[int, Fixed] = 1000  # raw-policy games per colour in a DAgger round
    random_games: Annotated[int, Fixed] = 1000  # raw-policy games per colour against random
    match_games: Annotated[int, Fixed] = 40  # games against minimax with search
    tournament_games: Annotated[int, Fixed] = 10  # games per pairing of the checkpoint tournament
    ladder_openings: Annotated[int, Fixed] = 0  # published ladder openings, both colours each (0: all 100)


PRESETS = {
    "quick": dict(games=12, epochs=1, dagger_rounds=1, selfplay_iterations=1, simulations=4, selfplay_games=4,
                  dagger_games=3, random_games=10, match_games=2, tournament_games=2, ladder_openings=1),
    "small-net": dict(blocks=3, channels=48, policy_channels=8),  # the network the default had before
    "four-rounds": dict(dagger_rounds=4),  # the default before 8 rounds
}
NODES, RANDOM_OPPONENT, THREADS = 100, 2 / 3, 2  # Fairy-Stockfish's nodes a move, its share of random opponents


def settings(args: Options) -> dict:
    """The library settings of every stage: engine games, pretraining, DAgger, tournament, scoring, self-play."""
    workers = args.workers or os.cpu_count() or 1
    config = gardner_config(os.path.join(args.out, "selfplay_scratch"), iterations=args.selfplay_iterations,
                            games=args.selfplay_games, simulations=args.simulations, seed=args.seed,
                            threads=THREADS, blocks=args.blocks, channels=args.channels,
                            policy_channels=args.policy_channels)
    data = os.path.join(args.out, "data")
    return dict(
        generation=GenerationSettings(VARIANT, games=args.games, nodes=NODES, seed=args.seed,
                                      random_opponent=RANDOM_OPPONENT),
        supervised=SupervisedSettings(
            data=data, epochs=args.epochs, blocks=config.network.blocks, channels=config.network.channels,
            policy_channels=config.network.policy_channels, history=config.network.history,
            last_move=config.network.last_move, simulations=args.simulations, seed=args.seed, threads=THREADS,
            lr_schedule="cosine", draw_penalty=1.0),
        selfplay=config,
        dagger=dict(rounds=args.dagger_rounds, games=args.dagger_games, nodes=NODES, seed=args.seed,
                    workers=args.workers or None, ray_address=None),
        tournament=dict(engine_nodes=ENGINE_LEVELS, games=args.tournament_games, seed=args.seed, simulations=0,
                        workers=workers),
        random=dict(games=args.random_games, seed=1_000_000),
        match=dict(games=args.match_games, seed=7, opening_plies=2, workers=workers),
        ladder=dict(levels=ENGINE_LEVELS, openings=args.ladder_openings or None, workers=workers),
    )


def stage(name: str, started: float) -> None:
    print(f"\n== {name} ({(time.perf_counter() - started) / 60:.1f} min in)", flush=True)


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    plan = settings(args)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(THREADS)
    started_machine, started = machine(), time.perf_counter()
    stages = Stages(args.out, args.resume)

    stage("1. engine games", started)
    generated = stages.timed("generation", lambda: generate_games(
        plan["supervised"].data, plan["generation"], workers=args.workers or None, ray_address=None))

    stage("2. pretraining", started)
    settings_, pretrain_dir = plan["supervised"], os.path.join(args.out, "pretrain")
    stages.timed("pretraining", lambda: train_supervised(pretrain_dir, settings_, resume=os.path.exists(
        os.path.join(pretrain_dir, "checkpoint"))))
    rounds = []
    if args.dagger_rounds:
        stage("2b. DAgger", started)
        rounds = stages.timed("dagger", lambda: dagger(pretrain_dir, settings_, **plan["dagger"]))
    pretrain_metrics = read_state(os.path.join(pretrain_dir, "checkpoint")).metrics

    stage("3. checkpoint tournament", started)
    agents_dir = os.path.join(pretrain_dir, "agents")
    checkpoints = sorted(os.path.join(agents_dir, d) for d in os.listdir(agents_dir))
    tournament = stages.timed("tournament", lambda: checkpoint_tournament(checkpoints, VARIANT, **plan["tournament"]))
    tournament_plot(tournament, os.path.join(args.out, "tournament_elo.png"),
                    "Gardner: raw policy of each epoch (Elo vs epoch 0)")

    stage("4. scoring the pretrained network", started)
    pretrained = os.path.join(pretrain_dir, "agent")
    scores = stages.timed("scoring", lambda: score(pretrained, args, plan))

    stage("5. self-play from the pretrained network and from scratch", started)
    selfplay = {}
    for label, init_from in (("pretrained", pretrained), ("scratch", None)):
        run_config = dataclasses.replace(plan["selfplay"], run_dir=os.path.join(args.out, f"selfplay_{label}"),
                                         init_from=init_from)
        state = stages.timed(f"selfplay_{label}", lambda: train(run_config, resume=os.path.exists(
            os.path.join(run_config.run_dir, "checkpoint"))))
        agent_path = write_agent(run_config.run_dir, state, simulations=args.simulations, name=f"selfplay-{label}")
        selfplay[label] = stages.timed(f"selfplay_{label}_scoring", lambda: score(agent_path, args, plan, False))
        selfplay[label]["training_seconds"] = training_seconds(state["metrics"])

    baseline_rows = baselines(VARIANT, **plan["random"])
    write_report(args, plan, generated, stages, pretrain_metrics, rounds, tournament, scores, selfplay, baseline_rows,
                 time.perf_counter() - started, machine_text(started_machine))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def score(agent_path: str, args, plan, raw_random: bool = True) -> dict:
    """Raw policy against random (both colours); the searching agent against minimax and on the ladder."""
    result = {"random": [], "matches": []}
    if raw_random:
        raw = AlphaZeroAgent.load(agent_path, simulations=0)
        for color in ("white", "black"):
            result["random"].append(versus_random(raw, VARIANT, color=color, **plan["random"]))
            print(result["random"][-1], flush=True)
    agent = AlphaZeroAgent.load(agent_path, simulations=args.simulations)
    run = os.path.basename(os.path.dirname(agent_path))
    minimax = MinimaxAgent(depth=2, seed=1)
    match = play_match(agent, minimax, VARIANT, **plan["match"])
    result["matches"].append((minimax.name, match.tally(agent.name)))
    print(f"{run} vs {minimax.name}: {match.tally(agent.name)}", flush=True)
    ladder = plan["ladder"]
    ladder = play_ladder(agent, VARIANT, ladder["levels"], openings=ladder["openings"], workers=ladder["workers"])
    for level in ladder.levels:
        result["matches"].append((level, ladder.tally(level)))
        print(f"{run} vs {level}: {ladder.tally(level)}", flush=True)
    result["ladder"] = ladder
    return result


def match_rows(matches, label: str | None = None) -> list[list]:
    """Tallies ``(opponent, tally)`` as table rows (headed by ``label`` when given)."""
    return [([label] if label else []) + [name, t.games, f"{t.wins}-{t.draws}-{t.losses}",
                                          f"{t.score:.3f} [{t.interval[0]:.3f}, {t.interval[1]:.3f}]"]
            for name, t in matches]


def write_report(args, plan, generated, stages, metrics, rounds, tournament, scores, selfplay, baseline_rows, wall,
                 measured_on):
    out, supervised, generation = args.out, plan["supervised"], plan["generation"]
    write_pretraining_files(out, metrics, "Gardner: learning Fairy-Stockfish's moves")
    last, before = metrics[-1], metrics[args.epochs - 1]
    rounds_text = dagger_text(len(rounds), args.dagger_games, "Fairy-Stockfish", NODES,
                              dagger_table(rounds, metrics, args.epochs) if rounds else "")
    if rounds:
        rounds_text += f"""
Held-out agreement before DAgger (epoch {args.epochs}): {before['validation_top1']:.3f}; after, the held-out
set also holds 5% of the labelled positions (held out by one-ply game).
"""
    comparison = []
    for label in ("pretrained", "scratch"):
        comparison += match_rows(selfplay[label]["matches"], f"self-play from {label}")
        e = selfplay[label]["ladder"].elo
        comparison.append([f"self-play from {label}", "ladder Elo", e.games, "",
                           f"{e.elo:+.0f} [{e.low:+.0f}, {e.high:+.0f}]"])
    write_csv(os.path.join(out, "matches.csv"), [
        {"player": label, "opponent": name, "games": t.games, "wins": t.wins, "draws": t.draws, "losses": t.losses,
         "score": t.score} for label, result in [("pretrained", scores)] + list(selfplay.items())
        for name, t in result["matches"]])
    total = generated["total"]  # over every session that generated into the data folder
    random_games = round(generation.games * generation.random_opponent)
    kinds = (f"about {generation.games - random_games:,} self-play games and {random_games:,} against a uniformly "
             "random mover (only the engine's moves are learnt there)" if generation.random_opponent else
             "self-play games")
    text = f"""# Supervised learning on Gardner from Fairy-Stockfish's games

{generation.games:,} Fairy-Stockfish games at {generation.nodes} nodes a move from balanced random openings: {kinds}
({total['positions']:,} positions, {total['targets']:,} of them the engine's
moves; {generation_throughput(total)}), then {args.epochs} epochs of
supervised training of the AlphaZero network (policy: the engine's move, cross-entropy over legal moves only;
value: half game result, half engine score; AdamW, {schedule_text(supervised)}).\
{draw_penalty_text("Fairy-Stockfish", supervised.draw_penalty, SupervisedSettings.winning_cp)}
{rounds_text}
## The pretrained network

Held-out games (5% of games, split by game), last epoch: **top-1 agreement with Fairy-Stockfish
{last['validation_top1']:.3f}**, policy loss {last['validation_policy_loss']:.3f}, value loss
{last['validation_value_loss']:.3f}, value-sign accuracy {last['validation_value_sign']:.3f}.

Raw policy (no search) against the random player, game i seeded 1,000,000 + i:

{random_match_table(scores["random"])}

Baselines under the same protocol:

{baseline_table(baseline_rows)}

With search ({args.simulations} simulations a move) against minimax at depth 2, colours alternating,
two random opening plies, seed 7:

{markdown_table(["opponent", "games", "W-D-L", "score [95% Wilson]"], match_rows(scores["matches"][:1]))}

On the ladder (`agents.arena.ladder`: Fairy-Stockfish at fixed node budgets, hash cleared every game; each of
the {len(scores["ladder"].matches[0].games) // 2} published balanced openings played with both colours; the levels' Elo from the
ladder's calibration, the agent's fitted against them):

{ladder_table(scores["ladder"])}

## Checkpoint tournament (raw policies, {args.tournament_games} games a pairing)

{tournament_table(tournament)}

The pairings:

{pairings_table(tournament)}

Plot: `tournament_elo.png`; losses and agreement per epoch: `pretraining.png`, `pretraining.csv`.

## Does pretraining help self-play?

Two AlphaZero self-play runs with experiments/alphazero_gardner.py's settings, {args.selfplay_iterations} iterations
of {args.selfplay_games} games each (the same compute): one starts from the pretrained network, one from
scratch. Training took {selfplay['pretrained']['training_seconds'] / 60:.1f} and
{selfplay['scratch']['training_seconds'] / 60:.1f} min. Both search with {args.simulations} simulations
(minimax as above; Fairy-Stockfish levels on the ladder):

{markdown_table(["run", "opponent", "games", "W-D-L", "score [95% Wilson] / Elo"], comparison)}

## Time

{stages.table()}

Whole run {wall / 60:.1f} min in this session (a resumed run counts only its own part). {measured_on}
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


def schedule_text(settings: SupervisedSettings) -> str:
    return ("a constant learning rate" if settings.lr_schedule == "constant" else
            "the learning rate falling from its peak to 0 on a cosine")


if __name__ == "__main__":
    sys.exit(main())
