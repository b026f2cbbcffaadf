"""PPO with GAE on Gardner minichess: the built-in PPO, RLlib or stable-baselines3; king capture and checkmate.

    python experiments/ppo_gardner.py                          # built-in PPO, both rule sets: <= 30 min on 2 cores
    python experiments/ppo_gardner.py --resume                 # continue an interrupted run
    python experiments/ppo_gardner.py --backend rllib          # Alpha-Mini in RLlib: 4 policies
    python experiments/ppo_gardner.py --backend sb3            # sb3-contrib MaskablePPO
    python experiments/ppo_gardner.py --rules checkmate --steps 400000 --minutes 10
    python experiments/ppo_gardner.py --preset alpha-mini      # the Alpha-Mini procedure (Alpha-Mini's figure 3)
    python experiments/ppo_gardner.py --preset sweep           # gamma x lambda grid of Alpha-Mini's table 1 (Ray Tune)
    python experiments/ppo_gardner.py --preset sweep --ray-address HEAD:6379   # its trials on a Ray cluster
    python experiments/ppo_gardner.py --backend rllib --env-runners 8 --ray-address HEAD:6379   # RLlib's runners there
    python -m experiments.ppo_gardner --preset quick           # a smoke test, as a module from the repository root

The built-in backend needs only torch (``".[agents]"``); ``--backend rllib`` needs ``".[rllib]"``,
``--backend sb3`` ``".[sb3]"``, the sweep Ray Tune (``".[rllib]"``).

Three experiments (``--experiment``):

* ``vs-random`` (the default): policies trained against the random player, then judged. The built-in
  PPO trains one network per rule set playing both colors (the color drawn per game), with material
  shaping (outcome +-1, plus the change of material lead times ``material_scale``):
  king capture (``MiniChess-GardnerKingCapture-v0``) in Alpha-Mini's setting (gamma 0.3, lambda 1.0, a
  pawn worth 1/600); target >= 97% as White over 1,000 games (Alpha-Mini: 96.6%); checkmate
  (``MiniChess-Gardner-v0``) with gamma 0.9, lambda 0.95 (a mate takes several moves to set up), a pawn
  worth 0.01, a rule draw -0.5, lr 1e-3, 64 games, 8192-step batches, 2 epochs of 512-sample minibatches
  (the best of the settings tried in 5-minute runs: docs/results/ppo.md); target >= 90% wins against
  random with both colors. RLlib and SB3 train Alpha-Mini's four policies (each color separately,
  PPOSettings' defaults) for 250,000 env steps. Every policy then plays ``--games`` games per color and rule
  set against the random player (``agents.arena.evaluation.versus_random``, seed 0, argmax over legal
  moves), a fifth as many against greedy capture and minimax depth 2, and the baselines (random,
  greedy, minimax depth 1 and 2) play the same protocol. Learning curves: a fifth of ``--games`` per color
  every 10 iterations (built in) or every iteration (RLlib, SB3), seed 10000.
* ``alpha-mini``: Alpha-Mini's iterative self-play procedure (``agents.ppo.rllib_train.alpha_mini``):
  8 steps of 40,000 env steps per color (``--steps``), opponents playing a random move half the time,
  half of ``--games`` against random after each step. Writes selfplay/.
* ``sweep``: Alpha-Mini's gamma x lambda table with Ray Tune (``agents.ppo.rllib_train.run_sweep``), 60,000
  env steps per point (``--steps``), one trial per CPU of the Ray cluster (on one machine: its cores); with
  ``--ray-address`` on that cluster, ``--out`` on storage every node shares. Writes sweep/.

Writes under ``--out``: one directory per policy (``<backend>_<rules>_<color>/``: checkpoint/, agent/,
metrics.csv, tensorboard/), report.md, results.csv, matches.csv, baselines.csv, win_rate_vs_steps.png,
win_rate_vs_time.png. Load a policy with ``agents.load(".../agent")``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Literal

from agents.runs import (  # first: the OpenMP setting, before torch
    command_line, machine, machine_text, training_seconds, write_csv)

from agents.arena.evaluation import baselines, versus_random
from agents.ppo.common import PPOSettings, learning_curve, train
from agents.ppo.rllib_train import AlphaMiniConfig, alpha_mini, run_sweep
from agents.reports import baseline_table, curves_plot, markdown_table
from agents.workers import ClusterError, cluster_cpus, connect_ray


@dataclasses.dataclass
class Options:
    """PPO with GAE on Gardner minichess (king capture and checkmate): the built-in PPO, RLlib or SB3."""

    # vs-random: policies trained against the random player, then judged; alpha-mini: Alpha-Mini's iterative
    # self-play procedure; sweep: Alpha-Mini's gamma x lambda table with Ray Tune
    experiment: Literal["vs-random", "alpha-mini", "sweep"] = "vs-random"
    backend: Literal["native", "rllib", "sb3"] = "native"  # the built-in PPO, RLlib or sb3-contrib MaskablePPO
    rules: Literal["kingcapture", "checkmate", "both"] = "both"  # alpha-mini and sweep: both means kingcapture
    steps: int | None = None  # env steps per policy (default: the rule set's and experiment's, see BUDGETS)
    minutes: float | None = None  # wall-clock limit per policy, whichever comes first (default: BUDGETS)
    games: int = 1000  # final games per color and rule set; matches and learning-curve points play a fifth
    seed: int = 0
    out: str = "runs/ppo_gardner"  # the run directory
    resume: bool = False  # continue the runs found under --out
    env_runners: int = 0  # RLlib: sampling actors (0: sample in this process)
    ray_address: str | None = None  # RLlib's env runners and the sweep's trials on this Ray cluster (docs/scale.md)


PRESETS = {
    "alpha-mini": dict(experiment="alpha-mini", backend="rllib"),  # Alpha-Mini's procedure, its figure 3
    "sweep": dict(experiment="sweep", backend="rllib"),  # Alpha-Mini's table 1 with Ray Tune
    "quick": dict(steps=1, games=10),  # a smoke test: one iteration per policy
}

RULES = {"kingcapture": "gardner-kingcapture", "checkmate": "gardner"}
COLORS = ("white", "black")
TARGET = 0.97
CHECKMATE_TARGET = 0.90  # wins against random with both colors, checkmate rules
MATCH_OPPONENTS = ("greedy", "minimax:2")  # agent specs
#: The built-in PPO's settings per rule set (RLlib and SB3 take PPOSettings' defaults: Alpha-Mini's).
NATIVE = {
    "kingcapture": dict(gamma=0.3, lambda_=1.0, material_scale=1 / 600),
    "checkmate": dict(gamma=0.9, lambda_=0.95, material_scale=0.01, draw_reward=-0.5, lr=1e-3, num_envs=64,
                      train_batch=8192, epochs=2, minibatch=512),
}
#: (env steps, minutes) per policy: the built-in PPO's two rule sets together stay within 30 minutes on 2 cores.
BUDGETS = {"native": {"kingcapture": (150_000, 5.0), "checkmate": (3_000_000, 18.0)},
           "library": (250_000, None), "alpha-mini": (40_000, None), "sweep": (60_000, None)}
ALPHA_MINI_RESULT = 0.966
#: Alpha-Mini's table 1: (gamma, lambda) -> its win rate against random.
ALPHA_MINI_TABLE = {(0.1, 1.0): 0.866, (0.3, 1.0): 0.966, (0.5, 1.0): 0.902, (0.7, 1.0): 0.415, (0.9, 1.0): 0.556,
                    (0.3, 0.99): 0.948, (0.3, 0.9): 0.853, (0.3, 0.5): 0.691, (0.3, 0.0): 0.687}


def settings(args: Options, rules: str, color: str) -> PPOSettings:
    """One policy's PPO settings: the built-in PPO's per rule set, else Alpha-Mini's."""
    return PPOSettings(variant=RULES[rules], agent_color=color, seed=args.seed, env_runners=args.env_runners,
                       **(NATIVE[rules] if args.backend == "native" else {}))


