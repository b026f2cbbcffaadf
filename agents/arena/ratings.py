"""Confidence intervals for scores, and Elo ratings by maximum likelihood.

>>> wilson_interval(8, 10)                              # doctest: +ELLIPSIS
(0.490..., 0.943...)
>>> elo = elo_mle([("a", "random", 1.0)] * 3 + [("a", "random", 0.0)])
>>> round(elo["a"].elo, 1)                              # 75% score: 400 log10(3)
190.8

The model is the logistic Elo (Bradley-Terry) one, a draw half a win and half a loss, with no color advantage
(the arena alternates colors). Intervals are profile-likelihood intervals: the ratings ``x`` at which
``2 * (logL_max - max logL given r_i = x)`` stays below the chi-square(1) quantile, the others re-fitted.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Iterable, Mapping, NamedTuple

import numpy as np

_C = math.log(10) / 400  # Elo points -> natural-log odds


def z_value(confidence: float = 0.95) -> float:
    """Two-sided normal quantile: 1.95996... for 95%."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n``; ``(0.0, 1.0)`` when ``n == 0``.

    ``successes`` may be a score with half points: treating each game as a Bernoulli trial overstates the
    variance when there are draws, so the interval is conservative.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    z = z_value(confidence)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


class Rating(NamedTuple):
    """An Elo rating with its confidence interval, games played and mean score."""

    elo: float
    low: float
    high: float
    games: int
    score: float


def _tables(results: Iterable[tuple[str, str, float]], players: list[str] | None):
    """Players, and per pair the games played ``N[i, j]`` and ``i``'s points ``S[i, j]``."""
    results = list(results)
    for a, b, s in results:
        if not 0 <= s <= 1:
            raise ValueError(f"score of {a!r} against {b!r} must be in [0, 1], got {s}")
        if a == b:
            raise ValueError(f"{a!r} cannot play itself in a rating table")
    names = list(dict.fromkeys([*(players or []), *(name for a, b, _ in results for name in (a, b))]))
    index = {name: i for i, name in enumerate(names)}
    N, S = np.zeros((len(names), len(names))), np.zeros((len(names), len(names)))
    for a, b, s in results:
        i, j = index[a], index[b]
        N[i, j] += 1
        N[j, i] += 1
        S[i, j] += s
        S[j, i] += 1 - s
    return names, N, S


def _loglik(r: np.ndarray, N: np.ndarray, S: np.ndarray) -> float:
    d = _C * (r[:, None] - r[None, :])
    # S log p + (N - S) log (1 - p), with log p = -log(1 + e^-d); each pair counted twice.
    return -0.5 * float(np.sum(S * np.logaddexp(0, -d) + (N - S) * np.logaddexp(0, d)))


