"""Learn 8x8 chess from Stockfish's games (or your PGN) at laptop scale; Elo of the checkpoints.

    python experiments/supervised_chess.py                       # Stockfish self-play games, defaults for 2 CPU cores
    python experiments/supervised_chess.py --pgn games.pgn       # learn from a PGN file instead (results only)
    python experiments/supervised_chess.py --resume              # continue an interrupted run
    python experiments/supervised_chess.py --preset quick        # a smoke test: minutes
    python experiments/supervised_chess.py --preset raw-tournament  # the checkpoints play by their raw policies

1. Stockfish plays itself at 200 nodes from balanced random openings (``agents.supervised.engine_games``), or a PGN file
   is imported (``minichess_envs.dataset.import_pgn``; its value target is the game result).
2. The AlphaZero network learns the moves and results (``agents.supervised``), a checkpoint per epoch;
   where Stockfish says the side to move is winning, moves that draw at once are penalised
   Then ``--dagger-rounds`` (1) of DAgger: the raw policy plays random, Stockfish labels
   the positions it met, one more epoch each (a policy learnt from balanced games draws won games by
   repetition and stalemate; its own games show it where).
3. The checkpoints play each other and Stockfish at small node budgets, with 16 simulations of search
   (``--preset raw-tournament``: by their raw policies); Elo relative to checkpoint 0 (the untrained network) with 95%
   intervals (``agents.arena.tournament``).

Writes runs/supervised_chess/: report.md, tournament_elo.png, pretraining.png, *.csv, data/, pretrain/.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Annotated, Optional

from agents.runs import command_line, machine, machine_text, read_state, write_csv  # first: the OpenMP setting

import torch
import tyro

from agents.arena.evaluation import versus_random
from agents.arena.tournament import checkpoint_tournament, pairings_table, tournament_plot, tournament_table
from agents.reports import Stages, dagger_text, draw_penalty_text, generation_throughput, random_match_table
from agents.supervised import (
    SupervisedSettings, dagger, dagger_table, raw_policy, train_supervised, write_pretraining_files)
from agents.supervised.engine_games import GenerationSettings, generate_games
from minichess_envs.dataset import import_pgn, list_shards

Fixed = tyro.conf.Suppress  # set by a preset, not a flag


@dataclasses.dataclass
class Options:
    """Learn 8x8 chess from Stockfish's games (or your PGN) at laptop scale; Elo of the checkpoints."""

    out: str = "runs/supervised_chess"  # report.md, tournament_elo.png, pretraining.png, *.csv, data/, pretrain/
    pgn: Optional[str] = None  # learn from this PGN file instead of Stockfish's games (value target: the result)
    games: int = 12000  # Stockfish self-play games
    epochs: int = 1  # of pretraining, before DAgger
    dagger_rounds: int = 1  # after pretraining: the policy plays, Stockfish labels, one more epoch
    workers: int = 0  # processes (0: all cores)
    resume: bool = False  # continue an interrupted run (every stage resumes)
    blocks: Annotated[int, Fixed] = 4
    channels: Annotated[int, Fixed] = 64
    dagger_games: Annotated[int, Fixed] = 1000  # raw-policy games per colour in a round
    random_games: Annotated[int, Fixed] = 1000  # games per colour of the final raw policy against random
    engine_nodes: Annotated[tuple[int, ...], Fixed] = (1, 10, 100)  # Stockfish levels of the tournament
    tournament_games: Annotated[int, Fixed] = 40  # games per pairing
    tournament_simulations: Annotated[int, Fixed] = 16  # search per move of the checkpoints (0: raw policy)
    seed: Annotated[int, Fixed] = 0


PRESETS = {
    "quick": dict(games=4, blocks=1, channels=8, dagger_games=3, random_games=4, engine_nodes=(1,),
                  tournament_games=2, tournament_simulations=2),
    "raw-tournament": dict(tournament_simulations=0),  # the checkpoints by their raw policies (draw by repetition)
    "two-epochs": dict(epochs=2, dagger_rounds=0),  # the default before DAgger
}
NODES, THREADS = 200, 2  # Stockfish's nodes a move in the games and the DAgger labels
# Planes before the policy's linear layer, as AlphaGo Zero's policy head (Silver et al., Nature 2017): 2 x 64 squares
# x 4,672 actions = 0.6M weights; 32 planes made it 9.6M (38 MB), more than the zoo's 15 MB for all its agents
POLICY_PLANES = 2