def budget(args: Options, rules: str, experiment: str = "vs-random") -> tuple[int, float | None]:
    """(env steps, minutes) per policy: the options, else :data:`BUDGETS`."""
    if experiment != "vs-random":
        steps, minutes = BUDGETS[experiment]
    else:
        steps, minutes = BUDGETS["native"][rules] if args.backend == "native" else BUDGETS["library"]
    return args.steps or steps, args.minutes if args.minutes is not None else minutes


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    if (args.steps is not None and args.steps < 1) or args.games < 5:
        raise SystemExit("error: --steps must be positive and --games at least 5")
    if args.env_runners and args.backend != "rllib":
        raise SystemExit("error: --env-runners is RLlib's (--backend rllib)")
    if args.ray_address is not None:
        connect_ray(args.ray_address)
    os.makedirs(args.out, exist_ok=True)
    if args.experiment != "vs-random":
        return (selfplay if args.experiment == "alpha-mini" else sweep)(args)
    measured, started = machine(), time.perf_counter()
    rules_list = list(RULES) if args.rules == "both" else [args.rules]
    colors = ["random"] if args.backend == "native" else list(COLORS)
    runs = []
    for rules in rules_list:
        steps, minutes = budget(args, rules)
        for color in colors:
            s = settings(args, rules, color)
            run_dir = os.path.join(args.out, f"{args.backend}_{rules}_{color}")
            state = train(s, run_dir, env_steps=steps, minutes=minutes, eval_games=args.games // 5,
                          eval_every=10 if args.backend == "native" else 1, resume=args.resume,
                          desc=f"{args.backend} {rules} {color}", backend=args.backend)
            runs.append({"rules": rules, "color": color, "dir": run_dir, "settings": s, "state": state,
                         "budget": (steps, minutes)})
    print(f"final evaluation: {args.games} games per policy, color and rule set ...", flush=True)
    results = final_evaluation(runs, args)
    print(f"matches: {args.games // 5} games per policy against {', '.join(MATCH_OPPONENTS)} ...", flush=True)
    matches = baseline_matches(runs, args)
    print("baselines: random, greedy, minimax d1 and d2 against random ...", flush=True)
    played = sorted({c for run in runs for c in run["settings"].eval_colors()}, key=COLORS.index)
    baseline_rows = [row for variant in RULES.values() for row in baselines(variant, played, args.games, seed=0)]
    write_csv(os.path.join(args.out, "baselines.csv"), baseline_rows)
    write_report(args, runs, results, matches, baseline_rows, time.perf_counter() - started, machine_text(measured))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def final_evaluation(runs: list[dict], args) -> list[dict]:
    import agents

    rows = []
    for run in runs:
        agent = agents.load(os.path.join(run["dir"], "agent"))
        for eval_rules, variant in RULES.items():
            for color in run["settings"].eval_colors():
                t = time.perf_counter()
                match = versus_random(agent, variant, games=args.games, color=color, seed=0)
                lo, hi = match.win_interval
                rows.append({"backend": args.backend, "trained_rules": run["rules"], "trained_as": run["color"],
                             "color": color, "eval_rules": eval_rules, "games": match.games, "wins": match.wins,
                             "draws": match.draws, "losses": match.losses, "truncated": match.truncated,
                             "win_rate": match.win_rate, "win_low": lo, "win_high": hi, "mean_plies": match.mean_plies,
                             "env_steps": run["state"].env_steps, "train_s": training_seconds(run["state"].metrics),
                             "eval_s": time.perf_counter() - t})
    write_csv(os.path.join(args.out, "results.csv"), rows)
    return rows


