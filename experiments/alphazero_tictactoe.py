"""AlphaZero learns Tic-Tac-Toe (PettingZoo ``tictactoe_v3``) by self-play, judged on every position.

    python experiments/alphazero_tictactoe.py              # about 3 minutes of one CPU core
    python experiments/alphazero_tictactoe.py --resume     # continue an interrupted run
    python -m experiments.alphazero_tictactoe --preset quick   # a smoke test, as a module from the repository root

Our own exhaustive minimax solves all 5,478 positions reachable from the empty
board; every agent's move is scored on each of the 4,520 where the game goes on
(value-preserving: a won position stays won, a drawn one drawn). The solver is
used only to judge. Writes runs/alphazero_tictactoe/: report.md, metrics.csv,
scores.csv, matches.csv, *.png, checkpoint/, tensorboard/ and agent/
(``agents.load("runs/alphazero_tictactoe/agent")``).
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
from agents.alphazero.search import SearchConfig
from agents.alphazero.train import Config, train, with_changes, write_agent
from agents.arena import play_match
from agents.arena.evaluation import score_moves
from agents.games.tictactoe import TicTacToeSolver, solve_tictactoe
from agents.players.random_agent import RandomAgent
from agents.reports import line_plot, losses_plot, match_table, move_score_rows, move_score_table, \
    selfplay_text, write_alphazero_report
from minichess_envs.players import choose_actions


@dataclasses.dataclass
class Options:
    """AlphaZero learns Tic-Tac-Toe (PettingZoo tictactoe_v3) by self-play, judged on every position."""

    out: str = "runs/alphazero_tictactoe"  # the run directory: report.md, metrics.csv, scores.csv, plots, agent/
    iterations: int = 100
    simulations: int = 32  # per move, in self-play and in the judged searches
    eval_sample: int = 200  # positions searched each iteration (the raw policy is scored on all)
    seed: int = 0
    workers: int = 0  # self-play worker processes, one per core (0: self-play in this process)
    resume: bool = False  # continue an interrupted run
    # fixed here, changed by a preset
    games: tyro.conf.Suppress[int] = 128  # self-play games per iteration
    match_games: tyro.conf.Suppress[int] = 50  # games per colour in each match


PRESETS = {"quick": dict(iterations=2, games=8, simulations=8, eval_sample=20, match_games=2)}  # a smoke test


def settings(args: Options) -> Config:
    """The run's AlphaZero settings: a 2x32 network, 75% of games after 1-7 random moves, every sample stored
    in the board's eight symmetric images, policy targets in proportion to visits squared (sharper)."""
    return with_changes(
        Config(), game="tictactoe", run_dir=args.out, seed=args.seed, iterations=args.iterations,
        games_per_iteration=args.games, temperature_plies=4, random_start_fraction=0.75, random_start_plies=7,
        search=SearchConfig(simulations=args.simulations, leaves_per_tree=4, c_puct=1.5, discount=0.99,
                            dirichlet_alpha=1.0),
        blocks=2, channels=32, policy_channels=8, buffer_size=100_000, batch_size=128, sample_reuse=6.0,
        learning_rate=3e-3, final_learning_rate=3e-5, all_symmetries=True, policy_target_power=2.0, threads=2,
        workers=args.workers)


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    started = machine()
    start = time.perf_counter()
    table = solve_tictactoe()
    positions = table.non_terminal()
    assert len(table.values) == 5478 and len(positions) == 4520, "Tic-Tac-Toe has 5,478 reachable positions"
    move_values = [table.move_values(g) for g in positions]
    solve_seconds = time.perf_counter() - start
    print(f"solved {len(table.values):,} positions ({len(positions):,} non-terminal) in {solve_seconds:.2f} s",
          flush=True)
    config = settings(args)
    rng = np.random.default_rng(args.seed)
    sample = sorted(rng.choice(len(positions), size=min(args.eval_sample, len(positions)), replace=False))
    search = dataclasses.replace(config.search, dirichlet_epsilon=0.0)

    def evaluate(net, iteration):
        agent = AlphaZeroAgent(net, "tictactoe", simulations=0)
        raw = score_moves(positions, choose_actions(agent, positions, batch=4520), move_values)
        agent = AlphaZeroAgent(net, "tictactoe", simulations=search.simulations, search=search)
        games = [positions[i] for i in sample]
        mcts = score_moves(games, choose_actions(agent, games, batch=256), [move_values[i] for i in sample])
        return {"score_policy_value_preserving": raw["value_preserving"],
                "score_mcts_value_preserving": mcts["value_preserving"]}

    state = train(config, evaluate=evaluate, resume=args.resume)
    print("final evaluation on every position and matches ...", flush=True)
    t0 = time.perf_counter()
    agent_path = write_agent(args.out, state, simulations=args.simulations)
    raw = AlphaZeroAgent.from_checkpoint(state, simulations=0, name="raw policy")
    mcts = AlphaZeroAgent.from_checkpoint(state, simulations=args.simulations, name=f"MCTS {args.simulations}")
    players = {"raw policy": raw, f"MCTS {args.simulations}": mcts, "baseline: random": RandomAgent(args.seed)}
    scores = {label: score_moves(positions, choose_actions(choose, positions, batch=1024), move_values)
              for label, choose in players.items()}
    _, values = raw.policy_value(positions)
    truth = np.array([max(v.values()) for v in move_values])
    value_match = float(np.mean(np.where(np.abs(values) < 0.5, 0, np.sign(values)) == truth))
    matches = []
    for label, choose in list(players.items())[:2]:
        for opponent, other in (("perfect minimax", TicTacToeSolver(table, args.seed)),
                                ("random", RandomAgent(args.seed + 1))):
            for seats in ("first", "second"):
                matches.append(play_match(choose, other, "tictactoe", args.match_games, seats=seats,
                                          names=(label, opponent)))
    final_seconds = time.perf_counter() - t0
    write_report(args, config, state, scores, value_match, matches, solve_seconds, final_seconds,
                 time.perf_counter() - start, agent_path, machine_text(started))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def write_report(args, config, state, scores, value_match, matches, solve_seconds, final_seconds, wall_seconds,
                 agent_path, measured_on: str) -> None:
    metrics, out = state["metrics"], args.out
    line_plot(os.path.join(out, "rates.png"), [m["iteration"] for m in metrics], {
        "raw policy, value-preserving (all 4,520 positions)": [m["score_policy_value_preserving"] for m in metrics],
        f"MCTS {args.simulations}, value-preserving (sample of {args.eval_sample})":
            [m["score_mcts_value_preserving"] for m in metrics],
    }, "iteration", "rate", "Tic-Tac-Toe: moves against the exact values")
    losses_plot(os.path.join(out, "losses.png"), metrics)
    score_rows = move_score_rows(scores)
    write_csv(os.path.join(out, "scores.csv"), score_rows)
    write_csv(os.path.join(out, "matches.csv"), [m.row() for m in matches])
    first_full = next((m["iteration"] for m in metrics if m["score_policy_value_preserving"] == 1.0), None)
    text = f"""# AlphaZero on Tic-Tac-Toe (PettingZoo `tictactoe_v3`)

{len(metrics)} iterations of {config.selfplay.games_per_iteration} self-play games ({config.search.simulations} simulations a
move, {config.selfplay.random_start_fraction:.0%} of games after 1-{config.selfplay.random_start_plies} random moves), a
{config.network.blocks}-block, {config.network.channels}-channel residual network. Judged by our exhaustive minimax (all 5,478
positions reachable from the empty board, solved in {solve_seconds:.2f} s) on **every** one of the
{scores["raw policy"]["positions"]:,} positions where the game goes on; target for the raw policy and the search:
value-preserving 1.0.

{move_score_table(score_rows, sides=False)}

The raw policy first kept the value on every position at iteration {first_full if first_full else "- (never)"}.
The value head's sign (|v| < 0.5 read as a draw) matches the true value on {value_match:.4f} of the positions.

Time: solving {solve_seconds:.1f} s, training {metrics[-1]["elapsed_s"] / 60:.1f} min
({selfplay_text(metrics, config.scale.workers, config.scale.overlap)}), final evaluation and matches
{final_seconds / 60:.1f} min, whole run {wall_seconds / 60:.1f} min (target: 5 min; a resumed run counts only its
own part). {measured_on}

## By player to move

Blunders count positions: a won position where the move only draws (win->draw) or loses (win->loss), and a
drawn one where it loses (draw->loss).

{move_score_table(score_rows)}

## Matches ({args.match_games} games per colour)

Against perfect play the best result is a draw in every game; against a random player, never a loss.

{match_table(matches)}

Plots: `rates.png`, `losses.png`; per iteration: `metrics.csv`; final scores: `scores.csv`, `matches.csv`.

"""
    write_alphazero_report(out, text, config, agent_path, args.simulations)


if __name__ == "__main__":
    torch.set_num_threads(2)
    sys.exit(main())
