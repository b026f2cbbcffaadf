"""Leaderboard: every available agent against random and each other, per variant.

    python experiments/leaderboard.py                         # gardner, gardner-kingcapture, 3x3: under a minute on 2 cores
    python experiments/leaderboard.py --variant losalamos --games 20
    python experiments/leaderboard.py --variant all --games 20 --nodes 10
    python -m experiments.leaderboard --variant 3x3 --games 10 # as a module, from the repository root

Agents: random, greedy, minimax at ``--depths``, Fairy-Stockfish (Stockfish for
8x8) at ``--nodes`` where the variant has a UCI_Variant and the binary is
installed, PerfectAgent for 3x3, and every
checkpoint found under ``--runs`` (a directory with ``agent.json`` whose agent
names its variant). Each pairing plays ``--games`` games, colors alternating.
Elo is fitted over all games of a variant with random fixed at 0. The
reference row is random against random over ``--reference-games`` games.

With ``--ladder`` every checkpoint also plays its variant's published strength ladder
(Fairy-Stockfish at fixed node budgets, agents/arena/ladder.py), one section each.

Writes leaderboard.md, leaderboard.csv, leaderboard.png and games.pgn under
``--out`` (default runs/leaderboard/<time>/) and prints the table.
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime
import os
import time

import agents
from agents import GreedyAgent, MinimaxAgent, RandomAgent, UCIEngineAgent
from agents.arena import (
    all_games, close_agents, color_tally, game_seed, play_game, rating_results, run_tournament, tally, write_pgn,
)
from agents.arena.ladder import Ladder, ladder_table, play_ladder
from agents.players.perfect import PerfectAgent
from agents.arena.ratings import elo_mle
from agents.runs import machine, machine_text
from agents.spec import LOCAL_LIMITS, check_limits
from minichess_envs import VARIANTS, get_variant
from minichess_envs.variants import Variant

DEFAULT_VARIANTS = ("gardner", "gardner-kingcapture", "3x3")


def discover_checkpoints(runs: str) -> list[tuple[str, str, object]]:
    """``(variant, name, agent)`` for every loadable ``agent.json`` under ``runs`` (not the leaderboards)."""
    found = []
    if not os.path.isdir(runs):
        return found
    for root, dirs, files in os.walk(runs):
        dirs[:] = sorted(d for d in dirs if os.path.join(root, d) != os.path.join(runs, "leaderboard"))
        if agents.base.MANIFEST not in files:
            continue
        name = os.path.relpath(root, runs)
        try:
            agent = agents.load(root)
            variant = getattr(agent, "variant", None) or agents.base.manifest_game(root)
            variant = get_variant(variant).name if isinstance(variant, (str, Variant)) else None
        except Exception as exc:  # one broken checkpoint must not stop the leaderboard
            print(f"skipping checkpoint {root}: {type(exc).__name__}: {exc}")
            continue
        if variant is None:
            print(f"skipping checkpoint {root}: neither the agent nor its agent.json names a variant")
            continue
        agent.name = name
        found.append((variant, name, agent))
    return found


def variant_agents(variant: str, args, checkpoints) -> list:
    """Baselines, engines, the tablebase player and checkpoints for one variant."""
    players = [RandomAgent(), GreedyAgent()] + [MinimaxAgent(d) for d in args.depths]
    if variant == "3x3":
        players.append(PerfectAgent("3x3"))
    if not args.no_engines and get_variant(variant).fairy_stockfish:
        for nodes in args.nodes:
            try:
                players.append(UCIEngineAgent(variant, nodes=nodes))
            except (agents.EngineNotFoundError, ValueError) as exc:
                print(f"{variant}: no engine: {exc}")
                break
    for v, name, agent in checkpoints:
        if v == variant:
            taken = {p.name for p in players}
            agent.name = name if name not in taken else f"{os.path.basename(os.path.normpath(args.runs))}/{name}"
            players.append(agent)
    return players


def reference(variant: str, games: int, seed: int):
    """Random against random: the color balance of the variant."""
    player = RandomAgent()
    records = [play_game(player, player, variant, game_seed(seed, i), pgn=False) for i in range(games)]
    return color_tally(records), sum(r.plies for r in records) / max(1, games)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def ci(low: float, high: float, scale: float = 100, digits: int = 1) -> str:
    return f"[{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


def standings(variant, names, matches, prior_draws):
    """One row per agent: Elo, its interval, results against random (per color) and overall."""
    games = all_games(matches)
    ratings = elo_mle(rating_results(games), anchor="random", prior_draws=prior_draws, players=names)
    rows = []
    for rank, (name, r) in enumerate(ratings.items(), 1):
        overall = tally(games, name)
        vs = {c: tally(games, name, "random", c) for c in ("white", "black", None)} if name != "random" else {}
        rows.append(dict(variant=variant, rank=rank, agent=name, elo=r.elo, elo_low=r.low, elo_high=r.high,
                         games=overall.games, overall=overall, vs_random=vs))
    return rows


def markdown(variant, rows, ref, ref_plies, ref_games, matches, names) -> str:
    lines = [f"## {variant}", "",
             "| rank | agent | Elo | 95% CI | vs random as White | vs random as Black | score vs random "
             "| score vs all | games |",
             "|---:|---|---:|---|---|---|---|---|---:|"]
    for row in rows:
        o, vs = row["overall"], row["vs_random"]
        if vs:
            s = vs[None]
            vs_cells = (f"+{vs['white'].wins} ={vs['white'].draws} -{vs['white'].losses}",
                        f"+{vs['black'].wins} ={vs['black'].draws} -{vs['black'].losses}",
                        f"{pct(s.score)} {ci(*s.interval)}")
        else:
            vs_cells = ("", "", "")
        lines.append(f"| {row['rank']} | {row['agent']} | {row['elo']:.0f} | {ci(row['elo_low'], row['elo_high'], 1, 0)} "
                     f"| {' | '.join(vs_cells)} | {pct(o.score)} {ci(*o.interval)} | {o.games} |")
    w, d, b = ref.rate_interval("wins"), ref.rate_interval("draws"), ref.rate_interval("losses")
    lines.append(f"| ref | random vs random | 0 | | White wins {pct(ref.wins / ref.games)} {ci(*w)} "
                 f"| Black wins {pct(ref.losses / ref.games)} {ci(*b)} | draws {pct(ref.draws / ref.games)} {ci(*d)} "
                 f"| White's score {pct(ref.score)} | {ref.games} |")
    lines += ["", f"Reference: {ref_games} random-vs-random games, {ref_plies:.1f} plies on average.", "",
              "Score of the row agent against the column agent:", "",
              "| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    score = {}
    for m in matches:
        t = m.tally()
        score[m.a, m.b], score[m.b, m.a] = t.score, 1 - t.score
    for a in names:
        lines.append(f"| {a} | " + " | ".join(pct(score[a, b]) if (a, b) in score else "" for b in names) + " |")
    terminations = collections.Counter(g.termination for g in all_games(matches))
    lines += ["", "Game ends: " + ", ".join(f"{k} {v}" for k, v in terminations.most_common()), ""]
    return "\n".join(lines)


def csv_rows(rows, ref, variant):
    out = []
    for row in rows:
        o, vs = row["overall"], row["vs_random"].get(None)
        out.append(dict(variant=variant, kind="agent", rank=row["rank"], agent=row["agent"],
                        elo=round(row["elo"], 1), elo_low=round(row["elo_low"], 1), elo_high=round(row["elo_high"], 1),
                        games=o.games, wins=o.wins, draws=o.draws, losses=o.losses, score=round(o.score, 4),
                        score_low=round(o.interval[0], 4), score_high=round(o.interval[1], 4),
                        **_vs_columns(vs)))
    # The reference row counts from White's side: wins = White wins, losses = Black wins.
    out.append(dict(variant=variant, kind="reference", rank="", agent="random vs random (White)", elo=0.0,
                    elo_low="", elo_high="", games=ref.games, wins=ref.wins, draws=ref.draws, losses=ref.losses,
                    score=round(ref.score, 4), score_low=round(ref.interval[0], 4),
                    score_high=round(ref.interval[1], 4), **_vs_columns(None)))
    return out


def _vs_columns(t):
    if t is None:
        return dict(vs_random_wins="", vs_random_draws="", vs_random_losses="", vs_random_score="",
                    vs_random_low="", vs_random_high="")
    return dict(vs_random_wins=t.wins, vs_random_draws=t.draws, vs_random_losses=t.losses,
                vs_random_score=round(t.score, 4), vs_random_low=round(t.interval[0], 4),
                vs_random_high=round(t.interval[1], 4))


def ladder_sections(checkpoints, variants, args) -> list[str]:
    """Markdown sections: each checkpoint against its variant's published Fairy-Stockfish ladder."""
    sections = []
    for variant, name, agent in checkpoints:
        if variant not in variants:
            continue
        try:
            ladder = Ladder.load(variant)
        except ValueError as exc:
            print(f"{name}: no ladder: {exc}")
            continue
        t0 = time.perf_counter()
        try:
            result = play_ladder(agent, variant, tuple(args.ladder_levels), ladder, openings=args.ladder_openings,
                                 workers=args.workers)
        except (agents.EngineNotFoundError, ValueError) as exc:
            print(f"{name}: ladder not played: {exc}")
            continue
        games = 2 * len(ladder.openings[:args.ladder_openings] if args.ladder_openings else ladder.openings)
        print(f"[{variant} ladder] {name}: Elo {result.elo.elo:+.0f} in {time.perf_counter() - t0:.0f} s", flush=True)
        sections.append(f"## Strength ladder: {name} ({variant})\n\nFairy-Stockfish at fixed node budgets from the "
                        f"published balanced openings, {games} games a level (both colors of each); levels' Elo "
                        f"from the published calibration (fsf-n1 = 0); see docs/ladder.md.\n\n"
                        f"{ladder_table(result)}\n")
    return sections


