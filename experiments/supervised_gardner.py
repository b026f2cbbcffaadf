"""Learn Gardner from Fairy-Stockfish's games, then ask whether pretraining helps self-play.

    python experiments/supervised_gardner.py                 # the whole route, defaults sized for 2 CPU cores
    python experiments/supervised_gardner.py --resume        # continue an interrupted run (every stage resumes)
    python experiments/supervised_gardner.py --games 400 --epochs 2 --selfplay-iterations 1 --match-games 10

1. Fairy-Stockfish plays itself at ``--nodes`` from balanced random openings (``agents.supervised.engine_games``); in a
   share of the games (``--random-opponent``) it plays a random mover instead, so the data shows how to
   finish off a weak defender (only the engine's moves are learnt).
2. The AlphaZero network (4 residual blocks of 64 channels; ``--blocks``, ``--channels``) learns the engine's moves and the
   results (``agents.supervised``), one checkpoint per epoch; then ``--dagger-rounds`` of DAgger: the raw
   policy plays random, the engine labels the positions it met, one more epoch each (the stalemates a policy
   learnt from balanced games walks into are where its own play leads, not where the engine's does).
   Where the engine says the side to move is winning, moves that draw at once are penalised
   (``--draw-penalty``); the learning rate falls on a cosine (``--lr-schedule``).
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

import argparse
import dataclasses
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads sleep (see alphazero_gardner.py)

import torch  # noqa: E402

from agents import MinimaxAgent  # noqa: E402
from agents.alphazero.agent import AlphaZeroAgent  # noqa: E402
from agents.alphazero.train import gardner_config, train, write_agent  # noqa: E402
from agents.arena import play_match  # noqa: E402
from agents.arena.evaluation import versus_random  # noqa: E402
from agents.supervised.engine_games import GenerationSettings, generate_games  # noqa: E402
from agents.arena.ladder import ladder_table, play_ladder  # noqa: E402
from agents.arena.evaluation import baselines  # noqa: E402
from agents.reports import baseline_table, generation_throughput, markdown_table  # noqa: E402
from agents.runs import machine, machine_text, read_json, read_state, write_csv, write_json  # noqa: E402
from agents.supervised import (  # noqa: E402
    SupervisedSettings, dagger, dagger_table, train_supervised, write_pretraining_files)  # noqa: E402
from agents.arena.tournament import checkpoint_tournament, pairings_table, tournament_plot, tournament_table  # noqa: E402

VARIANT = "gardner"
ENGINE_LEVELS = (1, 10, 100)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/supervised_gardner")
    parser.add_argument("--games", type=int, default=12000, help="Fairy-Stockfish games")
    parser.add_argument("--random-opponent", type=float, default=2 / 3,
                        help="share of the games in which the engine plays a random mover")
    parser.add_argument("--nodes", type=int, default=100, help="Fairy-Stockfish's budget per move")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--blocks", type=int, default=4, help="residual blocks of the network (pretrained and self-play)")
    parser.add_argument("--channels", type=int, default=64, help="the network's channels")
    parser.add_argument("--policy-channels", type=int, default=32, help="channels of the policy head")
    parser.add_argument("--lr-schedule", default="cosine", choices=("constant", "cosine"),
                        help="learning rate over the epochs: constant, or cosine down to 0 (and again in each "
                             "DAgger round)")
    parser.add_argument("--draw-penalty", type=float, default=1.0,
                        help="weight of the unlikelihood of moves that draw at once where the engine says the "
                             "side to move is winning (0: off)")
    parser.add_argument("--dagger-rounds", type=int, default=8,
                        help="DAgger rounds after pretraining: the policy plays, the engine labels, one more epoch")
    parser.add_argument("--dagger-games", type=int, default=1000, help="raw-policy games per colour in a round")
    parser.add_argument("--simulations", type=int, default=48, help="search budget of the scored agents")
    parser.add_argument("--random-games", type=int, default=1000, help="raw-policy games per colour vs random")
    parser.add_argument("--match-games", type=int, default=40, help="games against minimax with search")
    parser.add_argument("--ladder-openings", type=int, default=0,
                        help="published ladder openings to play, each with both colours (0: all 100)")
    parser.add_argument("--tournament-games", type=int, default=10, help="games per pairing of the tournament")
    parser.add_argument("--selfplay-iterations", type=int, default=6, help="of each self-play run")
    parser.add_argument("--selfplay-games", type=int, default=128, help="self-play games per iteration")
    parser.add_argument("--workers", type=int, default=0, help="processes for game generation (0: all cores)")
    parser.add_argument("--ray-address", default=None, help="generate games on a Ray cluster")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", action="store_true")
    return parser.parse_args(argv)


def stage(name: str, started: float) -> None:
    print(f"\n== {name} ({(time.perf_counter() - started) / 60:.1f} min in)", flush=True)


def main(argv=None) -> int:
    args = parse(argv)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(args.threads)
    started_machine, started = machine(), time.perf_counter()
    seconds = read_json(os.path.join(args.out, "stages.json")) if args.resume and os.path.exists(
        os.path.join(args.out, "stages.json")) else {}

    def timed(name, fn):
        t0 = time.perf_counter()
        result = fn()
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0
        write_json(os.path.join(args.out, "stages.json"), seconds)
        return result

    stage("1. engine games", started)
    data_dir = os.path.join(args.out, "data")
    generation = GenerationSettings(VARIANT, games=args.games, nodes=args.nodes, seed=args.seed,
                                    random_opponent=args.random_opponent)
    generated = timed("generation", lambda: generate_games(data_dir, generation, workers=args.workers or None,
                                                           ray_address=args.ray_address))

    stage("2. pretraining", started)
    config = gardner_config(os.path.join(args.out, "selfplay_scratch"), iterations=args.selfplay_iterations,
                            games=args.selfplay_games, simulations=args.simulations, seed=args.seed,
                            threads=args.threads, blocks=args.blocks, channels=args.channels,
                            policy_channels=args.policy_channels)
    settings = SupervisedSettings(data=data_dir, epochs=args.epochs, blocks=config.network.blocks, channels=config.network.channels,
                                  policy_channels=config.network.policy_channels, history=config.network.history,
                                  last_move=config.network.last_move, simulations=args.simulations, seed=args.seed,
                                  threads=args.threads, lr_schedule=args.lr_schedule, draw_penalty=args.draw_penalty)
    pretrain_dir = os.path.join(args.out, "pretrain")
    timed("pretraining", lambda: train_supervised(pretrain_dir, settings, resume=os.path.exists(
        os.path.join(pretrain_dir, "checkpoint"))))
    if args.dagger_rounds:
        stage("2b. DAgger", started)
        rounds = timed("dagger", lambda: dagger(pretrain_dir, settings, args.dagger_rounds, games=args.dagger_games,
                                                nodes=args.nodes, seed=args.seed, workers=args.workers or None,
                                                ray_address=args.ray_address))
    else:
        rounds = []
    pretrain_metrics = read_state(os.path.join(pretrain_dir, "checkpoint")).metrics

    stage("3. checkpoint tournament", started)
    checkpoints = sorted(os.path.join(pretrain_dir, "agents", d) for d in os.listdir(os.path.join(pretrain_dir, "agents")))
    tournament = timed("tournament", lambda: checkpoint_tournament(
        checkpoints, VARIANT, ENGINE_LEVELS, games=args.tournament_games, seed=args.seed, simulations=0,
        workers=args.workers or os.cpu_count() or 1))
    tournament_plot(tournament, os.path.join(args.out, "tournament_elo.png"),
                    "Gardner: raw policy of each epoch (Elo vs epoch 0)")

    stage("4. scoring the pretrained network", started)
    pretrained = os.path.join(pretrain_dir, "agent")
    scores = timed("scoring", lambda: score(pretrained, args))

    stage("5. self-play from the pretrained network and from scratch", started)
    selfplay = {}
    for label, init_from in (("pretrained", pretrained), ("scratch", None)):
        run_config = dataclasses.replace(config, run_dir=os.path.join(args.out, f"selfplay_{label}"),
                                         init_from=init_from)
        state = timed(f"selfplay_{label}", lambda: train(run_config, resume=os.path.exists(
            os.path.join(run_config.run_dir, "checkpoint"))))
        agent_path = write_agent(run_config.run_dir, state, simulations=args.simulations, name=f"selfplay-{label}")
        selfplay[label] = timed(f"selfplay_{label}_scoring", lambda: score(agent_path, args, raw_random=False))
        selfplay[label]["train_seconds"] = state["metrics"][-1]["elapsed_s"]

    baseline_rows = baselines(VARIANT, games=args.random_games, seed=1_000_000)
    write_report(args, generated, seconds, pretrain_metrics, rounds, tournament, scores, selfplay, baseline_rows,
                 time.perf_counter() - started, machine_text(started_machine))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def score(agent_path: str, args, raw_random: bool = True) -> dict:
    """Raw policy against random (both colours); the searching agent against minimax and on the ladder."""
    result = {"random": {}, "matches": []}
    if raw_random:
        raw = AlphaZeroAgent.load(agent_path, simulations=0)
        for color in ("white", "black"):
            result["random"][color] = versus_random(raw, VARIANT, games=args.random_games, color=color,
                                                    seed=1_000_000)
            print(result["random"][color], flush=True)
    agent = AlphaZeroAgent.load(agent_path, simulations=args.simulations)
    run = os.path.basename(os.path.dirname(agent_path))
    minimax = MinimaxAgent(depth=2, seed=1)
    match = play_match(agent, minimax, VARIANT, games=args.match_games, seed=7, opening_plies=2,
                       workers=args.workers or os.cpu_count() or 1)
    result["matches"].append((minimax.name, match.tally(agent.name)))
    print(f"{run} vs {minimax.name}: {match.tally(agent.name)}", flush=True)
    ladder = play_ladder(agent, VARIANT, ENGINE_LEVELS, openings=args.ladder_openings or None,
                         workers=args.workers or os.cpu_count() or 1)
    for level in ladder.levels:
        result["matches"].append((level, ladder.tally(level)))
        print(f"{run} vs {level}: {ladder.tally(level)}", flush=True)
    result["ladder"] = ladder
    return result


def match_rows(matches) -> list[list]:
    rows = []
    for name, t in matches:
        lo, hi = t.interval
        rows.append([name, t.games, f"{t.wins}-{t.draws}-{t.losses}", f"{t.score:.3f} [{lo:.3f}, {hi:.3f}]"])
    return rows


def write_report(args, generated, seconds, metrics, rounds, tournament, scores, selfplay, baseline_rows, wall,
                 measured_on):
    out = args.out
    write_pretraining_files(out, metrics, "Gardner: learning Fairy-Stockfish's moves")
    last = metrics[-1]
    before = metrics[args.epochs - 1]
    dagger_text = ""
    if rounds:
        dagger_text = f"""
