"""The zoo's entries: train one with its recorded command, rate it, install it with its card (``agents.zoo``).

    python experiments/zoo.py --entry tictactoe-alphazero          # train from scratch, rate, install (~5 min)
    python experiments/zoo.py --entry checkers-alphazero --resume  # continue an interrupted training run
    python experiments/zoo.py --entry 3x3-alphazero --rate-only    # rate the installed entry again
    python experiments/zoo.py --entry checkers-alphazero --rate-only --ray-address HEAD:6379   # its games on a cluster
    python experiments/zoo.py --docs                               # docs/zoo.md from the cards

Each entry is trained by the command in :data:`ENTRIES` (an experiment at its defaults and seed, writing
``runs/zoo/<entry>/``, or ``--run DIR`` for a finished run of that same command), its saved agent copied into
``agents/zoo/entries/<entry>/`` with checksums, and rated there on the final weights by :data:`RATINGS` (the
game's exact judge, or matches against its judges, with 95% Wilson intervals); the card records the command,
the training time and machine, and each measure with its date. A rating saves each game and measure as it ends
(``runs/zoo/<entry>-games.jsonl``, ``-rating.json``): run again (``--rate-only``; ``--resume`` if training stopped
too), it goes on from there.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import subprocess
import sys
import time

from agents.runs import (  # first: the OpenMP setting, before torch
    Progress, checkpoint_dir, command_line, machine, machine_text, read_json, read_state, training_seconds, write_json)

import torch

from agents import zoo
from agents.arena import batches, play_match, rating_results
from agents.arena.evaluation import score_moves
from agents.arena.ratings import wilson_interval
from agents.players.random_agent import RandomAgent
from agents.workers import ClusterError, cluster_cpus
from minichess_envs.checksums import read_checksums
from minichess_envs.players import choose_actions


@dataclasses.dataclass
class Options:
    """Train, rate and install a zoo entry, or write docs/zoo.md."""

    entry: str | None = None  # the entry: one of ENTRIES
    resume: bool = False  # continue an interrupted training run
    run: str | None = None  # a finished run of the entry's command to install instead of training (its directory)
    rate_only: bool = False  # rate the installed entry again and update its card
    docs: bool = False  # write docs/zoo.md from the cards
    ray_address: str | None = None  # play the rating's games on this Ray cluster, one worker a CPU (docs/scale.md)


@dataclasses.dataclass(frozen=True)
class Entry:
    """How an entry is made: ``command`` (an experiment and its flags; ``--out`` is added), what it is;
    ``agent`` is the saved agent's directory in the run (its ``metrics.csv`` beside it)."""

    game: str
    algorithm: str
    command: tuple[str, ...]
    seed: int = 0
    agent: str = "agent"
    casual: dict = dataclasses.field(default_factory=dict)  # load settings of the faster setting
    rated: dict = dataclasses.field(default_factory=dict)  # load settings of the rated one (default: as saved)
    notes: str = ""


