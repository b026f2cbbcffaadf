"""AlphaZero learns checkers (English draughts, OpenSpiel's rules) by self-play, judged in matches.

    python experiments/alphazero_checkers.py              # ~30 minutes on 2 CPU cores, final matches included
    python experiments/alphazero_checkers.py --resume     # continue an interrupted run
    python -m experiments.alphazero_checkers --preset quick   # a smoke test, as a module from the repository root

Judges (used only to judge): matches, both colours, of the search (MCTS, the move with the best lower
confidence bound) and of the raw policy against the random player, alpha-beta depth 4
(``agents.games.checkers.CheckersAlphaBeta``) and OpenSpiel's MCTS bot at 100 simulations (``pip install
open-spiel``); the search also against that bot at 1,000 simulations, a small match (about a second a move in
Python). Each iteration, the raw policy plays alpha-beta depth 2 (the learning curve). Writes
runs/alphazero_checkers/: report.md, metrics.csv, matches.csv, stages.json, *.png, checkpoint/, tensorboard/,
agent/.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from agents.runs import command_line, machine, machine_text, write_csv  # first: the OpenMP setting, before torch

import numpy as np
import torch
import tyro

from agents.alphazero.agent import AlphaZeroAgent
from agents.alphazero.search import MOVE_CHOICES, SearchConfig
from agents.alphazero.train import Config, train, with_changes, write_agent
from agents.arena import play_match
from agents.games import new_game
from agents.games.checkers import CheckersAlphaBeta
from agents.players.openspiel_mcts import OpenSpielMCTS
from agents.players.random_agent import RandomAgent
from agents.reports import Stages, line_plot, losses_plot, match_table, selfplay_text, write_alphazero_report
from agents.workers import ClusterError
from minichess_envs.players import choose_actions

Hidden = tyro.conf.Suppress  # not a flag: fixed here, changed by a preset


@dataclasses.dataclass
class Options:
    """AlphaZero learns checkers (English draughts, OpenSpiel's rules) by self-play, judged in matches."""

    out: str = "runs/alphazero_checkers"  # the run directory: report.md, metrics.csv, matches.csv, plots, agent/
    minutes: float = 14.0  # of self-play and learning (the learning rate decays over them; evaluation not counted)
    iterations: int = 200  # at most
    eval_simulations: int = 128  # per move of the judged search
    seed: int = 0
    workers: int = 2  # self-play worker processes, one per core (0: self-play in this process)
    ray_address: str | None = None  # run the workers as Ray actors on this cluster ("local": a new local one)
    resume: bool = False  # continue an interrupted run
    # fixed here, changed by a preset
    games: Hidden[int] = 96  # self-play games per iteration
    simulations: Hidden[int] = 32  # per self-play move
    curve_games: Hidden[int] = 20  # each iteration: the raw policy against alpha-beta depth 2, colours alternating
    random_games: Hidden[int] = 30  # games per colour against the random player
    match_games: Hidden[int] = 20  # games per colour against alpha-beta depth 4
    openspiel_games: Hidden[int] = 10  # games per colour against OpenSpiel's MCTS at openspiel_simulations
    slow_games: Hidden[int] = 3  # games per colour (the search only) against OpenSpiel's MCTS at slow_simulations
    openspiel_simulations: Hidden[int] = 100
    slow_simulations: Hidden[int] = 1000
    probe_moves: Hidden[int] = 8  # positions the slow bot is timed on


PRESETS = {"quick": dict(iterations=2, games=4, simulations=4, eval_simulations=4, curve_games=2, random_games=2,
                         match_games=1, openspiel_games=1, slow_games=1, openspiel_simulations=4, slow_simulations=8,
                         probe_moves=2)}  # a smoke test
DEPTH, CURVE_DEPTH = 4, 2  # the alpha-beta opponents' depths: judged at the end, and each iteration
MOVE_CHOICE = "lcb"
TARGETS = {"random": 0.95, f"alpha-beta depth {DEPTH}": 0.5}  # the search's score with each colour


def settings(args: Options) -> Config:
    """The run's AlphaZero settings: a 3x32 network (a 3x48 one took twice as long a training step, and the
    learner, not self-play, set the pace), 32 simulations a move, a quarter of the games after 1-8 random moves,
    moves sampled from the visits for the first 10 plies, value targets half result and half root value, policy
    targets in proportion to visits squared, 3 training samples per new one, the learning rate decaying over the
    minutes; one torch thread, workers playing the next iteration's games while the network trains."""
    return with_changes(
        Config(), game="checkers", run_dir=args.out, seed=args.seed, iterations=args.iterations,
        hours=args.minutes / 60, games_per_iteration=args.games, temperature_plies=10, random_start_fraction=0.25,
        random_start_plies=8,
        search=SearchConfig(simulations=args.simulations, leaves_per_tree=4, c_puct=1.5, discount=0.99,
                            dirichlet_alpha=1.0),
        blocks=3, channels=32, policy_channels=8, buffer_size=100_000, batch_size=256, mixed_precision_training=True,
        sample_reuse=3.0, value_target_q=0.5, policy_target_power=2.0, learning_rate=2e-3, final_learning_rate=2e-4,
        threads=1, workers=args.workers, ray_address=args.ray_address, overlap=args.workers > 0)


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    started, start = machine(), time.perf_counter()
    config = settings(args)

    def evaluate(net, iteration):
        raw = AlphaZeroAgent(net, "checkers", simulations=0)
        curve = play_match(raw, CheckersAlphaBeta(CURVE_DEPTH, seed=args.seed + 3), "checkers", args.curve_games,
                           seed=iteration, names=("raw policy", "alpha-beta")).tally()
        return {"score_policy_vs_ab2": curve.score}

    stages = Stages(args.out, args.resume)
    state = stages.timed("self-play and learning (and the learning curve)",
                         lambda: train(config, evaluate=evaluate, resume=args.resume))
    torch.set_num_threads(2)  # the final matches run here, one at a time
    agent_path = write_agent(args.out, state, simulations=args.eval_simulations, move_choice=MOVE_CHOICE)
    raw = AlphaZeroAgent.from_checkpoint(state, simulations=0, name="raw policy")
    mcts_name = f"MCTS {args.eval_simulations}, LCB"
    mcts = AlphaZeroAgent.from_checkpoint(state, simulations=args.eval_simulations, name=mcts_name,
                                          move_choice=MOVE_CHOICE)
    fast, slow = (f"openspiel mcts {n}" for n in (args.openspiel_simulations, args.slow_simulations))
    rng = np.random.default_rng(args.seed)
    probe = [new_game("checkers").random_start(rng, 30) for _ in range(args.probe_moves)]
    t0 = time.perf_counter()
    stages.timed(f"{slow}: timed on {len(probe)} positions",
                 lambda: choose_actions(OpenSpielMCTS(args.slow_simulations, seed=args.seed), probe))
    slow_move_s = (time.perf_counter() - t0) / max(len(probe), 1)
    opponents = [("random", RandomAgent(args.seed + 1), args.random_games, (mcts, raw)),
                 (f"alpha-beta depth {DEPTH}", CheckersAlphaBeta(DEPTH, seed=args.seed + 2), args.match_games,
                  (mcts, raw)),
                 (fast, OpenSpielMCTS(args.openspiel_simulations, seed=args.seed + 3), args.openspiel_games,
                  (mcts, raw)),
                 (slow, OpenSpielMCTS(args.slow_simulations, seed=args.seed + 4), args.slow_games, (mcts,))]
    matches = []
    for opponent, other, games, players in opponents:
        for player in players:
            for seats in ("first", "second"):
                print(f"{player.name} vs {opponent}, moving {seats}: {games} games ...", flush=True)
                matches.append(stages.timed(f"{player.name} vs {opponent}, moving {seats}", lambda: play_match(
                    player, other, "checkers", games, args.seed, seats=seats, names=(player.name, opponent))))
    write_report(args, config, state, matches, stages, slow_move_s, mcts_name,
                 time.perf_counter() - start, agent_path, machine_text(started))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def write_report(args, config, state, matches, stages, slow_move_s, mcts_name, wall_seconds, agent_path,
                 measured_on: str) -> None:
    metrics, out = state["metrics"], args.out
    line_plot(os.path.join(out, "rates.png"), [m["iteration"] for m in metrics], {
        f"raw policy's score against alpha-beta depth {CURVE_DEPTH} ({args.curve_games} games, colours alternating)":
            [m["score_policy_vs_ab2"] for m in metrics]}, "iteration", "score", "Checkers: the raw network")
    losses_plot(os.path.join(out, "losses.png"), metrics)
    write_csv(os.path.join(out, "matches.csv"), [m.row() for m in matches])

    def verdict(opponent: str) -> str:
        parts = []
        for m in matches:
            if m.a == mcts_name and m.b == opponent:
                t = m.tally()
                parts.append(f"moving {m.seats} {t.wins}-{t.draws}-{t.losses} (W-D-L), score {t.score:.3f} "
                             f"[{t.interval[0]:.3f}, {t.interval[1]:.3f}]")
        target = TARGETS.get(opponent)
        met = "" if target is None else " -- target >= {} with both colours: {}".format(target, "met" if all(
            m.tally().score >= target for m in matches if m.a == mcts_name and m.b == opponent) else "missed")
        return f"- against {opponent}: " + "; ".join(parts) + met

    last, sp = metrics[-1], config.selfplay
    opponents = list(dict.fromkeys(m.b for m in matches))
    text = f"""# AlphaZero on checkers (English draughts, OpenSpiel's rules)

{len(metrics)} iterations of {sp.games_per_iteration} self-play games ({config.search.simulations} simulations a move,
{sp.random_start_fraction:.0%} of games after 1-{sp.random_start_plies} random moves) in a budget of {args.minutes:g}
minutes of self-play and learning, a {config.network.blocks}-block, {config.network.channels}-channel residual
network. The judged search plays {MOVE_CHOICES[MOVE_CHOICE]} after {args.eval_simulations} simulations; the raw policy
its most probable move. Scores count a draw as half a point, with 95% Wilson intervals.

Targets for {mcts_name}: a score >= {TARGETS["random"]} with both colours against the random player and >=
{TARGETS[f"alpha-beta depth {DEPTH}"]} against alpha-beta depth {DEPTH}; against OpenSpiel's MCTS bot (random rollouts)
the score is reported. Measured:

""" + "\n".join(verdict(o) for o in opponents) + f"""

OpenSpiel's MCTS at {args.slow_simulations} simulations took {slow_move_s:.2f} s a move here (timed on
{args.probe_moves} positions after up to 30 random plies), so its match is only {args.slow_games} games a colour,
the search alone; its interval is correspondingly wide.

## Matches

W-D-L of the first player named; distinct: how many of the games differ, by their moves.

{match_table(matches)}

Learning curve: the raw policy's score against alpha-beta depth {CURVE_DEPTH} each iteration, last
{last["score_policy_vs_ab2"]:.3f} (`rates.png`); losses: `losses.png`; per iteration: `metrics.csv`; final
matches: `matches.csv`. Self-play games averaged {last["mean_game_plies"]:.0f} plies at the last iteration.

## Time

Self-play and learning {last["training_s"] / 60:.1f} min ({selfplay_text(metrics, config.scale.workers,
config.scale.overlap)}); the learning curve's games {sum(m.get("eval_s", 0) for m in metrics) / 60:.1f} min; whole run
{wall_seconds / 60:.1f} min (a resumed run counts only its own part). {measured_on}

{stages.table()}

"""
    write_alphazero_report(out, text, config, agent_path, args.eval_simulations, MOVE_CHOICE)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClusterError as exc:  # the Ray cluster's problem, named without a traceback; the checkpoint stands
        sys.exit(f"error: {exc}")
