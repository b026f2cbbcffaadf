"""Board-game helpers for the tests: a game after given moves, and the PettingZoo env a game follows."""

from __future__ import annotations

import importlib


def play(game_class, actions):
    """A game after the given actions from its start."""
    game = game_class()
    for a in actions:
        game.step(int(a))
    return game


def pettingzoo_env(name: str):
    """The raw (unwrapped) PettingZoo env whose rules and encodings the board game ``name`` follows, reset."""
    env = importlib.import_module(f"pettingzoo.classic.{name}.{name}").raw_env()
    env.reset()
    return env
