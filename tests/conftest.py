"""Fixtures shared by the test modules, and the `needs_engine` mark."""

import shutil

import pytest


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


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs_engine"):
        name = mark.args[0]
        if not (shutil.which(name) or shutil.which(name, path="/usr/games")):  # Debian installs engines there
            pytest.skip(f"{name} is not installed (apt install {name})")
