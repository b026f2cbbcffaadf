"""The strength ladder: an agent against engine levels from published balanced openings, its Elo fitted against the
levels' published calibration. Fairy-Stockfish at fixed node budgets on the minichess variants; on 8x8, Stockfish's
``UCI_Elo`` levels on the CCRL scale. How a ladder is made and what its numbers mean: docs/ladder.md.

>>> print(ladder_table(play_ladder(agent, "gardner", levels=(1, 10, 100))))   # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
from typing import Callable, NamedTuple, Sequence

import numpy as np

from agents.arena import MatchResult, Tally, all_games, batches, close_agents, rating_results, run_tournament
from agents.arena.ratings import Rating, elo_mle
from agents.players.uci import SHORT_NAMES, EngineNotFoundError, UCIEngineAgent, default_engine, find_engine
from agents.reports import markdown_table
from agents.runs import write_json
from minichess_envs.positions import random_plies
from minichess_envs.variants import get_variant

LEVELS = (1, 10, 100, 1000, 10000)  # node budgets of the Fairy-Stockfish ladders
#: The 8x8 ladder's Stockfish ``UCI_Elo`` levels: 2,550 and up search 16-20 plies with 4 lines a move (seconds).
ELO_LEVELS = (1350, 1500, 1650, 1800, 1950, 2100, 2250, 2400)
LADDER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ladders")
FORMAT = "minichess-ladder/2"
#: What a level may set: the keyword arguments of :class:`UCIEngineAgent` (never a binary or a file option).
LEVEL_KEYS = frozenset({"engine", "nodes", "depth", "movetime", "options", "random_moves"})
#: The 8x8 ladder's levels below Stockfish's weakest: its weakest level playing this share of moves at random.
RANDOM_MOVES = (0.75, 0.5, 0.25)


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


def node_engines(variant: str, nodes: Sequence[int] = LEVELS, engine: str | None = None) -> dict[str, dict]:
    """Levels searching fixed node budgets: ``{name: UCIEngineAgent keyword arguments}``, named ``fsf-nN``
    (``stockfish-nN``); the engine's moves depend only on the game."""
    engine = engine or default_engine(variant)
    return {f"{SHORT_NAMES[engine]}-n{n}": {"engine": engine, "nodes": int(n)} for n in nodes}


def skill_level(elo: float) -> float:
    """The skill level Stockfish 15.1 plays at ``UCI_Elo`` ``elo``: ``elo = 1346.6 + 143.4 * level ** 0.806``, its
    authors' fit of match results at 60 s + 0.6 s a game, anchored to CCRL 40/4 (Stockfish's search.cpp)."""
    return min(20.0, max(0.0, (elo - 1346.6) / 143.4) ** (1 / 0.806))


def elo_engines(elos: Sequence[int] = ELO_LEVELS, random_moves: Sequence[float] = RANDOM_MOVES) -> dict[str, dict]:
    """Stockfish at ``UCI_Elo`` levels, named ``stockfish-eloN``, after its weakest level playing each share of
    ``random_moves`` at random (``stockfish-eloN-randomP``, P in percent), weakest first. A level plays skill level
    ``l`` (randomly rounded to an integer each move) by searching 4 lines and, at depth ``1 + l``, choosing among them
    with random weakness; ``go depth 2 + floor(l)`` ends the search where that choice is made at either rounding, so
    a level plays as it would at any time control long enough to reach that depth, on any machine and load."""
    levels = {f"stockfish-elo{elo}": {"engine": "stockfish", "depth": 2 + math.floor(skill_level(elo)),
                                      "options": {"UCI_LimitStrength": True, "UCI_Elo": int(elo)}} for elo in elos}
    weakest, spec = next(iter(levels.items()))
    below = {f"{weakest}-random{round(100 * p)}": {**spec, "random_moves": float(p)}
             for p in sorted(random_moves, reverse=True)}
    return {**below, **levels}


def engine_levels(variant: str, levels: Sequence[int] = LEVELS, engine: str | None = None) -> list:
    """Fairy-Stockfish (Stockfish on 8x8; or ``engine``) at each node budget, named ``fsf-nN`` (``stockfish-nN``)."""
    return [UCIEngineAgent(variant, name=name, **spec) for name, spec in node_engines(variant, levels, engine).items()]