def baseline_matches(runs: list[dict], args) -> list[dict]:
    """Each policy against greedy capture and minimax depth 2 under its own rules, half the games as each color."""
    import agents
    from agents.arena import play_match

    rows = []
    for run in runs:
        agent = agents.load(os.path.join(run["dir"], "agent"))
        agent.name = "ppo"
        for spec in MATCH_OPPONENTS:
            opponent = agents.from_spec(spec, RULES[run["rules"]], seed=0)
            result = play_match(agent, opponent, RULES[run["rules"]], games=args.games // 5, seed=0)
            name = opponent.name
            total = result.tally("ppo")
            lo, hi = total.interval
            row = {"trained_rules": run["rules"], "trained_as": run["color"], "opponent": name, "games": total.games,
                   "wins": total.wins, "draws": total.draws, "losses": total.losses, "score": total.score,
                   "score_low": lo, "score_high": hi}
            for color in COLORS:
                t = result.tally("ppo", color=color)
                row[f"as_{color}"] = f"+{t.wins} ={t.draws} -{t.losses}"
            rows.append(row)
    write_csv(os.path.join(args.out, "matches.csv"), rows)
    return rows


def rate(r: dict, key: str = "win_rate", prefix: str = "win") -> str:
    """``r[key]`` with its 95% interval ``r[prefix_low], r[prefix_high]``."""
    return f"{r[key]:.3f} [{r[f'{prefix}_low']:.3f}, {r[f'{prefix}_high']:.3f}]"


def write_report(args, runs, results, matches, baseline_rows, wall: float, measured_on: str) -> None:
    out = args.out
    by_steps, by_time = {}, {}
    for run in runs:
        for color in run["settings"].eval_colors():
            steps, seconds, rates = learning_curve(run["state"].metrics, color)
            label = f"{run['rules']}, {color}" + (" (one network, both colors)" if run["color"] == "random" else "")
            by_steps[label], by_time[label] = (steps, rates), ([s / 60 for s in seconds], rates)
    title = f"PPO ({args.backend}) against the random player: win rate of the greedy policy ({args.games // 5} games)"
    for name, curves, xlabel in (("steps", by_steps, "env steps (learner moves)"),
                                 ("time", by_time, "training wall-clock (minutes)")):
        curves_plot(os.path.join(out, f"win_rate_vs_{name}.png"), curves, xlabel, "win rate", title,
                    hline=(TARGET, "target 0.97"))
    table = markdown_table(
        ["trained on", "trained as", "evaluated under", "as", "W-D-L", "win rate vs random [95% Wilson]",
         "env steps", "training time"],
        [[r["trained_rules"], r["trained_as"], r["eval_rules"], r["color"], f"{r['wins']}-{r['draws']}-{r['losses']}",
          f"**{rate(r)}**" if r["trained_rules"] == r["eval_rules"] else rate(r), f"{r['env_steps']:,}",
          f"{r['train_s'] / 60:.1f} min"] for r in results])
    verdicts = []
    for rules, colors, target in (("kingcapture", ["white"], TARGET), ("checkmate", list(COLORS), CHECKMATE_TARGET)):
        rows = [r for r in results if r["trained_rules"] == r["eval_rules"] == rules and r["color"] in colors]
        if {r["color"] for r in rows} == set(colors):
            met = all(r["win_rate"] >= target and r["games"] >= 1000 for r in rows)
            verdicts.append(f"**Target, {rules}** (>= {target:.0%} wins against random as "
                            f"{' and '.join(colors)} over >= 1,000 games each): "
                            + ", ".join(f"as {r['color']} {rate(r)}" for r in rows)
                            + f" over {rows[0]['games']:,} games each after {rows[0]['env_steps']:,} env steps and "
                            f"{rows[0]['train_s'] / 60:.1f} min of training: **{'met' if met else 'not met'}**.")
    match_table = markdown_table(
        ["policy", "against", "games", "PPO +W =D -L", "PPO score [95% Wilson]", "PPO as White", "PPO as Black"],
        [[f"{m['trained_rules']} ({m['trained_as']})", m["opponent"], m["games"],
          f"+{m['wins']} ={m['draws']} -{m['losses']}", rate(m, "score", "score"), m["as_white"], m["as_black"]]
         for m in matches]) if matches else "(no matches played)"
    speed = []
    for run in runs:
        m, steps = run["state"].metrics, run["state"].env_steps
        sample = [x["sample_steps_per_s"] for x in m if x.get("sample_steps_per_s") == x.get("sample_steps_per_s")]
        speed.append([f"{run['rules']}, {run['color']}", f"{steps:,}", f"{training_seconds(m) / 60:.1f} min",
                      f"{steps / max(training_seconds(m), 1e-9):,.0f}",
                      f"{sum(sample) / max(len(sample), 1):,.0f}" if sample else "-",
                      f"{m[-1]['episode_len_mean']:.1f}" if m else "-"])
    speed_table = markdown_table(["policy", "env steps", "training time", "env steps/s (training, overall)",
                                  "env steps/s while sampling", "mean episode length (last iteration)"], speed)
    chosen = ("gamma", "lambda_", "lr", "material_scale", "draw_reward", "entropy_coeff", "train_batch", "minibatch",
              "epochs", "num_envs", "channels", "conv_layers", "seed", "threads")
    settings_text = "\n".join(
        f"{run['rules']} ({run['color']}): steps {run['budget'][0]:,}, minutes {run['budget'][1]}, "
        + ", ".join(f"{k} = {getattr(run['settings'], k)}" for k in chosen) for run in runs)
    text = f"""# PPO with GAE on Gardner minichess ({args.backend})

Each policy trained under one rule set (as one color, or as both with one network: "random"), with
material shaping, then played {args.games:,} games per color and rule set against the random player,
greedily (argmax over legal moves), `agents.arena.evaluation.versus_random(..., seed=0)`. One env step = the
learner's move and the opponent's reply. Alpha-Mini's king-capture figure: {ALPHA_MINI_RESULT:.1%}.

{chr(10).join(chr(10) + v for v in verdicts).strip()}

{table}

Baselines, the same protocol:

{baseline_table(baseline_rows)}

Against stronger players, under the rules each policy trained on ({args.games // 5} games each, half as each
color, `agents.arena.play_match`, seed 0; greedy and minimax pick at random among equal moves):

{match_table}

Bold: the rule set the policy trained under. Non-wins under checkmate rules are mostly draws (stalemate,
repetition, insufficient material or the ply limit; `results.csv` has the counts).

## Speed

{measured_on} Whole script: {wall / 60:.1f} min (a resumed run counts only its own part).

{speed_table}

Curves: `win_rate_vs_steps.png`, `win_rate_vs_time.png` (seed 10000; training time excludes those games).
Every iteration's numbers: `<run>/metrics.csv`; TensorBoard: `<run>/tensorboard/`.

## Settings

```
backend = {args.backend}
{settings_text}
```

Policies: `agents.load("{out}/<backend>_<rules>_<color>/agent")` (plain torch; Ray/SB3 not needed).
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


def selfplay(args: Options) -> int:
    """Alpha-Mini's procedure; writes selfplay/ (steps.csv, selfplay.md, selfplay.png)."""
    out = os.path.join(args.out, "selfplay")
    rules = "kingcapture" if args.rules == "both" else args.rules
    s = settings(args, rules, "white")
    config = AlphaMiniConfig(steps=8, env_steps_per_policy=budget(args, rules, "alpha-mini")[0], eps=0.5,
                             eval_games=args.games // 2)
    measured, started = machine(), time.perf_counter()
    rows = alpha_mini(s, config, out, backend=args.backend)
    baseline_rows = baselines(s.variant, COLORS, config.eval_games, seed=10_000)
    wall = time.perf_counter() - started
    ks = [r["step"] for r in rows]
    curves_plot(os.path.join(out, "selfplay.png"),
                {f"{c} k vs random (as {c})": (ks, [r[f"{c}_win_rate_{c}"] for r in rows]) for c in COLORS},
                "procedure step k", "win rate", f"Alpha-Mini procedure ({args.backend}, {rules}, eps {config.eps}): "
                f"win rate against random ({config.eval_games} games)",
                hline=(ALPHA_MINI_RESULT, "Alpha-Mini's single-agent 0.966"))
    table = markdown_table(
        ["k", "white k vs random [95%]", "black k vs random [95%]", "env steps (per color)", "training time"],
        [[r["step"], *(f"{r[f'{c}_win_rate_{c}']:.3f} [{r[f'{c}_win_low_{c}']:.3f}, {r[f'{c}_win_high_{c}']:.3f}]"
                       for c in COLORS),
          f"{r['white_env_steps']:,}", f"{(r['white_train_s'] + r['black_train_s']) / 60:.1f} min"] for r in rows])
    text = f"""# The Alpha-Mini procedure ({args.backend}, {rules} rules)

At step k, white k trains against black k-1 and black k against white k-1, each opponent playing a random
legal move with probability eps = {config.eps}, else its greedy move; step 1's opponents are the random
player; policy k starts from policy k-1's weights (`agents.ppo.rllib_train.alpha_mini`).
{config.env_steps_per_policy:,} env steps per policy and step, gamma {s.gamma}, lambda {s.lambda_}. After every step
each new policy plays {config.eval_games} games against the random player as its color (`selfplay.png`).

{table}

Baselines against the random player, the same number of games per color:

{baseline_table(baseline_rows)}

Whole procedure: {wall / 60:.1f} min (a resumed run counts only its own part). {machine_text(measured)}
Policies: `agents.load("{out}/white_<k>/agent")`, `black_<k>/agent`; rows: `steps.csv`.
"""
    with open(os.path.join(out, "selfplay.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def sweep(args: Options) -> int:
    """Alpha-Mini's gamma x lambda table as Ray Tune trials; writes sweep/ (sweep.csv, sweep.md)."""
    out = os.path.abspath(os.path.join(args.out, "sweep"))
    rules = "kingcapture" if args.rules == "both" else args.rules
    color = "random" if args.backend == "native" else "white"
    s, concurrency = settings(args, rules, color), cluster_cpus()  # one trial a CPU: on one machine, its cores
    steps = budget(args, rules, "sweep")[0]
    measured, started = machine(), time.perf_counter()
    rows = run_sweep(s, list(ALPHA_MINI_TABLE), out, steps, eval_games=args.games // 5, final_games=args.games,
                     concurrency=concurrency, backend=args.backend)
    wall = time.perf_counter() - started
    rows = [{**r, "alpha_mini_win_rate": ALPHA_MINI_TABLE[(r["gamma"], r["lambda"])]} for r in rows]
    write_csv(os.path.join(out, "sweep.csv"), rows)
    table = markdown_table(
        ["gamma", "lambda", "Alpha-Mini's win rate", f"ours ({rules}, as White) [95% Wilson]", "env steps",
         "training time"],
        [[r["gamma"], r["lambda"], f"{r['alpha_mini_win_rate']:.3f}", f"**{rate(r)}**", f"{r['env_steps']:,}",
          f"{r['train_s'] / 60:.1f} min"] for r in rows])
    trained = "both colours (judged as White)" if color == "random" else "White"
    text = f"""# gamma x lambda (Alpha-Mini's table 1), {args.backend}, {rules} rules, trained as {trained}

Each grid point is one Ray Tune trial (one CPU each, {concurrency} at a time) training for {steps:,} env steps
against the random player with material shaping, then playing {args.games:,} games greedily against it
(`versus_random`, seed 0). Alpha-Mini trained longer and evaluated over 10,000 games.

{table}

Baselines against the random player, the same protocol:

{baseline_table(baselines(s.variant, s.eval_colors()[:1], args.games, seed=0))}

Sweep wall-clock: {wall / 60:.1f} min, {concurrency} trials at once (one a CPU of the Ray cluster this driver ran
on). {machine_text(measured)}
Runs: `gamma<g>_lambda<l>/` (metrics.csv, tensorboard/, agent/); Tune's records: `tune/`.
"""
    with open(os.path.join(out, "sweep.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, ClusterError) as exc:  # bad settings, a run directory in the way or the Ray cluster's
        sys.exit(f"error: {exc}")                # problem: say which, without a traceback
