"""The native vector env against Gymnasium's sync and async vector envs of MiniChessEnv.

One ``gym.make_vec`` call, only ``vectorization_mode`` changing, builds all three; with the same seeds and
actions they must return the same observations, rewards, terminations, truncations and infos, key by key
(arrays, dtypes and ``_key`` masks as ``SyncVectorEnv`` builds them).
"""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

import minichess_envs  # noqa: F401  (registers the ids)
from minichess_envs.vector import LazyInfos, MiniChessVectorEnv

MODES = ("vector_entry_point", "sync", "async")


def assert_same(ours, theirs, path="infos"):
    """Equal values, types and dtypes, recursively through tuples, dicts and object arrays."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), (path, sorted(set(ours) ^ set(theirs)))
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{path}[{key!r}]")
    elif isinstance(theirs, tuple):  # a step's or reset's results
        assert isinstance(ours, tuple) and len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray) and (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape), path
        if theirs.dtype == object:
            for i, (a, b) in enumerate(zip(ours, theirs)):
                assert_same(a, b, f"{path}[{i}]")
        else:
            assert np.array_equal(ours, theirs), path
    else:
        assert type(ours) is type(theirs) and ours == theirs, (path, ours, theirs)


def actions_for(masks: np.ndarray, rng: np.random.Generator, illegal: float) -> np.ndarray:
    """A random legal action per game, or with probability ``illegal`` an illegal one (the game is lost)."""
    actions = []
    for mask in masks:
        legal = np.flatnonzero(mask)
        wrong = np.flatnonzero(mask == 0)
        actions.append(int(rng.choice(wrong if rng.random() < illegal else legal)))
    return np.array(actions)


@pytest.mark.parametrize("autoreset", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("env_id, options", [
    ("MiniChess-3x3-v0", {"agent_color": "random", "ply_limit": 7}),
    ("MiniChess-3x3-v0", {"agent_color": "black", "draws": "claim", "reward": "material"}),
    ("MiniChess-Gardner-v0", {"agent_color": "random", "ply_limit": 12}),
])
def test_native_sync_and_async_agree_key_by_key(env_id, options, autoreset):
    envs = {mode: gym.make_vec(env_id, 3, vectorization_mode=mode, vector_kwargs={"autoreset_mode": autoreset},
                               **options) for mode in MODES}
    try:
        assert isinstance(envs["vector_entry_point"].unwrapped, MiniChessVectorEnv)
        results = {mode: env.reset(seed=7) for mode, env in envs.items()}
        rng = np.random.default_rng(0)
        ended = np.zeros(3, bool)
        seen = set()
        for step in range(40):
            for mode in ("vector_entry_point", "async"):
                assert_same(results[mode], results["sync"], f"{mode} step {step}")
            obs = results["sync"][0]
            if autoreset == "Disabled" and ended.any():
                results = {mode: env.reset(options={"reset_mask": ended}) for mode, env in envs.items()}
                continue
            actions = actions_for(obs["action_mask"], rng, illegal=0.05)
            results = {mode: env.step(actions) for mode, env in envs.items()}
            ended = results["sync"][2] | results["sync"][3]
            seen.update(results["sync"][4], results["sync"][4].get("final_info", {}))
        assert {"action_mask", "move", "opponent_move", "outcome", "illegal_action"} <= seen
        if autoreset == "SameStep":
            assert "final_info" in seen
    finally:
        for env in envs.values():
            env.close()


@pytest.mark.parametrize("mode", MODES)
def test_make_vec_takes_autoreset_mode_both_ways_in_every_mode(mode):
    for kwargs in ({"vector_kwargs": {"autoreset_mode": "SameStep"}}, {"autoreset_mode": "SameStep"}):
        envs = gym.make_vec("MiniChess-3x3-v0", 2, vectorization_mode=mode, **kwargs)
        assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
        envs.close()
    with pytest.raises(ValueError, match="once"):
        gym.make_vec("MiniChess-3x3-v0", 2, vectorization_mode=mode, autoreset_mode="SameStep",
                     vector_kwargs={"autoreset_mode": "Disabled"})


def test_make_vec_is_gymnasiums_for_other_ids():
    with pytest.raises(gym.error.Error, match="vector_kwargs"):  # Gymnasium's own refusal, untouched
        gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point",
                     vector_kwargs={"autoreset_mode": "SameStep"})
    envs = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync", vector_kwargs={"autoreset_mode": "SameStep"})
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP


def test_lazy_infos_fill_on_any_use():
    envs = MiniChessVectorEnv(2, "3x3")
    obs, _ = envs.reset(seed=0)
    reference = dict(envs.step(actions_for(obs["action_mask"], np.random.default_rng(0), 0.0))[4])
    for use in (dict, lambda i: {**i}, lambda i: pickle.loads(pickle.dumps(i)), copy.deepcopy, copy.copy,
                lambda i: dict(i.items()), lambda i: {k: i[k] for k in list(i)}):
        envs.reset(seed=0)
        infos = envs.step(actions_for(obs["action_mask"], np.random.default_rng(0), 0.0))[4]
        assert isinstance(infos, LazyInfos)
        assert_same(use(infos), reference)
    assert len(infos) == len(reference) and "move" in infos and isinstance(infos["move"], np.ndarray)


@pytest.mark.parametrize("autoreset", ["NextStep", "SameStep"])
def test_infos_of_a_step_stay_those_of_that_step(autoreset):
    """Built on first use, but from what the step kept: later steps and resets do not change them."""
    lazy, eager = (MiniChessVectorEnv(4, "3x3", agent_color="random", autoreset_mode=autoreset) for _ in range(2))
    obs, _ = lazy.reset(seed=3)
    eager.reset(seed=3)
    rng = np.random.default_rng(1)
    kept, read = [], []
    for _ in range(20):
        actions = actions_for(obs["action_mask"], rng, 0.0)
        obs, *_, infos = lazy.step(actions)
        kept.append(infos)
        read.append(dict(eager.step(actions)[4]))
    for infos, reference in zip(kept, read):
        assert_same(infos, reference)
