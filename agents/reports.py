"""What the experiments' reports share: markdown tables, PNG plots, and the baselines a win rate is read against.

Where timings were measured: :func:`agents.runs.machine_text`."""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Sequence

from agents.runs import read_json, write_json
from minichess_envs.extras import MissingExtraError, require


def baseline_table(rows: list[dict]) -> str:
    """The rows of :func:`agents.arena.evaluation.baselines` as a markdown table."""
    return markdown_table(
        ["baseline", "variant", "as", "W-D-L", "win rate vs random [95% Wilson]"],
        [[f"{r['player']} vs random", r["variant"], r["color"], f"{r['wins']}-{r['draws']}-{r['losses']}",
          f"{r['win_rate']:.3f} [{r['win_low']:.3f}, {r['win_high']:.3f}]"] for r in rows])


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)


def line_plot(path: str, x: Sequence[float], series: dict[str, Sequence[float]], xlabel: str, ylabel: str,
              title: str) -> bool:
    """A PNG line plot of series over shared x values; ``False`` (and a note) without matplotlib."""
    return curves_plot(path, {label: (x[: len(ys)], ys) for label, ys in series.items()}, xlabel, ylabel, title)


def curves_plot(path: str, curves: dict[str, tuple[Sequence[float], Sequence[float]]], xlabel: str, ylabel: str,
                title: str, hline: tuple[float, str] | None = None) -> bool:
    """A PNG of curves with their own x values (``{label: (xs, ys)}``), optionally a labelled horizontal line;
    ``False`` (and a note naming the extra) without matplotlib."""
    return _save(path, lambda: curves_figure(curves, xlabel, ylabel, title, hline))


def _save(path: str, figure) -> bool:
    """Save ``figure()`` as ``path``; ``False`` (and a note naming the extra) without matplotlib."""
    try:
        fig = figure()
    except MissingExtraError as exc:
        print(f"skipping {os.path.basename(path)}: {exc}")
        return False
    fig.savefig(path)
    _pyplot().close(fig)
    return True


#: The i-th curve's marker is ``MARKERS[i % 8]``, its line style ``LINESTYLES[(i + i // 8) % 4]``: no two of
#: the first 32 curves look alike, so where curves coincide (two probes with the same value) both still show.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")