ENTRIES = {
    "tictactoe-alphazero": Entry("tictactoe", "AlphaZero", ("experiments/alphazero_tictactoe.py",),
                                 casual={"simulations": 0}),
    "3x3-alphazero": Entry("3x3", "AlphaZero",
                           ("experiments/alphazero_3x3.py", "--preset", "zoo", "--workers", "2"),
                           casual={"simulations": 0}),
    "connect4-alphazero": Entry("connect_four", "AlphaZero", ("experiments/alphazero_connect4.py",),
                                casual={"simulations": 64}),
    "checkers-alphazero": Entry("checkers", "AlphaZero", ("experiments/alphazero_checkers.py",),
                                casual={"simulations": 16}),
    "gardner-alphazero": Entry("gardner", "AlphaZero", ("experiments/alphazero_gardner.py", "--preset", "2h"),
                               rated={"simulations": 8192}, casual={"simulations": 32},
                               notes="Pretrained on Fairy-Stockfish games, then two hours of self-play with a "
                                     "6-block, 64-channel network; plays the move with the best lower confidence "
                                     "bound after 8,192 simulations (the run saves 1,024; "
                                     "docs/results/alphazero-gardner.md)."),
    "losalamos-alphazero": Entry("losalamos", "AlphaZero", ("experiments/alphazero_gardner.py", "--preset",
                                                         "losalamos"), casual={"simulations": 32}),
    "gomoku-alphazero": Entry("gomoku", "AlphaZero",
                              ("experiments/alphazero_gomoku.py", "--minutes", "60", "--iterations", "1000"),
                              rated={"simulations": 800}, casual={"simulations": 32},
                              notes="An hour of self-play (the experiment's default: 21 minutes) with alpha-beta "
                                    "depth 2 as sparring partner in half the games, the network seeing the threat "
                                    "planes; plays with Gumbel AlphaZero's root search (self-play used PUCT's), "
                                    "rated at 800 simulations, the search the experiment judges with (this entry's "
                                    "run saved 200, its setting then; docs/results/boardgames.md)."),
    "chess-supervised": Entry("chess", "Supervised (Stockfish's games, then DAgger)",
                              ("experiments/supervised_chess.py",), agent="pretrain/agent",
                              rated={"simulations": 64}, casual={"simulations": 0},
                              notes="The AlphaZero network learns Stockfish's moves at 200 nodes and the games' "
                                    "results. Rated with MCTS 64, the search the run saves (on the calibrated "
                                    "ladder 64 simulations scored 19.5 of 20 against the level that plays half its "
                                    "moves at random, 16 scored 15.5: docs/results/supervised.md)."),
    "gardner-ppo": Entry("gardner", "PPO (built-in, GAE)", ("experiments/ppo_gardner.py", "--rules", "checkmate"),
                         agent="native_checkmate_random/agent",
                         notes="Trained against the random player with either colour; plays both."),
}


class Finished:
    """The rating's measures, saved as each ends in ``runs/zoo/<entry>-rating.json``, and their games as each ends
    in ``runs/zoo/<entry>-games.jsonl`` (a game journal): a rating stopped part way (a lost machine, a session's
    end) goes on from the game it stopped in when run again, for the same installed weights and settings; another
    install starts afresh."""

    def __init__(self, name: str, casual: dict, ray_address: str | None = None):
        # where the games are played: on every core here, or on every CPU of a Ray cluster
        self.ray_address = ray_address
        self.workers = cluster_cpus() if ray_address else os.cpu_count() or 1
        self.path = os.path.join("runs", "zoo", f"{name}-rating.json")
        self.journal = os.path.join("runs", "zoo", f"{name}-games.jsonl")
        sums = read_checksums(zoo.entry_dir(name))
        self.of = {"files": {f: sums[f] for f in sorted(sums) if f != zoo.CARD}, "casual": casual}
        try:
            saved = read_json(self.path) if os.path.exists(self.path) else {}
        except ValueError as exc:  # a file cut short: its measures are played again
            print(f"starting the rating afresh: {exc}", flush=True)
            saved = {}
        same = isinstance(saved, dict) and saved.get("of") == self.of and isinstance(saved.get("done"), dict)
        self.done = saved["done"] if same else {}
        if not same and os.path.exists(self.journal):  # games of other weights or settings
            os.remove(self.journal)
        if self.done:
            print(f"resuming the rating: {len(self.done)} measures done ({self.path})", flush=True)

    def get(self, key: str, measure) -> dict:
        """The row ``measure()`` returns, dated today, or the one saved under ``key``."""
        if key not in self.done:
            self.done[key] = {**measure(), "date": datetime.date.today().isoformat()}
            write_json(self.path, {"of": self.of, "done": self.done})
        return dict(self.done[key])

    def close(self) -> None:
        """The rating is in the card: the next one measures afresh."""
        for path in (self.path, self.journal):
            if os.path.exists(path):
                os.remove(path)


def value_preserving(label: str, agent, positions, move_values, what: str) -> dict:
    """The share of ``positions`` where ``agent``'s move keeps the exact value, with its interval."""
    rates = score_moves(positions, choose_actions(agent, positions, batch=1024), move_values)
    n, share = rates["positions"], rates["value_preserving"]
    low, high = wilson_interval(share * n, n)
    return dict(player=label, measure=f"value-preserving moves, {what}", score=share, low=low, high=high, count=n,
                unit="positions")


