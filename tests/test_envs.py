"""Gymnasium, PettingZoo and vector environments."""

from __future__ import annotations

import importlib.util
import io
import itertools
import os
import subprocess
import sys
import tempfile
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env
from gymnasium.utils.passive_env_checker import env_render_passive_checker

import minichess_envs
import minichess_envs.render
from minichess_envs import VARIANTS, ActionSpaceError, FenError, IllegalMoveError, Position, aec
from minichess_envs.encoding import NO_OP_ACTION, ActionEncoding
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
def test_check_env_passes_at_the_defaults(variant):
    # The checker steps random elements of the action space; at the defaults an illegal one ends the episode.
    # Its render check makes the env in every declared mode, "human" included, which needs pygame (dev extra).
    env = gym.make(VARIANTS[variant].gym_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=not HAVE_PYGAME)
        if not HAVE_PYGAME:
            for mode in ("ansi", "rgb_array"):
                rendering = gym.make(VARIANTS[variant].gym_id, render_mode=mode).unwrapped
                rendering.reset(seed=0)
                env_render_passive_checker(rendering)


@pytest.mark.parametrize("variant", ALL)
def test_random_elements_of_the_action_space_pass_the_passive_checker(variant):
    from gymnasium.wrappers.common import PassiveEnvChecker

    env = gym.make(VARIANTS[variant].gym_id)
    wrapper, checked = env, False
    while wrapper is not env.unwrapped:
        checked |= isinstance(wrapper, PassiveEnvChecker)
        wrapper = wrapper.env
    assert checked, "gym.make's default wraps the env in the passive checker"
    losses = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for episode in range(12):
            obs, info = env.reset(seed=episode)
            env.action_space.seed(episode)
            done = False
            while not done:  # every other action ignores the mask
                mask = obs["action_mask"] if env.unwrapped.position.ply % 4 < 2 else None
                action = env.action_space.sample(mask)
                legal = bool(obs["action_mask"][action])
                obs, reward, terminated, truncated, info = env.step(action)
                assert env.observation_space.contains(obs) and obs["action_mask"].any()
                if not legal:
                    assert (reward, terminated, info["illegal_action"]) == (-1.0, True, True)
                    losses += 1
                done = terminated or truncated
    assert losses > 0


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
    for color in ("white", "black"):
        env = MiniChessEnv("gardner", agent_color=color)
        for seed in range(20):
            observations, rewards, infos, terminated, truncated = play_episode(env, seed)
            learner = 0 if color == "white" else 1
            for obs, info in zip(observations[:-1], infos[:-1]):
                assert obs["action_mask"].any() and np.array_equal(obs["action_mask"], info["action_mask"])
                # color plane says who observes: 1 when the learner is Black
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
    assert '[Termination "unterminated"]' in env.to_pgn()


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
    env = gym.make("MiniChess-Gardner-v0", illegal_action="raise")
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
    lose = gym.make("MiniChess-Gardner-v0")  # the default: an illegal move loses
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


def test_rendered_pieces_are_told_apart():
    from minichess_envs.render import DARK, LIGHT, _sprite

    # On either square color, any two piece types of one side look different (by more than 64 of 255 in
    # some channel) in over 25% of the pixels they cover, outlines and inner lines included. The former
    # 16x16 silhouettes scored 11.5% for pawn/bishop and for rook/queen.
    for letters in ("PNBRQK", "pnbrqk"):
        for a, b in itertools.combinations(letters, 2):
            (alpha_a, rgb_a), (alpha_b, rgb_b) = _sprite(a, 48), _sprite(b, 48)
            covered = (alpha_a[..., 0] > 0.5) | (alpha_b[..., 0] > 0.5)
            for square in (LIGHT, DARK):
                drawn_a, drawn_b = square * (1 - alpha_a) + rgb_a, square * (1 - alpha_b) + rgb_b
                differs = np.abs(drawn_a - drawn_b).max(axis=2) > 64
                assert differs.sum() / covered.sum() > 0.25, (a, b, square)
    image = minichess_envs.render.render_rgb(Position("chess"), 32)
    assert image.shape == (256, 256, 3)
    with pytest.raises(ValueError, match="square_pixels"):
        minichess_envs.render.render_rgb(Position("chess"), 8)