def calibrate(variant: str, openings: Sequence[Opening], engines: dict[str, dict], games: int = 200,
              round_robin: bool = False, anchor: str | dict[str, float] | None = None, workers: int | None = None,
              progress: Callable | None = None) -> tuple[dict[str, Rating], list[MatchResult]]:
    """Elo of the engine levels (``{name: UCIEngineAgent keyword arguments}``, weakest first) and their matches:
    ``games`` games a pairing from the openings, each level against the next (``round_robin``: against every other);
    ``anchor``: the level fixed at 0 Elo or ``{level: Elo}`` (default: the first at 0)."""
    agents = [UCIEngineAgent(variant, name=name, **spec) for name, spec in engines.items()]
    pairings = None if round_robin else [(i, i + 1) for i in range(len(agents) - 1)]
    try:
        matches = run_tournament(agents, variant, games, seed=0, openings=[o.fen for o in openings],
                                 pairings=pairings, workers=workers or os.cpu_count() or 1, progress=progress,
                                 pgn=False)
    finally:
        close_agents(agents)
    ratings = elo_mle(rating_results(all_games(matches)), anchor=anchor or agents[0].name, prior_draws=1.0,
                      players=list(engines))
    return ratings, matches


def crosstable(names: Sequence[str], matches: Sequence[MatchResult]) -> str:
    """Markdown: each row level's score against each column level (games in the cell's pairing)."""
    cells = {}
    for m in matches:
        t = m.tally(m.a)
        cells[m.a, m.b] = f"{t.score:.2f}"
        cells[m.b, m.a] = f"{1 - t.score:.2f}"
    return markdown_table(["level", *names], [[a, *(cells.get((a, b), "") for b in names)] for a in names])


def write_ladder(variant: str, openings: Sequence[Opening], ratings: dict[str, Rating], settings: dict,
                 engines: dict[str, dict], scale: str, matches: Sequence[MatchResult] = (), *,
                 engine_id: str | None = None, path: str | None = None) -> str:
    """Publish a variant's openings, levels (their engine settings and Elo on ``scale``), calibration games' scores
    and the engine that played them (``engine_id``, its UCI ``id name``) as JSON (default:
    ``agents/arena/ladders/<variant>.json``)."""
    variant = get_variant(variant).name
    path = path or os.path.join(LADDER_DIR, f"{variant}.json")
    pairings = [{"a": m.a, "b": m.b, "games": len(m.games), "a_score": m.tally(m.a).score} for m in matches]
    write_json(path, {"format": FORMAT, "variant": variant, "made": datetime.date.today().isoformat(),
                      "scale": scale, "engine_id": engine_id, "settings": settings,
                      "openings": [o._asdict() for o in openings], "engines": engines,
                      "levels": {name: r._asdict() for name, r in ratings.items()}, "calibration": pairings})
    return path


@dataclasses.dataclass
class Ladder:
    """A published ladder: openings, the engine levels' settings and their Elo on ``scale``."""

    variant: str
    openings: list[Opening]
    levels: dict[str, float]  # level name -> calibrated Elo
    settings: dict
    engines: dict[str, dict]  # level name -> UCIEngineAgent keyword arguments
    scale: str  # what the Elo figures are relative to
    engine_id: str | None = None  # the calibrating engine's UCI id name; another engine's levels are other players

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
            levels = {level: float(r["elo"]) for level, r in data["levels"].items()}
            engines = {level: dict(spec) for level, spec in data["engines"].items()}
            for level, spec in engines.items():
                if not set(spec) <= LEVEL_KEYS or level not in levels:
                    raise ValueError(f"level {level!r} is unrated or sets {', '.join(sorted(set(spec) - LEVEL_KEYS))}"
                                     f" (a level sets only {', '.join(sorted(LEVEL_KEYS))})")
            scale = str(data["scale"])
            engine_id = data.get("engine_id")
            if engine_id is not None and not isinstance(engine_id, str):
                raise ValueError(f"engine_id must be the engine's name, not {engine_id!r}")
        except FileNotFoundError:
            raise ValueError(f"no published ladder for {variant!r} at {path}: make one with "
                             f"python -m agents.arena.ladder {variant}") from None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"cannot read the ladder {path}: {exc}") from None
        return cls(name, openings, levels, data.get("settings", {}), engines, scale, engine_id)

    def node_levels(self) -> dict[int, str]:
        """``{node budget: level name}`` of the levels that search a fixed number of nodes."""
        return {spec["nodes"]: level for level, spec in self.engines.items() if set(spec) <= {"engine", "nodes"}}

    def agents(self, levels: Sequence[int | str] | None = None) -> list[UCIEngineAgent]:
        """The engines of ``levels`` (level names, or node budgets; default: every level), weakest first."""
        nodes = self.node_levels()
        names = list(self.engines) if levels is None else [nodes.get(x, f"{x} nodes") if isinstance(x, int) else x
                                                            for x in levels]
        missing = [n for n in names if n not in self.engines]
        if missing:
            raise ValueError(f"the {self.variant} ladder has no calibrated level {', '.join(map(str, missing))}; "
                             f"its levels: {', '.join(self.engines)}")
        agents = [UCIEngineAgent(self.variant, name=n, **self.engines[n]) for n in names]
        if self.engine_id and agents:
            agents[0].start()
            if agents[0].id_name != self.engine_id:
                close_agents(agents)
                raise ValueError(f"the {self.variant} ladder was calibrated with {self.engine_id}; "
                                 f"{agents[0].binary} is {agents[0].id_name}, whose levels are other players")
        return agents


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
    """The published ladder of ``variant``, or ``None`` (saying why) where its engine is not installed."""
    try:
        find_engine(default_engine(variant))
    except EngineNotFoundError as exc:
        print(f"no strength ladder: {exc}", flush=True)
        return None
    return Ladder.load(variant)