def plot(results, path: str) -> bool:
    """Elo with 95% intervals, one panel per variant; False if matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no leaderboard.png (pip install matplotlib)")
        return False
    # the width grows with the longest agent name, so the panels keep their width and titles fit
    longest = max(len(r["agent"]) for rows in results.values() for r in rows)
    height = 0.5 + 0.9 * len(results) + 0.4 * sum(len(r) for r in results.values())
    fig, axes = plt.subplots(len(results), 1, figsize=(4.5 + 0.085 * longest, height), squeeze=False)
    fig.suptitle("Elo, random = 0 (95% profile-likelihood intervals)", fontsize=10)
    for ax, (variant, rows) in zip(axes[:, 0], results.items()):
        rows = rows[::-1]  # strongest on top
        y = range(len(rows))
        elo = [r["elo"] for r in rows]
        err = [[r["elo"] - r["elo_low"] for r in rows], [r["elo_high"] - r["elo"] for r in rows]]
        ax.errorbar(elo, y, xerr=err, fmt="o", capsize=3)
        ax.set_yticks(list(y), [r["agent"] for r in rows])
        ax.axvline(0, color="grey", lw=0.8, ls="--")
        ax.set_title(variant, fontsize=10, loc="left")
        ax.set_xlabel("Elo")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", nargs="+", default=None,
                   help="variants, or 'all' (default: gardner, gardner-kingcapture, 3x3 and every variant a checkpoint plays)")
    p.add_argument("--games", type=int, default=100, help="games per pairing (default 100)")
    p.add_argument("--reference-games", type=int, default=1000, help="random-vs-random games (default 1000)")
    p.add_argument("--depths", type=int, nargs="*", default=[1, 2, 3], help="minimax depths (default 1 2 3)")
    p.add_argument("--nodes", type=int, nargs="*", default=[1, 10, 100], help="engine node budgets (default 1 10 100)")
    p.add_argument("--no-engines", action="store_true", help="leave out Fairy-Stockfish / Stockfish")
    p.add_argument("--opening-plies", type=int, default=0,
                   help="random plies opening every game, to vary engine-vs-engine games (default 0)")
    p.add_argument("--prior-draws", type=float, default=1.0,
                   help="virtual draws per pairing in the Elo fit; keeps all-win scores finite (default 1)")
    p.add_argument("--runs", default="runs", help="where to look for checkpoints (default runs/)")
    p.add_argument("--out", default=None, help="output folder (default runs/leaderboard/<time>)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="game processes (default: all cores)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ladder", action="store_true",
                   help="also play every checkpoint through its variant's published strength ladder (agents/arena/ladder.py)")
    p.add_argument("--ladder-levels", type=int, nargs="*", default=[1, 10, 100, 1000],
                   help="Fairy-Stockfish node budgets of the ladder (default 1 10 100 1000)")
    p.add_argument("--ladder-openings", type=int, default=None,
                   help="published openings used, 2 games each per level (default: all)")
    args = p.parse_args(argv)
    for spec in [f"minimax:{d}" for d in args.depths] + [f"fairy-stockfish:{n}" for n in args.nodes]:
        check_limits(spec, LOCAL_LIMITS)  # the bounds `minichess play` has: refuses depth 0, -1 or 99 up front

    start = time.perf_counter()
    measured = machine()
    checkpoints = discover_checkpoints(args.runs)
    if args.variant is None:
        variants = list(DEFAULT_VARIANTS) + sorted({v for v, _, _ in checkpoints} - set(DEFAULT_VARIANTS))
    elif args.variant == ["all"]:
        variants = list(VARIANTS)
    else:
        variants = [get_variant(v).name for v in args.variant]
    out = args.out or os.path.join(args.runs, "leaderboard", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    print(f"checkpoints found: {len(checkpoints)}; variants: {', '.join(variants)}; workers: {args.workers}")

    results, sections, table, games = {}, [], [], []
    for variant in variants:
        t0 = time.perf_counter()
        ref, ref_plies = reference(variant, args.reference_games, args.seed)
        print(f"[{variant}] random vs random over {ref.games} games: White {pct(ref.wins / ref.games)}, "
              f"draws {pct(ref.draws / ref.games)}, Black {pct(ref.losses / ref.games)}")
        players = variant_agents(variant, args, checkpoints)
        names = [a.name for a in players]
        pairings = [(i, j) for i in range(len(players)) for j in range(i + 1, len(players))]
        done = collections.Counter()

        def progress(record, n, total, t0=t0, pairings=pairings, names=names):
            p_index = int(record.round.split(".")[0]) - 1
            done[p_index] += 1
            if done[p_index] == args.games:
                i, j = pairings[p_index]
                print(f"[{variant} {sum(c == args.games for c in done.values())}/{len(pairings)}] "
                      f"{names[i]} vs {names[j]} done; {n}/{total} games, {time.perf_counter() - t0:.0f} s",
                      flush=True)

        try:
            matches = run_tournament(players, variant, args.games, args.seed, workers=args.workers,
                                     progress=progress, illegal="forfeit", opening_plies=args.opening_plies)
        finally:
            close_agents(players)
        rows = standings(variant, names, matches, args.prior_draws)
        results[variant] = rows
        sections.append(markdown(variant, rows, ref, ref_plies, args.reference_games, matches, names))
        table += csv_rows(rows, ref, variant)
        games += all_games(matches)
        print(f"[{variant}] {len(all_games(matches))} games in {time.perf_counter() - t0:.0f} s")

    if args.ladder:
        sections += ladder_sections(checkpoints, variants, args)

    header = (f"# Leaderboard\n\n{datetime.datetime.now():%Y-%m-%d %H:%M}, seed {args.seed}, {args.games} games per "
              f"pairing (colors alternate), {args.opening_plies} random opening plies. Elo: maximum likelihood "
              f"(logistic model, draws half a point) over all games of the variant, random = 0, with "
              f"{args.prior_draws:g} virtual draw(s) per pairing so that all-win scores stay finite; 95% "
              "profile-likelihood intervals. Scores: Wilson 95% intervals. Games reaching the ply limit are "
              "scored as draws (\"ply limit\"). The reference row is random against random, from White's side. "
              f"{machine_text(measured)}\n")
    text = header + "\n" + "\n".join(sections)
    with open(os.path.join(out, "leaderboard.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "leaderboard.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    plot(results, os.path.join(out, "leaderboard.png"))
    n = write_pgn(games, os.path.join(out, "games.pgn"))
    print()
    print(text)
    print(f"wrote {out}/leaderboard.md, leaderboard.csv, leaderboard.png, games.pgn ({n} games) "
          f"in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