@pytest.mark.slow
def test_record_video_writes_a_video():
    pytest.importorskip("moviepy", reason="RecordVideo needs moviepy: pip install -e '.[video]'")
    from gymnasium.wrappers import RecordVideo

    with tempfile.TemporaryDirectory() as folder:
        env = RecordVideo(gym.make("MiniChess-3x3-v0", render_mode="rgb_array"), folder,
                          episode_trigger=lambda episode: True, disable_logger=True)
        play_episode(env, seed=0)
        env.close()
        videos = [f for f in os.listdir(folder) if f.endswith(".mp4")]
        assert len(videos) == 1 and os.path.getsize(os.path.join(folder, videos[0])) > 1000


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


def expected_final_mask(position: Position) -> np.ndarray:
    """The mask a finished game shows: its legal moves, or only NO_OP_ACTION when there are none."""
    mask = np.zeros(position.variant.num_actions, np.int8)
    mask[position.legal_actions() or [NO_OP_ACTION]] = 1
    return mask


def test_the_no_op_action_is_never_a_legal_move():
    for name in ALL:
        decoded = ActionEncoding(name).decode(NO_OP_ACTION)
        assert decoded[2] < 0 and decoded[3] < 0, f"{name}: action {NO_OP_ACTION} lands on the board: {decoded}"


@pytest.mark.parametrize("variant", ["3x3", "gardner-kingcapture", "microchess"])
def test_the_final_observation_never_has_an_all_zero_mask(variant):
    env = gym.make(VARIANTS[variant].gym_id, agent_color="random", ply_limit=60)
    without_moves = 0
    for seed in range(25):
        observations, rewards, infos, terminated, truncated = play_episode(env, seed, rng_seed=seed)
        position = env.unwrapped.position
        final = observations[-1]["action_mask"]
        assert np.array_equal(final, expected_final_mask(position))
        assert np.array_equal(infos[-1]["action_mask"], final)
        assert np.array_equal(env.unwrapped.action_masks(), final.astype(bool))
        without_moves += not position.legal_actions()
    assert without_moves > 0, "no game ended without a legal move: the no-op case went untested"


def test_a_failed_reset_leaves_the_single_env_exactly_as_it_was():
    over_after_the_only_reply = "3/q2/K1k w - - 0 1"  # White's only move takes the queen: K vs K, a draw
    bad = [
        ({"fen": "k2/3/K2/3 w - - 0 1"}, FenError),
        ({"fen": "k2/1Q1/2K b - - 0 1"}, ValueError),  # already over: checkmate
        ({"fen": over_after_the_only_reply}, ValueError),
    ]

    def twin():
        env = MiniChessEnv("3x3", agent_color="black")
        env.reset(seed=7)
        return env

    for options, error in bad:
        for seed in (None, 99):
            env, reference = twin(), twin()
            rng = np.random.default_rng(1)
            obs, *_ = env.step(random_legal(env._mask, rng))
            reference.step(random_legal(reference._mask, np.random.default_rng(1)))
            with pytest.raises(error):
                env.reset(seed=seed, options=options)
            assert env.position.fen() == reference.position.fen() and env.position is env.duel.position
            assert env.position.move_stack == reference.position.move_stack
            assert (env.learner, env.duel.learner, env.duel.steps, env.duel.material, env.duel.opponent.state) == (
                reference.learner, reference.duel.learner, reference.duel.steps, reference.duel.material,
                reference.duel.opponent.state)
            assert env.np_random.bit_generator.state == reference.np_random.bit_generator.state
            # and the episode goes on, and the next reset draws, exactly as if nothing had happened
            for e in (env, reference):
                done = e._done
                moves = np.random.default_rng(2)
                while not done:
                    *_, terminated, truncated, _ = e.step(random_legal(e._mask, moves))
                    done = terminated or truncated
                e.reset()
            assert env.moves == reference.moves and env.position.fen() == reference.position.fen()


# -- actions outside the action space -------------------------------------------------------------------

