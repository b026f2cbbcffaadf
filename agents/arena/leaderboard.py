"""The leaderboard: every available agent of a variant (or board game) against random and each other, with Elo and
tables.

experiments/leaderboard.py is the command line.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time
from typing import Sequence

from agents import EngineNotFoundError, GreedyAgent, MinimaxAgent, RandomAgent, UCIEngineAgent
from agents.arena import (all_games, close_agents, color_tally, game_seed, play_game, rating_results,
                          run_tournament, tally)
from agents.arena.ladder import Ladder, ladder_table, play_ladder
from agents.arena.ratings import elo_mle
from agents.base import MANIFEST, load
from agents.players.perfect import PerfectAgent
from agents.spec import agent_game, board_game_kinds, from_spec, is_board_game, saved_agents
from minichess_envs.variants import get_variant

DEFAULT_VARIANTS = ("gardner", "gardner-kingcapture", "3x3")


def saved_players(runs: str, skip: str = "leaderboard") -> list[tuple[str, str, object]]:
    """``(game, name, agent)`` for every loadable saved agent under ``runs`` (names relative to it; the game a
    chess variant or a board game), leaving out the folder ``skip`` (the leaderboards themselves); a broken one
    is skipped with a note."""
    found = []
    for name, path in saved_agents(runs).items():
        if name == skip or name.startswith(skip + os.sep):
            continue
        try:
            agent = load(path)
            variant = agent_game(agent, path)
        except Exception as exc:  # one broken checkpoint must not stop the leaderboard
            print(f"skipping checkpoint {path}: {type(exc).__name__}: {exc}")
            continue
        if variant is None:
            print(f"skipping checkpoint {path}: neither the agent nor its {MANIFEST} names a game")
            continue
        agent.name = name
        found.append((variant, name, agent))
    return found


def zoo_players(casual: bool = True) -> list[tuple[str, str, object]]:
    """``(game, spec, agent)`` for every zoo entry (:mod:`agents.zoo`): at its ``casual`` setting where it has one
    (a round robin plays every pairing, and a rated search takes up to a second a move), else at its rated one;
    one that does not load (an extra missing) is skipped with a note."""
    from agents import zoo

    found = []
    for name in zoo.names():
        try:
            card = zoo.card(name)
            agent = zoo.load(name, casual=casual and bool(card.casual))
            found.append((card.game, agent.name, agent))
        except Exception as exc:  # torch not installed, a damaged entry: the rest of the leaderboard goes on
            print(f"skipping zoo entry {name}: {type(exc).__name__}: {exc}")
    return found


def variant_players(variant: str, saved, depths: Sequence[int] = (1, 2, 3), nodes: Sequence[int] = (1, 10, 100),
                    engines: bool = True, runs_label: str = "runs") -> list:
    """Random, greedy, minimax at ``depths``, the tablebase player on 3x3, Fairy-Stockfish (Stockfish on 8x8)
    at ``nodes`` where installed (a board game's players instead: :func:`board_game_players`, OpenSpiel's bot
    where ``engines``), and the ``saved`` agents of ``variant`` (a name a baseline holds is prefixed with
    ``runs_label``)."""
    if is_board_game(variant):
        players = board_game_players(variant, depths, outside=engines)
    else:
        players = [RandomAgent(), GreedyAgent()] + [MinimaxAgent(d) for d in depths]
        if variant == "3x3":
            players.append(PerfectAgent("3x3"))
        if engines and get_variant(variant).fairy_stockfish:
            for n in nodes:
                try:
                    players.append(UCIEngineAgent(variant, nodes=n))
                except (EngineNotFoundError, ValueError) as exc:
                    print(f"{variant}: no engine: {exc}")
                    break
    for v, name, agent in saved:
        if v == variant:
            taken = {p.name for p in players}
            agent.name = name if name not in taken else f"{runs_label}/{name}"
            players.append(agent)
    return players


def board_game_players(game: str, depths: Sequence[int] = (1, 2, 3), simulations: Sequence[int] = (10, 100),
                       outside: bool = True) -> list:
    """Random, the game's alpha-beta at ``depths``, its exact solver and OpenSpiel's MCTS bot at ``simulations`` (where
    ``agents.spec.board_game_kinds`` has them, the bot only when ``outside`` and installed)."""
    players, kinds = [RandomAgent()], board_game_kinds(game)
    if "alpha-beta" in kinds:
        players += [from_spec(f"alpha-beta:{d}", game) for d in depths]
    if "perfect" in kinds:
        try:
            players.append(from_spec("perfect", game))
        except (ValueError, ImportError) as exc:  # too big a board, or the solver's extra missing
            print(f"{game}: no exact player: {exc}")
    if outside and "openspiel-mcts" in kinds:
        try:
            players += [from_spec(f"openspiel-mcts:{n}", game) for n in simulations]
        except ImportError as exc:
            print(f"{game}: no OpenSpiel MCTS: {exc}")
    return players


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def wdl(t) -> str:
    return f"+{t.wins} ={t.draws} -{t.losses}"


def ci(low: float, high: float, scale: float = 100, digits: int = 1) -> str:
    return f"[{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


@dataclasses.dataclass
class Board:
    """One variant's leaderboard: the standings (one dict per agent, strongest first), the matches and the
    random-vs-random reference."""

    variant: str
    names: list
    matches: list
    rows: list
    reference: object
    reference_plies: float

    def markdown(self) -> str:
        """The variant's section: standings with Elo and results against random, the reference row, the
        score of every pairing and how the games ended."""
        first, second = ("first", "second") if is_board_game(self.variant) else ("White", "Black")
        lines = [f"## {self.variant}", "",
                 f"| rank | agent | Elo | 95% CI | vs random as {first} | vs random as {second} | score vs random "
                 "| score vs all | games |",
                 "|---:|---|---:|---|---|---|---|---|---:|"]
        for row in self.rows:
            o, vs = row["overall"], row["vs_random"]
            vs_cells = ("", "", "")
            if vs:
                vs_cells = (wdl(vs["white"]), wdl(vs["black"]), f"{pct(vs[None].score)} {ci(*vs[None].interval)}")
            lines.append(f"| {row['rank']} | {row['agent']} | {row['elo']:.0f} | "
                         f"{ci(row['elo_low'], row['elo_high'], 1, 0)} | {' | '.join(vs_cells)} "
                         f"| {pct(o.score)} {ci(*o.interval)} | {o.games} |")
        ref = self.reference
        w, d, b = ref.rate_interval("wins"), ref.rate_interval("draws"), ref.rate_interval("losses")
        lines.append(f"| ref | random vs random | 0 | | {first} wins {pct(ref.wins / ref.games)} {ci(*w)} "
                     f"| {second} wins {pct(ref.losses / ref.games)} {ci(*b)} | draws {pct(ref.draws / ref.games)} "
                     f"{ci(*d)} | {first}'s score {pct(ref.score)} | {ref.games} |")
        names = self.names
        lines += ["", f"Reference: {ref.games} random-vs-random games, {self.reference_plies:.1f} plies on average.",
                  "", "Score of the row agent against the column agent:", "",
                  "| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        score = {}
        for m in self.matches:
            score[m.a, m.b] = m.tally().score
            score[m.b, m.a] = 1 - score[m.a, m.b]
        for a in names:
            lines.append(f"| {a} | " + " | ".join(pct(score[a, b]) if (a, b) in score else "" for b in names) + " |")
        terminations = collections.Counter(g.termination for g in all_games(self.matches))
        lines += ["", "Game ends: " + ", ".join(f"{k} {v}" for k, v in terminations.most_common()), ""]
        return "\n".join(lines)

    def csv_rows(self) -> list[dict]:
        """One row per agent and the reference row (counted from White's side: wins = White wins)."""
        out = [dict(variant=self.variant, kind="agent", rank=row["rank"], agent=row["agent"], elo=round(row["elo"], 1),
                    elo_low=round(row["elo_low"], 1), elo_high=round(row["elo_high"], 1), games=row["overall"].games,
                    **_columns(row["overall"], SCORE_COLUMNS), **_columns(row["vs_random"].get(None), VS_COLUMNS))
               for row in self.rows]
        out.append(dict(variant=self.variant, kind="reference", rank="", agent="random vs random (White)", elo=0.0,
                        elo_low="", elo_high="", games=self.reference.games,
                        **_columns(self.reference, SCORE_COLUMNS), **_columns(None, VS_COLUMNS)))
        return out


SCORE_COLUMNS = ("wins", "draws", "losses", "score", "score_low", "score_high")
VS_COLUMNS = tuple(f"vs_random_{k}" for k in ("wins", "draws", "losses", "score", "low", "high"))


def _columns(t, names: Sequence[str]) -> dict:
    """``t``'s wins, draws, losses, score and its interval (rounded) as CSV columns ``names``; blanks without ``t``."""
    values = (t.wins, t.draws, t.losses, *(round(x, 4) for x in (t.score, *t.interval))) if t else ("",) * 6
    return dict(zip(names, values))


def standings(names, matches, prior_draws: float) -> list[dict]:
    """One row per agent, strongest first: Elo (random = 0) and its interval, results against random (per
    color and overall) and against all."""
    games = all_games(matches)
    ratings = elo_mle(rating_results(games), anchor="random", prior_draws=prior_draws, players=names)
    rows = []
    for rank, (name, r) in enumerate(ratings.items(), 1):
        overall = tally(games, name)
        vs = {c: tally(games, name, "random", c) for c in ("white", "black", None)} if name != "random" else {}
        rows.append(dict(rank=rank, agent=name, elo=r.elo, elo_low=r.low, elo_high=r.high, overall=overall,
                         vs_random=vs))
    return rows


def play_board(variant: str, players: list, games: int, seed: int = 0, workers: int = 1, opening_plies: int = 0,
               prior_draws: float = 1.0, reference_games: int = 1000) -> Board:
    """The round robin of ``players`` on ``variant`` (``games`` a pairing, colors alternating, an illegal move
    forfeits), with progress lines, and the random-vs-random reference; closes the players."""
    t0 = time.perf_counter()
    # random against random: the variant's color balance (a tally from White's side) and mean plies
    player = RandomAgent()
    records = [play_game(player, player, variant, game_seed(seed, i), pgn=False) for i in range(reference_games)]
    ref, ref_plies = color_tally(records), sum(r.plies for r in records) / max(1, reference_games)
    print(f"[{variant}] random vs random over {ref.games} games: first {pct(ref.wins / ref.games)}, "
          f"draws {pct(ref.draws / ref.games)}, second {pct(ref.losses / ref.games)}")
    names = [a.name for a in players]
    pairings = [(i, j) for i in range(len(players)) for j in range(i + 1, len(players))]
    done = collections.Counter()

    def progress(record, n, total):
        p_index = int(record.round.split(".")[0]) - 1
        done[p_index] += 1
        if done[p_index] == games:
            i, j = pairings[p_index]
            print(f"[{variant} {sum(c == games for c in done.values())}/{len(pairings)}] "
                  f"{names[i]} vs {names[j]} done; {n}/{total} games, {time.perf_counter() - t0:.0f} s", flush=True)

    try:
        # board games in lockstep (batched) in one process; spread over workers, one by one, each game's players
        # reset with its seed, so that any number of workers plays the same games
        matches = run_tournament(players, variant, games, seed, workers=workers, progress=progress, illegal="forfeit",
                                 opening_plies=opening_plies, lockstep=None if workers == 1 else False)
    finally:
        close_agents(players)
    board = Board(variant, names, matches, standings(names, matches, prior_draws), ref, ref_plies)
    print(f"[{variant}] {len(all_games(matches))} games in {time.perf_counter() - t0:.0f} s")
    return board


def ladder_section(variant: str, name: str, agent, levels: Sequence[int] = (1, 10, 100, 1000),
                   openings: int | None = None, workers: int = 1) -> str | None:
    """A markdown section: the saved agent against its variant's published ladder (``openings`` of the published
    ones, both colors each; all when ``None``) at the node budgets ``levels`` (every level of a ladder without node
    levels: 8x8's UCI_Elo ladder); ``None`` (and a note) when the variant has no ladder or the engine is missing."""
    try:
        ladder = Ladder.load(variant)
    except ValueError as exc:
        print(f"{name}: no ladder: {exc}")
        return None
    t0 = time.perf_counter()
    try:
        chosen = tuple(levels) if ladder.node_levels() else None
        result = play_ladder(agent, variant, chosen, ladder, openings=openings, workers=workers)
    except (EngineNotFoundError, ValueError) as exc:
        print(f"{name}: ladder not played: {exc}")
        return None
    games = 2 * len(ladder.openings[:openings] if openings else ladder.openings)
    print(f"[{variant} ladder] {name}: Elo {result.elo.elo:+.0f} in {time.perf_counter() - t0:.0f} s", flush=True)
    return (f"## Strength ladder: {name} ({variant})\n\nThe engine levels from the published balanced openings, "
            f"{games} games a level (both colors of each); levels' Elo from the published calibration "
            f"({ladder.scale}); see docs/ladder.md.\n\n{ladder_table(result)}\n")


def leaderboard_plot(boards: dict[str, list[dict]], path: str) -> bool:
    """Elo with 95% intervals, one panel per variant (``{variant: standings rows}``); False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no leaderboard.png (pip install matplotlib)")
        return False
    # the width grows with the longest agent name, so the panels keep their width and titles fit
    longest = max(len(r["agent"]) for rows in boards.values() for r in rows)
    height = 0.5 + 0.9 * len(boards) + 0.4 * sum(len(r) for r in boards.values())
    fig, axes = plt.subplots(len(boards), 1, figsize=(4.5 + 0.085 * longest, height), squeeze=False)
    fig.suptitle("Elo, random = 0 (95% profile-likelihood intervals)", fontsize=10)
    for ax, (variant, rows) in zip(axes[:, 0], boards.items()):
        rows = rows[::-1]  # strongest on top
        y = range(len(rows))
        err = [[r["elo"] - r["elo_low"] for r in rows], [r["elo_high"] - r["elo"] for r in rows]]
        ax.errorbar([r["elo"] for r in rows], y, xerr=err, fmt="o", capsize=3)
        ax.set_yticks(list(y), [r["agent"] for r in rows])
        ax.axvline(0, color="grey", lw=0.8, ls="--")
        ax.set_title(variant, fontsize=10, loc="left")
        ax.set_xlabel("Elo")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
