"""Gymnasium, PettingZoo and vector environments."""

from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env
from gymnasium.utils.passive_env_checker import env_render_passive_checker

import minichess_envs
from minichess_envs import VARIANTS, FenError, IllegalMoveError, Position, aec
from minichess_envs.env import MiniChessEnv
from minichess_envs.vector import MiniChessVectorEnv

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # "human" rendering without a screen
HAVE_PYGAME = importlib.util.find_spec("pygame") is not None

ALL = sorted(VARIANTS)


def random_legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def play_episode(env, seed: int, rng_seed: int = 0):
    """(observations, rewards, infos) of one episode with random legal actions."""
    rng = np.random.default_rng(rng_seed)
    obs, info = env.reset(seed=seed)
    observations, rewards, infos = [obs], [], [info]
    while True:
        obs, reward, terminated, truncated, info = env.step(random_legal(obs["action_mask"], rng))
        observations.append(obs)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return observations, rewards, infos, terminated, truncated


# -- registration ------------------------------------------------------------------------------


def test_every_variant_has_gymnasium_and_pettingzoo_ids():
    import pettingzoo

    for v in VARIANTS.values():
        env = gym.make(v.gym_id)
        assert isinstance(env.unwrapped, MiniChessEnv) and env.unwrapped.variant is v
        assert env.action_space.n == v.num_actions
        aec_env = pettingzoo.make("aec", f"minichess/{v.name}_v0")
        assert aec_env.unwrapped.variant is v


def test_make_with_module_prefix_works_in_a_fresh_interpreter():
    code = (
        "import gymnasium as gym; env = gym.make('minichess_envs:MiniChess-3x3-v0'); "
        "obs, info = env.reset(seed=0); print(obs['action_mask'].sum())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(Position("3x3").legal_moves)


def test_custom_variant_registration():
    v = VARIANTS["gardner"].replace(name="gardner-ply20", title="GardnerPly20", ply_limit=20)
    minichess_envs.register_variant(v)
    try:
        env = gym.make("MiniChess-GardnerPly20-v0")
        *_, terminated, truncated = play_episode(env, seed=1)
        assert env.unwrapped.position.ply <= 20
    finally:
        del VARIANTS["gardner-ply20"]
        gym.registry.pop("MiniChess-GardnerPly20-v0")


# -- single-agent env ------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_check_env_passes(variant):
    # The env checker steps with unmasked random actions: with illegal_action="lose" they end the episode.
    # Its render check also opens every declared mode, "human" included, which needs pygame (dev extra).
    for mode in ("ansi", "rgb_array"):
        env = gym.make(VARIANTS[variant].gym_id, render_mode=mode, illegal_action="lose")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=not HAVE_PYGAME)
            if not HAVE_PYGAME:
                env.unwrapped.reset(seed=0)
                env_render_passive_checker(env.unwrapped)


@pytest.mark.parametrize("variant", ["3x3", "gardner", "chess"])
def test_same_seed_same_episode(variant):
    def run(seed):
        env = gym.make(VARIANTS[variant].gym_id, agent_color="random")
        observations, rewards, infos, *_ = play_episode(env, seed)
        return [o["observation"] for o in observations], rewards, [i.get("opponent_move") for i in infos]

    a, b, c = run(3), run(3), run(4)
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0])) and a[1:] == b[1:]
    assert a[2] != c[2]


def test_learner_always_observes_its_own_turn_and_rewards_are_from_its_side():
    for colour in ("white", "black"):
        env = MiniChessEnv("gardner", agent_color=colour)
        for seed in range(20):
            observations, rewards, infos, terminated, truncated = play_episode(env, seed)
            learner = 0 if colour == "white" else 1
            for obs, info in zip(observations[:-1], infos[:-1]):
                assert obs["action_mask"].any() and np.array_equal(obs["action_mask"], info["action_mask"])
                # colour plane says who observes: 1 when the learner is Black
                assert obs["observation"][..., 14].all() == (learner == 1)
            assert env.position.turn == learner or terminated or truncated
            outcome = env.position.outcome()
            if terminated:
                expected = 0.0 if outcome.winner is None else (1.0 if outcome.winner == learner else -1.0)
                assert rewards[-1] == expected and infos[-1]["outcome"] == outcome.termination.name.lower()
            assert all(r == 0 for r in rewards[:-1])


def test_ply_limit_truncates_and_is_not_a_draw():
    env = MiniChessEnv("gardner", ply_limit=6)
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for step in range(3):
        obs, reward, terminated, truncated, info = env.step(random_legal(obs["action_mask"], rng))
    assert truncated and not terminated and reward == 0 and info["outcome"] is None and info["ply"] == 6
    with pytest.raises(ResetNeeded):
        env.step(0)
    assert '[Termination "truncated at the ply limit"]' in env.to_pgn()


