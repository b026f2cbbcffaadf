"""Asking a player for a move: the one place that turns "an agent or a function" into a legal action.

A *player* is an agent, any object with ``act(observation, action_mask,
position) -> action`` (and optionally ``act_batch`` for many positions at
once), or a plain function ``position -> move``. Either may answer with an
action index, a :class:`~minichess_envs.Move` or a UCI string. Players get
copies of positions, so they cannot change the game. A choice that is not a
legal move raises :class:`~minichess_envs.IllegalMoveError` naming the player,
the choice and the position's FEN.

The envs (opponents), the tablebase scorer, the arena and the evaluation
against random all ask through :func:`choose_action` / :func:`choose_actions`;
``agents`` re-exports them.

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


def player_choice(player, position: Position, encoding: ObservationEncoding | None = None,
                  mask: np.ndarray | None = None):
    """What ``player`` answers in ``position``, unchecked (an action, a Move or a UCI string)."""
    if hasattr(player, "act"):
        encoding = encoding or ObservationEncoding(position.variant)
        mask = position.action_mask() if mask is None else mask
        return player.act(encoding.encode(position), mask, position.copy())
    check_player(player)
    return player(position.copy())


def legal_action(position: Position, choice, player="player", mask: np.ndarray | None = None) -> int:
    """The action index of ``choice`` (an action, a Move or a UCI string) if it is legal in ``position``.

    :param player: the player (or a label for it) to name in the error.
    :param mask: the position's legal-action mask, when the caller has it.
    :raises IllegalMoveError: the choice is not a legal move (or not a move at all).
    """
    if isinstance(choice, (int, np.integer)) and type(choice) is not bool:  # np.bool_ is no np.integer
        action = int(choice)
        if mask is None:
            if action in position.legal_actions():
                return action
        elif 0 <= action < len(mask) and mask[action]:
            return action
        label = player if isinstance(player, str) else player_name(player)
        raise IllegalMoveError(f"{label} chose illegal action {action} in {position.fen()}")
    label = player if isinstance(player, str) else player_name(player)
    try:
        return position.move_to_action(choice)
    except IllegalMoveError:
        shown = repr(choice.uci() if isinstance(choice, Move) else choice)
        raise IllegalMoveError(f"{label} chose illegal move {shown} in {position.fen()}") from None
    except (ValueError, TypeError) as exc:  # not a move at all: bad UCI, or another type
        raise IllegalMoveError(f"{label} chose {choice!r} in {position.fen()}, which is not a move: {exc}") from None


def choose_action(player, position: Position, encoding: ObservationEncoding | None = None, *,
                  name: str | None = None, mask: np.ndarray | None = None) -> int:
    """The legal action ``player`` chooses in ``position`` (see :func:`legal_action` for errors).

    ``encoding`` makes an agent's observation (default: the variant's standard
    encoding); ``name`` labels the player in errors (default: :func:`player_name`).
    """
    choice = player_choice(player, position, encoding, mask)
    return legal_action(position, choice, name or player_name(player), mask)


def choose_actions(player, positions: Sequence[Position], encoding: ObservationEncoding | None = None, *,
                   name: str | None = None) -> list[int]:
    """:func:`choose_action` for many positions: one ``act_batch`` call when the agent has one."""
    positions = list(positions)
    if not positions:
        return []
    label = name or player_name(player)
    if not (hasattr(player, "act") and hasattr(player, "act_batch")):
        return [choose_action(player, p, encoding, name=label) for p in positions]
    encoding = encoding or ObservationEncoding(positions[0].variant)
    masks = np.stack([p.action_mask() for p in positions])
    observations = np.stack([encoding.encode(p) for p in positions])
    choices = player.act_batch(observations, masks, [p.copy() for p in positions])
    if len(choices) != len(positions):
        raise ValueError(f"{label}.act_batch returned {len(choices)} actions for {len(positions)} positions")
    return [legal_action(p, c, label, m) for p, c, m in zip(positions, choices, masks)]
