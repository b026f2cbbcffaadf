"""AlphaZero learns Tic-Tac-Toe (PettingZoo ``tictactoe_v3``) by self-play, judged on every position.

    python experiments/alphazero_tictactoe.py              # about 3 minutes of one CPU core
    python experiments/alphazero_tictactoe.py --resume     # continue an interrupted run

Our own exhaustive minimax solves all 5,478 positions reachable from the empty
board; every agent's move is scored on each of the 4,520 where the game goes on
(value-preserving: a won position stays won, a drawn one drawn). The solver is
used only to judge. Writes runs/alphazero_tictactoe/: report.md, metrics.csv,
scores.csv, matches.csv, *.png, checkpoint/, tensorboard/ and agent/
(``agents.load("runs/alphazero_tictactoe/agent")``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads sleep (shared 2-core machines)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from agents.alphazero.agent import AlphaZeroAgent  # noqa: E402
from agents.alphazero.train import Config, train, with_changes, write_agent  # noqa: E402
from agents.alphazero.search import SearchConfig  # noqa: E402
from agents.arena import play_match  # noqa: E402
from agents.arena.evaluation import score_moves  # noqa: E402
from agents.games.tictactoe import TicTacToeSolver, solve_tictactoe  # noqa: E402
from agents.players.random_agent import RandomAgent  # noqa: E402
from agents.reports import line_plot, markdown_table  # noqa: E402
from agents.runs import machine, machine_text, write_csv  # noqa: E402
from minichess_envs.players import choose_actions  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/alphazero_tictactoe")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--games", type=int, default=128, help="self-play games per iteration")
    parser.add_argument("--simulations", type=int, default=32, help="simulations per move (self-play and judged)")
    parser.add_argument("--policy-target-power", type=float, default=2.0,
                        help="policy targets in proportion to visits ** this (above 1: sharper)")
    parser.add_argument("--eval-sample", type=int, default=200, help="positions searched each iteration")
    parser.add_argument("--match-games", type=int, default=50, help="games per colour in each match")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--workers", type=int, default=0,
                        help="self-play worker processes, one per core (0: self-play in this process)")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)

    started = machine()
    start = time.perf_counter()
    table = solve_tictactoe()
    positions = table.non_terminal()
    assert len(table.values) == 5478 and len(positions) == 4520, "Tic-Tac-Toe has 5,478 reachable positions"
    move_values = [table.move_values(g) for g in positions]
    solve_seconds = time.perf_counter() - start
    print(f"solved {len(table.values):,} positions ({len(positions):,} non-terminal) in {solve_seconds:.2f} s",
          flush=True)

    config = with_changes(Config(),
        game="tictactoe", run_dir=args.out, seed=args.seed, iterations=args.iterations, games_per_iteration=args.games,
        temperature_plies=4, random_start_fraction=0.75, random_start_plies=7,
        search=SearchConfig(simulations=args.simulations, leaves_per_tree=4, c_puct=1.5, discount=0.99,
                            dirichlet_alpha=1.0),
        blocks=2, channels=32, policy_channels=8, buffer_size=100_000, batch_size=128, sample_reuse=6.0,
        learning_rate=3e-3, final_learning_rate=3e-5, all_symmetries=True,
        policy_target_power=args.policy_target_power, threads=args.threads, workers=args.workers)
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
    train_seconds = state["metrics"][-1]["elapsed_s"]

    print("final evaluation on every position and matches ...", flush=True)
    t0 = time.perf_counter()
    agent_path = write_agent(args.out, state, simulations=args.simulations)
    raw = AlphaZeroAgent.from_checkpoint(state, simulations=0, name="raw policy")
    mcts = AlphaZeroAgent.from_checkpoint(state, simulations=args.simulations,
                                                   name=f"MCTS {args.simulations}")
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
    write_report(args, config, state, scores, value_match, matches, solve_seconds, train_seconds, final_seconds,
                 time.perf_counter() - start, agent_path, machine_text(started))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def write_report(args, config, state, scores, value_match, matches, solve_seconds, train_seconds, final_seconds,
                 wall_seconds, agent_path, measured_on: str) -> None:
    metrics, out = state["metrics"], args.out
    iters = [m["iteration"] for m in metrics]
    line_plot(os.path.join(out, "rates.png"), iters, {
        "raw policy, value-preserving (all 4,520 positions)": [m["score_policy_value_preserving"] for m in metrics],
        f"MCTS {args.simulations}, value-preserving (sample of {args.eval_sample})":
            [m["score_mcts_value_preserving"] for m in metrics],
    }, "iteration", "rate", "Tic-Tac-Toe: moves against the exact values")
    line_plot(os.path.join(out, "losses.png"), iters,
              {"policy loss": [m["policy_loss"] for m in metrics], "value loss": [m["value_loss"] for m in metrics]},
              "iteration", "loss", "training losses")
    score_rows, table_rows = [], []
    for label, s in scores.items():
        for side in ("all", "first player to move", "second player to move"):
            r = s if side == "all" else s[side]
            score_rows.append({"player": label, "to move": side, **{k: v for k, v in r.items()
                                                                  if not isinstance(v, dict)}})
            table_rows.append([label, side, f"{r['positions']:,}", f"{r['value_preserving']:.4f}", r["win->draw"],
                               r["win->loss"], r["draw->loss"]])
    write_csv(os.path.join(out, "scores.csv"), score_rows)
    write_csv(os.path.join(out, "matches.csv"), [m.row() for m in matches])
    match_rows = [[m.a, m.b, m.seats, "{0.wins}-{0.draws}-{0.losses}".format(m.tally()),
                   "[{:.3f}, {:.3f}]".format(*m.tally().rate_interval("not_lost"))] for m in matches]
    raw_all, mcts_all = scores["raw policy"], scores[f"MCTS {args.simulations}"]
    rand_all = scores["baseline: random"]
    selfplay = sum(m["selfplay_s"] for m in metrics)
    first_full = next((m["iteration"] for m in metrics if m["score_policy_value_preserving"] == 1.0), None)
    text = f"""# AlphaZero on Tic-Tac-Toe (PettingZoo `tictactoe_v3`)

