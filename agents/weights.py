"""Agents that play by a network (:class:`NetworkAgent`), and their saved weights: ``weights.pt`` beside the
agent's manifest.

It holds the network's config (as a dict) and its state dict, so a network is rebuilt without knowing its size; it
is read with ``torch.load(weights_only=True)`` (never code) and checked against ``SHA256SUMS``."""

from __future__ import annotations

import dataclasses
import os

import torch

from agents.base import Agent
from agents.games import PLAIN, ChessGame, Game, board_game, new_game
from minichess_envs.checksums import verify_checksum, write_checksums

WEIGHTS = "weights.pt"


class NetworkAgent(Agent):
    """An agent playing ``game`` (:func:`~agents.games.new_game`) by a network ``net`` whose ``config`` says the planes
    and actions it reads; ``history``, ``last_move`` and ``threats`` say how the game is observed, where the game
    has them."""

    def __init__(self, net: torch.nn.Module, game: str, history: int = 1, last_move: bool = False,
                 threats: bool = False):
        self.net = net.eval()
        options = {"history": history, "last_move": last_move, "threats": threats}
        if board_game(game):  # a board game without an option shows the plain board
            options = {k: v if k in board_game(game).options else PLAIN[k] for k, v in options.items()}
        self.game = game
        self.history, self.last_move, self.threats = options.values()
        self.probe = new_game(game, **options)  # the start: shapes, observations
        self.encoding = getattr(self.probe, "encoding", None)  # chess variants: the observation encoding
        self.variant = self.probe.position.variant if isinstance(self.probe, ChessGame) else None
        self.shape = self.probe.observation_shape
        c, actions = net.config, self.probe.num_actions
        if (c.height, c.width, c.channels_in, c.num_actions) != (*self.shape, actions):
            raise ValueError(f"network for {c.height}x{c.width}x{c.channels_in} planes and {c.num_actions} actions "
                             f"does not fit {game} with observations {self.shape} and {actions} actions")

    def as_game(self, position) -> Game:
        """A chess position as a game the network sees as it was trained to; a game as it is, or seen with the
        network's options (Gomoku's ``history``) where it was set up with others."""
        if isinstance(position, Game):
            if position.observation_shape == self.shape:
                return position
            if isinstance(position, ChessGame):  # observed with another encoding: seen as the network was trained
                return ChessGame(position.position, self.encoding, position.ply_limit)
            game = position.copy()
            for name in type(position).options:
                setattr(game, name, getattr(self.probe, name))
            return game
        if self.encoding is None:
            raise TypeError(f"an agent for {self.game} plays Games, got {type(position).__name__}")
        return ChessGame(position, self.encoding)

    @staticmethod
    def saved_settings(manifest: dict) -> dict:
        """The manifest's settings, ``variant`` read as ``game`` (saved before board games shared the class)."""
        settings = dict(manifest["settings"])
        if "variant" in settings:
            settings["game"] = settings.pop("variant")
        return settings


def save_network(path: str, net: torch.nn.Module) -> None:
    """Write ``net.config`` and ``net.state_dict()`` to ``path/weights.pt`` atomically, with its checksum."""
    os.makedirs(path, exist_ok=True)
    tmp = os.path.join(path, WEIGHTS + ".tmp")
    torch.save({"net_config": dataclasses.asdict(net.config), "model": net.state_dict()}, tmp)
    os.replace(tmp, os.path.join(path, WEIGHTS))
    write_checksums(path, [WEIGHTS])


def load_network(path: str, net_class: type, config_class: type, what: str) -> torch.nn.Module:
    """``net_class(config_class(**net_config))`` with the weights of ``path/weights.pt``. ``ValueError`` naming the file
    (and ``what``: ``"PPO"``, ``"AlphaZero"``) when it is missing, truncated, fails its checksum or holds another
    network. Weights saved before checksums existed load with a warning."""
    file = os.path.join(path, WEIGHTS)
    if os.path.exists(file):
        try:
            verify_checksum(path, WEIGHTS, required=False)
        except ValueError as exc:
            raise ValueError(f"corrupt {what} weights: {exc}") from None
    try:
        weights = torch.load(file, map_location="cpu", weights_only=True)
        net = net_class(config_class(**weights["net_config"]))
        net.load_state_dict(weights["model"])
    except Exception as exc:  # missing, truncated or foreign files raise many kinds of errors
        raise ValueError(f"corrupt {what} weights {file}: {type(exc).__name__}: {exc}") from None
    check_finite(net.state_dict(), f"{what} weights {file}")
    return net


def check_finite(tensors: dict, what: str) -> None:
    """``ValueError`` naming ``what`` and the tensor if a floating-point tensor holds a NaN or an infinity (a checksum
    shows the file is the one saved, not that its numbers are usable)."""
    for name, tensor in tensors.items():
        if torch.is_tensor(tensor) and tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise ValueError(f"{what}: tensor {name!r} holds {bad} NaN or infinite value(s)")
