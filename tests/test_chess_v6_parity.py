"""8x8 parity with PettingZoo ``chess_v6``: the same actions in both AEC envs give the same game.

With ``draws="claim"`` and no ply limit, our ``chess`` AEC env must end every game where ``chess_v6``
does (it claims repetition and 50-move draws, also one move before they complete), with the same
rewards, terminations and truncations at every turn of the agent loop, and the same action mask at
every turn where a move is chosen, checked against ``chess_v6`` itself. Masks shown to finished players
are not compared: ``chess_v6`` gives the selected one the board's legal moves whoever is to move (after
a claimed draw, ``player_1`` sees White's moves) and the other all zeros; ours follow the ``aec`` module
docstring (the mover's legal moves, else only ``NO_OP_ACTION``), and those steps take ``None`` anyway.
"""

from __future__ import annotations

import math
import time
from collections import Counter

import numpy as np
import pytest

from minichess_envs import aec
from minichess_envs.engine import Move

pytest.importorskip("chess", reason="chess_v6 needs python-chess (dev extra)")
pytest.importorskip("pygame", reason="chess_v6 needs pygame-ce (dev extra)")
from pettingzoo.classic import chess_v6


def play_both(rng: np.random.Generator, back_and_forth: float = 0.0) -> dict:
    """One game with the same actions in both envs; returns how it ended and the differences seen.

    Actions are uniformly random legal moves; with probability ``back_and_forth`` the mover
    instead takes back its previous move where it can, which makes repetitions (and so claims) common.
    """
    ours, theirs = aec.env("chess", draws="claim", ply_limit=math.inf), chess_v6.env()
    ours.reset(seed=0)
    theirs.reset(seed=0)
    raw = ours.unwrapped
    differences, outcome = [], None
    for agent in theirs.agent_iter():
        if ours.agent_selection != agent:
            differences.append(("agent", raw.position.ply, ours.agent_selection, agent))
            break
        obs, reward, terminated, truncated, info = ours.last()
        their_obs, their_reward, their_terminated, their_truncated, _ = theirs.last()
        mask, their_mask = obs["action_mask"], their_obs["action_mask"]
        over = their_terminated or their_truncated
        same_mask = over or np.array_equal(mask, their_mask)
        if (reward, terminated, truncated) != (their_reward, their_terminated, their_truncated) or not same_mask:
            differences.append(("last", raw.position.ply, agent, (reward, terminated, truncated),
                                (their_reward, their_terminated, their_truncated), same_mask))
        for name in ("rewards", "terminations", "truncations"):
            if getattr(ours, name) != getattr(theirs, name):
                differences.append((name, raw.position.ply, getattr(ours, name), getattr(theirs, name)))
        if over:
            action, outcome = None, info.get("outcome", outcome)
        else:
            action = int(rng.choice(np.flatnonzero(their_mask)))
            if back_and_forth and rng.random() < back_and_forth and raw.position.ply >= 2:
                before = raw.position.move_stack[-2]
                back = Move(before.to_square, before.from_square, None)
                if raw.position.is_legal(back):
                    action = raw.position.move_to_action(back)
        ours.step(action)
        theirs.step(action)
        if differences:
            break
    if ours.agents or theirs.agents:
        differences.append(("agents left", ours.agents, theirs.agents))
    # Over, with no ply limit, yet not over by the engine's own rules: ended by a draw claimed one move early.
    return {"differences": differences, "plies": raw.position.ply, "outcome": outcome,
            "claimed_early": raw.position.outcome() is None}


def play_games(games: int, seed: int, back_and_forth: float) -> dict:
    rng = np.random.default_rng(seed)
    results = [play_both(rng, back_and_forth) for _ in range(games)]
    return {"games": games, "differing": [r["differences"] for r in results if r["differences"]],
            "plies": sum(r["plies"] for r in results),
            "claimed_early": Counter(r["outcome"] for r in results if r["claimed_early"]),
            "outcomes": Counter(r["outcome"] for r in results)}


def test_games_end_exactly_where_chess_v6s_do():
    """A few hundred games: uniformly random ones (50-move claims among them), and short ones that
    often step back and forth, where repetition claims are the rule."""
    random = play_games(6, seed=1, back_and_forth=0.0)
    repeating = play_games(220, seed=2, back_and_forth=0.5)
    assert random["differing"] == [] and repeating["differing"] == []
    assert random["claimed_early"]["no_progress"] >= 1 and repeating["claimed_early"]["repetition"] >= 120


def test_the_default_draw_rule_outlasts_chess_v6():
    """Why the option exists: with automatic draws a back-and-forth game goes one move past chess_v6's end."""
    ours, theirs = aec.env("chess"), chess_v6.env()
    ours.reset()
    theirs.reset()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:  # f6g8 would repeat the start a third time
        action = ours.unwrapped.position.move_to_action(uci)
        ours.step(action)
        theirs.step(action)
    assert all(theirs.terminations.values()) and theirs.rewards == {"player_0": 0, "player_1": 0}
    assert not any(ours.terminations.values())
    claiming = aec.env("chess", draws="claim")
    claiming.reset()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        claiming.step(claiming.unwrapped.position.move_to_action(uci))
    assert all(claiming.terminations.values()) and claiming.infos["player_0"]["outcome"] == "repetition"
    assert '[Result "1/2-1/2"]' in claiming.unwrapped.to_pgn()  # a draw, though not yet one by the rules


@pytest.mark.slow
def test_two_thousand_random_games_end_exactly_where_chess_v6s_do():
    start = time.perf_counter()
    result = play_games(2000, seed=3, back_and_forth=0.0)
    print(f"\n{result['games']} random 8x8 games, {result['plies']} plies, {len(result['differing'])} differing, "
          f"{result['claimed_early']} ended by a claim one move early, {time.perf_counter() - start:.0f} s")
    assert result["differing"] == []