{len(metrics)} iterations of {config.selfplay.games_per_iteration} self-play games ({config.search.simulations} simulations a
move, {config.selfplay.random_start_fraction:.0%} of games after 1-{config.selfplay.random_start_plies} random moves), a
{config.network.blocks}-block, {config.network.channels}-channel residual network, the batched tree search
(`agents/alphazero/search.py`) over the board adapter of the PettingZoo game. Judged by our exhaustive
minimax (all 5,478 positions reachable from the empty board, solved in {solve_seconds:.2f} s) on
**every** one of the {raw_all['positions']:,} positions where the game goes on.

| | value-preserving | win->draw | win->loss | draw->loss | target |
|---|---|---|---|---|---|
| raw policy (argmax, no search) | **{raw_all['value_preserving']:.4f}** | {raw_all['win->draw']} | {raw_all['win->loss']} | {raw_all['draw->loss']} | 1.0 |
| MCTS, {args.simulations} simulations | **{mcts_all['value_preserving']:.4f}** | {mcts_all['win->draw']} | {mcts_all['win->loss']} | {mcts_all['draw->loss']} | 1.0 |
| baseline: uniformly random move | {rand_all['value_preserving']:.4f} | {rand_all['win->draw']} | {rand_all['win->loss']} | {rand_all['draw->loss']} | |

The raw policy first kept the value on every position at iteration {first_full if first_full else "- (never)"}.
The value head's sign (|v| < 0.5 read as a draw) matches the true value on {value_match:.4f} of the positions.

Time: solving {solve_seconds:.1f} s, training {train_seconds / 60:.1f} min (self-play {selfplay / 60:.1f} min),
final evaluation and matches {final_seconds / 60:.1f} min, whole run {wall_seconds / 60:.1f} min (target: 5 min;
a resumed run counts only its own part). {measured_on}

## By player to move

Blunders count positions: a won position where the move only draws (win->draw) or loses (win->loss), and a
drawn one where it loses (draw->loss).

{markdown_table(["player", "to move", "positions", "value-preserving", "win->draw", "win->loss", "draw->loss"],
                table_rows)}

## Matches ({args.match_games} games per colour)

Against perfect play the best result is a draw in every game; against a random player, never a loss.

{markdown_table(["player", "opponent", "player moves", "W-D-L", "not lost, 95% Wilson"], match_rows)}

Plots: `rates.png`, `losses.png`; per iteration: `metrics.csv`; final scores: `scores.csv`, `matches.csv`.

## Settings

```
{chr(10).join(f"{k} = {v}" for k, v in dataclasses.asdict(config).items())}
```

The trained agent: `agents.load("{agent_path}")` (MCTS with {args.simulations} simulations; pass
`simulations=0` to `AlphaZeroAgent.load` for the raw policy). It plays from PettingZoo's observation:
`agent.act(obs["observation"], obs["action_mask"])`.
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    torch.set_num_threads(2)
    sys.exit(main())