def test_material_shaping_telescopes_to_the_material_change():
    env = MiniChessEnv("gardner-kingcapture", reward="material")
    for seed in range(10):
        observations, rewards, infos, terminated, truncated = play_episode(env, seed)
        pos = env.position
        lead = pos.material_balance()
        outcome = pos.outcome()
        final = 0.0 if not terminated or outcome.winner is None else (1.0 if outcome.winner == 0 else -1.0)
        start = Position("gardner-kingcapture").material_balance()
        assert sum(rewards) == pytest.approx(final + (lead - start) / 600)


def test_opponent_can_be_an_agent_or_a_function():
    class FirstLegal:
        name = "first-legal"

        def act(self, observation, action_mask, position=None):
            assert observation.shape == (5, 5, 18) and position is not None
            return int(np.flatnonzero(action_mask)[0])

    start = Position("gardner")
    lowest_action = start.action_to_move(min(start.legal_actions())).uci()
    first_generated = start.legal_moves[0].uci()
    for opponent, expected in ((FirstLegal(), lowest_action), (lambda pos: pos.legal_moves[0], first_generated),
                               (lambda pos: pos.legal_moves[0].uci(), first_generated)):
        env = MiniChessEnv("gardner", agent_color="black", opponent=opponent)
        obs, info = env.reset(seed=0)
        assert info["opponent_move"] == expected
    env = MiniChessEnv("gardner", agent_color="black", opponent=lambda pos: "a2a4")
    with pytest.raises(IllegalMoveError, match="opponent"):
        env.reset(seed=0)
    with pytest.raises(TypeError, match="opponent must be"):
        MiniChessEnv("gardner", opponent=42)


def test_bad_input_gives_clear_errors_and_the_env_survives():
    env = gym.make("MiniChess-Gardner-v0")
    obs, info = env.reset(seed=0)
    with pytest.raises(IllegalMoveError, match="not a legal move"):
        env.step(0)
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(1225)
    with pytest.raises(TypeError, match="action must be an integer"):
        env.step("a2a3")
    with pytest.raises(TypeError, match="action must be an integer"):
        env.step(1.0)
    with pytest.raises(FenError, match="bad FEN"):
        env.reset(options={"fen": "rnbqk/ppppp/5/PPPPP w - - 0 1"})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"fenn": "x"})
    with pytest.raises(ValueError, match="already over"):
        env.reset(options={"fen": "k4/1Q3/1K3/5/5 b - - 0 1"})
    obs, info = env.reset(seed=0)  # still usable
    assert obs["action_mask"].sum() == 7
    obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    lose = gym.make("MiniChess-Gardner-v0", illegal_action="lose")
    lose.reset(seed=0)
    obs, reward, terminated, truncated, info = lose.step(0)
    assert (reward, terminated, info["illegal_action"]) == (-1.0, True, True)
    with pytest.raises(ValueError, match="unknown variant"):
        gym.make("MiniChess-Gardner-v0", variant="nope")
    with pytest.raises(ValueError, match="agent_color"):
        MiniChessEnv("gardner", agent_color="green")
    with pytest.raises(FenError):
        MiniChessEnv("gardner", start="not a fen")
    with pytest.raises(ValueError, match="too many"):
        MiniChessEnv("gardner", start="random")


def test_reset_from_a_fen_and_random_3x3_starts():
    env = MiniChessEnv("3x3", agent_color="random", start="random")
    seen = set()
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        pos = env.position
        assert pos.turn == env.learner and not pos.is_game_over() and pos.ply == 0
        seen.add(pos.fen())
    assert len(seen) > 25
    env = MiniChessEnv("gardner", agent_color="black")
    obs, info = env.reset(options={"fen": "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"})
    assert env.position.ply == 1 and env.position.turn == 1  # the opponent (White) moved first


def test_sb3_style_action_masks_and_render_modes():
    env = gym.make("MiniChess-Chess-v0", render_mode="ansi")
    env.reset(seed=0)
    masks = env.unwrapped.action_masks()
    assert masks.dtype == bool and masks.sum() == 20
    text = env.render()
    assert "♔" in text and "a b c d e f g h" in text and "white to move" in text
    env = gym.make("MiniChess-Chess-v0", render_mode="rgb_array")
    env.reset(seed=0)
    image = env.render()
    assert image.shape == (8 * 48, 8 * 48, 3) and image.dtype == np.uint8 and image.std() > 10