def play_ladder(agent, variant: str, levels: Sequence[int | str] | None = None, ladder: Ladder | None = None,
                openings: int | None = None, workers: int | None = None, progress: Callable | None = None,
                journal: str | None = None, ray_address: str | None = None) -> LadderResult:
    """Play ``agent`` against ``levels`` (names or node budgets; default: every level) from the first ``openings``
    published openings (default: all), both colors each, in lockstep if the agent batches (each game's engine its own
    process, as the levels were calibrated); ``journal``: a game journal to go on from, ``ray_address``: the workers
    as Ray actors on that cluster (:func:`~agents.arena.run_tournament`)."""
    ladder = ladder or Ladder.load(variant)
    chosen = ladder.openings[:openings] if openings else ladder.openings
    engines = ladder.agents(levels)
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
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)), help="node budgets of the levels")
    parser.add_argument("--uci-elo", default=None, help="Stockfish UCI_Elo levels instead (8x8 chess), e.g. "
                        + ",".join(map(str, ELO_LEVELS)) + "; the first is anchored at its UCI_Elo")
    parser.add_argument("--random-moves", default=",".join(map(str, RANDOM_MOVES)),
                        help="with --uci-elo: levels below the weakest, which plays this share of moves at random")
    parser.add_argument("--round-robin", action="store_true", help="every level plays every other (default: the next)")
    parser.add_argument("--calibration-games", type=int, default=200, help="games a pairing")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.uci_elo:
        elos = [int(e) for e in args.uci_elo.split(",")]
        engines = elo_engines(elos, [float(p) for p in args.random_moves.split(",") if p])
        first = f"stockfish-elo{elos[0]}"
        anchor, scale = {first: float(elos[0])}, f"CCRL 40/4 through Stockfish 15.1's UCI_Elo ({first} = {elos[0]})"
    else:
        engines = node_engines(args.variant, [int(n) for n in args.levels.split(",")])
        first = next(iter(engines))
        anchor, scale = first, f"{first} = 0"
    openings = balanced_openings(args.variant, args.openings, args.plies, args.seed, args.opening_nodes,
                                 args.max_cp)
    print(f"{len(openings)} openings, scores {min(o.cp for o in openings)}..{max(o.cp for o in openings)} cp",
          flush=True)
    ratings, matches = calibrate(args.variant, openings, engines, args.calibration_games, args.round_robin, anchor,
                                 args.workers, progress=lambda record, done, total: print(
                                     f"{done}/{total} games", flush=True) if done % 20 == 0 else None)
    for name, r in ratings.items():
        print(f"{name}: {r.elo:+.0f} [{r.low:+.0f}, {r.high:+.0f}] over {r.games} games", flush=True)
    print(crosstable(list(engines), matches))
    with UCIEngineAgent(args.variant, **next(iter(engines.values()))) as engine:
        engine.start()
        engine_id = engine.id_name
    unused = ("levels",) if args.uci_elo else ("uci_elo", "random_moves")
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "workers", *unused)}
    print(write_ladder(args.variant, openings, ratings, settings, engines, scale, matches, engine_id=engine_id,
                      path=args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
