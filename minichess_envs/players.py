"""Asking a player for a move: the one place that turns "an agent or a function" into a legal action.

A *player* is an agent, any object with ``act(observation, action_mask,
position) -> action`` (and optionally ``act_batch`` for many positions at
once), or a plain function ``position -> move``. The *position* is a chess
:class:`~minichess_envs.Position` (the observation is then the variant's
encoding of it) or any other game with the ``agents.games.Game`` methods
``copy``, ``legal_actions``, ``legal_mask``, ``observation`` and
``action_name`` (a board game: its own observation). A player may answer with
an action index, or by name: a :class:`~minichess_envs.Move` or a UCI string in
chess, an action's ``action_name`` in another game. Players get copies of
positions, so they cannot change the game. A choice that is not a legal move
raises :class:`~minichess_envs.IllegalMoveError` naming the player, the choice
and the position.

The envs (opponents), the tablebase scorer, the arena and the evaluations all
ask through :func:`choose_action` / :func:`choose_actions`; ``agents``
re-exports them.

>>> choose_action(lambda pos: "e2e3", Position("gardner"))  # an action index
1033
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import IllegalMoveError, Move, Position


def is_player(obj) -> bool:
    """Is ``obj`` an agent (with ``act``) or a function ``position -> move``?"""
    return hasattr(obj, "act") or callable(obj)


def check_player(obj, role: str = "player") -> None:
    """``TypeError`` naming ``role`` unless ``obj`` is a player."""
    if not is_player(obj):
        raise TypeError(f"{role} must be an agent (with .act) or a function position -> move, "
                        f"not {type(obj).__name__}")


def player_name(player) -> str:
    """The name a player goes by: its ``name``, a function's ``__name__``, else its class name."""
    name = getattr(player, "name", None) or getattr(player, "__name__", None)
    return str(name) if name else type(player).__name__


def _shown(position) -> str:
    """The position in an error message: a chess FEN, another game's repr."""
    return position.fen() if isinstance(position, Position) else repr(position)


def agent_inputs(positions: Sequence, encoding: ObservationEncoding | None = None) -> tuple[np.ndarray, np.ndarray]:
    """What agents see of ``positions`` (all chess positions of one variant, or all games of one kind):
    the stacked observations and legal-action masks."""
    if isinstance(positions[0], Position):
        encoding = encoding or ObservationEncoding(positions[0].variant)
        return np.stack([encoding.encode(p) for p in positions]), np.stack([p.action_mask() for p in positions])
    return np.stack([g.observation() for g in positions]), np.stack([g.legal_mask() for g in positions])


def player_choice(player, position, encoding: ObservationEncoding | None = None, mask: np.ndarray | None = None):
    """What ``player`` answers in ``position``, unchecked (an action, or a move by name)."""
    if hasattr(player, "act"):
        if isinstance(position, Position):
            observation = (encoding or ObservationEncoding(position.variant)).encode(position)
            mask = position.action_mask() if mask is None else mask
        else:
            observation = position.observation()
            mask = position.legal_mask() if mask is None else mask
        return player.act(observation, mask, position.copy())
    check_player(player)
    return player(position.copy())


def legal_action(position, choice, player="player", mask: np.ndarray | None = None) -> int:
    """The action index of ``choice`` (an action, or a move by name) if it is legal in ``position``.

    :param player: the player (or a label for it) to name in the error.
    :param mask: the position's legal-action mask, when the caller has it.
    :raises IllegalMoveError: the choice is not a legal move (or not a move at all).
    """
    label = player if isinstance(player, str) else player_name(player)
    if isinstance(choice, (int, np.integer)) and type(choice) is not bool:  # np.bool_ is no np.integer
        action = int(choice)
        if mask is None:
            if action in position.legal_actions():
                return action
        elif 0 <= action < len(mask) and mask[action]:
            return action
        raise IllegalMoveError(f"{label} chose illegal action {action} in {_shown(position)}")
    if not isinstance(position, Position):  # another game: a move by its action name
        for action in position.legal_actions() if isinstance(choice, str) else ():
            if position.action_name(action) == choice:
                return int(action)
        raise IllegalMoveError(f"{label} chose {choice!r} in {_shown(position)}, which is no legal action")
    try:
        return position.move_to_action(choice)
    except IllegalMoveError:
        shown = repr(choice.uci() if isinstance(choice, Move) else choice)
        raise IllegalMoveError(f"{label} chose illegal move {shown} in {position.fen()}") from None
    except (ValueError, TypeError) as exc:  # not a move at all: bad UCI, or another type
        raise IllegalMoveError(f"{label} chose {choice!r} in {position.fen()}, which is not a move: {exc}") from None


def choose_action(player, position, encoding: ObservationEncoding | None = None, *,
                  name: str | None = None, mask: np.ndarray | None = None) -> int:
    """The legal action ``player`` chooses in ``position`` (see :func:`legal_action` for errors).

    ``encoding`` makes an agent's observation of a chess position (default: the
    variant's standard encoding); ``name`` labels the player in errors (default:
    :func:`player_name`).
    """
    choice = player_choice(player, position, encoding, mask)
    return legal_action(position, choice, name or player_name(player), mask)


def player_choices(player, positions: Sequence, encoding: ObservationEncoding | None = None, *,
                   name: str | None = None, batch: int | None = None) -> tuple[list, list[np.ndarray]]:
    """What ``player`` answers in each of ``positions`` (or games of one kind), unchecked, and their
    legal-action masks: one ``act_batch`` call when the agent has one, for at most ``batch``
    positions at a time (default: all); else one :func:`player_choice` each."""
    positions = list(positions)
    if not (hasattr(player, "act") and hasattr(player, "act_batch")):
        masks = [p.action_mask() if isinstance(p, Position) else p.legal_mask() for p in positions]
        return [player_choice(player, p, encoding, m) for p, m in zip(positions, masks)], masks
    choices: list = []
    masks = []
    step = batch or max(len(positions), 1)
    for start in range(0, len(positions), step):
        part = positions[start:start + step]
        observations, part_masks = agent_inputs(part, encoding)
        answers = player.act_batch(observations, part_masks, [p.copy() for p in part])
        if len(answers) != len(part):
            raise ValueError(f"{name or player_name(player)}.act_batch returned {len(answers)} actions for "
                             f"{len(part)} positions")
        choices += list(answers)
        masks += list(part_masks)
    return choices, masks


def choose_actions(player, positions: Sequence, encoding: ObservationEncoding | None = None, *,
                   name: str | None = None, batch: int | None = None) -> list[int]:
    """:func:`choose_action` for many positions (or games of one kind), asked as :func:`player_choices` asks."""
    positions, label = list(positions), name or player_name(player)
    choices, masks = player_choices(player, positions, encoding, name=label, batch=batch)
    return [legal_action(p, c, label, m) for p, c, m in zip(positions, choices, masks)]