Then {len(rounds)} DAgger round{"s" if len(rounds) != 1 else ""} (Ross, Gordon and Bagnell 2011; `agents.supervised.dagger`): in each, the raw
policy plays {args.dagger_games:,} games a colour against random (seeds 2,000,000 x round + i, apart from the
scoring games below), Fairy-Stockfish at {args.nodes} nodes labels every position the policy moved in, and
training goes on for one epoch over all the data. The policy's games before each round's epoch:

{dagger_table(rounds, metrics, args.epochs)}

Held-out agreement before DAgger (epoch {args.epochs}): {before['validation_top1']:.3f}; after, the held-out
set also holds 5% of the labelled positions (held out by one-ply game).
"""
    random_rows = []
    for color, m in scores["random"].items():
        lo, hi = m.win_interval
        random_rows.append([f"as {color}", m.games, f"{m.wins}-{m.draws}-{m.losses}",
                            f"{m.win_rate:.3f} [{lo:.3f}, {hi:.3f}]"])
    comparison = []
    for label in ("pretrained", "scratch"):
        for name, t in selfplay[label]["matches"]:
            lo, hi = t.interval
            comparison.append([f"self-play from {label}", name, t.games, f"{t.wins}-{t.draws}-{t.losses}",
                               f"{t.score:.3f} [{lo:.3f}, {hi:.3f}]"])
        e = selfplay[label]["ladder"].elo
        comparison.append([f"self-play from {label}", "ladder Elo", e.games, "",
                           f"{e.elo:+.0f} [{e.low:+.0f}, {e.high:+.0f}]"])
    write_csv(os.path.join(out, "matches.csv"), [
        {"player": label, "opponent": name, "games": t.games, "wins": t.wins, "draws": t.draws, "losses": t.losses,
         "score": t.score} for label, result in [("pretrained", scores)] + list(selfplay.items())
        for name, t in result["matches"]])
    stage_rows = [[name, f"{s / 60:.1f}"] for name, s in seconds.items()]
    total = generated["total"]  # over every session that generated into the data folder
    schedule_text = ("a constant learning rate" if args.lr_schedule == "constant" else
                     "the learning rate falling from its peak to 0 on a cosine")
    penalty_text = "" if not args.draw_penalty else f""" Where Fairy-Stockfish scores the side to move at
