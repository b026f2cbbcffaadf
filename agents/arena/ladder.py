"""The strength ladder: an agent against Fairy-Stockfish at fixed node budgets, from published balanced openings,
its Elo fitted against the levels' published calibration; how a ladder is made and published: docs/ladder.md.

>>> print(ladder_table(play_ladder(agent, "gardner", levels=(1, 10, 100))))   # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
from typing import Callable, NamedTuple, Sequence

import numpy as np

from agents.arena import MatchResult, Tally, all_games, batches, close_agents, rating_results, run_tournament
from agents.arena.ratings import Rating, elo_mle
from agents.players.uci import EngineNotFoundError, UCIEngineAgent, find_engine
from agents.reports import markdown_table
from agents.runs import write_json
from minichess_envs.positions import random_plies
from minichess_envs.variants import get_variant

LEVELS = (1, 10, 100, 1000, 10000)
LADDER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ladders")
FORMAT = "minichess-ladder/1"


class Opening(NamedTuple):
    """A start position: the moves from the variant's start (UCI), its FEN and the engine's score."""

    moves: tuple[str, ...]
    fen: str
    cp: int


def balanced_openings(variant: str, count: int, plies: int = 4, seed: int = 0, nodes: int = 1000,
                      max_cp: int = 60, engine=None) -> list[Opening]:
    """``count`` distinct openings of ``plies`` uniformly random plies scored within ``max_cp`` of equal;
    deterministic for a seed (the engine searches a fixed node count from a cleared hash)."""
    rng = np.random.default_rng(seed)
    own = engine is None
    engine = engine or UCIEngineAgent(variant, nodes=nodes)
    openings, seen = [], set()
    try:
        for _ in range(count * 200):
            if len(openings) == count:
                break
            position = random_plies(variant, plies, rng)
            fen = position.fen()
            if position.outcome() is not None or fen in seen:
                continue
            seen.add(fen)
            engine.reset()
            result = engine.search(position)
            if result.mate is None and abs(result.cp or 0) <= max_cp:
                openings.append(Opening(tuple(m.uci() for m in position.move_stack), fen, int(result.cp or 0)))
    finally:
        if own:
            engine.close()
    if len(openings) < count:
        raise ValueError(f"found only {len(openings)} of {count} openings within {max_cp} cp; "
                         "allow a larger max_cp or fewer plies")
    return openings


def engine_levels(variant: str, levels: Sequence[int] = LEVELS, engine: str | None = None) -> list:
    """Fairy-Stockfish (Stockfish on 8x8; or ``engine``) at each node budget, named ``fsf-nN`` (``stockfish-nN``)."""
    return [UCIEngineAgent(variant, engine, nodes=n) for n in levels]


def calibrate(variant: str, openings: Sequence[Opening], levels: Sequence[int] = LEVELS, games: int = 200,
              workers: int | None = None, progress: Callable | None = None) -> dict[str, Rating]:
    """Elo of the engine levels: each plays the next, ``games`` games from the openings; the weakest is 0."""
    engines = engine_levels(variant, levels)
    try:
        matches = run_tournament(engines, variant, games, seed=0, openings=[o.fen for o in openings],
                                 pairings=[(i, i + 1) for i in range(len(engines) - 1)],
                                 workers=workers or os.cpu_count() or 1, progress=progress, pgn=False)
    finally:
        close_agents(engines)
    return elo_mle(rating_results(all_games(matches)), anchor=engines[0].name, prior_draws=1.0,
                   players=[e.name for e in engines])


def write_ladder(variant: str, openings: Sequence[Opening], ratings: dict[str, Rating], settings: dict,
                 path: str | None = None) -> str:
    """Publish a variant's openings and level ratings as JSON (default: ``agents/arena/ladders/<variant>.json``)."""
    variant = get_variant(variant).name
    path = path or os.path.join(LADDER_DIR, f"{variant}.json")
    write_json(path, {"format": FORMAT, "variant": variant, "made": datetime.date.today().isoformat(),
                      "settings": settings, "openings": [o._asdict() for o in openings],
                      "levels": {name: r._asdict() for name, r in ratings.items()}})
    return path


@dataclasses.dataclass
class Ladder:
    """A published ladder: openings and the engine levels' Elo."""

    variant: str
    openings: list[Opening]
    levels: dict[str, float]  # engine name -> calibrated Elo
    settings: dict

    @classmethod
    def load(cls, variant: str, path: str | None = None) -> Ladder:
        """The published ladder of ``variant``; ``ValueError`` naming the file if it is missing or not one."""
        name = get_variant(variant).name
        path = path or os.path.join(LADDER_DIR, f"{name}.json")
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("format") != FORMAT or data.get("variant") != name:
                raise ValueError(f"not a {FORMAT} file for {name}")
            openings = [Opening(tuple(o["moves"]), o["fen"], int(o["cp"])) for o in data["openings"]]
            levels = {name: float(r["elo"]) for name, r in data["levels"].items()}
        except FileNotFoundError:
            raise ValueError(f"no published ladder for {variant!r} at {path}: make one with "
                             f"python -m agents.arena.ladder {variant}") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"cannot read the ladder {path}: {exc}") from None
        return cls(name, openings, levels, data.get("settings", {}))