def match(done: Finished, label: str, agent, opponent, game: str, games: int, seats: str, workers: int = 1,
          opening_plies: int = 0) -> dict:
    """``agent``'s score against ``opponent`` in ``games`` games moving ``seats``, each after ``opening_plies``
    random plies, with its interval."""
    how = f"moving {seats}" + (f", after {opening_plies} random plies" if opening_plies else "")

    def measure():  # in lockstep if the agent batches: its searches of many games in one network call
        t = play_match(agent, opponent, game, games, 0, seats=seats, names=(label, opponent.name),
                       workers=done.workers if done.ray_address else workers, ray_address=done.ray_address,
                       opening_plies=opening_plies, lockstep=True if batches(agent) else None,
                       journal=done.journal).tally()
        return dict(player=label, measure=f"score against {opponent.name}, {how}", score=t.score,
                    low=t.interval[0], high=t.interval[1], count=t.games, unit="games")

    return done.get(f"{label} against {opponent.name}, {how}, {games} games", measure)


def rate_tictactoe(name: str, casual: bool, done: Finished) -> list[dict]:
    from agents.games.tictactoe import solve_tictactoe

    table = solve_tictactoe()
    positions = table.non_terminal()
    values = [table.move_values(g) for g in positions]
    return [value_preserving(label, agent, positions, values, "every position (exhaustive minimax)")
            for label, _, agent in settings(name, casual)]


def rate_3x3(name: str, casual: bool, done: Finished) -> list[dict]:
    from minichess_envs.tablebase import Tablebase, score_agent

    tablebase = Tablebase.load("3x3")
    out = []
    for label, _, agent in settings(name, casual):
        rates = score_agent(agent, tablebase, encoding=agent.encoding).rates()
        n = rates["positions"]
        for key, what in (("value_preserving", "value-preserving moves"), ("dtm_optimal", "DTM-optimal moves")):
            low, high = wilson_interval(rates[key] * n, n)
            out.append(dict(player=label, measure=f"{what}, every position (tablebase)", score=rates[key], low=low,
                            high=high, count=n, unit="positions"))
    return out


def rate_checkers(name: str, casual: bool, done: Finished) -> list[dict]:
    from agents.games.checkers import CheckersAlphaBeta

    out = []
    for label, _, agent in settings(name, casual):
        for opponent, games in ((RandomAgent(1), 30), (CheckersAlphaBeta(4, seed=2), 20)):
            out += [match(done, label, agent, opponent, "checkers", games, seats) for seats in ("first", "second")]
    return out


def rate_connect_four(name: str, casual: bool, done: Finished) -> list[dict]:
    from agents.games.connect_four import ConnectFourSolver, judged_sample

    positions, values = judged_sample(500, 0)  # the sample experiments/alphazero_connect4.py judges (seed 0)
    out = []
    for label, c, agent in settings(name, casual):
        out.append(value_preserving(label, agent, positions, values, "500 solver-judged positions (bitbully)"))
        if not c:  # the solver wins every game it can: moving first, the agent can at best win too
            out.append(match(done, label, agent, ConnectFourSolver(seed=3), "connect_four", 10, "first"))
    return out


def rate_gomoku(name: str, casual: bool, done: Finished) -> list[dict]:
    """Every game after the random plies experiments/alphazero_gomoku.py opens its matches with: from the empty
    board the searches repeat a few games."""
    from agents.games.gomoku import MATCH_OPENING_PLIES, GomokuAlphaBeta
    from agents.players.openspiel_mcts import OpenSpielMCTS

    out = []
    for label, _, agent in settings(name, casual):
        for opponent, games in ((RandomAgent(1), 50), (GomokuAlphaBeta(2, seed=2), 50),
                                (GomokuAlphaBeta(3, seed=4), 10), (OpenSpielMCTS(1000, seed=3), 10)):
            out += [match(done, label, agent, opponent, "gomoku", games, seats, opening_plies=MATCH_OPENING_PLIES)
                    for seats in ("first", "second")]
    return out


