"""PPO with GAE on Gardner minichess: the built-in PPO, RLlib or stable-baselines3; king capture and checkmate.

    python experiments/ppo_gardner.py                          # built-in PPO, both rule sets: <= 30 min on 2 cores
    python experiments/ppo_gardner.py --resume                 # continue an interrupted run
    python experiments/ppo_gardner.py --backend rllib          # Alpha-Mini in RLlib: 4 policies
    python experiments/ppo_gardner.py --backend sb3            # sb3-contrib MaskablePPO
    python experiments/ppo_gardner.py --rules checkmate --steps 400000 --minutes 10
    python experiments/ppo_gardner.py --backend rllib --selfplay   # the Alpha-Mini procedure (Alpha-Mini's figure 3)
    python experiments/ppo_gardner.py --backend rllib --sweep  # gamma x lambda grid of Alpha-Mini's table 1 (Ray Tune)
    python -m experiments.ppo_gardner --steps 8000             # as a module, from the repository root

The built-in backend needs only torch (``".[agents]"``); ``--backend rllib`` needs ``".[rllib]"``,
``--backend sb3`` ``".[sb3]"``.

Built-in PPO (``--backend native``, the default; ``agents/ppo/native.py``): one network per rule set
plays both colors (``--color random``: the learner's color drawn per game), material shaping
(outcome +-1, plus the change of material lead / 600: Alpha-Mini's king 60000 / pawn 100):

* king capture (``MiniChess-GardnerKingCapture-v0``): Alpha-Mini's setting, against the random player,
  gamma 0.3, lambda 1.0 (Alpha-Mini's values); target >= 97% as White over 1,000 games (Alpha-Mini: 96.6%);
* checkmate (``MiniChess-Gardner-v0``, the variant's real rules): against the random player, gamma 0.9,
  lambda 0.95 (a mate takes several moves to set up; gamma 0.3 barely sees past the next capture),
  a pawn of material worth 0.01 (6x Alpha-Mini's shaping), a rule draw (stalemate, repetition,
  insufficient material) -0.5, lr 1e-3, 64 games, 8192-step batches, 2 epochs of 512-sample
  minibatches (the best of the settings tried in 5-minute runs: docs/benchmarks.md); target >= 90%
  wins against random with both colors over 1,000 games each.

The per-rule-set defaults (budgets, gamma, lambda, shaping, batch sizes) are
``NATIVE_DEFAULTS``; flags override them. RLlib and SB3 (``--backend rllib|sb3``): Alpha-Mini's four policies, each color trained
separately for ``--steps`` env steps against the random player, gamma 0.3, lambda 1.0.

Every policy is then evaluated deterministically (argmax over legal moves) with
``agents.arena.evaluation.versus_random`` over ``--final-games`` games per color (seed 0) under both rule
sets, and plays ``--match-games`` games against greedy capture and minimax depth 2 under its own
rules. The baselines (random, greedy, minimax depth 1 and 2) play the same ``versus_random`` protocol.
During training, ``--eval-games`` games per color every ``--eval-every`` iterations (seed 10000) give
the learning curves.

Batch settings (unless NATIVE_DEFAULTS says otherwise): 4000-step batches, minibatch 256, 4 epochs,
lr 3e-4, a 3-layer 32-channel conv net with a spatial policy head, 32 games at once, one process, one
torch thread.

Writes under ``--out`` (default runs/ppo_gardner/): one directory per policy
(``<backend>_<rules>_<color>/``: checkpoint/, agent/, metrics.csv, tensorboard/), report.md,
results.csv, matches.csv, baselines.csv, win_rate_vs_steps.png, win_rate_vs_time.png; ``--selfplay``
adds selfplay/ (steps.csv, selfplay.md, selfplay.png), ``--sweep`` adds sweep/ (sweep.csv, sweep.md).
Load a policy with ``agents.load(".../agent")``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads sleep: the machine is shared

from agents.arena.evaluation import versus_random  # noqa: E402
from agents.ppo.common import PPOSettings  # noqa: E402
from agents.arena.evaluation import baselines
from agents.reports import baseline_table, curves_plot, markdown_table  # noqa: E402
from agents.runs import machine, machine_text, write_csv  # noqa: E402

RULES = {"kingcapture": "gardner-kingcapture", "checkmate": "gardner"}
COLORS = ("white", "black")
TARGET = 0.97
CHECKMATE_TARGET = 0.90  # wins against random with both colors, checkmate rules
MATCH_OPPONENTS = ("greedy", "minimax-d2")
#: The built-in backend's defaults per rule set: a budget in env steps and minutes (whichever comes first;
#: the two together stay within 30 minutes on 2 cores, evaluation included), gamma, lambda, shaping.
NATIVE_DEFAULTS = {
    "kingcapture": dict(steps=150_000, minutes=5.0, gamma=0.3, lambda_=1.0, material_scale=1 / 600, draw_reward=0.0),
    "checkmate": dict(steps=3_000_000, minutes=18.0, gamma=0.9, lambda_=0.95, material_scale=0.01, draw_reward=-0.5,
                      lr=1e-3, num_envs=64, train_batch=8192, epochs=2, minibatch=512),
}
ALPHA_MINI_RESULT = 0.966
#: Alpha-Mini's table 1: (gamma, lambda) -> its win rate against random.
ALPHA_MINI_TABLE = {(0.1, 1.0): 0.866, (0.3, 1.0): 0.966, (0.5, 1.0): 0.902, (0.7, 1.0): 0.415, (0.9, 1.0): 0.556,
              (0.3, 0.99): 0.948, (0.3, 0.9): 0.853, (0.3, 0.5): 0.691, (0.3, 0.0): 0.687}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="runs/ppo_gardner")
    p.add_argument("--backend", choices=("native", "rllib", "sb3"), default="native")
    p.add_argument("--rules", choices=("kingcapture", "checkmate", "both"), default="both")
    p.add_argument("--color", choices=("white", "black", "both", "random"), default=None,
                   help="both: one policy per color; random: one policy for both colors (the color drawn per "
                        "game). Default: random for native, both for rllib/sb3")
    p.add_argument("--steps", type=int, default=None,
                   help="env steps (learner moves) per policy (default: NATIVE_DEFAULTS; rllib/sb3 250,000)")
    p.add_argument("--minutes", type=float, default=None,
                   help="wall-clock limit per policy, whichever comes first (default: NATIVE_DEFAULTS; rllib/sb3 none)")
    p.add_argument("--eval-games", type=int, default=200, help="games per color for the learning curves")
    p.add_argument("--eval-every", type=int, default=None, help="iterations between learning-curve points "
                   "(default: 10 for native, 1 for rllib/sb3)")
    p.add_argument("--final-games", type=int, default=1000, help="games per color and rule set at the end")
    p.add_argument("--match-games", type=int, default=200,
                   help="games against greedy and minimax depth 2 per policy (half as each color)")
    p.add_argument("--resume", action="store_true", help="continue the runs found under --out")
    # PPO (defaults: NATIVE_DEFAULTS for native, else PPOSettings: Alpha-Mini's gamma / lambda / entropy)
    d = PPOSettings()
    p.add_argument("--gamma", type=float, default=None)
    p.add_argument("--lambda", dest="lambda_", type=float, default=None)
    p.add_argument("--material-scale", type=float, default=None,
                   help="reward per pawn of material lead gained (default: NATIVE_DEFAULTS; rllib/sb3 1/600)")
    p.add_argument("--draw-reward", type=float, default=None,
                   help="native: reward added when the rules draw a game (default: NATIVE_DEFAULTS)")
    p.add_argument("--lr", type=float, default=None, help=f"default: NATIVE_DEFAULTS, else {d.lr}")
    p.add_argument("--entropy", type=float, default=d.entropy_coeff)
    p.add_argument("--train-batch", type=int, default=None, help=f"default: NATIVE_DEFAULTS, else {d.train_batch}")
    p.add_argument("--minibatch", type=int, default=None, help=f"default: NATIVE_DEFAULTS, else {d.minibatch}")
    p.add_argument("--epochs", type=int, default=None, help=f"default: NATIVE_DEFAULTS, else {d.epochs}")
    p.add_argument("--num-envs", type=int, default=None, help=f"default: NATIVE_DEFAULTS, else {d.num_envs}")
    p.add_argument("--channels", type=int, default=d.channels)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--threads", type=int, default=d.threads)
    # the Alpha-Mini procedure
    p.add_argument("--selfplay", action="store_true", help="run the Alpha-Mini procedure instead")
    p.add_argument("--selfplay-steps", type=int, default=8, help="procedure steps k = 1..N")
    p.add_argument("--steps-per-policy", type=int, default=40_000, help="env steps per color and step")
    p.add_argument("--eps", type=float, default=0.5, help="the opponents' random-move probability")
    p.add_argument("--selfplay-games", type=int, default=500, help="games against random after each step")
    # the gamma x lambda sweep
    p.add_argument("--sweep", action="store_true", help="run Alpha-Mini's gamma x lambda grid with Ray Tune instead")
    p.add_argument("--sweep-steps", type=int, default=60_000, help="env steps per grid point")
    p.add_argument("--sweep-concurrency", type=int, default=2, help="trials at once (one CPU each)")
    args = p.parse_args(argv)
    if (args.steps is not None and args.steps < 1) or args.final_games < 1:
        p.error("--steps and --final-games must be positive")
    if args.selfplay and args.sweep:
        p.error("--selfplay and --sweep are separate runs; pick one")
    if args.color is None:
        args.color = "random" if args.backend == "native" else "both"
    if args.eval_every is None:
        args.eval_every = 10 if args.backend == "native" else 1
    return args


def rule_defaults(args, rules: str) -> dict:
    """Budget, gamma, lambda and shaping of one rule set: the flags, else the backend's defaults."""
    if args.backend == "native":
        d = dict(NATIVE_DEFAULTS[rules])
    else:
        d = dict(steps=250_000, minutes=None, gamma=PPOSettings.gamma, lambda_=PPOSettings.lambda_,
                 material_scale=PPOSettings.material_scale, draw_reward=0.0)
    for key in ("train_batch", "minibatch", "epochs", "num_envs", "lr"):
        d.setdefault(key, getattr(PPOSettings, key))
    for key in d:
        if getattr(args, key) is not None:
            d[key] = getattr(args, key)
    return d


