"""The built-in PPO on Tic-Tac-Toe, Connect Four (PettingZoo), Gomoku (9x9) and checkers, against the random player
or in self-play.

    python experiments/ppo_boardgames.py                              # Tic-Tac-Toe against random: ~2 min, 2 cores
    python experiments/ppo_boardgames.py --opponent self              # in self-play
    python experiments/ppo_boardgames.py --game connect_four --minutes 10
    python experiments/ppo_boardgames.py --game checkers             # ~17 min, 2 cores
    python experiments/ppo_boardgames.py --game gomoku               # 9x9, five in a row: ~17 min, 2 cores
    python experiments/ppo_boardgames.py --resume                     # continue an interrupted run

One network plays both seats (drawn per game); ``--opponent self`` trains against a pool of its past
selves (``agents.ppo.boardgame_env.OpponentPool``) with 20% of the games against the random player.
The algorithm, checkpoints, resume, metrics, TensorBoard and the saved agent are the chess PPO's
(``agents/ppo/native.py``, ``agents.runs``, ``PPOAgent``); the env, the linear policy head and the
evaluation are the game's task (``agents/ppo/task.py``'s ``BoardGameTask``).

Judged at the end: Tic-Tac-Toe by our exhaustive minimax on every one of the 4,520 positions where the
game goes on (value-preserving: the move keeps a win a win and a draw a draw), Connect Four by the
perfect solver bitbully on the AlphaZero experiment's seeded sample of ``--games`` positions (extra
``[games]``; without it the sample is skipped with a note); every game by ``--games`` games per seat
against the random player, and Connect Four, Gomoku and checkers by a fifth as many per seat against
alpha-beta depth 2 (``agents.games.connect_four``, ``agents.games.gomoku``, ``agents.games.checkers``), each
beside the random player's own result in the same games. Writes
``runs/ppo_<game>_<opponent>/``: report.md, metrics.csv, scores.csv, matches.csv, win_rates.png,
checkpoint/, tensorboard/ and agent/ (``agents.load(".../agent")``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Literal

from agents.runs import command_line, machine, machine_text, write_csv  # first: the OpenMP setting, before torch

from agents.ppo.common import PPOSettings, learning_curve
from agents.ppo.common import train
from agents.ppo.task import BoardGameTask
from agents.reports import curves_plot, markdown_table


@dataclasses.dataclass
class Options:
    """The built-in PPO on Tic-Tac-Toe, Connect Four, Gomoku and checkers, against random or in self-play."""

    game: Literal["tictactoe", "connect_four", "gomoku", "checkers"] = "tictactoe"
    opponent: Literal["random", "self"] = "random"  # self: a pool of its past selves, 20% of games against random
    out: str | None = None  # the run directory (default: runs/ppo_<game>_<opponent>)
    steps: int | None = None  # env steps (learner moves); default: the game's, in GAME_DEFAULTS
    minutes: float | None = None  # wall-clock limit, whichever comes first; default: the game's, in GAME_DEFAULTS
    games: int = 500  # final games per seat against random (Connect Four: as many judged positions; a fifth vs depth 2)
    resume: bool = False  # continue an interrupted run


PRESETS = {"quick": dict(steps=512, games=10)}  # a smoke test: one iteration

#: Per game: the budget (env steps and minutes, whichever comes first) and PPO's settings. The rewards
#: come only at the end of short games, so gamma is near 1, unlike chess's material-shaped 0.3.
GAME_DEFAULTS = {
    "tictactoe": dict(steps=300_000, minutes=5.0, lr=1e-3, train_batch=2048, num_envs=64, minibatch=256,
                      epochs=4, channels=32, conv_layers=2, value_hidden=64),
    "connect_four": dict(steps=2_000_000, minutes=15.0, lr=5e-4, train_batch=4096, num_envs=64, minibatch=512,
                         epochs=4, channels=48, conv_layers=3, value_hidden=128),
    "gomoku": dict(steps=2_000_000, minutes=15.0, lr=5e-4, train_batch=4096, num_envs=64, minibatch=512,
                   epochs=4, channels=48, conv_layers=3, value_hidden=128),
    "checkers": dict(steps=2_000_000, minutes=15.0, lr=5e-4, train_batch=4096, num_envs=64, minibatch=512,
                     epochs=4, channels=48, conv_layers=3, value_hidden=128),
}
SEED = 0


def settings(args: Options) -> PPOSettings:
    """The run's PPO settings: the game's from GAME_DEFAULTS, gamma 0.99, lambda 0.95, entropy 0.01."""
    d = {k: v for k, v in GAME_DEFAULTS[args.game].items() if k not in ("steps", "minutes")}
    return PPOSettings(game=args.game, agent_color="random", gamma=0.99, lambda_=0.95, entropy_coeff=0.01, seed=SEED,
                       threads=1, selfplay=args.opponent == "self", selfplay_random=0.2, pool_every=5, **d)


def evaluation_sizes(args: Options) -> dict:
    """Games and positions of the final evaluation (and the seed of its sample and players)."""
    return {"final_games": args.games, "match_games": args.games // 5, "sample": args.games, "seed": SEED}


def run_dir(args: Options) -> str:
    return args.out or f"runs/ppo_{args.game}_{args.opponent}"


def main(argv=None) -> int:
    import torch

    from agents import load
    from agents.arena import play_match
    from agents.arena.evaluation import score_moves
    from agents.games.checkers import CheckersAlphaBeta
    from agents.games.connect_four import ConnectFourAlphaBeta, judged_sample
    from agents.games.gomoku import GomokuAlphaBeta
    from agents.games.tictactoe import solve_tictactoe
    from agents.players.random_agent import RandomAgent
    from minichess_envs.players import choose_actions

    args = command_line(Options(), PRESETS, argv)
    if (args.steps is not None and args.steps < 1) or (args.minutes is not None and args.minutes <= 0) \
            or args.games < 1:
        raise SystemExit("error: --steps, --minutes and --games must be positive")
    out, sizes, s = run_dir(args), evaluation_sizes(args), settings(args)
    torch.set_num_threads(1)
    measured, started = machine(), time.perf_counter()
    state = train(s, out, env_steps=args.steps or GAME_DEFAULTS[args.game]["steps"],
                  minutes=args.minutes or GAME_DEFAULTS[args.game]["minutes"], eval_games=min(200, args.games),
                  eval_every=5, resume=args.resume, desc=f"ppo {args.game} vs {args.opponent}")

    print("final evaluation ...", flush=True)
    t = time.perf_counter()
    players = {"PPO": load(os.path.join(out, "agent")), "baseline: random": RandomAgent(SEED + 2)}
    positions, move_values = [], []
    if args.game == "tictactoe":
        table = solve_tictactoe()
        positions = table.non_terminal()
        move_values = [table.move_values(g) for g in positions]
    elif args.game == "connect_four":
        try:
            positions, move_values = judged_sample(sizes["sample"], SEED)
        except ImportError as exc:  # the solver is an optional extra: the matches still run
            print(f"note: no solver-judged sample: {exc}", flush=True)
    scores = {label: score_moves(positions, choose_actions(choose, positions, batch=1024), move_values)
              for label, choose in players.items()} if positions else {}
    opponents = {"random": (lambda: RandomAgent(SEED + 1), sizes["final_games"])}
    alpha_beta = {"connect_four": ConnectFourAlphaBeta, "gomoku": GomokuAlphaBeta,
                  "checkers": CheckersAlphaBeta}.get(args.game)
    if alpha_beta is not None:
        opponents["alpha-beta depth 2"] = (lambda: alpha_beta(2, SEED + 1), sizes["match_games"])
    matches = [play_match(choose, make_opponent(), args.game, games, seats=seats, names=(label, name))
               for name, (make_opponent, games) in opponents.items()
               for label, choose in players.items() for seats in ("first", "second")]
    final_s = time.perf_counter() - t
    write_report(args, out, s, state, scores, matches, final_s, time.perf_counter() - started, machine_text(measured))
    print(open(os.path.join(out, "report.md")).read())
    return 0


def write_report(args, out, settings, state, scores, matches, final_s, wall_s, measured_on: str) -> None:
    metrics, train_s = state.metrics, state.elapsed_s
    curves = {f"{seat} vs random": learning_curve(metrics, seat)[::2] for seat in ("first", "second")}
    curves_plot(os.path.join(out, "win_rates.png"), curves, "env steps (learner moves)", "win rate",
                f"PPO on {args.game} ({args.opponent}): greedy policy against random, {min(200, args.games)} games "
                "a seat")
    write_csv(os.path.join(out, "matches.csv"), [m.row() for m in matches])
    match_rows = [[m.a, m.b, m.seats, f"{t.wins}-{t.draws}-{t.losses}",
                   "**{:.3f}** [{:.3f}, {:.3f}]".format(t.wins / t.games, *t.rate_interval("wins")),
                   "{:.3f} [{:.3f}, {:.3f}]".format(1 - t.losses / t.games, *t.rate_interval("not_lost"))]
                  for m in matches for t in [m.tally()]]
    score_text = ""
    if scores:
        rows, table = [], []
        for label, s in scores.items():
            for side in ("all", "first player to move", "second player to move"):
                r = s if side == "all" else s[side]
                counts = {k: v for k, v in r.items() if not isinstance(v, dict)}
                rows.append({"player": label, "to move": side, **counts})
                table.append([label, side, f"{r['positions']:,}", f"**{r['value_preserving']:.4f}**",
                              r["win->draw"], r["win->loss"], r["draw->loss"]])
        write_csv(os.path.join(out, "scores.csv"), rows)
        if args.game == "tictactoe":
            title, judged = ("Every position (exhaustive minimax)", "Each of the 4,520 positions where the game "
                             "goes on, the greedy policy's move against the solved values")
        else:
            title, judged = ("Solver-judged positions", f"The greedy policy's move in each of a seeded sample of "
                             f"{args.games} positions from real games (seed {SEED}: the sample "
                             "`experiments/alphazero_connect4.py` judges), against the perfect solver "
                             "bitbully's values")
        score_text = f"""## {title}