# 53 is a legal action in Gardner's start position: none of these may be read as it
NOT_ACTIONS = [53.9, 53.0, "53", b"53", np.float64(53), None, True, np.array([53]), 2**63, 2**64, -1, 1225]


def _flavours():
    """(name, step one action, the position) for each env flavour, reset to Gardner's start."""
    single = gym.make("MiniChess-Gardner-v0")
    single.reset(seed=0)
    raw = aec.raw_env("gardner")
    raw.reset()
    wrapped = aec.env("gardner")
    wrapped.reset()
    return [("single", single.step, lambda: single.unwrapped.position),
            ("aec raw", raw.step, lambda: raw.position),
            ("aec", wrapped.step, lambda: wrapped.unwrapped.position)]


def test_actions_outside_the_action_space_raise_a_value_error_in_every_flavour():
    assert 53 in Position("gardner").legal_actions()
    for name, step, position in _flavours():
        for action in NOT_ACTIONS:
            with pytest.raises(ActionSpaceError) as error:
                step(action)
            assert isinstance(error.value, ValueError), (name, action)
            assert position().ply == 0, f"{name} played {action!r}"
    envs = MiniChessVectorEnv(2, "gardner")
    envs.reset(seed=0)
    for actions in ([53.9, 53], ["53", "53"], [b"53", b"53"], [2**63, 53], [2**64, 53], [-1, 53], [53, 1225],
                    [True, True], [53], [[53], [53]]):
        with pytest.raises(ActionSpaceError):
            envs.step(actions)
        assert all(p.ply == 0 for p in envs.positions)
    with pytest.raises(ActionSpaceError, match="action 9223372036854775808 of game 0 is outside"):
        envs.step(np.array([2**63, 53], np.uint64))


def test_numpy_integers_are_actions():
    for dtype in (np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64, np.intc):
        for name, step, position in _flavours():
            step(dtype(53))
            assert position().ply >= 1 and position().move_stack[0].uci() == "a2a3", name
        _, step, position = _flavours()[0]
        step(np.array(53, dtype))  # a 0-d array, as some policies return
        envs = MiniChessVectorEnv(2, "gardner")
        envs.reset(seed=0)
        envs.step(np.array([53, 53], dtype))
        assert all(p.move_stack[0].uci() == "a2a3" for p in envs.positions)