def test_human_render_needs_pygame_or_says_so(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pygame(name, *args, **kwargs):
        if name == "pygame":
            raise ImportError("No module named 'pygame'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pygame)
    env = MiniChessEnv("gardner", render_mode="human")
    env.reset(seed=0)
    with pytest.raises(ImportError, match="pip install pygame-ce"):
        env.render()


def test_episode_record_and_pgn_open_in_other_tools():
    chess_pgn = pytest.importorskip("chess.pgn")
    env = gym.make("MiniChess-Chess-v0", ply_limit=40)
    play_episode(env, seed=5)
    text = env.unwrapped.to_pgn({"Event": "test"})
    game = chess_pgn.read_game(io.StringIO(text))
    assert [m.uci() for m in game.mainline_moves()] == env.unwrapped.moves
    assert game.headers["Event"] == "test" and game.headers["White"] == "learner"


def test_variant_pgn_sans_match_fairy_stockfish():
    from oracles import sf

    env = gym.make("MiniChess-Gardner-v0")
    play_episode(env, seed=2)
    text = env.unwrapped.to_pgn()
    assert '[Variant "gardner"]' in text and '[SetUp "1"]' in text
    assert '[FEN "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"]' in text
    fen = "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"
    theirs = sf.get_san_moves("gardner", fen, env.unwrapped.moves)
    movetext = text.split("\n\n", 1)[1].split()
    ours = [t for t in movetext if not t[0].isdigit() and t not in ("*", "1-0", "0-1", "1/2-1/2")]
    assert ours == theirs


# -- PettingZoo AEC ------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_pettingzoo_api_and_seed_tests_pass(variant):
    from pettingzoo.test import api_test, seed_test

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # api_test warns about Dict observations, as for its own classic games
        api_test(aec.env(variant), num_cycles=200)
        seed_test(lambda: aec.env(variant), num_cycles=50)


def test_aec_game_loop_rewards_and_masks():
    rng = np.random.default_rng(0)
    for game in range(20):
        env = aec.env("3x3")
        env.reset()
        final = {}
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            other = "player_1" if agent == "player_0" else "player_0"
            if terminated or truncated:
                final[agent] = reward
                action = None
            else:
                assert obs["action_mask"].any() and not env.observe(other)["action_mask"].any()
                action = random_legal(obs["action_mask"], rng)
            env.step(action)
        outcome = env.unwrapped.position.outcome()
        if outcome is None:  # truncated at the ply limit
            assert final == {"player_0": 0, "player_1": 0}
        elif outcome.winner is None:
            assert final == {"player_0": 0, "player_1": 0}
        else:
            assert final == {"player_0": 1 if outcome.winner == 0 else -1, "player_1": 1 if outcome.winner == 1 else -1}
    env = aec.env("gardner")
    env.reset()
    env.step(0)  # illegal: the mover loses (TerminateIllegalWrapper)
    assert env.rewards["player_0"] == -1 and all(env.terminations.values())


@pytest.mark.slow
def test_rllib_pettingzoo_wrapper_steps_the_aec_env():
    pytest.importorskip("ray.rllib", reason="RLlib is an optional extra: pip install -e '.[rllib]'")
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    env = PettingZooEnv(aec.env("gardner"))
    obs, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        (agent, agent_obs), = obs.items()
        obs, rewards, terminateds, truncateds, infos = env.step({agent: random_legal(agent_obs["action_mask"], rng)})
        if terminateds["__all__"] or truncateds["__all__"]:
            obs, infos = env.reset()


# -- vector env --------------------------------------------------------------------------------------------


def test_make_vec_returns_the_native_vector_env_with_batched_masks():
    envs = gym.make_vec("MiniChess-Gardner-v0", num_envs=8)
    assert isinstance(envs.unwrapped, MiniChessVectorEnv)
    obs, infos = envs.reset(seed=0)
    assert obs["observation"].shape == (8, 5, 5, 18) and obs["action_mask"].shape == (8, 1225)
    assert envs.observation_space.contains(obs)
    assert np.array_equal(envs.unwrapped.action_masks(), obs["action_mask"].astype(bool))


def vector_rollout(envs, steps, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    obs, _ = envs.reset(seed=11)
    trace = []
    for _ in range(steps):
        actions = np.array([random_legal(m, rng) if m.any() else 0 for m in obs["action_mask"]])
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        trace.append((obs["observation"].copy(), rewards, terminated, truncated))
    return trace


@pytest.mark.parametrize("options", [{}, {"reward": "material"}, {"agent_color": "random", "ply_limit": 30}])
def test_vector_env_plays_exactly_as_the_single_env(options):
    """The C-stepped vector env and MiniChessEnv play identical games from the same seed."""
    for seed in range(8):
        envs = MiniChessVectorEnv(1, "gardner", autoreset_mode="Disabled", **options)
        single = MiniChessEnv("gardner", **options)
        obs, _ = envs.reset(seed=seed)
        single_obs, _ = single.reset(seed=seed)
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            assert np.array_equal(single_obs["observation"], obs["observation"][0])
            assert np.array_equal(single_obs["action_mask"], obs["action_mask"][0])
            action = random_legal(single_obs["action_mask"], rng)
            single_obs, reward, terminated, truncated, _ = single.step(action)
            obs, rewards, terms, truncs, _ = envs.step(np.array([action]))
            assert (reward, terminated, truncated) == (rewards[0], terms[0], truncs[0])
            done = terminated or truncated
        assert envs.positions[0].move_stack == single.position.move_stack


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_vector_autoreset_modes(mode):
    envs = MiniChessVectorEnv(6, "3x3", autoreset_mode=mode, ply_limit=8)
    obs, _ = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    ended_before = np.zeros(6, bool)
    finished = 0
    for _ in range(60):
        actions = np.array([random_legal(m, rng) if m.any() else 0 for m in obs["action_mask"]])
        if mode == "Disabled" and ended_before.any():
            with pytest.raises(ResetNeeded):
                envs.step(actions)
            obs, _ = envs.reset(options={"reset_mask": ended_before})
            actions = np.array([random_legal(m, rng) if m.any() else 0 for m in obs["action_mask"]])
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        if mode == "NextStep":  # games that ended last step were reset, with reward 0
            assert not (rewards[ended_before] != 0).any() and not terminated[ended_before].any()
        ended = terminated | truncated
        if ended.any():
            assert infos["_outcome"][ended].all()
            assert set(infos["outcome"][ended]) <= {"checkmate", "stalemate", "insufficient_material",
                                                    "repetition", "truncated"}
            if mode == "SameStep":
                assert all(infos["final_obs"][i] is not None for i in np.flatnonzero(ended))
                assert obs["action_mask"][ended].any(axis=1).all()  # already reset
        finished += int(ended.sum())
        ended_before = ended
    assert finished > 10


def test_vector_env_with_a_batched_opponent_and_same_seed_same_rollout():
    class BatchedFirstLegal:
        name = "first"
        calls = 0

        def act(self, observation, action_mask, position=None):
            return int(np.flatnonzero(action_mask)[0])

        def act_batch(self, observations, action_masks, positions=None):
            BatchedFirstLegal.calls += 1
            return np.array([np.flatnonzero(m)[0] for m in action_masks])

    envs = MiniChessVectorEnv(5, "gardner", opponent=BatchedFirstLegal())
    vector_rollout(envs, 10)
    assert BatchedFirstLegal.calls >= 9
    a = vector_rollout(gym.make_vec("MiniChess-Gardner-v0", num_envs=5), 30)
    b = vector_rollout(gym.make_vec("MiniChess-Gardner-v0", num_envs=5), 30)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))


def test_vector_env_bad_input():
    envs = gym.make_vec("MiniChess-Gardner-v0", num_envs=3)
    with pytest.raises(ResetNeeded):
        envs.step(np.zeros(3, np.int64))
    obs, _ = envs.reset(seed=0)
    with pytest.raises(ValueError, match="actions must be 3 integers"):
        envs.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="outside the action space"):
        envs.step(np.array([0, 1, 5000]))
    with pytest.raises(IllegalMoveError, match="game 0"):
        envs.step(np.zeros(3, np.int64))
    legal = np.array([np.flatnonzero(m)[0] for m in obs["action_mask"]])
    envs.step(legal)  # nothing was played by the failed calls: still usable
    lose = MiniChessVectorEnv(3, "gardner", illegal_action="lose")
    obs, _ = lose.reset(seed=0)
    actions = np.array([np.flatnonzero(m)[0] for m in obs["action_mask"]])
    actions[1] = 0
    obs, rewards, terminated, truncated, infos = lose.step(actions)
    assert rewards[1] == -1 and terminated[1] and infos["_illegal_action"][1]


# -- real clients (optional extras; slow) ----------------------------------------------------------------


@pytest.mark.slow
def test_sb3_contrib_maskable_ppo_learns_and_predicts_only_legal_actions():
    pytest.importorskip("sb3_contrib", reason="sb3-contrib is an optional extra: pip install -e '.[sb3]'")
    from sb3_contrib import MaskablePPO

    env = gym.make("MiniChess-3x3-v0")
    model = MaskablePPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=2, seed=0, verbose=0)
    model.learn(total_timesteps=256)
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(), deterministic=seed % 2 == 0)
            assert obs["action_mask"][int(action)] == 1
            obs, _, terminated, truncated, _ = env.step(int(action))
            done = terminated or truncated
