"""Agents: one interface for every player, and one call to load any saved agent.

>>> from agents import RandomAgent, load
>>> agent = RandomAgent(seed=0)
>>> agent.act(observation, action_mask)          # an action index  # doctest: +SKIP
>>> agent = load("runs/alphazero_3x3/final")     # any saved agent  # doctest: +SKIP
>>> choose_action(agent, position)               # a checked legal action  # doctest: +SKIP
>>> agent = from_spec("minimax:3", "gardner")     # by name, as the command line takes them
>>> agent = load("zoo:tictactoe-alphazero")      # a trained agent shipped in the package  # doctest: +SKIP
"""

#: Marks this package as minichess-envs' ``agents``: other distributions (openai-agents) install a
#: top-level ``agents`` package too, and whichever is installed last overwrites the other's files.
MINICHESS_AGENTS = True

from agents.base import Agent, CallableAgent, as_agent, register_agent  # noqa: E402  (after the marker)
from agents.base import load as load_saved  # noqa: E402
from agents.players.greedy import GreedyAgent  # noqa: E402
from agents.players.minimax import MinimaxAgent  # noqa: E402
from agents.players.random_agent import RandomAgent  # noqa: E402
from agents.spec import from_spec  # noqa: E402
from agents.players.uci import EngineError, EngineNotFoundError, UCIEngineAgent  # noqa: E402
from minichess_envs.players import choose_action, choose_actions, legal_action, player_name  # noqa: E402
from agents import zoo  # noqa: E402


def load(path: str) -> Agent:
    """Any saved agent: a directory with ``agent.json`` (:func:`agents.base.load`), or a zoo entry ``"zoo:NAME"``
    (``"zoo:NAME:casual"``: its faster setting; :mod:`agents.zoo`)."""
    if isinstance(path, str) and path.startswith(zoo.PREFIX):
        return zoo.load_spec(path)
    return load_saved(path)


__all__ = [
    "Agent", "CallableAgent", "EngineError", "EngineNotFoundError", "GreedyAgent", "MinimaxAgent", "RandomAgent",
    "UCIEngineAgent", "as_agent", "choose_action", "choose_actions", "from_spec", "legal_action", "load",
    "player_name", "register_agent",
]
