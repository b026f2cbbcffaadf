"""PPO and AlphaZero on one footing: same variant, same opponents, same games per color, same seeds.

    python experiments/compare.py                           # 3x3 and gardner
    python experiments/compare.py --variant 3x3 --games 500 --h2h-games 100
    python -m experiments.compare --variant 3x3                # as a module, from the repository root
    python experiments/compare.py --preset quick               # a smoke test

For each variant the players are

* PPO: the greedy PPO policy (both colors; on gardner the policy of
  ``experiments/ppo_gardner.py`` under the AlphaZero run's rules: the built-in
  backend's one network for both colors, else RLlib's white and black policies
  joined by ``ByColorAgent``; on 3x3 one policy trained as either color from
  random legal starts). A missing PPO policy is trained here first (built-in
  PPO, 250,000 env steps) under runs/compare/;
* AlphaZero: ``runs/alphazero_<variant>/agent`` with its search, and its raw
  policy (no search). Absent runs are reported as absent and skipped;
* baselines: the random player, greedy capture, minimax depth 1 and 2
  (``agents.arena.evaluation.BASELINES``), no training.

Protocol, identical for every player: ``versus_random`` over ``--games`` games
per color (seed 0); on 3x3, ``score_agent`` against the exact tablebase on
every non-terminal position; head to head, ``--h2h-games`` games in pairs:
each pair starts from the same two random plies (both players
are deterministic) and swaps colors, seeds ``game_seed(0, k)``. Training
cost: env steps (PPO: a learner move plus the random reply; AlphaZero:
self-play positions, one ply each), training wall-clock without evaluation,
and the CPU cores the run used.

Writes runs/compare/report.md, compare.csv (and h2h.csv) and compare.png (the win rates against random with
their intervals) and prints the table; progress bars show the games played as it goes.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Annotated, Literal

from agents.runs import (  # first: the OpenMP setting, before torch
    Progress, checkpoint_dir, command_line, machine, machine_text, read_state, training_seconds, write_csv)

import tyro

import agents
from agents.arena import game_seed, play_game, tally
from agents.arena.evaluation import BASELINES, RandomMatch, versus_random
from agents.ppo.common import PPOSettings
from agents.reports import interval_bars_plot, markdown_table

COLORS = ("white", "black")
Fixed = tyro.conf.Suppress  # set by a preset, not a flag


@dataclasses.dataclass
class Options:
    """PPO and AlphaZero on one footing: same variant, same opponents, same games per color, same seeds."""

    variant: Literal["3x3", "gardner", "both"] = "both"
    out: str = "runs/compare"  # report.md, compare.csv, h2h.csv, compare.png, and PPO runs trained here
    runs: str = "runs"  # where the AlphaZero and PPO runs are
    games: int = 1000  # games per color against the random player
    h2h_games: int = 200  # PPO against each AlphaZero player, in color-swapped pairs
    opening_plies: Annotated[int, Fixed] = 2  # random plies at the start of head-to-head games
    ppo_steps: Annotated[int, Fixed] = 250_000  # env steps for a PPO policy trained here
    threads: Annotated[int, Fixed] = 1  # torch threads


PRESETS = {"quick": dict(games=20, h2h_games=4, ppo_steps=2_000)}  # a smoke test


@dataclasses.dataclass
class Player:
    """One row of the comparison: an agent and what its training cost."""

    label: str
    agent: object
    family: str  # "PPO" or "AlphaZero"
    env_steps: int | None = None
    env_step_unit: str = ""
    train_s: float | None = None
    cores: str = "?"
    source: str = ""


# -- the players ----------------------------------------------------------------------------------


def alphazero_players(variant: str, args) -> tuple[list[Player], str | None]:
    """The AlphaZero run's searching agent and raw policy, or ``([], why not)``."""
    run = os.path.join(args.runs, f"alphazero_{variant}")
    path = os.path.join(run, "agent")
    if not os.path.exists(os.path.join(path, "agent.json")):
        script = f"experiments/alphazero_{variant}.py"
        return [], f"no AlphaZero agent at {path} (run {script} first); its rows are skipped"
    from agents.alphazero.agent import AlphaZeroAgent

    searching = AlphaZeroAgent.load(path)
    raw = AlphaZeroAgent.load(path, simulations=0)
    searching.name, raw.name = f"alphazero-mcts{searching.simulations}", "alphazero-raw"
    steps, seconds, cores = alphazero_cost(run)
    rows = [Player(f"AlphaZero, MCTS {searching.simulations} simulations", searching, "AlphaZero", steps,
                   "self-play positions", seconds, cores, path),
            Player("AlphaZero, raw policy (no search)", raw, "AlphaZero", steps, "self-play positions", seconds, cores,
                   path)]
    return rows, None