def curves_figure(curves: dict[str, tuple[Sequence[float], Sequence[float]]], xlabel: str, ylabel: str,
                  title: str, hline: tuple[float, str] | None = None):
    """The matplotlib figure of :func:`curves_plot` (for a caller to save or inspect; close it after): each curve
    with its own marker and line style (:data:`MARKERS`), whole-number x values ticked at whole numbers only."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    whole = True
    for i, (label, (xs, ys)) in enumerate(curves.items()):
        # hollow markers, each smaller than the last: coinciding points show as nested shapes
        ax.plot(xs, ys, marker=MARKERS[i % len(MARKERS)], linestyle=LINESTYLES[(i + i // len(MARKERS)) % 4],
                markersize=max(7 - 0.5 * i, 3), fillstyle="none", linewidth=1.4, label=label)
        whole = whole and all(float(x).is_integer() for x in xs)
    if whole:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # iteration 1, 2, 3: never 1.25, 1.5
    if hline is not None:
        ax.axhline(hline[0], color="grey", linestyle="--", linewidth=1, label=hline[1])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def interval_bars_plot(path: str, labels: Sequence[str], series: dict[str, Sequence[tuple[float, float, float]]],
                       xlabel: str, title: str) -> bool:
    """A PNG of horizontal bars with error bars: ``series`` maps a legend label to one ``(value, low, high)``
    per entry of ``labels`` (a win rate and its 95% interval, say). ``False`` (and a note) without matplotlib."""
    return _save(path, lambda: _interval_bars_figure(labels, series, xlabel, title))


def _interval_bars_figure(labels, series, xlabel, title):
    height = 0.8 / max(len(series), 1)
    fig, ax = _pyplot().subplots(figsize=(8, 1.2 + 0.35 * len(labels) * len(series)), dpi=110)
    for i, (name, triples) in enumerate(series.items()):
        ys = [k + (i - (len(series) - 1) / 2) * height for k in range(len(labels))]
        values = [t[0] for t in triples]
        errors = [[t[0] - t[1] for t in triples], [t[2] - t[0] for t in triples]]
        ax.barh(ys, values, height=height, xerr=errors, capsize=2, label=name, hatch=("", "//", "..", "xx")[i % 4])
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()  # the first label at the top, as in the report's table
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _pyplot():
    """matplotlib.pyplot drawing to files only (no display); :class:`MissingExtraError` without matplotlib."""
    matplotlib = require("matplotlib", purpose="plotting")
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", purpose="plotting")


def generation_throughput(total: dict) -> str:
    """The engine games' cost from :func:`agents.supervised.engine_games.generate_games`'s ``"total"``, as a phrase."""
    rate = total["positions_per_s_per_worker"]
    if rate is None:
        return "generation throughput not recorded"
    return f"{rate:,.0f} positions/s per worker while generating"


def losses_plot(path: str, metrics: Sequence[dict]) -> bool:
    """A PNG of the policy and value losses per iteration (the metrics rows of a training run)."""
    series = {f"{k} loss": [m[f"{k}_loss"] for m in metrics] for k in ("policy", "value")}
    return line_plot(path, [m["iteration"] for m in metrics], series, "iteration", "loss", "training losses")


def settings_text(config) -> str:
    """A settings dataclass as ``name = value`` lines (for a report's Settings block)."""
    return "\n".join(f"{k} = {v}" for k, v in dataclasses.asdict(config).items())


def write_alphazero_report(out: str, text: str, config, agent_path: str, simulations: int,
                           move_choice: str | None = None) -> None:
    """``out``/report.md: ``text``, then the run's settings and how to load and play the agent it saved."""
    how = f"MCTS with {simulations} simulations" + (f", {move_choice}" if move_choice else "")
    text = text.rstrip("\n") + f"\n\n## Settings\n\n```\n{settings_text(config)}\n```\n\n"
    text += (f"The trained agent: `agents.load(\"{agent_path}\")` ({how}; pass `simulations=0` to "
             "`AlphaZeroAgent.load` for the raw policy). It plays from PettingZoo's observation, "
             "`agent.act(obs[\"observation\"], obs[\"action_mask\"])`, and on `agents.games` games, `agent(games)`.\n")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)


def selfplay_text(metrics: Sequence[dict], workers: int, overlap: bool) -> str:
    """Where self-play ran and what it cost, as a phrase, from an AlphaZero run's metrics rows."""
    waited = sum(m["selfplay_s"] for m in metrics)  # the learner's wait for games
    games = sum(m.get("games_s", m["selfplay_s"]) for m in metrics)  # the games' own wall-clock
    positions = sum(m["samples"] for m in metrics)
    where = f"in {workers} worker processes" if workers else "in the learner's process"
    text = (f"self-play {where}: {games / 60:.1f} min of games, {positions:,} positions, "
            f"{positions / max(games, 1e-9):,.0f} positions/s")
    if overlap:
        text += (f"; they overlapped the learning, which waited {waited / 60:.1f} min for them (games played with"
                 " the weights of one iteration before)")
    return text


def move_score_rows(scores: dict[str, dict]) -> list[dict]:
    """The rows of :func:`agents.arena.evaluation.score_moves` results (``{player: scores}``), all positions
    and by player to move, as CSV rows."""
    rows = []
    for label, s in scores.items():
        for side in ("all", "first player to move", "second player to move"):
            r = s if side == "all" else s[side]
            rows.append({"player": label, "to move": side, **{k: v for k, v in r.items() if not isinstance(v, dict)}})
    return rows


