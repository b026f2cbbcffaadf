"""Fixtures shared by the test modules, the `needs_engine` mark, and CI's check that every package of the design
is installed (so that none of its tests skips there)."""

import importlib.util
import os
import shutil

import pytest

#: The packages the design is built on, by import name: in CI (``CI=true``) each must import, so that no test of
#: theirs skips for want of it (``.ci/run`` installs them through the README's test command: the dev extra).
DESIGN_PACKAGES = ("gymnasium", "pettingzoo", "chess", "torch", "stable_baselines3", "sb3_contrib", "ray.rllib",
                   "ray.tune")


def missing_design_packages() -> list[str]:
    missing = []
    for name in DESIGN_PACKAGES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:  # the parent package is missing
            found = False
        if not found:
            missing.append(name)
    return missing


@pytest.fixture
def started_pools(monkeypatch) -> list:
    """Every self-play worker pool started while the test runs, in order (the training loops start theirs
    through :class:`agents.alphazero.selfplay.SelfPlaySchedule`, which builds the patched class)."""
    from agents.alphazero import selfplay

    pools = []

    class Recorded(selfplay.WorkerPool):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pools.append(self)

    monkeypatch.setattr(selfplay, "WorkerPool", Recorded)
    return pools


@pytest.fixture
def one_torch_thread():
    """One torch thread while the test runs, as the PPO runs use: fastest on a small shared machine, and
    deterministic."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def assert_same_run():
    """``check(a, b)``: two training runs' final states recorded the same samples each iteration and ended
    with equal weights (a resumed or repaired run against the one that went straight through)."""
    import torch

    def check(a: dict, b: dict) -> None:
        assert [m["samples"] for m in a["metrics"]] == [m["samples"] for m in b["metrics"]]
        for name, tensor in a["model"].items():
            assert torch.equal(tensor, b["model"][name]), name

    return check


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_engine(name): skip unless the UCI engine `name` is installed")
    light = os.environ.get("MINICHESS_LIGHT_TESTS") == "1"  # .ci/run-wheel's light run leaves torch out on purpose
    if os.environ.get("CI", "").lower() in ("true", "1") and not light and missing_design_packages():
        raise pytest.UsageError(
            f"CI runs every test of the design's packages, but {', '.join(missing_design_packages())} "
            f"cannot be imported here: install the dev extra (pip install -e '.[dev]')")


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs_engine"):
        name = mark.args[0]
        if not (shutil.which(name) or shutil.which(name, path="/usr/games")):  # Debian installs engines there
            pytest.skip(f"{name} is not installed (apt install {name})")