{judged} (value-preserving: a win stays a win, a draw a draw).

{markdown_table(["player", "to move", "positions", "value-preserving", "win->draw", "win->loss", "draw->loss"], table)}

"""
    opponent = ("the random player" if args.opponent == "random" else
                f"a pool of its past selves (a snapshot every {settings.pool_every} iterations, the newest "
                f"{settings.pool_size}, drawn with a recency bias), {settings.selfplay_random:.0%} of games against "
                "random")
    last = metrics[-1]
    text = f"""# The built-in PPO on {args.game} against {args.opponent}

{state.iteration} iterations, {state.env_steps:,} env steps (learner moves) against {opponent}; one network
for both seats (drawn per game), a {settings.conv_layers}-layer {settings.channels}-channel conv trunk with a
linear policy head. The final greedy policy (its most probable legal move) is judged below.

{score_text}## Matches

W-D-L from the named player's side; win rate and not-lost rate with 95% Wilson intervals. The random
player's rows are the baseline in the same games.

{markdown_table(["player", "opponent", "player moves", "W-D-L", "win rate", "not lost"], match_rows)}

At the last iteration: training win rate {last['train_win_rate']:.3f}, entropy {last['entropy']:.3f},
value explained variance {last['vf_explained_var']:.3f}. Learning curve: `win_rates.png`; per iteration:
`metrics.csv`; final numbers: `matches.csv`{", `scores.csv`" if scores else ""}.

Time: training {train_s / 60:.1f} min ({state.env_steps / max(train_s, 1e-9):,.0f} env steps/s, learning-curve
games included), final evaluation {final_s:.0f} s, this invocation {wall_s / 60:.1f} min (a resumed run's training
time counts every part). {measured_on}

## Settings

```
{chr(10).join(f"{k} = {v}" for k, v in dataclasses.asdict(settings).items() if k not in BoardGameTask.unread_settings)}
```

The trained agent: `agents.load("{os.path.join(out, 'agent')}")`; in PettingZoo's env
`agent.act(obs["observation"], obs["action_mask"])`, on `agents.games` games `agent(games)`.
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as exc:  # bad settings or a run directory in the way: say which, without a traceback
        sys.exit(f"error: {exc}")