def alphazero_cost(run: str) -> tuple[int | None, float | None, str]:
    """Self-play positions, training seconds (evaluation excluded) and the cores used, from the run's checkpoint."""
    found = checkpoint_dir(run)
    if found is None:
        return None, None, f"? ({os.cpu_count()}-core machine)"
    state = read_state(found)
    positions = sum(int(m["samples"]) for m in state.metrics)
    scale = state.settings.get("scale", {})
    threads, workers = scale.get("threads") or "default", scale.get("workers", 0)
    kind = "Ray actors" if scale.get("ray_address") else "worker processes"
    where = "in process" if not workers else f"in {workers} {kind}"
    return (positions, training_seconds(state.metrics),
            f"{threads} torch threads, self-play {where} ({os.cpu_count()}-core machine)")


def ppo_player(variant: str, az_variant: str | None, args) -> Player:
    """The PPO policy for the variant (trained here first if missing), with its cost."""
    from agents.ppo.agent import ByColorAgent

    if variant == "3x3":
        run = os.path.join(args.out, "ppo_3x3")
        # From random legal starts as either color (AlphaZero's 3x3 curriculum starts 75% of its games
        # there); gamma 0.9: on 3x3 it beat Alpha-Mini's 0.3 against random from the start position, with the
        # same tablebase score, in a 120k-step trial of each.
        settings = PPOSettings(variant="3x3", start="random", agent_color="random", gamma=0.9,
                               threads=args.threads)
        state = ensure_ppo(settings, run, args)
        agent = agents.load(os.path.join(run, "agent"))
        agent.name = "ppo"
        return Player("PPO (greedy policy)", agent, "PPO", state.env_steps, "learner moves (+ random replies)",
                      training_seconds(state.metrics), f"1 process, {settings.threads} torch thread(s) "
                      f"({os.cpu_count()}-core machine)", run)
    rules = "checkmate" if (az_variant or "gardner") == "gardner" else "kingcapture"
    name = {"checkmate": "gardner", "kingcapture": "gardner-kingcapture"}[rules]
    native = os.path.join(args.runs, "ppo_gardner", f"native_{rules}_random")
    found = checkpoint_dir(native)
    if found is not None and os.path.exists(os.path.join(native, "agent", "agent.json")):
        state = read_state(found)
        agent = agents.load(os.path.join(native, "agent"))
        agent.name = "ppo"
        return Player(f"PPO (greedy; one network for both colors, {rules} rules)", agent, "PPO", state.env_steps,
                      "learner moves (+ opponent replies)", training_seconds(state.metrics),
                      f"1 process, {state.settings.get('threads', 1)} torch thread(s) ({os.cpu_count()}-core machine)",
                      native)
    parts, states = {}, []
    for color in COLORS:
        run = os.path.join(args.runs, "ppo_gardner", f"rllib_{rules}_{color}")
        if not os.path.exists(os.path.join(run, "agent", "agent.json")):
            run = os.path.join(args.out, f"ppo_{rules}_{color}")
        settings = PPOSettings(variant=name, agent_color=color, threads=args.threads)
        states.append(ensure_ppo(settings, run, args))
        parts[color] = agents.load(os.path.join(run, "agent"))
    agent = ByColorAgent(parts["white"], parts["black"], name, name="ppo")
    return Player(f"PPO (greedy; white and black policies, {rules} rules)", agent, "PPO",
                  sum(s.env_steps for s in states), "learner moves (+ random replies)",
                  sum(training_seconds(s.metrics) for s in states),
                  f"1 process, 1 torch thread ({os.cpu_count()}-core machine)",
                  os.path.dirname(run))


def ensure_ppo(settings: PPOSettings, run: str, args):
    """The run's saved state, training it first when it has no agent yet."""
    found = checkpoint_dir(run)
    if found is not None and os.path.exists(os.path.join(run, "agent", "agent.json")):
        return read_state(found)
    from agents.ppo.common import train

    print(f"no PPO policy at {run}: training one with the built-in PPO ({args.ppo_steps:,} env steps) ...",
          flush=True)
    return train(settings, run, env_steps=args.ppo_steps, eval_games=100, eval_every=5, resume=True)


# -- the protocol ---------------------------------------------------------------------------------


