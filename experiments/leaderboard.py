"""Leaderboard: every available agent against random and each other, per variant.

    python experiments/leaderboard.py                         # gardner, gardner-kingcapture, 3x3: minutes on 2 cores
    python experiments/leaderboard.py --variant losalamos --games 20
    python experiments/leaderboard.py --variant checkers --games 20   # a board game
    python experiments/leaderboard.py --preset all-variants   # every variant, 20 games a pairing, engines at 10 nodes
    python -m experiments.leaderboard --preset quick          # a smoke test, as a module from the repository root

Agents (``agents.arena.leaderboard``): random, greedy, minimax at depths 1-3, Fairy-Stockfish (Stockfish
for 8x8) at 1/10/100 nodes where the variant has a UCI_Variant and the binary is installed, PerfectAgent
for 3x3, every saved agent found under ``--runs`` (a directory with ``agent.json`` whose agent names
its variant) and the zoo's agents (``agents.zoo``) at their casual setting (``--zoo rated``: the setting their
cards rate, up to seconds a move; ``--zoo none`` leaves them out). A board game's agents:
random, its alpha-beta at depths 1-3 and exact solver where it has them, OpenSpiel's MCTS bot at 10 and 100
simulations (``pip install open-spiel``), its saved agents and zoo agents. Each pairing plays ``--games``
games, colors alternating. Elo is fitted over all games of a
variant with random fixed at 0. The reference row is random against random over 1,000 games.

With ``--ladder`` every saved agent also plays its variant's published strength ladder (Fairy-Stockfish at
1/10/100/1000 nodes, agents/arena/ladder.py), one section each.

Writes leaderboard.md, leaderboard.csv, leaderboard.png and games.pgn under ``--out`` (default
runs/leaderboard/<time>/) and prints the table.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from typing import Annotated, Literal, Optional

from agents.runs import command_line, machine, machine_text, write_csv  # first: the OpenMP setting, before torch

import tyro

from agents.arena import all_games, write_pgn
from agents.arena.leaderboard import (
    DEFAULT_VARIANTS, ladder_section, leaderboard_plot, play_board, saved_players, variant_players, zoo_players)
from agents.spec import LOCAL_LIMITS, check_limits, is_board_game
from minichess_envs import VARIANTS, get_variant

Fixed = tyro.conf.Suppress  # set by a preset, not a flag


@dataclasses.dataclass
class Options:
    """Leaderboard: every available agent against random and each other, per variant."""

    variant: tuple[str, ...] = ()  # variants or board games, or all variants (none: gardner, gardner-kingcapture, 3x3
    # and the games of the saved agents under --runs)
    games: int = 100  # games per pairing
    runs: str = "runs"  # where to look for saved agents
    out: str = ""  # output folder (empty: runs/leaderboard/<time>)
    workers: int = 0  # game processes (0: one per core)
    engines: bool = True  # Fairy-Stockfish / Stockfish among the players
    zoo: Literal["casual", "rated", "none"] = "casual"  # the zoo's trained agents (agents.zoo) at this setting
    ladder: bool = False  # also play every saved agent through its variant's published strength ladder
    reference_games: Annotated[int, Fixed] = 1000  # random-vs-random games
    depths: Annotated[tuple[int, ...], Fixed] = (1, 2, 3)  # minimax depths
    nodes: Annotated[tuple[int, ...], Fixed] = (1, 10, 100)  # engine node budgets
    ladder_levels: Annotated[tuple[int, ...], Fixed] = (1, 10, 100, 1000)  # the ladder's node budgets
    ladder_openings: Annotated[Optional[int], Fixed] = None  # published openings, 2 games each a level (None: all)
    opening_plies: Annotated[int, Fixed] = 0  # random plies opening every game
    prior_draws: Annotated[float, Fixed] = 1.0  # virtual draws per pairing in the Elo fit
    seed: Annotated[int, Fixed] = 0


PRESETS = {
    "quick": dict(games=2, reference_games=20, depths=(1,), engines=False, ladder_levels=(1,), ladder_openings=2),
    "all-variants": dict(variant=("all",), games=20, nodes=(10,)),
}


def settings(args: Options) -> dict:
    """The keyword arguments of each variant's round robin (``agents.arena.leaderboard.play_board``)."""
    return dict(games=args.games, seed=args.seed, workers=args.workers or os.cpu_count() or 1,
                opening_plies=args.opening_plies, prior_draws=args.prior_draws, reference_games=args.reference_games)


def main(argv=None) -> None:
    args = command_line(Options(), PRESETS, argv)
    for spec in [f"minimax:{d}" for d in args.depths] + [f"fairy-stockfish:{n}" for n in args.nodes]:
        check_limits(spec, LOCAL_LIMITS)  # the bounds `minichess play` has: refuses depth 0, -1 or 99 up front
    board_args = settings(args)
    start, measured = time.perf_counter(), machine()
    saved = saved_players(args.runs)
    if not args.variant:  # the zoo's agents join the boards played; a saved agent of another game adds its board
        variants = list(DEFAULT_VARIANTS) + sorted({v for v, _, _ in saved} - set(DEFAULT_VARIANTS))
    elif tuple(args.variant) == ("all",):
        variants = list(VARIANTS)
    else:
        variants = [v if is_board_game(v) else get_variant(v).name for v in args.variant]
    saved += zoo_players(casual=args.zoo == "casual") if args.zoo != "none" else []
    out = args.out or os.path.join(args.runs, "leaderboard", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    print(f"checkpoints found: {len(saved)}; variants: {', '.join(variants)}; workers: {board_args['workers']}")

    boards = {}
    for variant in variants:
        players = variant_players(variant, saved, args.depths, args.nodes, args.engines,
                                  os.path.basename(os.path.normpath(args.runs)))
        boards[variant] = play_board(variant, players, **board_args)
    sections = [board.markdown() for board in boards.values()]
    if args.ladder:
        sections += filter(None, (ladder_section(v, name, agent, args.ladder_levels, args.ladder_openings,
                                                 board_args["workers"]) for v, name, agent in saved if v in variants))

    header = (f"# Leaderboard\n\n{datetime.datetime.now():%Y-%m-%d %H:%M}, seed {args.seed}, {args.games} games per "
              f"pairing (colors alternate), {args.opening_plies} random opening plies. Elo: maximum likelihood "
              f"(logistic model, draws half a point) over all games of the variant, random = 0, with "
              f"{args.prior_draws:g} virtual draw(s) per pairing so that all-win scores stay finite; 95% "
              "profile-likelihood intervals. Scores: Wilson 95% intervals. Games reaching the ply limit are "
              "scored as draws (\"ply limit\"). The reference row is random against random, from the side moving "
              "first (White in chess). "
              f"{machine_text(measured)}\n")
    text = header + "\n" + "\n".join(sections)
    with open(os.path.join(out, "leaderboard.md"), "w") as f:
        f.write(text)
    write_csv(os.path.join(out, "leaderboard.csv"), [row for board in boards.values() for row in board.csv_rows()])
    leaderboard_plot({v: board.rows for v, board in boards.items()}, os.path.join(out, "leaderboard.png"))
    n = write_pgn([g for board in boards.values() for g in all_games(board.matches)], os.path.join(out, "games.pgn"))
    print()
    print(text)
    print(f"wrote {out}/leaderboard.md, leaderboard.csv, leaderboard.png, games.pgn ({n} games) "
          f"in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