def _fit(r: np.ndarray, N: np.ndarray, S: np.ndarray, free: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Maximise the log-likelihood over the ``free`` ratings (Newton with step halving)."""
    r = r.copy()
    ll = _loglik(r, N, S)
    for _ in range(200):
        p = 1 / (1 + np.exp(-_C * (r[:, None] - r[None, :])))
        grad = _C * np.sum(S - N * p, axis=1)[free]
        w = _C * _C * N * p * (1 - p)
        hess = w - np.diag(w.sum(axis=1))  # negative definite on a connected game graph
        try:
            step = np.linalg.solve(hess[np.ix_(free, free)], -grad)
        except np.linalg.LinAlgError:
            break
        t = 1.0
        while True:  # the log-likelihood is concave: halve until it does not drop
            trial = r.copy()
            trial[free] += t * step
            new = _loglik(trial, N, S)
            if new >= ll - 1e-12 or t < 1e-6:
                break
            t /= 2
        r, ll = trial, new
        if np.max(np.abs(t * step)) < tol:
            return r
    raise ValueError("Elo fit did not converge: some group of players may have won every game against the "
                     "rest (pass prior_draws > 0)")


def elo_mle(results: Iterable[tuple[str, str, float]], anchor: str | Mapping[str, float] = "random",
            prior_draws: float = 0.0, confidence: float = 0.95, players: list[str] | None = None) -> dict[str, Rating]:
    """Maximum-likelihood Elo ratings from game results, with profile-likelihood intervals.

    :param results: ``(player, opponent, player's score)`` per game, score 1, 0.5 or 0.
    :param anchor: the player fixed at 0 Elo, or ``{player: Elo}`` for several players whose
        ratings are known (engine levels calibrated beforehand); the others are fitted.
    :param prior_draws: virtual draws added to every pair that played (as BayesElo does); 0 is the pure
        MLE, which is infinite for a player who won (or lost) every game, so this raises ``ValueError`` then.
    :returns: ``{player: Rating}`` sorted from strongest to weakest.
    """
    names, N, S = _tables(results, players)
    fixed = {anchor: 0.0} if isinstance(anchor, str) else dict(anchor)
    if not fixed:
        raise ValueError("give an anchor: a player's name or {player: Elo}")
    for name in fixed:
        if name not in names:
            raise ValueError(f"anchor {name!r} played no game; players: {', '.join(names)}")
    games, points = N.sum(axis=1), S.sum(axis=1)  # per player, without the virtual draws
    played = N > 0
    N = N + prior_draws * played
    S = S + prior_draws / 2 * played
    n = len(names)
    free = np.array([name not in fixed for name in names])
    # Every player must be linked to an anchor by games, or its rating is undetermined.
    reached = ~free
    for _ in range(n):
        reached |= played[reached].any(axis=0)
    if not reached.all():
        lost = ", ".join(names[i] for i in np.flatnonzero(~reached))
        raise ValueError(f"no chain of games links {lost} to the anchor {', '.join(fixed)}")
    # Perfect separation (a group that won every game against the rest) sends the MLE to infinity.
    totals = S.sum(axis=1)
    for i in range(n):
        if N[i].sum() and (totals[i] == 0 or totals[i] == N[i].sum()) and free[i]:
            raise ValueError(f"{names[i]!r} {'won' if totals[i] else 'lost'} every game: its maximum-likelihood "
                             "Elo is infinite; pass prior_draws > 0")
    start = float(np.mean(list(fixed.values())))  # from 0 Newton's first steps overshoot anchors far from it
    r = _fit(np.array([fixed.get(name, start) for name in names], float), N, S, free)
    if np.any(np.abs(r) > 4000 + max(abs(elo) for elo in fixed.values())):
        raise ValueError("Elo ratings are unbounded (some group won every game against the rest); "
                         "pass prior_draws > 0")
    ll_max = _loglik(r, N, S)
    drop = 0.5 * z_value(confidence) ** 2  # chi-square(1) quantile / 2

    def deficit(i: int, x: float) -> float:
        trial = r.copy()
        trial[i] = x
        others = free.copy()
        others[i] = False
        fitted = _fit(trial, N, S, others) if others.any() else trial
        return ll_max - _loglik(fitted, N, S) - drop

    out = {}
    for i, name in enumerate(names):
        score = float(points[i] / games[i]) if games[i] else float("nan")
        if not free[i]:
            out[name] = Rating(float(r[i]), float(r[i]), float(r[i]), int(games[i]), score)
            continue
        bounds = []
        for sign in (-1, 1):
            inner, width = r[i], 25.0
            while deficit(i, r[i] + sign * width) < 0:  # widen until outside the interval
                inner, width = r[i] + sign * width, width * 2
                if width > 8000:
                    raise ValueError(f"confidence interval of {name!r} is unbounded")
            outer = r[i] + sign * width
            for _ in range(50):  # bisect the crossing to well under 0.01 Elo
                mid = (inner + outer) / 2
                inner, outer = (mid, outer) if deficit(i, mid) < 0 else (inner, mid)
            bounds.append(float((inner + outer) / 2))
        out[name] = Rating(float(r[i]), bounds[0], bounds[1], int(games[i]), score)
    return dict(sorted(out.items(), key=lambda kv: -kv[1].elo))
