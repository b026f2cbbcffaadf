"""Asking players for moves: agents and functions, every answer form, one error everywhere."""

from __future__ import annotations

import re

import numpy as np
import pytest

import agents
from agents.arena import play_game
from agents.arena.evaluation import versus_random
from minichess_envs import IllegalMoveError, Move, Position
from minichess_envs.env import MiniChessEnv
from minichess_envs.players import choose_action, choose_actions, legal_action, player_name
from minichess_envs.tablebase import Tablebase, score_agent
from minichess_envs.vector import MiniChessVectorEnv

START = Position("gardner").fen()


class Fixed:
    """An agent answering the same thing everywhere (with ``act_batch`` if ``batched``)."""

    def __init__(self, answer, name="fixed", batched=False):
        self.answer, self.name = answer, name
        if batched:
            self.act_batch = lambda observations, masks, positions: [answer] * len(positions)

    def act(self, observation, action_mask, position=None):
        return self.answer


def test_every_answer_form_gives_the_same_action():
    pos = Position("gardner")
    for move in pos.legal_moves:
        action = pos.move_to_action(move)
        for answer in (action, np.int64(action), move, move.uci()):
            assert choose_action(Fixed(answer), pos) == action
            assert choose_action(lambda p, a=answer: a, pos) == action
        assert choose_actions(Fixed(action, batched=True), [pos, pos.copy()]) == [action, action]


@pytest.mark.parametrize("answer, shown", [
    (0, "illegal action 0"),
    ("a2a4", "illegal move 'a2a4'"),
    (Move("a2", "a4"), "illegal move 'a2a4'"),
    ("zz", "'zz'"),
    (None, "None"),
    (True, "True"),
])
def test_an_illegal_answer_names_the_player_the_move_and_the_position(answer, shown):
    pos = Position("gardner")
    for player in (Fixed(answer, name="bot"), Fixed(answer, name="bot", batched=True)):
        with pytest.raises(IllegalMoveError) as err:
            choose_actions(player, [pos])
        assert "bot" in str(err.value) and shown in str(err.value) and START in str(err.value)

    def bot(position):
        return answer

    with pytest.raises(IllegalMoveError, match="bot chose"):
        choose_action(bot, pos)
    with pytest.raises(IllegalMoveError, match=re.escape(START)):
        legal_action(pos, answer, "bot")


def test_players_get_copies():
    pos = Position("gardner")

    def meddler(position):
        position.push_uci("e2e3")
        return "a2a3"

    assert choose_action(meddler, pos) == pos.move_to_action("a2a3") and pos.ply == 0


def test_names_and_bad_players():
    def my_function(position):
        return 0

    assert (player_name(my_function), player_name(Fixed(0, name="x")), player_name(Fixed(0, name=None))) == (
        "my_function", "x", "Fixed")
    with pytest.raises(TypeError, match="player must be an agent"):
        choose_action(42, Position("gardner"))
    assert agents.choose_action is choose_action  # the agents package re-exports the helpers


def test_every_caller_reports_an_illegal_move_the_same_way():
    cheater = Fixed("a2a4", name="cheater")
    expect = re.escape("cheater") + r".*illegal move 'a2a4' in " + re.escape(START)
    with pytest.raises(IllegalMoveError, match="opponent 'cheater'.*" + expect[len("cheater"):]):
        MiniChessEnv("gardner", agent_color="black", opponent=cheater).reset(seed=0)
    vector = MiniChessVectorEnv(2, "gardner", agent_color="black", opponent=Fixed("a2a4", "cheater", batched=True))
    with pytest.raises(IllegalMoveError, match=expect):
        vector.reset(seed=0)
    with pytest.raises(IllegalMoveError, match=r"cheater \(white\) chose illegal move 'a2a4' in " + re.escape(START)):
        play_game(cheater, agents.RandomAgent(), "gardner")
    with pytest.raises(IllegalMoveError, match=expect):
        versus_random(cheater, "gardner", games=2)
    tb = Tablebase.build("3x3", white="KQ", black="k")  # small: built in a moment
    with pytest.raises(IllegalMoveError, match=r"cheater chose illegal action 0 in "):
        score_agent(Fixed(0, name="cheater"), tb, sample=5)


def test_board_games_are_asked_the_same_way():
    from agents.games import TicTacToe
    from boards import play

    game = play(TicTacToe, [0, 4])  # X in a corner, O in the centre
    for answer in (8, np.int64(8), "c1"):  # an action, or its Game.action_name (the bottom right cell)
        assert choose_action(Fixed(answer), game) == 8
        assert choose_action(lambda g, a=answer: a, game) == 8
    seen = []

    class Batched:
        name = "batched"

        def act(self, observation, action_mask, position=None):
            raise AssertionError("asked one at a time")

        def act_batch(self, observations, masks, positions):
            seen.append(len(positions))
            # the game's own observation and mask, and a copy of the game
            assert all(np.array_equal(o, game.observation()) and np.array_equal(m, game.legal_mask())
                       and p is not game and p.board == game.board for o, m, p in zip(observations, masks, positions))
            return [int(np.flatnonzero(m)[-1]) for m in masks]

    assert choose_actions(Batched(), [game] * 5, batch=2) == [8] * 5 and seen == [2, 2, 1]
    for answer, shown in ((0, "illegal action 0"), ("x", "'x'"), (None, "None")):
        where = r".* TicTacToe\(X\.\./\.O\./\.\.\.\)"
        with pytest.raises(IllegalMoveError, match=re.escape(f"bot chose {shown}") + where):
            choose_action(Fixed(answer, name="bot"), game)