def settings(args: Options) -> dict:
    """The library settings of every stage: engine games, pretraining, DAgger and the tournament."""
    workers = args.workers or os.cpu_count() or 1
    return dict(
        generation=GenerationSettings("chess", games=args.games, nodes=NODES, opening_plies=6, seed=args.seed),
        supervised=SupervisedSettings(
            data=os.path.join(args.out, "data"), epochs=args.epochs, blocks=args.blocks, channels=args.channels,
            policy_channels=POLICY_PLANES, value_target="result" if args.pgn else "mix", seed=args.seed,
            threads=THREADS, simulations=0, lr_schedule="cosine", draw_penalty=1.0),
        dagger=dict(rounds=args.dagger_rounds, games=args.dagger_games, nodes=NODES, seed=args.seed,
                    workers=workers, ray_address=None),
        random=dict(games=args.random_games, seed=1_000_000),
        tournament=dict(engine_nodes=tuple(args.engine_nodes), games=args.tournament_games, seed=args.seed,
                        workers=workers, opening_plies=4, simulations=args.tournament_simulations),
    )


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    plan = settings(args)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(THREADS)
    started_machine, started = machine(), time.perf_counter()
    stages = Stages(args.out, args.resume)
    supervised = plan["supervised"]
    source = stages.timed("games", lambda: games(args, plan))

    pretrain_dir = os.path.join(args.out, "pretrain")
    stages.timed("pretraining", lambda: train_supervised(pretrain_dir, supervised, resume=os.path.exists(
        os.path.join(pretrain_dir, "checkpoint"))))
    rounds = stages.timed("dagger", lambda: dagger(pretrain_dir, supervised, **plan["dagger"])) \
        if args.dagger_rounds else []
    metrics = read_state(os.path.join(pretrain_dir, "checkpoint")).metrics

    final = raw_policy(os.path.join(pretrain_dir, "agent"), supervised)
    against_random = stages.timed("random", lambda: [versus_random(final, "chess", color=color, **plan["random"])
                                                     for color in ("white", "black")])
    agents_dir = os.path.join(pretrain_dir, "agents")
    checkpoints = sorted(os.path.join(agents_dir, d) for d in os.listdir(agents_dir))
    tournament = stages.timed("tournament", lambda: checkpoint_tournament(checkpoints, "chess", **plan["tournament"]))
    tournament_plot(tournament, os.path.join(args.out, "tournament_elo.png"),
                    f"8x8 chess: each epoch's {checkpoint_play(args)} (Elo vs epoch 0)")
    write_report(args, plan, source, metrics, rounds, against_random, tournament, stages,
                 time.perf_counter() - started, machine_text(started_machine))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def games(args: Options, plan: dict) -> str:
    """Import the PGN file or let Stockfish play; returns where the data came from, for the report."""
    data_dir = plan["supervised"].data
    if args.pgn:
        if list_shards(data_dir):
            return f"PGN file {args.pgn} (imported earlier)"
        stats = import_pgn(args.pgn, data_dir, "chess")
        print(stats, flush=True)
        return f"PGN file {args.pgn}: {stats}"
    generated = generate_games(data_dir, plan["generation"], workers=plan["dagger"]["workers"], ray_address=None)
    return (f"{args.games:,} Stockfish self-play games at {NODES} nodes a move from balanced random "
            f"openings ({generation_throughput(generated['total'])})")


def checkpoint_play(args) -> str:
    """How the checkpoints play in the tournament."""
    if args.tournament_simulations:
        return f"search, {args.tournament_simulations} simulations a move (PUCT)"
    return "raw policy (no search)"


def write_report(args, plan, source, metrics, rounds, against_random, tournament, stages, wall, measured_on) -> None:
    out, supervised = args.out, plan["supervised"]
    write_pretraining_files(out, metrics, "8x8 chess: learning the games' moves")
    write_csv(os.path.join(out, "tournament.csv"), [
        {"player": name, "elo": r.elo, "low": r.low, "high": r.high, "games": r.games, "score": r.score}
        for name, r in tournament.ratings.items()])
    first, final = tournament.checkpoints[0], tournament.checkpoints[-1]
    gain = tournament.ratings[final]
    last = metrics[-1]
    schedule = ("a constant learning rate" if supervised.lr_schedule == "constant" else
                "a learning rate falling from its peak to 0 on a cosine")
    text = f"""# Supervised learning on 8x8 chess

Data: {source}. {args.epochs} epoch{"s" if args.epochs != 1 else ""} of supervised training of a {args.blocks}-block, {args.channels}-channel
AlphaZero network (policy: the move played, cross-entropy over legal moves only; AdamW at
{schedule}).{draw_penalty_text("Stockfish", supervised.draw_penalty, SupervisedSettings.winning_cp)}
{dagger_text(len(rounds), args.dagger_games, "Stockfish", NODES, dagger_table(rounds, metrics, args.epochs) if rounds else "")}
Held-out games, last epoch: top-1 agreement with the move played **{last['validation_top1']:.3f}**, policy
loss {last['validation_policy_loss']:.3f}, value-sign accuracy {last['validation_value_sign']:.3f}.

The final raw policy (no search) against the random player, game i seeded 1,000,000 + i (a game that
reaches the ply limit is a draw):

{random_match_table(against_random)}

## Checkpoint tournament

Every epoch's network (after epoch {args.epochs}, one per DAgger round), playing by its {checkpoint_play(args)}; each plays the next epoch, {first} and Stockfish at
{", ".join(map(str, args.engine_nodes))} nodes, {args.tournament_games} games a pairing, colours alternating, four random
opening plies per game. Elo by maximum likelihood (one virtual draw per pairing), relative to
{first} (the untrained network), 95% profile-likelihood intervals.

**{final}: {gain.elo:+.0f} Elo [{gain.low:+.0f}, {gain.high:+.0f}] over {first}** (target: +200).

{tournament_table(tournament)}

The pairings:

{pairings_table(tournament)}

Plots: `tournament_elo.png`, `pretraining.png`; numbers: `tournament.csv`, `pretraining.csv`.

## Time

{stages.table()}

Whole run {wall / 60:.1f} min in this session (the stages above add up over resumed sessions). {measured_on}
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