def versus_random_shown(agent, variant: str, games: int, color: str, bar: Progress, done: int) -> RandomMatch:
    """``versus_random(agent, variant, games, color, seed=0)``, played in its own batches of 250 games so that
    ``bar`` moves after each (game ``i`` has seed ``i`` and batches start at multiples of 250 either way, so the
    games are the same)."""
    parts = []
    for first in range(0, games, 250):
        parts.append(versus_random(agent, variant, games=min(250, games - first), color=color, seed=first))
        bar.update(done + first + parts[-1].games, f"as {color}")
    total = sum(m.games for m in parts)
    return RandomMatch(sum(m.wins for m in parts), sum(m.draws for m in parts), sum(m.losses for m in parts),
                       variant=parts[0].variant, color=color, truncated=sum(m.truncated for m in parts),
                       mean_plies=sum(m.mean_plies * m.games for m in parts) / total)


def evaluate_player(player: Player, variant: str, args, tablebase=None) -> dict:
    row = {"variant": variant, "player": player.label}
    t = time.perf_counter()
    with Progress(2 * args.games, f"{variant}: {player.label} vs random", unit="game") as bar:
        matches = [versus_random_shown(player.agent, variant, args.games, color, bar, k * args.games)
                   for k, color in enumerate(COLORS)]
    for color, match in zip(COLORS, matches):
        lo, hi = match.win_interval
        row.update({f"vs_random_{color}_wins": match.wins, f"vs_random_{color}_draws": match.draws,
                    f"vs_random_{color}_losses": match.losses, f"vs_random_{color}_win_rate": match.win_rate,
                    f"vs_random_{color}_low": lo, f"vs_random_{color}_high": hi})
    if tablebase is not None:
        from minichess_envs.tablebase import score_agent

        bar = None

        def shown(done: int, total: int) -> None:  # the bar starts at the first batch: total unknown before
            nonlocal bar
            bar = bar or Progress(total, f"{variant}: {player.label}, tablebase", unit="position")
            bar.update(done)

        rates = score_agent(player.agent, tablebase, progress=shown).rates()
        if bar is not None:
            bar.close()
        row.update({"tb_positions": rates["positions"], "tb_value_preserving": rates["value_preserving"],
                    "tb_dtm_optimal": rates["dtm_optimal"], "tb_win_to_draw": rates["win->draw"],
                    "tb_win_to_loss": rates["win->loss"], "tb_draw_to_loss": rates["draw->loss"]})
    row.update({"env_steps": player.env_steps, "env_step_unit": player.env_step_unit, "train_s": player.train_s,
                "cores": player.cores, "source": player.source, "eval_s": time.perf_counter() - t})
    return row


