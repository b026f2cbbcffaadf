"""AlphaZero learns Connect Four (PettingZoo ``connect_four_v3``) by self-play, judged by a perfect solver.

    python experiments/alphazero_connect4.py              # ~27 minutes on 2 idle CPU cores
    python experiments/alphazero_connect4.py --resume     # continue an interrupted run
    python experiments/alphazero_connect4.py --preset seed1   # the documented second seed
    python -m experiments.alphazero_connect4 --preset quick   # a smoke test, as a module from the repository root

Judges (used only to judge): the perfect solver ``bitbully`` (``pip install
'minichess-envs[games]'``) scores the agent's move on a seeded sample of
positions from real games (alpha-beta games with random moves mixed in) --
value-preserving: a won position stays won, a drawn one drawn; and matches, both
colours, against depth-limited alpha-beta (depth 4) and against the solver
itself, with Wilson intervals. Writes runs/alphazero_connect4/: report.md,
metrics.csv, scores.csv, matches.csv, *.png, checkpoint/, tensorboard/, agent/.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from agents.runs import Progress, command_line, machine, machine_text, write_csv  # first: the OpenMP setting

import numpy as np
import torch
import tyro

from agents.alphazero.agent import AlphaZeroAgent
from agents.alphazero.search import MOVE_CHOICES, SearchConfig
from agents.alphazero.train import Config, train, with_changes, write_agent
from agents.arena import play_match
from agents.arena.evaluation import score_moves
from agents.games.connect_four import ConnectFourAlphaBeta, ConnectFourSolver, judged_sample
from agents.players.random_agent import RandomAgent
from agents.reports import line_plot, losses_plot, match_table, move_score_rows, move_score_table, \
    selfplay_text, write_alphazero_report
from agents.workers import ClusterError
from minichess_envs.players import choose_actions

Hidden = tyro.conf.Suppress  # not a flag: fixed here, changed by a preset


@dataclasses.dataclass
class Options:
    """AlphaZero learns Connect Four (PettingZoo connect_four_v3) by self-play, judged by a perfect solver."""

    out: str = "runs/alphazero_connect4"  # the run directory: report.md, metrics.csv, scores.csv, plots, agent/
    iterations: int = 200
    eval_simulations: int = 1600  # per judged move (1,600 kept the value about 1 point more often than 400)
    sample: int = 500  # solver-judged positions
    seed: int = 0
    workers: int = 2  # self-play worker processes, one per core (0: self-play in this process)
    ray_address: str | None = None  # run the workers as Ray actors on this cluster ("local": a new local one)
    resume: bool = False  # continue an interrupted run
    # fixed here, changed by a preset
    games: Hidden[int] = 128  # self-play games per iteration
    simulations: Hidden[int] = 48  # per self-play move
    match_games: Hidden[int] = 50  # games per colour against alpha-beta
    solver_games: Hidden[int] = 20  # games per colour against the solver


PRESETS = {
    "quick": dict(iterations=2, games=8, simulations=8, sample=40, match_games=2, solver_games=1, eval_simulations=8),
    "seed1": dict(seed=1, out="runs/alphazero_connect4_seed1"),  # docs/results/boardgames.md's `--seed 1` run
}
DEPTH = 4  # the alpha-beta opponent's depth
MOVE_CHOICE = "lcb"  # the judged search's move: lcb won 200 of 200 games against alpha-beta where the most visited won 181


def settings(args: Options) -> Config:
    """The run's AlphaZero settings: a 3x48 network, 25% of games after 1-6 random moves, value targets half
    result and half root value, policy targets in proportion to visits squared, bf16 training steps where the
    CPU has native bf16, one torch thread (faster than two on 2 cores: the batches are small), workers playing
    the next iteration's games while the network trains."""
    return with_changes(
        Config(), game="connect_four", run_dir=args.out, seed=args.seed, iterations=args.iterations,
        games_per_iteration=args.games, temperature_plies=8, random_start_fraction=0.25, random_start_plies=6,
        search=SearchConfig(simulations=args.simulations, leaves_per_tree=4, c_puct=1.5, discount=0.99,
                            dirichlet_alpha=1.0),
        blocks=3, channels=48, policy_channels=8, buffer_size=60_000, batch_size=256, mixed_precision_training=True,
        sample_reuse=8.0, value_target_q=0.5, policy_target_power=2.0, learning_rate=2e-3, final_learning_rate=2e-4,
        threads=1, workers=args.workers, ray_address=args.ray_address, overlap=args.workers > 0)


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    started = machine()
    start = time.perf_counter()
    with Progress(args.sample, "solver values of the sample", unit="position") as bar:
        positions, move_values = judged_sample(args.sample, args.seed, bar.update)
    judge_seconds = time.perf_counter() - start
    config = settings(args)
    solver_values = np.array([max(m.values()) for m in move_values])  # for the player to move

    def evaluate(net, iteration):
        agent = AlphaZeroAgent(net, "connect_four", simulations=0)
        raw = score_moves(positions, choose_actions(agent, positions, batch=1024), move_values)
        return {"score_policy_value_preserving": raw["value_preserving"],
                **value_agreement(agent.policy_value(positions)[1], solver_values)}

    state = train(config, evaluate=evaluate, resume=args.resume)
    t0 = time.perf_counter()
    agent_path = write_agent(args.out, state, simulations=args.eval_simulations, move_choice=MOVE_CHOICE)
    raw = AlphaZeroAgent.from_checkpoint(state, simulations=0, name="raw policy")
    mcts_name = f"MCTS {args.eval_simulations}" + (", LCB" if MOVE_CHOICE == "lcb" else "")
    mcts = AlphaZeroAgent.from_checkpoint(state, simulations=args.eval_simulations, name=mcts_name,
                                          move_choice=MOVE_CHOICE)
    players = {"raw policy": raw, mcts_name: mcts, f"baseline: alpha-beta depth {DEPTH}":
               ConnectFourAlphaBeta(DEPTH, seed=args.seed), "baseline: random": RandomAgent(args.seed)}
    scores = {}
    for label, choose in players.items():
        print(f"scoring {label} on {len(positions)} positions ...", flush=True)
        scores[label] = score_moves(positions, choose_actions(choose, positions, batch=128), move_values)
    matches = []
    opponents = [(f"alpha-beta depth {DEPTH}", ConnectFourAlphaBeta(DEPTH, seed=args.seed + 1), args.match_games),
                 ("perfect solver", ConnectFourSolver(seed=args.seed + 2), args.solver_games)]
    for label, choose in ((mcts_name, mcts), ("raw policy", raw)):
        for opponent, other, games in opponents:
            for seats in ("first", "second"):
                with Progress(games, f"{label} vs {opponent}, moving {seats}", unit="game") as bar:
                    matches.append(play_match(choose, other, "connect_four", games, seats=seats, names=(label, opponent),
                                              progress=lambda record, done, total: bar.update(done)))
    final_seconds = time.perf_counter() - t0
    write_report(args, config, state, positions, scores, matches, mcts_name, judge_seconds, final_seconds,
                 time.perf_counter() - start, agent_path, machine_text(started))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def value_agreement(values: np.ndarray, solver_values: np.ndarray) -> dict:
    """The value head against the solver's value of each position (1 won, 0 drawn, -1 lost): the share
    whose value, read as won above 1/3, lost below -1/3 and drawn between, is the solver's; and the MSE."""
    read = np.where(values > 1 / 3, 1, np.where(values < -1 / 3, -1, 0))
    return {"value_agreement": float(np.mean(read == solver_values)),
            "value_mse": float(np.mean((values - solver_values) ** 2))}


