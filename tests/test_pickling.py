"""Pickling and copying: every public type survives pickle, copy and deepcopy, also into worker processes.

Independent truth: a copy must behave as the original does from the same state
(same legal moves, same observations, the same actions from seeded agents),
checked by playing on both; worker processes start with ``spawn`` and
``forkserver``, so they know nothing the parent did not pickle.
"""

from __future__ import annotations

import concurrent.futures
import copy
import importlib.util
import multiprocessing
import pickle

import gymnasium as gym
import numpy as np
import pytest

import agents
from agents import CallableAgent, GreedyAgent, MinimaxAgent, RandomAgent, UCIEngineAgent
from agents.alphazero.search import SearchConfig
from agents.arena import MatchResult, play_match, tally
from agents.arena.evaluation import versus_random
from agents.arena.ratings import Rating
from minichess_envs import (
    VARIANTS, Castling, FenError, IllegalMoveError, Move, Outcome, Position, Termination, Variant,
)
from minichess_envs.aec import raw_env
from minichess_envs.encoding import ActionEncoding, ObservationEncoding
from minichess_envs.tablebase import CacheError, MoveValue, Tablebase, TablebaseTooLarge
from minichess_envs.vector import MiniChessVectorEnv

# Never registered: positions and envs of it must carry the variant itself.
CUSTOM = VARIANTS["gardner"].replace(name="gardner-stalemate-loses", title="GardnerStalemateLoses",
                                     stalemate="loss", description="Gardner where stalemate loses")


def copies(obj) -> list:
    """``obj`` through pickle at every protocol, copy.copy and copy.deepcopy."""
    out = [pickle.loads(pickle.dumps(obj, protocol)) for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1)]
    return out + [copy.copy(obj), copy.deepcopy(obj)]


def random_game(variant, plies: int, seed: int) -> Position:
    pos = Position(variant)
    rng = np.random.default_rng(seed)
    while pos.ply < plies and not pos.is_game_over():
        pos.push_code(int(rng.choice(pos.legal_move_codes())))
    return pos


def first_legal(position) -> str:
    """A move chosen by a plain module-level function (so that it pickles by reference)."""
    return position.legal_moves[0].uci()


# -- variants and positions ------------------------------------------------------------------------


@pytest.mark.parametrize("variant", [*VARIANTS.values(), CUSTOM], ids=lambda v: v.name)
def test_variants_copy_after_their_rules_are_compiled(variant):
    start = Position(variant)  # compiles and caches the C rules on the variant
    for clone in copies(variant):
        assert clone == variant and hash(clone) == hash(variant)
        assert Position(clone).fen() == start.fen()
        assert Position(clone).legal_actions() == start.legal_actions()
    registered = VARIANTS.get(variant.name)
    if registered is not None:  # an unpickled catalogue variant is the catalogue's object
        assert pickle.loads(pickle.dumps(variant)) is registered


@pytest.mark.parametrize("variant", [*VARIANTS.values(), CUSTOM], ids=lambda v: v.name)
def test_positions_copy_with_history_and_play_on_alike(variant):
    pos = random_game(variant, 12, seed=len(variant.name))
    for clone in copies(pos):
        assert clone == pos and clone.fen() == pos.fen() and clone.move_stack == pos.move_stack
        assert clone.variant == variant and clone.root_fen == pos.root_fen
        assert (clone.observation(history=2) == pos.observation(history=2)).all()
        for code in pos.legal_move_codes()[:3]:  # both continue identically
            clone.push_code(code)
            pos.push_code(code)
            assert clone == pos and clone.outcome() == pos.outcome() and clone.legal_actions() == pos.legal_actions()
            pos.pop()
            clone.pop()


