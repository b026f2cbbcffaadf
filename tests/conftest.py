"""Fixtures shared by the test modules."""

import pytest


@pytest.fixture
def started_pools(monkeypatch) -> list:
    """Every self-play worker pool started while the test runs, in order (the training loops start theirs
    through :meth:`agents.alphazero.workers.SelfPlaySchedule.start`, which builds the patched class)."""
    from agents.alphazero import workers

    pools = []

    class Recorded(workers.SelfPlayPool):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pools.append(self)

    monkeypatch.setattr(workers, "SelfPlayPool", Recorded)
    return pools