def rate_chess(name: str, casual: bool, done: Finished) -> list[dict]:
    """Against random with each colour, and on the variant's engine ladder (agents/arena/ladders/<variant>.json:
    Fairy-Stockfish at node budgets, Stockfish's UCI_Elo levels on 8x8; both colours of each published opening),
    weakest level first up to the first where it scores nothing, with the Elo fitted against the levels played
    (from each level's games, saved as the level ends)."""
    from agents.arena.ladder import Ladder, ladder_elo

    variant = ENTRIES[name].game
    ladder = Ladder.load(variant)
    out = []
    for label, _, agent in settings(name, casual):
        out += [match(done, label, agent, RandomAgent(1), variant, 100, seats, workers=done.workers)
                for seats in ("first", "second")]
        levels = []
        for level in sorted(ladder.engines, key=ladder.levels.get):
            levels.append(ladder_level(done, label, agent, ladder, level))
            if levels[-1]["score"] == 0:  # the levels above would add games, not information
                break
        results = [tuple(r) for row in levels for r in row.pop("results")]
        elo = ladder_elo(getattr(agent, "name", "agent"), results, {row["level"]: row["level_elo"] for row in levels})
        out += [{k: v for k, v in row.items() if k not in ("level", "level_elo")} for row in levels]
        out.append(dict(player=label, measure=f"Elo on the {engine_text(ladder)} ladder ({ladder.scale})",
                        score=elo.elo, low=elo.low, high=elo.high, count=elo.games, unit="games", elo=True,
                        date=max(row["date"] for row in levels)))
    return out


def engine_text(ladder) -> str:
    """The name of the engine that plays the ladder's levels, as the card writes it."""
    from agents.players.uci import default_engine

    return {"stockfish": "Stockfish", "fairy-stockfish": "Fairy-Stockfish"}[default_engine(ladder.variant)]


def ladder_level(done: Finished, label: str, agent, ladder, level: str) -> dict:
    """``agent``'s games against the ladder's ``level`` (both colours of every opening, on every core), with the
    results the Elo is fitted from; saved as the level ends."""
    from agents.arena.ladder import play_ladder

    engine, spec = engine_text(ladder), ladder.engines[level]
    if "nodes" in spec:
        nodes = spec["nodes"]
        setting, key = f"{nodes:,} node{'s' * (nodes > 1)}", f"{nodes} nodes"
    else:
        setting = key = f"UCI_Elo {spec['options']['UCI_Elo']}" + (
            f" and {spec['random_moves']:.0%} random moves" if spec.get("random_moves") else "")

    def measure() -> dict:
        with Progress(2 * len(ladder.openings), f"{label} against {engine} at {setting}", unit="game") as bar:
            result = play_ladder(agent, ladder.variant, [level], ladder, workers=done.workers,
                                 ray_address=done.ray_address, journal=done.journal,
                                 progress=lambda record, games, total: bar.update(games))
        t = result.tally(level)
        return dict(player=label, measure=f"score against {engine} at {setting} (ladder)",
                    score=t.score, low=t.interval[0], high=t.interval[1], count=t.games, unit="games",
                    level=level, level_elo=result.levels[level], results=rating_results(result.matches[0].games))

    return done.get(f"{label} against {engine} at {key} (ladder)", measure)


RATINGS = {"tictactoe": rate_tictactoe, "3x3": rate_3x3, "connect_four": rate_connect_four,
           "checkers": rate_checkers, "gomoku": rate_gomoku}  # a chess variant: rate_chess, on its ladder


def speed(name: str, casual: bool, positions: int = 20) -> dict:
    """Median seconds to load the entry and to choose a move at each setting, on positions after random plies."""
    import numpy as np

    from agents.games import new_game

    times = {}
    for c in [False] + ([True] if casual else []):
        key = "casual" if c else "rated"
        loads = []
        for _ in range(5):
            t = time.perf_counter()
            agent = zoo.load(name, casual=c)
            loads.append(time.perf_counter() - t)
        rng = np.random.default_rng(0)
        games = [new_game(ENTRIES[name].game).random_start(rng, 6) for _ in range(positions)]
        moves = []
        for game in games:
            t = time.perf_counter()
            choose_actions(agent, [game])
            moves.append(time.perf_counter() - t)
        times[f"load_{key}"], times[f"move_{key}"] = float(np.median(loads)), float(np.median(moves))
    return times


def settings(name: str, casual: bool) -> list[tuple[str, bool, object]]:
    """``(label, casual, agent)`` of each setting rated, labelled by how it plays: the entry's own, and its casual
    one where it has one."""
    out = []
    for c in [False] + ([True] if casual else []):
        agent = zoo.load(name, casual=c)
        simulations = getattr(agent, "simulations", None)
        how = "" if simulations is None else " (raw policy)" if simulations == 0 else f" (MCTS {simulations})"
        out.append((f"{'casual' if c else 'rated'} setting{how}", c, agent))
    return out