def test_value_types_round_trip():
    pos = Position("3x3", "k2/1Q1/2K b - - 0 1")
    tb = Tablebase.build("3x3", "KQ", "K")
    match = play_match(GreedyAgent(seed=0), RandomAgent(seed=1), "3x3", games=2, seed=0)
    values = [
        Move("a1", "a2"), Move("a7", "a8", "q"), pos.outcome(), Termination.REPETITION,
        Castling("e", "g", "h", "f"), Rating(12.5, -3.0, 30.0, 10, 0.55), match, match.games[0],
        tally(match.games, match.a), ObservationEncoding(CUSTOM, history=2), MoveValue(Move("a1", "a2"), 3, 1, 5),
    ]
    values += [versus_random(GreedyAgent(seed=0), "3x3", games=4), SearchConfig(simulations=7)]
    if importlib.util.find_spec("torch") is not None:  # the training settings of the torch agents
        from agents.alphazero.network import NetConfig
        from agents.alphazero.train import Config
        from agents.ppo import PPONetConfig, PPOSettings

        values += [NetConfig(3, 3, 12, 297, blocks=1), Config(game="3x3", iterations=2),
                   PPONetConfig(5, 5, 18, 1225), PPOSettings(gamma=0.9)]
    for value in values:
        for clone in copies(value):
            assert clone == value, type(value).__name__
    assert isinstance(pickle.loads(pickle.dumps(match)), MatchResult)
    for clone in copies(ActionEncoding(CUSTOM)):
        assert clone.variant == CUSTOM and [clone.plane_name(p) for p in range(clone.num_planes)] == [
            ActionEncoding(CUSTOM).plane_name(p) for p in range(clone.num_planes)]
    for clone in copies(tb):
        assert len(clone) == len(tb)
        assert clone.probe("2k/3/KQ1 w - - 0 1") == tb.probe("2k/3/KQ1 w - - 0 1")
        assert clone.move_values("2k/3/KQ1 w - - 0 1") == tb.move_values("2k/3/KQ1 w - - 0 1")


def test_errors_round_trip_with_their_messages():
    errors = [FenError("bad FEN"), CacheError("stale"), agents.EngineError("engine died"),
              agents.EngineNotFoundError("no engine"), TablebaseTooLarge("too large", [("KQ", "K")])]
    try:
        Position("gardner").push_uci("a1a5")
    except IllegalMoveError as exc:
        errors.append(exc)
    for error in errors:
        for clone in copies(error):
            assert type(clone) is type(error) and str(clone) == str(error)


# -- environments ----------------------------------------------------------------------------------


def _legal(obs) -> int:
    return int(np.flatnonzero(obs["action_mask"])[0])


@pytest.mark.parametrize("variant", VARIANTS.values(), ids=lambda v: v.name)
def test_envs_copy_mid_game_and_continue_alike(variant):
    env = gym.make(variant.gym_id)
    obs, _ = env.reset(seed=3)
    obs, _, terminated, truncated, _ = env.step(_legal(obs))
    if terminated or truncated:  # copy a game that goes on
        obs, _ = env.reset(seed=4)
    twins = copies(env)[:-2] + [copy.deepcopy(env)]  # a shallow copy shares the game by design
    for twin in twins:
        assert pickle.loads(pickle.dumps(twin.spec)) == env.spec
    for _ in range(3):
        action = _legal(obs)
        expected = env.step(action)
        for twin in twins:
            got = twin.step(action)
            assert (got[0]["observation"] == expected[0]["observation"]).all() and got[1:4] == expected[1:4]
        obs = expected[0]
        if expected[2] or expected[3]:
            break


def test_env_settings_with_a_custom_variant_and_an_agent_opponent_pickle():
    env = gym.make("MiniChess-Gardner-v0", variant=CUSTOM, opponent=GreedyAgent(seed=1), reward="material")
    assert env.unwrapped.variant == CUSTOM
    spec = pickle.loads(pickle.dumps(env.spec))
    assert spec.kwargs["variant"] == CUSTOM and isinstance(spec.kwargs["opponent"], GreedyAgent)
    remade = gym.make(spec)
    obs, _ = env.reset(seed=5)
    obs2, _ = remade.reset(seed=5)
    for _ in range(4):
        a = _legal(obs)
        obs, r, term, trunc, _ = env.step(a)
        obs2, r2, term2, trunc2, _ = remade.step(a)
        assert (obs["observation"] == obs2["observation"]).all() and (r, term, trunc) == (r2, term2, trunc2)
        if term or trunc:
            break