def head_to_head(ppo: Player, other: Player, variant: str, args) -> dict:
    """Games in pairs: each random opening is played twice, colors swapped, so no side keeps a lucky start.

    The arena draws a game's opening plies from its seed alone, so both games of a pair open alike.
    """
    records = []
    pairs = max(1, args.h2h_games // 2)
    with Progress(2 * pairs, f"{variant}: PPO vs {other.label}", unit="game") as bar:
        for k in range(pairs):
            seed = game_seed(0, k)
            for white, black in ((ppo.agent, other.agent), (other.agent, ppo.agent)):
                records.append(play_game(white, black, variant, seed, opening_plies=args.opening_plies, pgn=False))
            bar.update(len(records))
    total = tally(records, ppo.agent.name)
    lo, hi = total.interval
    row = {"variant": variant, "ppo": ppo.label, "opponent": other.label, "games": total.games,
           "ppo_wins": total.wins, "draws": total.draws, "ppo_losses": total.losses, "ppo_score": total.score,
           "ppo_score_low": lo, "ppo_score_high": hi}
    for color in COLORS:
        t = tally(records, ppo.agent.name, color=color)
        row[f"ppo_as_{color}"] = f"+{t.wins} ={t.draws} -{t.losses}"
    return row


def main(argv=None) -> int:
    args = command_line(Options(), PRESETS, argv)
    if min(args.games, args.h2h_games, args.ppo_steps) < 1:
        raise SystemExit("--games, --h2h-games and --ppo-steps must be positive")
    import torch

    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    variants = ["3x3", "gardner"] if args.variant == "both" else [args.variant]
    rows, h2h, notes = [], [], []
    measured = machine()
    started = time.perf_counter()
    for key in variants:
        az, why = alphazero_players(key, args)
        if why:
            notes.append(f"{key}: {why}.")
            print(why, flush=True)
        variant = az[0].agent.variant.name if az else key
        ppo = ppo_player(key, variant, args)
        tablebase = None
        if key == "3x3":
            from minichess_envs.tablebase import Tablebase

            tablebase = Tablebase.load("3x3")
        baselines = [agents.from_spec(spec, variant, seed=0) for spec in BASELINES]
        baseline_players = [Player(f"baseline: {b.name}", b, "baseline", cores="-",
                                   source="agents.arena.evaluation.BASELINES") for b in baselines]
        for player in [ppo, *az, *baseline_players]:
            print(f"{variant}: evaluating {player.label} ...", flush=True)
            rows.append(evaluate_player(player, variant, args, tablebase))
        for other in az:
            print(f"{variant}: {ppo.label} against {other.label} ...", flush=True)
            h2h.append(head_to_head(ppo, other, variant, args))
    write_csv(os.path.join(args.out, "compare.csv"), rows)
    write_csv(os.path.join(args.out, "h2h.csv"), h2h)
    interval_bars_plot(os.path.join(args.out, "compare.png"), [f"{r['variant']}: {r['player']}" for r in rows],
                       {f"as {color}": [(r[f"vs_random_{color}_win_rate"], r[f"vs_random_{color}_low"],
                                         r[f"vs_random_{color}_high"]) for r in rows] for color in COLORS},
                       "win rate against the random player [95% Wilson interval]",
                       f"PPO, AlphaZero and baselines, {args.games:,} games per color")
    text = report(rows, h2h, notes, args, time.perf_counter() - started, machine_text(measured))
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def _rate(row: dict, color: str) -> str:
    return (f"{row[f'vs_random_{color}_win_rate']:.3f} [{row[f'vs_random_{color}_low']:.3f}, "
            f"{row[f'vs_random_{color}_high']:.3f}]")


def report(rows: list[dict], h2h: list[dict], notes: list[str], args, wall: float,
           measured_on: str) -> str:
    h2h_by = {(r["variant"], r["opponent"]): r for r in h2h}
    table_rows = []
    for r in rows:
        match = h2h_by.get((r["variant"], r["player"]))
        versus = "-" if match is None else f"{1 - match['ppo_score']:.3f} ({match['games']} games)"
        tb = (f"{r['tb_value_preserving']:.4f} / {r['tb_dtm_optimal']:.4f}" if "tb_value_preserving" in r
              else "-")
        steps = "-" if r["env_steps"] is None else f"{r['env_steps']:,}"
        seconds = "-" if r["train_s"] is None else f"{r['train_s'] / 60:.1f} min"
        table_rows.append([r["variant"], r["player"], _rate(r, "white"), _rate(r, "black"), tb, versus, steps,
                           seconds, r["cores"]])
    table = markdown_table(["variant", "player", "wins vs random as White [95%]", "as Black [95%]",
                            "3x3 tablebase: value-preserving / DTM-optimal", "score vs PPO (head to head)",
                            "training env steps", "training wall-clock", "CPU"], table_rows)
    h2h_table = markdown_table(
        ["variant", "PPO against", "games", "PPO +W =D -L", "PPO score [95% Wilson]", "PPO as White", "PPO as Black"],
        [[r["variant"], r["opponent"], r["games"], f"+{r['ppo_wins']} ={r['draws']} -{r['ppo_losses']}",
          f"{r['ppo_score']:.3f} [{r['ppo_score_low']:.3f}, {r['ppo_score_high']:.3f}]", r["ppo_as_white"],
          r["ppo_as_black"]] for r in h2h]) if h2h else "(no AlphaZero agent to play)"
    note_text = "".join(f"\n- {n}" for n in notes)
    return f"""# PPO and AlphaZero on one footing

Same protocol for every player: {args.games:,} games per color against the environments' random player
(`agents.arena.evaluation.versus_random`, seed 0, deterministic play); on 3x3 the move in every non-terminal
position scored against the exact tablebase (`score_agent`); head to head {args.h2h_games} games,
in pairs from {args.opening_plies} random opening plies, colors swapped within a pair (so a lucky opening
counts for both sides; `agents.arena.play_game`, seeds `game_seed(0, k)`).

{table}

The baselines (random, greedy capture, minimax depth 1 and 2 on material; `agents.arena.evaluation.BASELINES`) play
the same protocol and need no training.

Env steps are not the same unit: a PPO env step is the learner's move plus the random player's reply (about
two plies), an AlphaZero sample is one self-play position (one ply, searched with MCTS). Wall-clock is
training only (evaluation during training excluded), as measured when each run trained.

## Head to head

{h2h_table}
{note_text}

![Win rates against random](compare.png)

Whole comparison: {wall / 60:.1f} min. {measured_on} Rows: `compare.csv`, `h2h.csv`.
"""


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as exc:  # a corrupt run or agent: say which, without a traceback
        sys.exit(f"error: {exc}")