@dataclasses.dataclass
class LadderResult:
    """An agent's games against each level, its score per level and its Elo against the calibrated levels."""

    agent: str
    levels: dict[str, float]
    matches: list[MatchResult]
    elo: Rating

    def tally(self, level: str) -> Tally:
        return next(m for m in self.matches if m.b == level).tally(self.agent)


def engine_ladder(variant: str) -> Ladder | None:
    """The published ladder of ``variant``, or ``None`` (saying why) where Fairy-Stockfish is not installed."""
    try:
        find_engine("fairy-stockfish")
    except EngineNotFoundError as exc:
        print(f"no strength ladder: {exc}", flush=True)
        return None
    return Ladder.load(variant)


def play_ladder(agent, variant: str, levels: Sequence[int] = LEVELS, ladder: Ladder | None = None,
                openings: int | None = None, workers: int | None = None, progress: Callable | None = None,
                journal: str | None = None, ray_address: str | None = None) -> LadderResult:
    """Play ``agent`` against every level from the first ``openings`` published openings (default: all),
    both colors each, in lockstep if the agent batches (each game's engine its own process, as the levels were
    calibrated); ``journal``: a game journal to go on from, ``ray_address``: the workers as Ray actors on that cluster
    (:func:`~agents.arena.run_tournament`)."""
    ladder = ladder or Ladder.load(variant)
    chosen = ladder.openings[:openings] if openings else ladder.openings
    engines = engine_levels(variant, levels)
    missing = [e.name for e in engines if e.name not in ladder.levels]
    if missing:
        raise ValueError(f"the ladder has no calibrated rating for {', '.join(missing)}; "
                         f"calibrated: {', '.join(ladder.levels)}")
    name = getattr(agent, "name", "agent")
    try:
        matches = run_tournament([agent, *engines], variant, 2 * len(chosen), seed=0,
                                 openings=[o.fen for o in chosen], pairings=[(0, i + 1) for i in range(len(engines))],
                                 workers=workers or os.cpu_count() or 1, ray_address=ray_address, progress=progress,
                                 illegal="forfeit", lockstep=batches(agent), journal=journal)
    finally:
        close_agents(engines)
    fixed = {e.name: ladder.levels[e.name] for e in engines}
    return LadderResult(name, fixed, matches, ladder_elo(name, rating_results(all_games(matches)), fixed))


def ladder_elo(agent: str, results, levels: dict[str, float]) -> Rating:
    """``agent``'s Elo from its games' ``(white, black, white's score)`` against engine ``levels`` of known Elo."""
    return elo_mle(results, anchor=levels, prior_draws=1.0)[agent]


def ladder_table(result: LadderResult) -> str:
    """Markdown: per level its Elo, the agent's W-D-L and score with a Wilson interval; the agent's Elo last."""
    rows = []
    for level, elo in result.levels.items():
        t = result.tally(level)
        lo, hi = t.interval
        rows.append([level, f"{elo:+.0f}", t.games, f"{t.wins}-{t.draws}-{t.losses}",
                     f"{t.score:.3f} [{lo:.3f}, {hi:.3f}]"])
    e = result.elo
    rows.append([f"**{result.agent}**", f"**{e.elo:+.0f}** [{e.low:+.0f}, {e.high:+.0f}]", e.games, "", ""])
    return markdown_table(["level", "Elo (calibrated)", "games", "W-D-L (agent)", "agent's score [95% Wilson]"], rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Make and publish a variant's ladder: openings and level ratings.")
    parser.add_argument("variant")
    parser.add_argument("--openings", type=int, default=100)
    parser.add_argument("--plies", type=int, default=4)
    parser.add_argument("--max-cp", type=int, default=60)
    parser.add_argument("--opening-nodes", type=int, default=1000)
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)))
    parser.add_argument("--calibration-games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    levels = tuple(int(n) for n in args.levels.split(","))
    openings = balanced_openings(args.variant, args.openings, args.plies, args.seed, args.opening_nodes,
                                 args.max_cp)
    print(f"{len(openings)} openings, scores {min(o.cp for o in openings)}..{max(o.cp for o in openings)} cp",
          flush=True)
    ratings = calibrate(args.variant, openings, levels, args.calibration_games, args.workers)
    for name, r in ratings.items():
        print(f"{name}: {r.elo:+.0f} [{r.low:+.0f}, {r.high:+.0f}] over {r.games} games", flush=True)
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "workers")}
    print(write_ladder(args.variant, openings, ratings, settings, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
