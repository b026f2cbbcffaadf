"""Learn 8x8 chess from Stockfish's games (or your PGN) at laptop scale; Elo of the checkpoints.

    python experiments/supervised_chess.py                       # Stockfish self-play games, defaults for 2 CPU cores
    python experiments/supervised_chess.py --pgn games.pgn       # learn from a PGN file instead (results only)
    python experiments/supervised_chess.py --resume              # continue an interrupted run
    python experiments/supervised_chess.py --games 200 --epochs 2 --tournament-games 4

1. Stockfish plays itself at ``--nodes`` from balanced random openings (``agents.supervised.engine_games``), or a PGN file
   is imported (``minichess_envs.dataset.import_pgn``; its value target is the game result).
2. The AlphaZero network learns the moves and results (``agents.supervised``), a checkpoint per epoch;
   where Stockfish says the side to move is winning, moves that draw at once are penalised
   (``--draw-penalty``). Then ``--dagger-rounds`` of DAgger: the raw policy plays random, Stockfish labels
   the positions it met, one more epoch each (a policy learnt from balanced games draws won games by
   repetition and stalemate; its own games show it where).
3. The checkpoints play each other and Stockfish at small node budgets, by their raw policies or with
   ``--tournament-simulations`` of search; Elo relative to checkpoint 0 (the untrained network) with 95%
   intervals (``agents.arena.tournament``).

Writes runs/supervised_chess/: report.md, tournament_elo.png, pretraining.png, *.csv, data/, pretrain/.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads sleep (see alphazero_gardner.py)

import torch  # noqa: E402

from agents.supervised.engine_games import GenerationSettings, generate_games  # noqa: E402
from agents.reports import generation_throughput, markdown_table  # noqa: E402
from agents.runs import machine, machine_text, read_json, read_state, write_csv, write_json  # noqa: E402
from agents.arena.evaluation import versus_random  # noqa: E402
from agents.supervised import (  # noqa: E402
    SupervisedSettings, dagger, dagger_table, raw_policy, train_supervised, write_pretraining_files)
from agents.arena.tournament import checkpoint_tournament, pairings_table, tournament_plot, tournament_table  # noqa: E402
from minichess_envs.dataset import import_pgn, list_shards  # noqa: E402


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/supervised_chess")
    parser.add_argument("--pgn", default=None, help="learn from this PGN file instead of Stockfish's games")
    parser.add_argument("--games", type=int, default=6000, help="Stockfish self-play games")
    parser.add_argument("--nodes", type=int, default=200, help="Stockfish's budget per move")
    parser.add_argument("--epochs", type=int, default=1, help="epochs of pretraining before DAgger")
    parser.add_argument("--draw-penalty", type=float, default=1.0,
                        help="weight of the unlikelihood of moves that draw at once where Stockfish says the side "
                             "to move is winning (0: off)")
    parser.add_argument("--dagger-rounds", type=int, default=1,
                        help="DAgger rounds after pretraining: the policy plays, Stockfish labels, one more epoch")
    parser.add_argument("--dagger-games", type=int, default=1000, help="raw-policy games per colour in a round")
    parser.add_argument("--random-games", type=int, default=1000,
                        help="games per colour of the final raw policy against random")
    parser.add_argument("--lr-schedule", default="cosine", choices=("constant", "cosine"),
                        help="learning rate over the epochs: constant, or cosine down to 0")
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--engine-nodes", default="1,10,100", help="Stockfish levels of the tournament")
    parser.add_argument("--tournament-games", type=int, default=40, help="games per pairing")
    parser.add_argument("--tournament-simulations", type=int, default=16,
                        help="search per move of the checkpoints in the tournament (PUCT, as seed 003 played its "
                             "checkpoints with MCTS; 0: the raw policy)")
    parser.add_argument("--workers", type=int, default=0, help="processes (0: all cores)")
    parser.add_argument("--ray-address", default=None, help="generate games on a Ray cluster")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", action="store_true")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(args.threads)
    started_machine, started = machine(), time.perf_counter()
    workers = args.workers or os.cpu_count() or 1
    stages = os.path.join(args.out, "stages.json")
    seconds = read_json(stages) if args.resume and os.path.exists(stages) else {}

    def done(name, t0):  # a stage's minutes add up over resumed sessions
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0
        write_json(stages, seconds)

    data_dir = os.path.join(args.out, "data")
    t0 = time.perf_counter()
    if args.pgn:
        if list_shards(data_dir):
            source = f"PGN file {args.pgn} (imported earlier)"
        else:
            stats = import_pgn(args.pgn, data_dir, "chess")
            print(stats, flush=True)
            source = f"PGN file {args.pgn}: {stats}"
        value_target = "result"
    else:
        generated = generate_games(data_dir, GenerationSettings("chess", games=args.games, nodes=args.nodes,
                                                                opening_plies=6, seed=args.seed),
                                   workers=workers, ray_address=args.ray_address)
        source = (f"{args.games:,} Stockfish self-play games at {args.nodes} nodes a move from balanced random "
                  f"openings ({generation_throughput(generated['total'])})")
        value_target = "mix"
    done("games", t0)

    t0 = time.perf_counter()
    pretrain_dir = os.path.join(args.out, "pretrain")
    settings = SupervisedSettings(data=data_dir, epochs=args.epochs, blocks=args.blocks, channels=args.channels,
                                  value_target=value_target, seed=args.seed, threads=args.threads, simulations=0,
                                  lr_schedule=args.lr_schedule, draw_penalty=args.draw_penalty)
    train_supervised(pretrain_dir, settings, resume=os.path.exists(os.path.join(pretrain_dir, "checkpoint")))
    done("pretraining", t0)
    rounds = []
    if args.dagger_rounds:
        t0 = time.perf_counter()
        rounds = dagger(pretrain_dir, settings, args.dagger_rounds, games=args.dagger_games, nodes=args.nodes,
                        seed=args.seed, workers=workers, ray_address=args.ray_address)
        done("dagger", t0)
    metrics = read_state(os.path.join(pretrain_dir, "checkpoint")).metrics

    t0 = time.perf_counter()
    final = raw_policy(os.path.join(pretrain_dir, "agent"), settings)
    against_random = [versus_random(final, "chess", games=args.random_games, color=color, seed=1_000_000)
                      for color in ("white", "black")]
    done("random", t0)

    t0 = time.perf_counter()
    agents_dir = os.path.join(pretrain_dir, "agents")
    checkpoints = sorted(os.path.join(agents_dir, d) for d in os.listdir(agents_dir))
    levels = tuple(int(n) for n in args.engine_nodes.split(",") if n)
    tournament = checkpoint_tournament(checkpoints, "chess", levels, games=args.tournament_games, seed=args.seed,
                                       workers=workers, opening_plies=4, simulations=args.tournament_simulations)
    done("tournament", t0)
    tournament_plot(tournament, os.path.join(args.out, "tournament_elo.png"),
                    f"8x8 chess: each epoch's {checkpoint_play(args)} (Elo vs epoch 0)")
    write_report(args, source, metrics, rounds, against_random, tournament, seconds,
                 time.perf_counter() - started, machine_text(started_machine))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def checkpoint_play(args) -> str:
    """How the checkpoints play in the tournament."""
    if args.tournament_simulations:
        return f"search, {args.tournament_simulations} simulations a move (PUCT)"
    return "raw policy (no search)"


def write_report(args, source, metrics, rounds, against_random, tournament, seconds, wall, measured_on) -> None:
    out = args.out
    write_pretraining_files(out, metrics, "8x8 chess: learning the games' moves")
    write_csv(os.path.join(out, "tournament.csv"), [
        {"player": name, "elo": r.elo, "low": r.low, "high": r.high, "games": r.games, "score": r.score}
        for name, r in tournament.ratings.items()])
    first, final = tournament.checkpoints[0], tournament.checkpoints[-1]
    gain = tournament.ratings[final]
    last = metrics[-1]
    penalty_text = "" if not args.draw_penalty else f""" Where Stockfish scores the side to move at
