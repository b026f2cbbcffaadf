"""Finding saved agents under a runs directory (``agents.spec.saved_agents``), symbolic links included."""

from __future__ import annotations

import os

import pytest

from agents import RandomAgent, load
from agents.spec import saved_agents

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt",
                                reason="symbolic links need privileges on Windows")


def test_symlinked_run_directories_are_found_and_loops_end(tmp_path):
    runs, elsewhere = tmp_path / "runs", tmp_path / "other-disk"
    RandomAgent(0).save(str(runs / "local" / "agent"))
    RandomAgent(1).save(str(elsewhere / "big-run" / "agent"))
    os.symlink(elsewhere / "big-run", runs / "linked")  # a run kept elsewhere, linked in
    os.symlink(runs / "local", runs / "best")  # a second name for a run already found
    os.symlink(runs, runs / "local" / "loop")  # a link back up: must not be walked forever
    os.symlink(tmp_path / "gone", runs / "dangling")
    found = saved_agents(str(runs))
    assert sorted(found) == ["best/agent", "linked/agent", "local/agent"]
    assert isinstance(load(found["linked/agent"]), RandomAgent)


def test_a_cycle_of_links_ends(tmp_path):
    runs = tmp_path / "runs"
    RandomAgent(0).save(str(runs / "a" / "agent"))
    (runs / "b").mkdir()
    os.symlink(runs / "b", runs / "a" / "to-b")
    os.symlink(runs / "a", runs / "b" / "to-a")  # a -> b -> a: neither link is a parent of itself
    assert sorted(saved_agents(str(runs))) == ["a/agent", "b/to-a/agent"]