def base_settings(args, rules: str, color: str) -> PPOSettings:
    d = rule_defaults(args, rules)
    return PPOSettings(variant=RULES[rules], agent_color=color, gamma=d["gamma"], lambda_=d["lambda_"], lr=d["lr"],
                       material_scale=d["material_scale"], draw_reward=d["draw_reward"],
                       entropy_coeff=args.entropy, train_batch=d["train_batch"], minibatch=d["minibatch"],
                       epochs=d["epochs"], num_envs=d["num_envs"], channels=args.channels, seed=args.seed,
                       threads=args.threads)


def trainer_for(backend: str):
    if backend == "native":
        from agents.ppo import native

        return native.train
    if backend == "sb3":
        from agents.ppo import sb3_train

        return sb3_train.train
    from agents.ppo import rllib_train

    return rllib_train.train


def eval_colors(color: str) -> list[str]:
    """The colors a policy trained as ``color`` is evaluated as."""
    return list(COLORS) if color == "random" else [color]


# -- the default: policies against the random player ----------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.sweep:
        return run_sweep(args)
    if args.selfplay:
        return run_selfplay(args)
    measured = machine()
    started = time.perf_counter()
    train = trainer_for(args.backend)
    rules_list = list(RULES) if args.rules == "both" else [args.rules]
    colors = list(COLORS) if args.color == "both" else [args.color]
    runs = []
    for rules in rules_list:
        budget = rule_defaults(args, rules)
        for color in colors:
            settings = base_settings(args, rules, color)
            run_dir = os.path.join(args.out, f"{args.backend}_{rules}_{color}")
            state = train(settings, run_dir, env_steps=budget["steps"], minutes=budget["minutes"],
                          eval_games=args.eval_games, eval_every=args.eval_every, resume=args.resume,
                          desc=f"{args.backend} {rules} {color}")
            runs.append({"rules": rules, "color": color, "dir": run_dir, "settings": settings, "state": state,
                         "budget": budget})
    print(f"final evaluation: {args.final_games} games per policy, color and rule set ...", flush=True)
    results = final_evaluation(runs, args)
    print(f"matches: {args.match_games} games per policy against {', '.join(MATCH_OPPONENTS)} ...", flush=True)
    matches = baseline_matches(runs, args)
    print("baselines: random, greedy, minimax d1 and d2 against random ...", flush=True)
    played = sorted({c for run in runs for c in eval_colors(run["color"])}, key=COLORS.index)
    baseline_rows = [row for rules in RULES for row in baselines(RULES[rules], played, args.final_games, seed=0)]
    write_csv(os.path.join(args.out, "baselines.csv"), baseline_rows)
    wall = time.perf_counter() - started
    write_report(args, runs, results, matches, baseline_rows, wall, machine_text(measured))
    print(open(os.path.join(args.out, "report.md")).read())
    return 0