def train_entry(name: str, entry: Entry, args: Options) -> tuple[str, float | None]:
    """The saved agent of the entry's run, trained here unless ``--run`` names a finished one, and the minutes the
    command took here (``None`` for ``--run`` or ``--resume``: not measured whole)."""
    if args.run is not None:
        if not os.path.isfile(os.path.join(args.run, entry.agent, "agent.json")):
            raise SystemExit(f"error: --run {args.run}: no finished run there (no {entry.agent}/agent.json)")
        return os.path.join(args.run, entry.agent), None
    out = os.path.join("runs", "zoo", name)
    command = [sys.executable, *entry.command, "--out", out] + (["--resume"] if args.resume else [])
    print("training:", " ".join(command), flush=True)
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return os.path.join(out, entry.agent), None if args.resume else round((time.perf_counter() - start) / 60, 1)


def with_settings(agent_dir: str, settings: dict, out: str) -> str:
    """The saved agent at ``agent_dir`` loaded with ``settings`` and saved again at ``out``."""
    from agents.base import agent_class, read_manifest

    agent_class(read_manifest(agent_dir)["class"]).load(agent_dir, **settings).save(out)
    return out


def training_minutes(agent_dir: str) -> float:
    """Training time of the run whose saved agent is ``agent_dir``, from the checkpoint beside it
    (:func:`~agents.runs.training_seconds`)."""
    metrics = read_state(checkpoint_dir(os.path.dirname(os.path.normpath(agent_dir)))).metrics
    return round(training_seconds(metrics) / 60, 1)


def network_text(agent) -> str:
    c, parameters = agent.net.config, sum(p.numel() for p in agent.net.parameters())
    if hasattr(c, "blocks"):
        return f"residual network, {c.blocks} blocks of {c.channels} channels ({parameters:,} parameters)"
    return f"convolutional network, {c.conv_layers} layers of {c.channels} channels ({parameters:,} parameters)"


def main(argv=None) -> int:
    args = command_line(Options(), {}, argv)
    if args.docs:
        with open("docs/zoo.md", "w") as f:
            f.write(zoo.markdown())
        print("wrote docs/zoo.md")
        return 0
    if args.entry not in ENTRIES:
        raise SystemExit(f"error: --entry must be one of {', '.join(ENTRIES)}, not {args.entry!r}")
    name, entry = args.entry, ENTRIES[args.entry]
    torch.set_num_threads(1)  # rated as played: one core
    if args.rate_only:  # the card's training as installed, the entry's recorded settings and notes
        card = dataclasses.replace(zoo.card(name), casual=entry.casual, notes=entry.notes)
        if entry.rated:  # the entry's rated settings, also where they changed after it was installed
            zoo.install(name, with_settings(zoo.entry_dir(name), entry.rated,
                                            os.path.join("runs", "zoo", f"{name}-rated_agent")), card)
    else:
        agent_dir, command_minutes = train_entry(name, entry, args)
        if entry.rated:
            agent_dir = with_settings(agent_dir, entry.rated,
                                      os.path.join(os.path.dirname(os.path.normpath(agent_dir)), "rated_agent"))
        started = machine()
        training = {"minutes": training_minutes(agent_dir), "machine": f"{started['cpu']}, {started['cores']} cores"
                    + (f", {started['gpu']}" if started["gpu"] else ""),
                    "date": datetime.date.today().isoformat()}
        if command_minutes is not None:
            training["command_minutes"] = command_minutes
        card = zoo.Card(name=name, game=entry.game, algorithm=entry.algorithm, network="", seed=entry.seed,
                        command="python " + " ".join(entry.command), casual=entry.casual, notes=entry.notes,
                        training=training, strength=[])
        zoo.install(name, agent_dir, card)
    card = dataclasses.replace(card, network=network_text(zoo.load(name)))  # also where a rating was cut short
    print(f"rating {name} ...", flush=True)
    started = machine()
    rate = RATINGS.get(entry.game, rate_chess)
    today, done = datetime.date.today().isoformat(), Finished(name, card.casual, args.ray_address)
    strength = [{**s, "date": s.get("date", today)} for s in rate(name, bool(card.casual), done)]
    card = dataclasses.replace(card, strength=strength, speed=speed(name, bool(card.casual)))
    directory = zoo.entry_dir(name)
    zoo.install(name, directory, card)
    done.close()
    print(zoo.describe(name))
    print(f"rated: {machine_text(started)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClusterError as exc:  # the Ray cluster's problem, named without a traceback; the checkpoint stands
        sys.exit(f"error: {exc}")
