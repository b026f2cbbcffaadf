"""OpenSpiel's MCTS bot as an outside opponent, for every game OpenSpiel also has (``pip install open-spiel``)."""

from __future__ import annotations

import numpy as np

from agents.base import Agent


class OpenSpielMCTS(Agent):
    """OpenSpiel's MCTS bot (UCT with ``rollouts`` random rollouts per leaf, ``simulations`` per move, solved wins
    and losses kept) on OpenSpiel's twin of the game: the game says which (``Game.openspiel_state``, the same
    position in OpenSpiel) and how its actions map back (``Game.from_openspiel``). Needs the position."""

    def __init__(self, simulations: int = 100, rollouts: int = 1, uct_c: float = 2.0, seed: int = 0):
        try:
            from open_spiel.python.algorithms import mcts  # noqa: F401 (checked here, used in act)
        except ImportError as exc:  # an optional outside opponent
            raise ImportError("OpenSpielMCTS needs OpenSpiel: pip install open-spiel") from exc
        self.bots = {}
        self.simulations, self.rollouts, self.uct_c = simulations, rollouts, uct_c
        self.name = f"openspiel mcts {simulations}"
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None or not hasattr(self, "random_state"):
            self.random_state = np.random.RandomState(np.random.MT19937(seed))  # any seed: the arena's are 63-bit
            self.bots = {}

    def __getstate__(self) -> dict:
        """Pickled without its bots (OpenSpiel's objects do not pickle): a worker process makes its own."""
        return {**self.__dict__, "bots": {}}

    def act(self, observation, action_mask, position=None) -> int:
        from open_spiel.python.algorithms import mcts

        if not hasattr(position, "openspiel_state"):
            raise ValueError(f"{self.name} needs the position of a game OpenSpiel has: act(observation, action_mask, "
                             f"position), got {type(position).__name__}")
        state = position.openspiel_state()
        key = str(state.get_game())
        if key not in self.bots:  # one bot per OpenSpiel game, all drawing from the agent's generator
            evaluator = mcts.RandomRolloutEvaluator(self.rollouts, random_state=self.random_state)
            self.bots[key] = mcts.MCTSBot(state.get_game(), self.uct_c, self.simulations, evaluator,
                                               random_state=self.random_state)
        return position.from_openspiel(self.bots[key].step(state))