def test_actions_are_checked_without_assert_under_python_O():
    """The two tests above pass under ``python -O``: the checks are not asserts."""
    tests = [f"{__file__}::{test.__name__}" for test in (
        test_actions_outside_the_action_space_raise_a_value_error_in_every_flavour, test_numpy_integers_are_actions)]
    out = subprocess.run([sys.executable, "-O", "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout + out.stderr


# -- PettingZoo AEC ------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_pettingzoo_api_and_seed_tests_pass(variant):
    from pettingzoo.test import api_test, seed_test

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # api_test warns about Dict observations, as for its own classic games
        api_test(aec.env(variant), num_cycles=200)
        api_test(aec.env(variant, illegal_action="raise"), num_cycles=50)
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
    strict = aec.env("gardner", illegal_action="raise")
    strict.reset()
    with pytest.raises(IllegalMoveError, match="not a legal move"):
        strict.step(0)
    assert strict.unwrapped.position.ply == 0 and not any(strict.terminations.values())
    raw = aec.raw_env("gardner")  # unwrapped, strict as chess_v6's raw_env
    raw.reset()
    with pytest.raises(IllegalMoveError):
        raw.step(0)


def test_an_illegal_move_ends_the_game_as_in_chess_v6():
    pytest.importorskip("chess", reason="chess_v6 needs python-chess (dev extra)")
    pytest.importorskip("pygame", reason="chess_v6 needs pygame-ce (dev extra)")
    from pettingzoo.classic import chess_v6

    def after_an_illegal_move(env):
        env.reset(seed=0)
        env.step(0)  # from a1 towards the south-west: illegal in both (the same action layout)
        trace = []
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            trace.append((agent, reward, terminated, truncated))
            env.step(None)
        return trace

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn about the illegal move
        assert after_an_illegal_move(aec.env("chess")) == after_an_illegal_move(chess_v6.env())


@pytest.mark.parametrize("variant", ["3x3", "gardner-kingcapture", "microchess"])
def test_aec_masks_at_the_end_of_a_game_are_never_all_zeros(variant):
    no_op = np.zeros(VARIANTS[variant].num_actions, np.int8)
    no_op[NO_OP_ACTION] = 1
    endings = set()
    for game in range(30):
        env = aec.env(variant, ply_limit=30)
        env.reset()
        rng = np.random.default_rng(game)
        for ply, agent in enumerate(env.agent_iter()):
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                position = env.unwrapped.position
                mover = aec.AGENTS[position.turn]
                for player in aec.AGENTS:
                    expected = expected_final_mask(position) if player == mover else no_op
                    assert np.array_equal(env.observe(player)["action_mask"], expected), (player, position.fen())
                endings.add("no legal move" if not position.legal_actions() else "legal moves left")
            # a naive sampler: draws from the mask even for a finished player (the action is ignored)
            action = NO_OP_ACTION if game % 5 == 0 and ply == 6 else random_legal(obs["action_mask"], rng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the illegal NO_OP_ACTION is warned about
                env.step(action)
    assert endings == {"no legal move", "legal moves left"}


def test_the_ply_limit_truncates_the_aec_game_after_whole_cycles():
    # pettingzoo.test.max_cycles_test's assertions, with ply_limit = 2 * cycles. That test itself needs a
    # parallel_env(max_cycles=...) and steps unmasked random actions: turn-based classic games such as
    # chess_v6 have no parallel form and lose on a random illegal action.
    for cycles in (1, 4, 9):
        env = aec.env("gardner", ply_limit=2 * cycles)
        env.reset()
        rng = np.random.default_rng(cycles)
        counts = dict.fromkeys(aec.AGENTS, 0)
        for agent in env.agent_iter():
            counts[agent] += 1
            obs, reward, terminated, truncated, info = env.last()
            env.step(None if terminated or truncated else random_legal(obs["action_mask"], rng))
        assert env.unwrapped.position.outcome() is None, "the rules ended this game: pick another seed"
        assert counts == dict.fromkeys(aec.AGENTS, cycles + 1)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["3x3", "gardner"])
def test_torchrl_check_env_specs_through_its_pettingzoo_wrapper(variant):
    pytest.importorskip("torchrl", reason="torchrl is a test-only dependency (dev extra)")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchrl's own deprecation notices
        for seed in range(6):
            env = PettingZooWrapper(aec.env(variant), use_mask=True, seed=seed)
            check_env_specs(env, seed=seed)
            # random masked actions across game ends and torchrl's resets
            rollout = env.rollout(60, break_when_any_done=False)
            assert rollout.shape[0] == 60


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
                                                    "repetition", None}  # None: no outcome (truncated)
            assert all(infos["outcome"][i] is None for i in np.flatnonzero(truncated))
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


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("variant", ["3x3", "gardner-kingcapture"])
def test_a_naive_sampler_never_fails_under_autoreset(variant, mode):
    envs = gym.make_vec(VARIANTS[variant].gym_id, num_envs=16, vectorization_mode="vector_entry_point",
                        autoreset_mode=mode)
    obs, _ = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = without_moves = 0
    for _ in range(150):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])  # fails on an empty mask
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        for i in np.flatnonzero(terminated | truncated):
            if mode == "NextStep":
                position = envs.unwrapped.positions[i]
                assert np.array_equal(obs["action_mask"][i], expected_final_mask(position))
                without_moves += not position.legal_actions()
            else:
                assert infos["final_obs"][i]["action_mask"].any()
                without_moves += infos["final_obs"][i]["action_mask"][NO_OP_ACTION] == 1
            ended += 1
        assert obs["action_mask"].any(axis=1).all()
        assert np.array_equal(envs.unwrapped.action_masks(), obs["action_mask"].astype(bool))
    assert ended > 20 and without_moves > 0