def test_aec_and_vector_envs_copy_mid_game():
    env = raw_env("3x3")
    env.reset(seed=0)
    env.step(_legal(env.observe(env.agent_selection)))
    for twin in copies(env)[:-2] + [copy.deepcopy(env)]:
        assert twin.agent_selection == env.agent_selection and twin.position == env.position
        twin.step(_legal(twin.observe(twin.agent_selection)))
        assert twin.position.ply == env.position.ply + 1
    envs = MiniChessVectorEnv(3, CUSTOM, opponent=GreedyAgent(seed=2))
    obs, _ = envs.reset(seed=1)
    obs, *_ = envs.step(np.array([_legal({"action_mask": m}) for m in obs["action_mask"]]))
    twins = copies(envs)[:-2] + [copy.deepcopy(envs)]
    for _ in range(3):
        actions = np.array([_legal({"action_mask": m}) for m in obs["action_mask"]])
        expected = envs.step(actions)
        for twin in twins:
            got = twin.step(actions)
            assert (got[0]["observation"] == expected[0]["observation"]).all()
            assert (got[1] == expected[1]).all() and (got[2] == expected[2]).all()
        obs = expected[0]


# -- agents ----------------------------------------------------------------------------------------


def tiny_alphazero():
    torch = pytest.importorskip("torch", reason="AlphaZero needs torch")
    from agents.alphazero.agent import AlphaZeroAgent
    from agents.alphazero.network import NetConfig, PolicyValueNet

    torch.manual_seed(0)
    shape = ObservationEncoding(VARIANTS["3x3"], 1, False).shape
    net = PolicyValueNet(NetConfig(*shape, VARIANTS["3x3"].num_actions, blocks=1, channels=8, policy_channels=2,
                                   value_hidden=8))
    return AlphaZeroAgent(net, "3x3", simulations=4)


def tiny_ppo(sample: bool = True):
    torch = pytest.importorskip("torch", reason="PPO agents need torch")
    from agents.ppo import PPOAgent, PPONet, PPONetConfig

    torch.manual_seed(1)
    shape = ObservationEncoding(VARIANTS["3x3"]).shape
    net = PPONet(PPONetConfig(*shape, VARIANTS["3x3"].num_actions, channels=8, conv_layers=1, value_hidden=8))
    return PPOAgent(net, "3x3", sample=sample, seed=3)


def _fsf_agent():
    try:
        return UCIEngineAgent("gardner", nodes=50)
    except agents.EngineNotFoundError as exc:
        pytest.skip(str(exc))


def _agent(kind: str, tmp_path):
    """(agent, variant it plays) for each public agent type."""
    if kind == "random":
        return RandomAgent(seed=1), "3x3"
    if kind == "greedy":
        return GreedyAgent(seed=2), "gardner"
    if kind == "minimax":
        return MinimaxAgent(2, seed=3), "gardner"
    if kind == "callable":
        return CallableAgent(first_legal), "gardner"
    if kind == "perfect":
        from agents.players.perfect import PerfectAgent

        return PerfectAgent("3x3", seed=4, cache_dir=str(tmp_path)), "3x3"
    if kind == "uci":
        return _fsf_agent(), "gardner"
    if kind == "alphazero":
        return tiny_alphazero(), "3x3"
    if kind == "ppo":
        return tiny_ppo(), "3x3"
    white, black = tiny_ppo(), tiny_ppo(sample=False)  # (skips without torch)
    from agents.ppo import ByColorAgent, EpsilonRandomAgent

    if kind == "epsilon":
        return EpsilonRandomAgent(black, eps=0.5, seed=5), "3x3"
    assert kind == "by-color"
    return ByColorAgent(white, black, "3x3"), "3x3"