def final_evaluation(runs: list[dict], args) -> list[dict]:
    import agents

    rows = []
    for run in runs:
        agent = agents.load(os.path.join(run["dir"], "agent"))
        for eval_rules in RULES:
            for color in eval_colors(run["color"]):
                t = time.perf_counter()
                match = versus_random(agent, RULES[eval_rules], games=args.final_games, color=color, seed=0)
                lo, hi = match.win_interval
                rows.append({"backend": args.backend, "trained_rules": run["rules"], "trained_as": run["color"],
                             "color": color, "eval_rules": eval_rules, "games": match.games, "wins": match.wins, "draws": match.draws,
                             "losses": match.losses, "truncated": match.truncated, "win_rate": match.win_rate,
                             "win_low": lo, "win_high": hi, "mean_plies": match.mean_plies,
                             "env_steps": run["state"].env_steps, "train_s": train_seconds(run["state"].metrics),
                             "eval_s": time.perf_counter() - t})
    write_csv(os.path.join(args.out, "results.csv"), rows)
    return rows


def baseline_matches(runs: list[dict], args) -> list[dict]:
    """Each policy against greedy capture and minimax depth 2 under its own rules, half the games as each color."""
    import agents
    from agents.arena import play_match
    from agents.arena.evaluation import baseline_agent

    rows = []
    for run in runs:
        agent = agents.load(os.path.join(run["dir"], "agent"))
        agent.name = "ppo"
        for name in MATCH_OPPONENTS:
            result = play_match(agent, baseline_agent(name, seed=0), RULES[run["rules"]], games=args.match_games,
                                seed=0)
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