+{SupervisedSettings.winning_cp} cp or more, the moves that draw at once (stalemate, too little material to mate,
threefold repetition) also get an unlikelihood loss, -log(1 - p(drawing moves)), weight {args.draw_penalty:g}
(`agents.supervised.draw_move_loss`; Welleck et al. 2020)."""
    dagger_text = "" if not rounds else f"""
Then {len(rounds)} DAgger round{"s" if len(rounds) != 1 else ""} (Ross, Gordon and Bagnell 2011; `agents.supervised.dagger`): in each, the raw
policy plays {args.dagger_games:,} games a colour against random (seeds 2,000,000 x round + i), Stockfish at
{args.nodes} nodes labels every position the policy moved in, and training goes on for one epoch over all
the data. The policy's games before each round's epoch:

{dagger_table(rounds, metrics, args.epochs)}
"""
    random_rows = [[f"as {m.color}", m.games, f"{m.wins}-{m.draws}-{m.losses}",
                    f"{m.win_rate:.3f} [{m.win_interval[0]:.3f}, {m.win_interval[1]:.3f}]"] for m in against_random]
    text = f"""# Supervised learning on 8x8 chess

Data: {source}. {args.epochs} epoch{"s" if args.epochs != 1 else ""} of supervised training of a {args.blocks}-block, {args.channels}-channel
AlphaZero network (policy: the move played, cross-entropy over legal moves only; AdamW at
{'a constant learning rate' if args.lr_schedule == 'constant' else 'a learning rate falling from its peak to 0 on a cosine'}).{penalty_text}
{dagger_text}
Held-out games, last epoch: top-1 agreement with the move played **{last['validation_top1']:.3f}**, policy
loss {last['validation_policy_loss']:.3f}, value-sign accuracy {last['validation_value_sign']:.3f}.

The final raw policy (no search) against the random player, game i seeded 1,000,000 + i (a game that
reaches the ply limit is a draw):

{markdown_table(["colour", "games", "W-D-L", "win rate [95% Wilson]"], random_rows)}

## Checkpoint tournament

Every epoch's network (after epoch {args.epochs}, one per DAgger round), playing by its {checkpoint_play(args)}; each plays the next epoch, {first} and Stockfish at
{args.engine_nodes} nodes, {args.tournament_games} games a pairing, colours alternating, four random
opening plies per game. Elo by maximum likelihood (one virtual draw per pairing), relative to
{first} (the untrained network), 95% profile-likelihood intervals.

**{final}: {gain.elo:+.0f} Elo [{gain.low:+.0f}, {gain.high:+.0f}] over {first}** (target: +200).

{tournament_table(tournament)}

The pairings:

{pairings_table(tournament)}

Plots: `tournament_elo.png`, `pretraining.png`; numbers: `tournament.csv`, `pretraining.csv`.

## Time

{markdown_table(["stage", "minutes"], [[k, f"{v / 60:.1f}"] for k, v in seconds.items()])}

Whole run {wall / 60:.1f} min in this session (the stages above add up over resumed sessions). {measured_on}
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
