"""A trained AlphaZero network as an agent: search with it, or play its raw policy."""

from __future__ import annotations

import dataclasses

import numpy as np

from agents.alphazero.search import NetworkEvaluator, SearchConfig, search
from agents.games.chess import chess_games
from agents.alphazero.network import NetConfig, PolicyValueNet
from agents.base import Agent, check_settings, manifest_file, read_manifest, write_manifest
from agents.weights import load_network, save_network
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.variants import get_variant


class AlphaZeroAgent(Agent):
    """Plays the move a search with ``simulations`` simulations chooses (PUCT: the
    most visited; Gumbel root: sequential halving's pick, without noise), or with
    0 the network's most probable legal move, no search.

    It needs the position (its observation may differ from the caller's); the
    observation argument is ignored.
    """

    def __init__(self, net: PolicyValueNet, variant: str, history: int = 1, last_move: bool = False,
                 simulations: int = 64, search: SearchConfig | None = None, name: str = "alphazero"):
        self.net = net.eval()
        self.variant = get_variant(variant)
        self.encoding = ObservationEncoding(self.variant, history, last_move)
        c = net.config
        if (c.height, c.width, c.channels_in, c.num_actions) != (*self.encoding.shape, self.variant.num_actions):
            raise ValueError(f"network for {c.height}x{c.width}x{c.channels_in} planes and {c.num_actions} actions "
                             f"does not fit {self.variant.name} with observations {self.encoding.shape}")
        if not isinstance(simulations, int) or simulations < 0:
            raise ValueError(f"simulations must be an integer >= 0, got {simulations!r}")
        self.search = dataclasses.replace(search or SearchConfig(), simulations=simulations)
        self.simulations = simulations
        self.evaluator = NetworkEvaluator(self.net)
        self.name = name

    @classmethod
    def from_checkpoint(cls, state: dict, simulations: int = 64, name: str = "alphazero",
                        move_choice: str | None = None) -> AlphaZeroAgent:
        """The run's network and search settings, with ``move_choice`` (:class:`SearchConfig`) where given."""
        config = state["config"]
        net = PolicyValueNet(NetConfig(**state["net_config"]))
        net.load_state_dict(state["model"])
        search = SearchConfig.from_dict(config["search"])
        if move_choice is not None:
            search = dataclasses.replace(search, move_choice=move_choice)
        return cls(net, config["variant"], config["history"], config["last_move"], simulations, search, name)

    def act(self, observation, action_mask, position=None) -> int:
        if position is None:
            raise ValueError("AlphaZeroAgent needs the position: act(observation, action_mask, position)")
        return int(self.act_batch(None, None, [position])[0])

    def act_batch(self, observations, action_masks, positions=None) -> np.ndarray:
        if positions is None:
            raise ValueError("AlphaZeroAgent needs the positions: act_batch(observations, masks, positions)")
        if self.simulations <= 0:
            obs = np.stack([self.encoding.encode(p) for p in positions])
            masks = np.stack([p.action_mask() for p in positions])
            priors, _ = self.evaluator.evaluate(obs, masks)
            return priors.argmax(1)
        return search(chess_games(positions, self.encoding), self.evaluator, self.search).actions

    def value(self, positions) -> np.ndarray:
        """The value head for each position, from its side to move."""
        obs = np.stack([self.encoding.encode(p) for p in positions])
        masks = np.stack([p.action_mask() for p in positions])
        return self.evaluator.evaluate(obs, masks)[1]

    def analyse(self, position, top: int = 5) -> dict:
        """What the agent sees in ``position``: the value head and the ``top`` moves of its search.

        ``{"value", "simulations", "moves": [{"move", "action", "prior", "visits", "q"}]}``:
        values and ``q`` are for the side to move, ``visits`` is the share of
        the search's simulations (the policy's prior when ``simulations`` is 0),
        moves are ordered by visits, then by the search's policy (the improved
        policy with a Gumbel root: the move the agent plays comes first), then prior.
        """
        if position.is_game_over():
            raise ValueError(f"nothing to analyse: the game is over in {position.fen()}")
        obs = self.encoding.encode(position)[None]
        mask = position.action_mask()[None]
        priors, value = self.evaluator.evaluate(obs, mask)
        priors = priors[0]
        if self.simulations > 0:
            result = search(chess_games([position], self.encoding), self.evaluator, self.search)
            share = result.visits[0] / max(float(result.visits[0].sum()), 1.0)
            q, policy = result.q[0], result.policy[0]
        else:
            share, q, policy = priors, np.full_like(priors, np.nan), priors
        legal = position.legal_actions()
        legal.sort(key=lambda a: (-share[a], -policy[a], -priors[a]))
        moves = [{"move": position.action_to_move(a).uci(), "action": int(a), "prior": float(priors[a]),
                  "visits": float(share[a]), "q": None if np.isnan(q[a]) else float(q[a])} for a in legal[:top]]
        return {"value": float(value[0]), "simulations": self.simulations, "moves": moves}

    def save(self, path: str) -> None:
        save_network(path, self.net)
        write_manifest(path, self, variant=self.variant.name, history=self.encoding.history,
                       last_move=self.encoding.last_move, simulations=self.simulations,
                       search=dataclasses.asdict(self.search))

    def to(self, device: str = "auto") -> AlphaZeroAgent:
        """Move the network to ``device`` (``auto | cpu | cuda | mps``, see :func:`agents.devices.resolve_device`);
        returns the agent. Agents sent to worker processes should stay on the CPU."""
        from agents.devices import resolve_device

        self.net.to(resolve_device(device))
        self.evaluator.clear()
        return self

    @classmethod
    def load(cls, path: str, simulations: int | None = None, device: str = "cpu") -> AlphaZeroAgent:
        manifest = read_manifest(path)
        settings = check_settings(path, manifest["settings"], {"variant": str, "history": int, "last_move": bool,
                                                               "simulations": int, "search": dict},
                                  bounds={"simulations": (0, 10**6), "history": (1, 64)})
        search = check_settings(path, settings["search"], {}, SearchConfig.saved_types())
        net = load_network(path, PolicyValueNet, NetConfig, "AlphaZero")
        sims = settings["simulations"] if simulations is None else simulations
        try:
            search = SearchConfig.from_dict(search)
        except ValueError as exc:
            raise ValueError(f"bad agent manifest {manifest_file(path)}: {exc}") from None
        agent = cls(net, settings["variant"], settings["history"], settings["last_move"], sims, search,
                    manifest.get("name", "alphazero"))
        return agent if device == "cpu" else agent.to(device)