def train_seconds(metrics: list[dict]) -> float:
    """Wall-clock of training: sampling, learning and checkpoints; the learning-curve games excluded."""
    if not metrics:
        return 0.0
    return metrics[-1]["elapsed_s"] - sum(m.get("eval_s", 0.0) for m in metrics)


def curve(metrics: list[dict], color: str) -> tuple[list, list, list]:
    """(env steps, training seconds, win rate) at the iterations that were evaluated."""
    steps, seconds, rates, evals = [], [], [], 0.0
    for m in metrics:
        evals += m.get("eval_s", 0.0)
        if f"win_rate_{color}" in m:
            steps.append(m["env_steps"])
            seconds.append(m["elapsed_s"] - evals)
            rates.append(m[f"win_rate_{color}"])
    return steps, seconds, rates


def write_report(args, runs, results, matches, baseline_rows, wall: float, measured_on: str) -> None:
    out = args.out
    by_steps, by_time = {}, {}
    for run in runs:
        for color in eval_colors(run["color"]):
            steps, seconds, rates = curve(run["state"].metrics, color)
            label = f"{run['rules']}, {color}" + (" (one network, both colors)" if run["color"] == "random" else "")
            by_steps[label] = (steps, rates)
            by_time[label] = ([s / 60 for s in seconds], rates)
    title = f"PPO ({args.backend}) against the random player: win rate of the greedy policy ({args.eval_games} games)"
    curves_plot(os.path.join(out, "win_rate_vs_steps.png"), by_steps, "env steps (learner moves)", "win rate",
                title, hline=(TARGET, "target 0.97"))
    curves_plot(os.path.join(out, "win_rate_vs_time.png"), by_time, "training wall-clock (minutes)", "win rate",
                title, hline=(TARGET, "target 0.97"))

    def rate(r):
        text = f"{r['win_rate']:.3f} [{r['win_low']:.3f}, {r['win_high']:.3f}]"
        return f"**{text}**" if r["trained_rules"] == r["eval_rules"] else text

    table = markdown_table(
        ["trained on", "trained as", "evaluated under", "as", "W-D-L", "win rate vs random [95% Wilson]",
         "env steps", "training time"],
        [[r["trained_rules"], r["trained_as"], r["eval_rules"], r["color"], f"{r['wins']}-{r['draws']}-{r['losses']}",
          rate(r), f"{r['env_steps']:,}", f"{r['train_s'] / 60:.1f} min"] for r in results])
    verdicts = []
    seed_rows = [r for r in results if (r["trained_rules"], r["color"], r["eval_rules"]) ==
                 ("kingcapture", "white", "kingcapture")]
    if seed_rows:
        r = seed_rows[0]
        met = r["win_rate"] >= TARGET and r["games"] >= 1000
        verdicts.append(
            f"**Target, king capture** (White, >= {TARGET:.0%} over >= 1,000 games; Alpha-Mini: {ALPHA_MINI_RESULT:.1%}): "
            f"{r['win_rate']:.1%} [{r['win_low']:.1%}, {r['win_high']:.1%}] over {r['games']:,} games after "
            f"{r['env_steps']:,} env steps and {r['train_s'] / 60:.1f} min of training: **{'met' if met else 'not met'}**.")
    mate_rows = [r for r in results if r["trained_rules"] == r["eval_rules"] == "checkmate"]
    if {r["color"] for r in mate_rows} == set(COLORS):
        met = all(r["win_rate"] >= CHECKMATE_TARGET and r["games"] >= 1000 for r in mate_rows)
        rates = ", ".join(f"as {r['color']} {r['win_rate']:.1%} [{r['win_low']:.1%}, {r['win_high']:.1%}]"
                          for r in mate_rows)
        verdicts.append(
            f"**Target, checkmate** (>= {CHECKMATE_TARGET:.0%} wins against random with both colors over >= 1,000 "
            f"games each, within the default budget): {rates} over {mate_rows[0]['games']:,} games each after "
            f"{mate_rows[0]['env_steps']:,} env steps and {mate_rows[0]['train_s'] / 60:.1f} min of training: "
            f"**{'met' if met else 'not met'}**.")
    match_table = markdown_table(
        ["policy", "against", "games", "PPO +W =D -L", "PPO score [95% Wilson]", "PPO as White", "PPO as Black"],
        [[f"{m['trained_rules']} ({m['trained_as']})", m["opponent"], m["games"],
          f"+{m['wins']} ={m['draws']} -{m['losses']}", f"{m['score']:.3f} [{m['score_low']:.3f}, {m['score_high']:.3f}]",
          m["as_white"], m["as_black"]] for m in matches]) if matches else "(no matches played)"
    speed = []
    for run in runs:
        m = run["state"].metrics
        steps = run["state"].env_steps
        sample = [x["sample_steps_per_s"] for x in m if x.get("sample_steps_per_s") == x.get("sample_steps_per_s")]
        speed.append([f"{run['rules']}, {run['color']}", f"{steps:,}", f"{train_seconds(m) / 60:.1f} min",
                      f"{steps / max(train_seconds(m), 1e-9):,.0f}",
                      f"{sum(sample) / max(len(sample), 1):,.0f}" if sample else "-",
                      f"{m[-1]['episode_len_mean']:.1f}" if m else "-"])
    speed_table = markdown_table(["policy", "env steps", "training time", "env steps/s (training, overall)",
                                  "env steps/s while sampling", "mean episode length (last iteration)"], speed)
    settings = "\n".join(
        f"{run['rules']} ({run['color']}): steps {run['budget']['steps']:,}, minutes {run['budget']['minutes']}, "
        + ", ".join(f"{k} = {v}" for k, v in dataclasses.asdict(run["settings"]).items()
                    if k not in ("variant", "game", "agent_color", "opponent", "opponent_eps", "init_from", "selfplay",
                                 "selfplay_random", "pool_every", "pool_size", "pool_sampling"))
        for run in runs)
    extra = ""
    for name, title in (("selfplay/selfplay.md", "Alpha-Mini procedure"), ("sweep/sweep.md", "gamma x lambda sweep")):
        if os.path.exists(os.path.join(out, name)):
            extra += f"\n- {title}: [{name}]({name})"
    verdict = "\n\n".join(verdicts)
    text = f"""# PPO with GAE on Gardner minichess ({args.backend})

Each policy trained under one rule set (as one color, or as both with one network: "random"), with
material shaping, then played {args.final_games:,} games per color and rule set against the random player,
greedily (argmax over legal moves), `agents.arena.evaluation.versus_random(..., seed=0)`. One env step = the
learner's move and the opponent's reply.

{verdict}

{table}

Baselines, the same protocol (`versus_random`, seed 0, {args.final_games:,} games per color and rule set):

{baseline_table(baseline_rows)}

Against stronger players, under the rules each policy trained on ({args.match_games} games each, half as each color,
`agents.arena.play_match`, seed 0; greedy and minimax pick at random among equal moves):

{match_table}

Bold: the rule set the policy trained under. King-capture rules end the game when a king is taken (a random
player often leaves its king en prise, so greedy capture already wins most games); under checkmate rules the
random player never moves into check, the game must end in mate, and most non-wins are draws (stalemate,
repetition, insufficient material or the ply limit; `results.csv` has the counts).

## Speed

{measured_on} Whole script: {wall / 60:.1f} min (a resumed run counts only its own part).

{speed_table}

Curves: `win_rate_vs_steps.png`, `win_rate_vs_time.png` (the greedy policy against the random player,
{args.eval_games} games per color every {args.eval_every} iterations, seed 10000; training time excludes those
games). Every iteration's numbers: `<run>/metrics.csv`; TensorBoard: `<run>/tensorboard/`.{extra}

## Settings

```
backend = {args.backend}
{settings}
```

Policies: `agents.load("{out}/<backend>_<rules>_<color>/agent")` (plain torch; Ray/SB3 not needed);
checkpoints in `<run>/checkpoint/` (resume with `--resume`).
"""
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


