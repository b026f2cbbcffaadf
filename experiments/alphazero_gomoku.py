"""AlphaZero learns Gomoku (freestyle): on 9x9 with five in a row, by self-play with alpha-beta depth 2 as sparring
partner in half the games, judged by alpha-beta and OpenSpiel's MCTS bot; on 4x4 with four in a row, by self-play
alone, judged by an exact solver; and the seed report's input-plane study. The judged agent searches with Gumbel
AlphaZero's root (``ROOT``), self-play with PUCT's.

    python experiments/alphazero_gomoku.py                   # 9x9, five in a row (~30 minutes on 2 idle CPU cores)
    python experiments/alphazero_gomoku.py --preset small    # 4x4, four in a row, judged by the exact solver
    python experiments/alphazero_gomoku.py --preset study    # the input planes: history 1, 2, 3 at equal compute
    python experiments/alphazero_gomoku.py --resume          # continue an interrupted run
    python -m experiments.alphazero_gomoku --preset quick    # a smoke test, as a module from the repository root

Observation ``history`` (agents.games.gomoku.Gomoku): 1, the seed's three planes (the mover's stones, the
opponent's, 1 everywhere if the mover moved first); 2, also the last move; 3, also the move before it. On 9x9 the
network also sees where a stone makes five or fours (``threats``); the study and the solved board show the seed's
planes only. The study trains one agent of each history with the same settings and seed, then plays them against
each other, both colours.
Writes runs/alphazero_gomoku*/: report.md, metrics.csv, matches.csv (scores.csv on a solved board), agent/.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from agents.runs import Progress, command_line, machine, machine_text, write_csv  # first: the OpenMP setting

import torch
import tyro

from agents.alphazero.agent import AlphaZeroAgent
from agents.alphazero.search import SearchConfig
from agents.alphazero.train import Config, train, with_changes, write_agent
from agents.arena import play_match
from agents.arena.evaluation import score_moves
from agents.games import new_game
from agents.games.gomoku import MATCH_OPENING_PLIES, GomokuAlphaBeta, GomokuSolver, judged_sample
from agents.players.openspiel_mcts import OpenSpielMCTS
from agents.players.random_agent import RandomAgent
from agents.reports import match_table, move_score_rows, move_score_table, selfplay_text, settings_text
from minichess_envs.players import choose_actions

Hidden = tyro.conf.Suppress  # not a flag: fixed here, changed by a preset


@dataclasses.dataclass
class Options:
    """AlphaZero learns Gomoku by self-play (see the module's docstring)."""

    out: str = "runs/alphazero_gomoku"  # the run directory (the study: one subdirectory per history)
    board: str = "gomoku"  # gomoku (9x9, five), gomoku4k4 (solved exactly), any gomoku<size>[k<length>]
    history: int = 2  # observation planes: 1 the seed's three, 2 + the last move, 3 + the move before
    study: bool = False  # train history 1, 2 and 3 at equal compute and play them against each other
    iterations: int = 200  # more than fit: the 21-minute budget ends the default run
    # stop training after this long (None: after the iterations; the study: None); 21, not 24, leaves the judged
    # search at 800 simulations inside the run's 30 minutes
    minutes: float | None = 21.0
    # per move of the judged MCTS agent: with three default networks 800 won 84, 83 and 90 of 100 opened games moving
    # first against depth 2, 200 won 70, 77 and 79; 1,600 no more than 800 (docs/results/boardgames.md)
    eval_simulations: int = 800
    seed: int = 0
    workers: int = 2  # self-play and match worker processes, one per core (0: all in this process)
    resume: bool = False  # continue an interrupted run
    # fixed here, changed by a preset
    games: Hidden[int] = 96  # self-play games per iteration
    simulations: Hidden[int] = 48  # per self-play move
    match_games: Hidden[int] = 50  # games per colour against alpha-beta depth 2 (and each study pairing)
    bot_games: Hidden[int] = 10  # games per colour against OpenSpiel's MCTS bot
    bot_simulations: Hidden[int] = 1000
    sample: Hidden[int] = 500  # solver-judged positions (a solved board)
    opening_plies: Hidden[int] = MATCH_OPENING_PLIES  # random plies opening every match's games
    # alpha-beta depth 2 (the judge) plays one seat in half the self-play games, its moves samples too: without it
    # self-play collapses into first-player wins and the agent never learns to defend (docs/decisions.md)
    sparring: Hidden[str | None] = "alpha-beta:2"
    sparring_fraction: Hidden[float] = 0.5
    # also planes of where a stone makes five or fours (Gomoku.threat_planes): 65 against 37 and 41 wins of the same
    # 100 opened games moving first against depth 2 at the same budget (docs/results/boardgames.md)
    threats: Hidden[bool] = True


PRESETS = {
    "quick": dict(iterations=2, minutes=None, games=8, simulations=8, eval_simulations=8, match_games=2, bot_games=1,
                  bot_simulations=20, sample=40, board="gomoku7k4"),
    # pure self-play: the solved board needs no partner, and the study compares the seed's planes under its method
    "small": dict(board="gomoku4k4", out="runs/alphazero_gomoku4k4", iterations=15, minutes=None, games=128,
                  simulations=32, eval_simulations=200, match_games=20, sparring=None, sparring_fraction=0.0,
                  threats=False),
    "study": dict(study=True, out="runs/alphazero_gomoku_study", iterations=12, minutes=None, eval_simulations=200,
                  match_games=20, bot_games=0, sparring=None, sparring_fraction=0.0, threats=False),
}
# The judged search's root (play time only; self-play keeps PUCT): Gumbel AlphaZero's won 84 and 86 of the same 100
# opened games moving first against depth 2 with the default's two networks, where PUCT won 74 and 65
# (docs/results/boardgames.md)
ROOT = "gumbel"
DEPTH = 2  # the alpha-beta judge's depth
SOLVED = 4  # boards up to this size are judged by the exact solver


def settings(args: Options, history: int, out: str) -> Config:
    """A 3x48 network seeing ``history`` (and the threat planes where ``threats``); games in all eight symmetric
    images; a quarter of the games after 1-4 random moves; value targets half result and half root value; one torch
    thread, two self-play workers."""
    return with_changes(
        Config(), game=args.board, run_dir=out, seed=args.seed, iterations=args.iterations,
        hours=None if args.minutes is None else args.minutes / 60, games_per_iteration=args.games,
        temperature_plies=6, random_start_fraction=0.25, random_start_plies=4, history=history, threats=args.threats,
        search=SearchConfig(simulations=args.simulations, leaves_per_tree=4, c_puct=1.5, discount=0.99,
                            dirichlet_alpha=0.3),
        blocks=3, channels=48, policy_channels=8, buffer_size=100_000, batch_size=256, all_symmetries=True,
        sample_reuse=4.0, value_target_q=0.5, learning_rate=2e-3, final_learning_rate=2e-4, threads=1,
        workers=args.workers, overlap=args.workers > 0, sparring=args.sparring,
        sparring_fraction=args.sparring_fraction)


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    started, start = machine(), time.perf_counter()
    size = new_game(args.board).height
    positions = move_values = None
    if size <= SOLVED:
        with Progress(args.sample, "solver values of the sample", unit="position") as bar:
            positions, move_values = judged_sample(type(new_game(args.board)), args.sample, args.seed, 0.5, bar.update)

    def evaluate(net, iteration):
        if positions is None:
            return {}
        agent = AlphaZeroAgent(net, args.board, config.network.history, simulations=0, threats=config.network.threats)
        return {"score_policy_value_preserving":
                score_moves(positions, choose_actions(agent, positions, batch=512), move_values)["value_preserving"]}

    histories = (1, 2, 3) if args.study else (args.history,)
    agents, configs, states = {}, {}, {}
    for history in histories:
        out = os.path.join(args.out, f"history{history}") if args.study else args.out
        config = configs[history] = settings(args, history, out)
        states[history] = state = train(config, evaluate=evaluate, resume=args.resume)
        write_agent(out, state, simulations=args.eval_simulations, root=ROOT)
        agents[history] = AlphaZeroAgent.from_checkpoint(state, args.eval_simulations, name=f"history {history}",
                                                         root=ROOT)
    t0 = time.perf_counter()
    scores, matches = {}, []

    def match(a, b, games, label_a, label_b, seats):
        with Progress(games, f"{label_a} vs {label_b}, moving {seats}", unit="game") as bar:
            matches.append(play_match(a, b, args.board, games, seed=args.seed, seats=seats, names=(label_a, label_b),
                                      opening_plies=args.opening_plies, workers=max(args.workers, 1),
                                      progress=lambda record, done, total: bar.update(done)))

    if args.study:
        for a, b in ((1, 2), (1, 3), (2, 3)):
            for seats in ("first", "second"):
                match(agents[a], agents[b], args.match_games, f"history {a}", f"history {b}", seats)
    else:
        mcts, raw = agents[args.history], AlphaZeroAgent.from_checkpoint(state, 0, name="raw policy")
        mcts.name = f"MCTS {args.eval_simulations}, {ROOT} root"
        if positions is not None:
            for label, player in ((mcts.name, mcts), ("raw policy", raw), ("baseline: random", RandomAgent(args.seed))):
                scores[label] = score_moves(positions, choose_actions(player, positions, batch=128), move_values)
        opponents = [(f"alpha-beta depth {DEPTH}", GomokuAlphaBeta(DEPTH, args.seed + 1), args.match_games),
                     (f"OpenSpiel MCTS {args.bot_simulations}",
                      OpenSpielMCTS(args.bot_simulations, seed=args.seed + 2), args.bot_games)]
        for label, other, games in opponents:
            for seats in ("first", "second"):
                if games:
                    match(mcts, other, games, mcts.name, label, seats)
    write_csv(os.path.join(args.out, "matches.csv"), [m.row() for m in matches])
    write_report(args, configs, states, scores, matches, time.perf_counter() - t0, time.perf_counter() - start,
                 machine_text(started), positions)
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def write_report(args, configs, states, scores, matches, final_seconds, wall_seconds, measured_on, positions) -> None:
    parts = []
    for history, state in states.items():
        metrics, config = state["metrics"], configs[history]
        parts.append(f"- history {history} ({2 + history} planes): {len(metrics)} iterations of "
                     f"{config.selfplay.games_per_iteration} games, {config.search.simulations} simulations a move, "
                     f"training {metrics[-1]['elapsed_s'] / 60:.1f} min "
                     f"({selfplay_text(metrics, config.scale.workers, config.scale.overlap)}).")
    text = f"# AlphaZero on Gomoku: `{args.board}`{' (the input-plane study)' if args.study else ''}\n\n"
    text += "\n".join(parts) + "\n\n"
    if scores:
        rows = move_score_rows(scores)
        write_csv(os.path.join(args.out, "scores.csv"), rows)
        text += (f"Judged by the exact solver on {len(positions)} positions from alpha-beta games with half the moves "
                 f"random (target for the MCTS agent: value-preserving >= 0.95):\n\n"
                 f"{move_score_table(rows, sides=False)}\n\n")
    if args.study:
        text += ("Head to head at equal compute (same settings, seed and iterations), "
                 f"MCTS {args.eval_simulations} ({ROOT} root) each, every pairing with both colours. The seed "
                 "report saw the last-move planes help.\n\n")
    elif scores:
        value = GomokuSolver(type(new_game(args.board))).value(0, 0)
        text += (f"With perfect play this board is {['lost', 'a draw', 'won'][value + 1]} for the first player (the "
                 "solver's value of the empty board).\n\n")
    else:
        judged = next((m for m in matches if m.b.startswith("alpha") and m.seats == "first"), None)
        if judged is not None:
            first = judged.tally()
            low, high = first.rate_interval("wins")
            text += (f"Moving first against alpha-beta depth {DEPTH} (after the random opening plies below), "
                     f"{judged.a} won "
                     f"{first.wins} of {first.games} games ({first.wins / first.games:.3f}, 95% Wilson [{low:.3f}, "
                     f"{high:.3f}]; target >= 0.90). Target against OpenSpiel's MCTS bot at {args.bot_simulations} "
                     "simulations: a score >= 0.5.\n\n")
    text += f"""## Matches

Every game opens with {args.opening_plies} random plies, the same ones with each colour: the searches are nearly
deterministic, so that from the empty board a match repeats a few games (distinct: how many games differ).

{match_table(matches)}

Final matches and scoring {final_seconds / 60:.1f} min, whole run {wall_seconds / 60:.1f} min (a resumed run counts
only its own part). {measured_on}

## Settings

```
{settings_text(next(iter(configs.values())))}
```
"""
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    torch.set_num_threads(2)
    sys.exit(main())
