"""A trained AlphaZero network as an agent, for any game: search with it, or play its raw policy."""

from __future__ import annotations

import dataclasses

import numpy as np

from agents.alphazero.network import NetConfig, PolicyValueNet
from agents.alphazero.search import NetworkEvaluator, SearchConfig, check_number, search
from agents.base import check_settings, manifest_file, read_manifest, write_manifest
from agents.weights import NetworkAgent, load_network, save_network


class AlphaZeroAgent(NetworkAgent):
    """Plays the move a search with ``simulations`` simulations chooses, or with 0 the network's most probable.
    ``game``: a chess variant (``history`` and ``last_move`` say what the network sees; ``act`` needs its
    position) or a board game (rebuilt from PettingZoo's observation, or passed as a :class:`~agents.games.Game`;
    Gomoku seen with its ``history`` and ``threats``)."""

    def __init__(self, net: PolicyValueNet, game: str, history: int = 1, last_move: bool = False,
                 simulations: int = 64, search: SearchConfig | None = None, name: str = "alphazero",
                 threats: bool = False):
        super().__init__(net, game, history, last_move, threats)
        check_number("simulations", simulations, 0, kind=int)
        self.search = dataclasses.replace(search or SearchConfig(), simulations=simulations)
        self.evaluator = NetworkEvaluator(self.net)
        self.name = name

    @property
    def simulations(self) -> int:
        """Simulations per move (0: the network's most probable move), held in :attr:`search`."""
        return self.search.simulations

    @classmethod
    def from_checkpoint(cls, state: dict, simulations: int = 64, name: str = "alphazero",
                        **play) -> AlphaZeroAgent:
        """The run's network and search settings, with the :class:`SearchConfig` settings in ``play`` changed
        (how the agent searches at play time, e.g. ``move_choice="lcb"`` or ``root="gumbel"``)."""
        config = state["config"]
        net = PolicyValueNet(NetConfig(**state["net_config"]))
        net.load_state_dict(state["model"])
        search_config = dataclasses.replace(SearchConfig.from_dict(config["search"]), **play)
        network = config["network"]
        return cls(net, config["game"], network["history"], network["last_move"], simulations, search_config, name,
                   network.get("threats", False))

    def act(self, observation, action_mask, position=None) -> int:
        return int(self.act_batch([observation], [action_mask], None if position is None else [position])[0])

    def act_batch(self, observations, action_masks, positions=None) -> np.ndarray:
        if positions is None:
            if self.encoding is not None:
                raise ValueError("AlphaZeroAgent needs the positions: act(observation, action_mask, position)")
            positions = [self.probe.from_observation(o) for o in observations]
        return self.act_games(positions)

    def act_games(self, games) -> np.ndarray:
        """The chosen action in each game or chess position (one batched search or network call for all)."""
        if self.simulations <= 0:
            return self.policy_value(games)[0].argmax(1)
        return search([self.as_game(g) for g in games], self.evaluator, self.search).actions

    def policy_value(self, games) -> tuple[np.ndarray, np.ndarray]:
        """The network's priors over each game's legal actions, and its value for the player to move."""
        games = [self.as_game(g) for g in games]
        obs = np.stack([g.observation() for g in games])
        masks = np.stack([g.legal_mask() for g in games])
        return self.evaluator.evaluate(obs, masks)

    def analyse(self, position, top: int = 5) -> dict:
        """``{"value", "simulations", "moves": [{"move", "action", "prior", "visits", "q"}]}``: the value head and
        the ``top`` moves of the search, for the side to move; ``visits`` is a share of the simulations (the prior
        without search); moves by visits, then the search's policy (Gumbel: the move played first), then prior."""
        game = self.as_game(position)
        if game.is_over():
            raise ValueError(f"nothing to analyse: the game is over in {game!r}")
        (priors,), (value,) = self.policy_value([game])
        if self.simulations > 0:
            result = search([game], self.evaluator, self.search)
            share = result.visits[0] / max(float(result.visits[0].sum()), 1.0)
            q, policy = result.q[0], result.policy[0]
        else:
            share, q, policy = priors, np.full_like(priors, np.nan), priors
        legal = game.legal_actions()
        legal.sort(key=lambda a: (-share[a], -policy[a], -priors[a]))
        moves = [{"move": game.action_name(a), "action": int(a), "prior": float(priors[a]),
                  "visits": float(share[a]), "q": None if np.isnan(q[a]) else float(q[a])} for a in legal[:top]]
        return {"value": float(value), "simulations": self.simulations, "moves": moves}

    def save(self, path: str) -> None:
        save_network(path, self.net)
        write_manifest(path, self, game=self.game, history=self.history, last_move=self.last_move,
                       **({"threats": True} if self.threats else {}), search=dataclasses.asdict(self.search))

    def to(self, device: str = "auto") -> AlphaZeroAgent:
        """The agent, its network moved to ``device`` (:func:`agents.devices.resolve_device`)."""
        from agents.devices import resolve_device
        self.net.to(resolve_device(device))
        self.evaluator.clear()
        return self

    @classmethod
    def load(cls, path: str, simulations: int | None = None, device: str = "cpu") -> AlphaZeroAgent:
        manifest = read_manifest(path)
        settings = cls.saved_settings(manifest)
        # "simulations" beside "search": saved before the search settings held them
        settings = check_settings(path, settings, {"game": str, "search": dict},
                                  {"history": int, "last_move": bool, "threats": bool, "simulations": int},
                                  bounds={"simulations": (0, 10**6), "history": (1, 64)})
        search_settings = check_settings(path, settings["search"], {}, SearchConfig.saved_types())
        net = load_network(path, PolicyValueNet, NetConfig, "AlphaZero")
        try:
            search = SearchConfig.from_dict(search_settings)
            sims = settings.get("simulations", search.simulations) if simulations is None else simulations
            agent = cls(net, settings["game"], settings.get("history", 1), settings.get("last_move", False), sims,
                        search, manifest.get("name", "alphazero"), settings.get("threats", False))
        except ValueError as exc:
            raise ValueError(f"bad agent manifest {manifest_file(path)}: {exc}") from None
        return agent if device == "cpu" else agent.to(device)