+{SupervisedSettings.winning_cp} cp or more, the moves that draw at once (stalemate, too little material to mate,
repetition) also get an unlikelihood loss, -log(1 - p(drawing moves)), weight {args.draw_penalty:g}
(`agents.supervised.draw_move_loss`; Welleck et al. 2020): the engine's move says what to play, this says
what not to play when winning."""
    random_games = round(args.games * args.random_opponent)
    kinds = (f"about {args.games - random_games:,} self-play games and {random_games:,} against a uniformly "
             "random mover (only the engine's moves are learnt there)" if args.random_opponent else "self-play games")
    text = f"""# Supervised learning on Gardner from Fairy-Stockfish's games

{args.games:,} Fairy-Stockfish games at {args.nodes} nodes a move from balanced random openings: {kinds}
({total['positions']:,} positions, {total['targets']:,} of them the engine's
moves; {generation_throughput(total)}), then {args.epochs} epochs of
supervised training of the AlphaZero network (policy: the engine's move, cross-entropy over legal moves only;
value: half game result, half engine score; AdamW, {schedule_text}).{penalty_text}
{dagger_text}
## The pretrained network

Held-out games (5% of games, split by game), last epoch: **top-1 agreement with Fairy-Stockfish
{last['validation_top1']:.3f}**, policy loss {last['validation_policy_loss']:.3f}, value loss
{last['validation_value_loss']:.3f}, value-sign accuracy {last['validation_value_sign']:.3f}.

Raw policy (no search) against the random player, game i seeded 1,000,000 + i:

{markdown_table(["colour", "games", "W-D-L", "win rate [95% Wilson]"], random_rows)}

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
scratch. Training took {selfplay['pretrained']['train_seconds'] / 60:.1f} and
{selfplay['scratch']['train_seconds'] / 60:.1f} min. Both search with {args.simulations} simulations
(minimax as above; Fairy-Stockfish levels on the ladder):

{markdown_table(["run", "opponent", "games", "W-D-L", "score [95% Wilson] / Elo"], comparison)}

## Time

{markdown_table(["stage", "minutes"], stage_rows)}

Whole run {wall / 60:.1f} min in this session (a resumed run counts only its own part). {measured_on}
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