# -- the Alpha-Mini procedure ---------------------------------------------------------------------


def run_selfplay(args) -> int:
    from agents.ppo.rllib_train import AlphaMiniConfig, alpha_mini

    out = os.path.join(args.out, "selfplay")
    rules = "kingcapture" if args.rules == "both" else args.rules
    settings = base_settings(args, rules, "white")
    config = AlphaMiniConfig(steps=args.selfplay_steps, env_steps_per_policy=args.steps_per_policy, eps=args.eps,
                             eval_games=args.selfplay_games)
    measured = machine()
    started = time.perf_counter()
    rows = alpha_mini(settings, config, out, trainer=trainer_for(args.backend))
    baseline_rows = baselines(settings.variant, COLORS, args.selfplay_games, seed=10_000)
    wall = time.perf_counter() - started
    ks = [r["step"] for r in rows]
    curves_plot(os.path.join(out, "selfplay.png"),
                {"white k vs random (as White)": (ks, [r["white_win_rate_white"] for r in rows]),
                 "black k vs random (as Black)": (ks, [r["black_win_rate_black"] for r in rows])},
                "procedure step k", "win rate",
                f"Alpha-Mini procedure ({args.backend}, {rules}, eps {args.eps}): win rate against random "
                f"({args.selfplay_games} games)", hline=(ALPHA_MINI_RESULT, "Alpha-Mini's single-agent 0.966"))
    table = markdown_table(
        ["k", "white k vs random [95%]", "black k vs random [95%]", "env steps (per color)", "training time"],
        [[r["step"], f"{r['white_win_rate_white']:.3f} [{r['white_win_low_white']:.3f}, "
                     f"{r['white_win_high_white']:.3f}]",
          f"{r['black_win_rate_black']:.3f} [{r['black_win_low_black']:.3f}, {r['black_win_high_black']:.3f}]",
          f"{r['white_env_steps']:,}", f"{(r['white_train_s'] + r['black_train_s']) / 60:.1f} min"] for r in rows])
    text = f"""# The Alpha-Mini procedure ({args.backend}, {rules} rules)

Alpha-Mini's figure 1: white and black policies; at step k, white k trains against black k-1 and black k
against white k-1, each opponent playing a uniformly random legal move with probability eps = {args.eps}
(`agents.ppo.agent.EpsilonRandomAgent`, seeded) and otherwise its greedy move. Step 1's opponents are the
random player (Alpha-Mini's untrained w0, b0). Policy k starts from policy k-1's weights. {args.steps_per_policy:,}
env steps per policy and step (Alpha-Mini: 25k per iteration), material shaping, gamma {settings.gamma},
lambda {settings.lambda_}. After every step each new policy plays {args.selfplay_games} games against the random
player as its color (Alpha-Mini's figure 3: `selfplay.png`).

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


# -- the gamma x lambda sweep (Ray Tune) ----------------------------------------------------------


def sweep_trial(config: dict) -> None:
    """One grid point as a Ray Tune trial: train, report each iteration, then a final 1000-game evaluation."""
    from ray import tune

    from agents.ppo.common import PPOSettings as Settings

    settings = Settings.from_dict(config["settings"])
    settings = dataclasses.replace(settings, gamma=config["point"]["gamma"], lambda_=config["point"]["lambda"])
    run_dir = os.path.join(config["out"], f"gamma{settings.gamma:g}_lambda{settings.lambda_:g}")
    train = trainer_for(config["backend"])
    state = train(settings, run_dir, env_steps=config["steps"], eval_games=config["eval_games"], eval_every=5,
                  resume=True, verbose=False, on_iteration=lambda row: tune.report(
                      {k: v for k, v in row.items() if isinstance(v, (int, float))}))
    import agents

    match = versus_random(agents.load(os.path.join(run_dir, "agent")), settings.variant,
                          games=config["final_games"], color=settings.agent_color, seed=0)
    lo, hi = match.win_interval
    tune.report({"final_win_rate": match.win_rate, "final_win_low": lo, "final_win_high": hi,
                 "final_games": match.games, "env_steps": state.env_steps, "train_s": train_seconds(state.metrics),
                 "done": True})


def run_sweep(args) -> int:
    from ray import tune

    from agents.ppo.rllib_train import init_ray

    out = os.path.abspath(os.path.join(args.out, "sweep"))  # trials run in their own working directories
    os.makedirs(out, exist_ok=True)
    rules = "kingcapture" if args.rules == "both" else args.rules
    color = "white" if args.color == "both" else args.color
    settings = base_settings(args, rules, color)
    init_ray(num_cpus=os.cpu_count())
    trainable = tune.with_resources(sweep_trial, {"cpu": 1})
    param_space = {
        "point": tune.grid_search([{"gamma": g, "lambda": lam} for g, lam in ALPHA_MINI_TABLE]),
        "settings": dataclasses.asdict(settings), "out": out, "backend": args.backend, "steps": args.sweep_steps,
        "eval_games": args.eval_games, "final_games": args.final_games,
    }
    measured = machine()
    started = time.perf_counter()
    tuner = tune.Tuner(trainable, param_space=param_space,
                       tune_config=tune.TuneConfig(max_concurrent_trials=args.sweep_concurrency),
                       run_config=tune.RunConfig(name="ppo_gamma_lambda", storage_path=os.path.join(out, "tune"),
                                                 verbose=1))
    grid = tuner.fit()
    wall = time.perf_counter() - started
    rows = []
    for result in grid:
        if result.error or not result.metrics or "final_win_rate" not in result.metrics:
            point = result.config["point"] if result.config else {}
            print(f"trial {point} failed: {result.error}", flush=True)
            continue
        point, m = result.config["point"], result.metrics
        rows.append({"gamma": point["gamma"], "lambda": point["lambda"],
                     "alpha_mini_win_rate": ALPHA_MINI_TABLE[(point["gamma"], point["lambda"])],
                     "win_rate": m["final_win_rate"],
                     "win_low": m["final_win_low"], "win_high": m["final_win_high"], "games": m["final_games"],
                     "env_steps": m["env_steps"], "train_s": m["train_s"]})
    order = list(ALPHA_MINI_TABLE)
    rows.sort(key=lambda r: order.index((r["gamma"], r["lambda"])))
    write_csv(os.path.join(out, "sweep.csv"), rows)
    baseline_rows = baselines(settings.variant, [color], args.final_games, seed=0)
    table = markdown_table(
        ["gamma", "lambda", "Alpha-Mini's win rate", f"ours ({rules}, {color}) [95% Wilson]", "env steps",
         "training time"],
        [[r["gamma"], r["lambda"], f"{r['alpha_mini_win_rate']:.3f}",
          f"**{r['win_rate']:.3f}** [{r['win_low']:.3f}, {r['win_high']:.3f}]", f"{r['env_steps']:,}",
          f"{r['train_s'] / 60:.1f} min"] for r in rows])
    text = f"""# gamma x lambda (Alpha-Mini's table 1), {args.backend}, {rules} rules, as {color}

Each grid point is one Ray Tune trial (one CPU each, {args.sweep_concurrency} at a time) training for
{args.sweep_steps:,} env steps against the random player with material shaping, then playing
{args.final_games:,} games greedily against it (`versus_random`, seed 0). Alpha-Mini trained longer (50,000
steps per iteration, several iterations) and evaluated over 10,000 games. Other settings as the main run.

{table}

Baselines against the random player, the same protocol:

{baseline_table(baseline_rows)}

Sweep wall-clock: {wall / 60:.1f} min, {args.sweep_concurrency} trials at once (they share the cores, so
per-trial training times depend on the concurrency). {machine_text(measured)} Runs:
`gamma<g>_lambda<l>/` (metrics.csv, tensorboard/, agent/); Tune's records: `tune/`.
"""
    with open(os.path.join(out, "sweep.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as exc:  # bad settings or a run directory in the way: say which, without a traceback
        sys.exit(f"error: {exc}")