def write_report(args, config, state, positions, scores, matches, mcts_name, judge_seconds, final_seconds,
                 wall_seconds, agent_path, measured_on: str) -> None:
    metrics, out = state["metrics"], args.out
    line_plot(os.path.join(out, "rates.png"), [m["iteration"] for m in metrics], {
        f"raw policy, value-preserving (solver-judged sample of {args.sample})":
            [m["score_policy_value_preserving"] for m in metrics],
        "value head, agreeing with the solver's value": [m.get("value_agreement", np.nan) for m in metrics],
    }, "iteration", "rate", "Connect Four: the raw network against the perfect solver")
    losses_plot(os.path.join(out, "losses.png"), metrics)
    score_rows = move_score_rows(scores)
    write_csv(os.path.join(out, "scores.csv"), score_rows)
    write_csv(os.path.join(out, "matches.csv"), [m.row() for m in matches])
    first_vs_ab = next(m for m in matches if m.a == mcts_name and m.b.startswith("alpha") and m.seats == "first").tally()
    vs_solver = [m.tally() for m in matches if m.a == mcts_name and m.b == "perfect solver"]
    last = metrics[-1]
    value_text = "" if "value_agreement" not in last else (
        f"The value head, read as won above 1/3, lost below -1/3 and drawn between, agrees with the solver's value"
        f" of {last['value_agreement']:.3f} of the sample's positions (MSE against the solver's 1 / 0 / -1:"
        f" {last['value_mse']:.3f}).")
    text = f"""# AlphaZero on Connect Four (PettingZoo `connect_four_v3`)

{len(metrics)} iterations of {config.selfplay.games_per_iteration} self-play games ({config.search.simulations} simulations a move,
{config.selfplay.random_start_fraction:.0%} of games after 1-{config.selfplay.random_start_plies} random moves), a
{config.network.blocks}-block, {config.network.channels}-channel residual network. Judged by the perfect solver bitbully on a
seeded sample of {args.sample} positions from real games (alpha-beta depth 2 against itself with 30% random moves,
mean {np.mean([g.moves for g in positions]):.1f} stones on the board); the solver only judges, it never trains.
The agents play, from their search, {MOVE_CHOICES[MOVE_CHOICE]} (or their most probable move, without search);
target for {mcts_name}: value-preserving >= 0.95.

{move_score_table(score_rows, sides=False)}

{value_text}

Moving first against alpha-beta depth {DEPTH}, {mcts_name} won {first_vs_ab.wins} of {first_vs_ab.games} games
({first_vs_ab.wins / first_vs_ab.games:.3f}, 95% Wilson [{first_vs_ab.rate_interval("wins")[0]:.3f},
{first_vs_ab.rate_interval("wins")[1]:.3f}]; target >= 0.90). Against the perfect solver (moving first, then second): """ + \
        "; ".join(f"{t.wins}-{t.draws}-{t.losses} (W-D-L)" for t in vs_solver) + f""". The first player wins
Connect Four with perfect play, so losing every game as the second player is the expected result; as the first
player, any draw or loss is a mistake by the agent.

Time: solver values of the sample {judge_seconds / 60:.1f} min, training {last["elapsed_s"] / 60:.1f} min
({selfplay_text(metrics, config.scale.workers, config.scale.overlap)}), final scoring and matches
{final_seconds / 60:.1f} min, whole run {wall_seconds / 60:.1f} min (a resumed run counts only its own part). {measured_on}

## Moves against the solver, by player to move

Blunders count positions: a won position where the move only draws (win->draw) or loses (win->loss), and a
drawn one where it loses (draw->loss).

{move_score_table(score_rows)}

## Matches

Alpha-beta and the solver break ties between equally good columns at random (seeded), so games differ
(distinct: how many of the games differ, by their moves).

{match_table(matches)}

Plots: `rates.png`, `losses.png`; per iteration: `metrics.csv`; final scores: `scores.csv`, `matches.csv`.

"""
    write_alphazero_report(out, text, config, agent_path, args.eval_simulations, MOVE_CHOICE)


if __name__ == "__main__":
    torch.set_num_threads(2)
    try:
        sys.exit(main())
    except ClusterError as exc:  # the Ray cluster's problem, named without a traceback; the checkpoint stands
        sys.exit(f"error: {exc}")