def test_single_and_vector_envs_give_the_same_info_at_the_end():
    seen = set()
    for seed in range(16):
        options = {"agent_color": "random", "ply_limit": 6}
        single = MiniChessEnv("3x3", **options)
        envs = MiniChessVectorEnv(1, "3x3", autoreset_mode="Disabled", **options)
        obs, info = single.reset(seed=seed)
        envs.reset(seed=seed)
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            action = random_legal(obs["action_mask"], rng) if seed % 4 else NO_OP_ACTION  # some illegal losses
            obs, reward, terminated, truncated, info = single.step(action)
            _, rewards, terms, truncs, infos = envs.step(np.array([action]))
            done = terminated or truncated
        for key in ("outcome", "winner", "learner_color", "ply", "illegal_action"):
            if key in info:
                assert infos[f"_{key}"][0] and infos[key][0] == info[key], (key, infos[key][0], info[key])
            else:
                assert key not in infos
        seen.add(info["outcome"])
    assert None in seen and len(seen) > 1


def test_vector_call_get_attr_and_set_attr_answer_as_sync_vector_env():
    kwargs = {"num_envs": 3, "agent_color": "random", "render_mode": "ansi"}
    native = gym.make_vec("MiniChess-3x3-v0", vectorization_mode="vector_entry_point", **kwargs)
    sync = gym.make_vec("MiniChess-3x3-v0", vectorization_mode="sync", **kwargs)
    assert isinstance(native.unwrapped, MiniChessVectorEnv)
    obs, _ = native.reset(seed=5)
    sync.reset(seed=5)
    rng = np.random.default_rng(0)
    for step in range(12):  # games end and are reset on the way
        for name in ("learner", "moves", "ply_limit", "illegal_action", "action_masks", "render"):
            ours, theirs = native.call(name), sync.call(name)
            assert len(ours) == 3 and all(np.array_equal(a, b) for a, b in zip(ours, theirs)), name
        assert native.call("to_pgn", {"Event": "x"}) == sync.call("to_pgn", {"Event": "x"})
        assert [p.fen() for p in native.get_attr("position")] == [p.fen() for p in sync.get_attr("position")]
        assert native.get_attr("variant") == sync.get_attr("variant")
        actions = np.array([random_legal(m, rng) for m in obs["action_mask"]])
        obs, *_ = native.step(actions)
        sync.step(actions)
    native.set_attr("illegal_action", "raise")
    sync.set_attr("illegal_action", "raise")
    assert native.get_attr("illegal_action") == sync.get_attr("illegal_action") == ("raise",) * 3
    for envs in (native, sync):
        with pytest.raises(IllegalMoveError):
            envs.step(np.full(3, NO_OP_ACTION))
    with pytest.raises(AttributeError, match="per-game"):
        native.call("nope")
    with pytest.raises(ValueError, match="shared by every game"):
        native.set_attr("illegal_action", ["raise", "lose", "raise"])
    with pytest.raises(AttributeError, match="cannot set"):
        native.set_attr("variant", "gardner")


def test_vector_env_bad_input():
    envs = gym.make_vec("MiniChess-Gardner-v0", num_envs=3)
    with pytest.raises(ResetNeeded):
        envs.step(np.zeros(3, np.int64))
    obs, _ = envs.reset(seed=0)
    with pytest.raises(ValueError, match="actions must be 3 integers"):
        envs.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="outside the action space"):
        envs.step(np.array([0, 1, 5000]))
    strict = MiniChessVectorEnv(3, "gardner", illegal_action="raise")
    obs, _ = strict.reset(seed=0)
    with pytest.raises(IllegalMoveError, match="game 0"):
        strict.step(np.zeros(3, np.int64))
    legal = np.array([np.flatnonzero(m)[0] for m in obs["action_mask"]])
    strict.step(legal)  # nothing was played by the failed calls: still usable
    envs.step(legal)
    lose = MiniChessVectorEnv(3, "gardner")  # the default: an illegal move loses
    obs, _ = lose.reset(seed=0)
    actions = np.array([np.flatnonzero(m)[0] for m in obs["action_mask"]])
    actions[1] = 0
    obs, rewards, terminated, truncated, infos = lose.step(actions)
    assert rewards[1] == -1 and terminated[1] and infos["_illegal_action"][1]


# -- real clients (optional extras; slow) ----------------------------------------------------------------


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