def move_score_table(rows: Sequence[dict], sides: bool = True) -> str:
    """Markdown of :func:`move_score_rows` (``sides=False``: the "all" rows only, no "to move" column). Blunders
    count positions: won where the move only draws or loses (win->draw, win->loss), drawn where it loses."""
    shown = [r for r in rows if sides or r["to move"] == "all"]
    return markdown_table(
        ["player", *(["to move"] if sides else []), "positions", "value-preserving", "win->draw", "win->loss",
         "draw->loss"],
        [[r["player"], *([r["to move"]] if sides else []), f"{r['positions']:,}", f"{r['value_preserving']:.4f}",
          r["win->draw"], r["win->loss"], r["draw->loss"]] for r in shown])


def match_table(matches: Sequence) -> str:
    """Markdown of :class:`agents.arena.MatchResult` s: W-D-L of the first player named, its win and not-lost
    rates and score with 95% Wilson intervals, and how many games differ (by their moves)."""
    rows = []
    for m in matches:
        t = m.tally()
        rates = [f"{rate:.3f} [{lo:.3f}, {hi:.3f}]" for rate, (lo, hi) in (
            (t.wins / max(t.games, 1), t.rate_interval("wins")),
            (t.not_lost / max(t.games, 1), t.rate_interval("not_lost")), (t.score, t.interval))]
        rows.append([m.a, m.b, m.seats, f"{t.wins}-{t.draws}-{t.losses}", *rates, m.distinct])
    return markdown_table(["player", "opponent", "player moves", "W-D-L", "win rate [95% Wilson]",
                           "not lost [95% Wilson]", "score [95% Wilson]", "distinct"], rows)


def random_match_table(matches) -> str:
    """:class:`agents.arena.evaluation.RandomMatch` results (one per colour) as a markdown table."""
    return markdown_table(["colour", "games", "W-D-L", "win rate [95% Wilson]"], [
        [f"as {m.color}", m.games, f"{m.wins}-{m.draws}-{m.losses}",
         f"{m.win_rate:.3f} [{m.win_interval[0]:.3f}, {m.win_interval[1]:.3f}]"] for m in matches])


def draw_penalty_text(engine: str, weight: float, winning_cp: int) -> str:
    """The report's sentence on the supervised draw penalty (``""`` when its weight is 0)."""
    if not weight:
        return ""
    return f""" Where {engine} scores the side to move at
+{winning_cp} cp or more, the moves that draw at once (stalemate, too little material to mate,
repetition) also get an unlikelihood loss, -log(1 - p(drawing moves)), weight {weight:g}
(`agents.supervised.draw_move_loss`; Welleck et al. 2020): the engine's move says what to play, this says
what not to play when winning."""


def dagger_text(rounds: int, games: int, engine: str, nodes: int, table: str) -> str:
    """The report's paragraph on the DAgger rounds, with ``table`` (:func:`agents.supervised.dagger_table`);
    ``""`` without rounds."""
    if not rounds:
        return ""
    plural = "s" if rounds != 1 else ""
    return f"""
Then {rounds} DAgger round{plural} (Ross, Gordon and Bagnell 2011; `agents.supervised.dagger`): in each, the raw
policy plays {games:,} games a colour against random (seeds 2,000,000 x round + i, apart from the scoring
games), {engine} at {nodes} nodes labels every position the policy moved in, and training goes on for one
epoch over all the data. The policy's games before each round's epoch:

{table}
"""


class Stages:
    """Wall-clock seconds per stage of an experiment, summed over resumed sessions in ``out/stages.json``."""

    def __init__(self, out: str, resume: bool):
        self.path = os.path.join(out, "stages.json")
        self.seconds = read_json(self.path) if resume and os.path.exists(self.path) else {}

    def timed(self, name: str, fn):
        """``fn()``, its seconds added to stage ``name``."""
        t0 = time.perf_counter()
        result = fn()
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0
        write_json(self.path, self.seconds)
        return result

    def table(self) -> str:
        return markdown_table(["stage", "minutes"], [[name, f"{s / 60:.1f}"] for name, s in self.seconds.items()])