AGENT_KINDS = ["random", "greedy", "minimax", "callable", "perfect", "uci", "alphazero", "ppo", "epsilon",
               "by-color"]


def play_positions(variant: str) -> list[Position]:
    return [random_game(variant, plies, seed) for seed, plies in enumerate((0, 3, 6, 9))
            if not random_game(variant, plies, seed).is_game_over()]


def actions_of(agent, positions) -> list[int]:
    """The agent's action in each position, each one a new game (an engine's hash is cleared)."""
    out = []
    for p in positions:
        agent.reset()
        out.append(int(agent.act(p.observation(), p.action_mask(), p)))
    return out


@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_agents_copy_after_playing_and_then_play_as_the_original_would(kind, tmp_path):
    agent, variant = _agent(kind, tmp_path)
    positions = play_positions(variant)
    actions_of(agent, positions[:1])  # played: engine running, tables loaded, rules compiled, rng advanced
    twins = copies(agent)
    shallow = twins.pop(-2)  # copy.copy shares the original's generator: legal, not the same sequence
    expected = actions_of(agent, positions)
    try:
        for twin in twins:
            assert actions_of(twin, positions) == expected, kind
        assert all(a in p.legal_actions() for a, p in zip(actions_of(shallow, positions), positions))
    finally:
        for a in [agent, shallow, *twins]:
            if hasattr(a, "close"):
                a.close()


def test_engine_agent_copies_start_their_own_engine(tmp_path):
    engine = _fsf_agent()
    try:
        engine.act(None, None, Position("gardner"))
        assert engine._proc is not None
        for twin in copies(engine):
            assert twin._proc is None  # settings only; the engine restarts on the first move
            engine.reset()  # a new game: the engine's hash is cleared, so its search matches a fresh engine's
            assert twin.act(None, None, Position("gardner")) == engine.act(None, None, Position("gardner"))
            assert twin._proc is not engine._proc
            twin.close()
    finally:
        engine.close()


# -- worker processes ------------------------------------------------------------------------------


def report_in_worker(variants, positions, players) -> dict:
    """What a fresh process makes of pickled objects: positions' FENs and moves, the players' actions."""
    return {
        "variants": [Position(v).fen() for v in variants],
        "positions": [(p.fen(), p.legal_actions(), p.move_stack) for p in positions],
        "actions": [actions_of(agent, ps) for agent, ps in players],
    }


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_objects_reach_spawned_and_forkserver_workers(method, tmp_path):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method on this platform")
    variants = [VARIANTS["gardner"], CUSTOM]
    for v in variants:
        Position(v)  # compile the rules first, as a real program would have
    positions = [random_game(CUSTOM, 10, 1), random_game("chess", 8, 2), random_game("3x3", 4, 3)]
    kinds = ["random", "greedy", "minimax", "perfect"]
    if importlib.util.find_spec("torch") is not None:
        kinds += ["alphazero", "ppo"]
    players = []
    for kind in kinds:
        agent, variant = _agent(kind, tmp_path)
        ps = play_positions(variant)
        actions_of(agent, ps[:1])
        players.append((agent, ps))
    try:
        players.append((_fsf_agent(), play_positions("gardner")))
        actions_of(players[-1][0], players[-1][1][:1])
    except pytest.skip.Exception:
        pass
    snapshot = pickle.dumps(players)  # the state the worker receives
    expected_actions = [actions_of(agent, ps) for agent, ps in players]
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(method)) as pool:
        got = pool.submit(report_in_worker, variants, positions, pickle.loads(snapshot)).result(timeout=300)
    assert got["variants"] == [Position(v).fen() for v in variants]
    assert got["positions"] == [(p.fen(), p.legal_actions(), p.move_stack) for p in positions]
    assert got["actions"] == expected_actions
    for agent, _ in players:
        if hasattr(agent, "close"):
            agent.close()
