"""A missing optional dependency names the extra that installs it (``minichess_envs.extras``), at every entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from minichess_envs.extras import EXTRAS, MissingExtraError, require

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def without(modules: list[str], code: str, tmp_path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter where ``modules`` cannot be imported (``sys.modules[name] = None``)."""
    script = tmp_path / "script.py"
    script.write_text("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
                      + textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get(
                              "PYTHONPATH")]))}, timeout=120)


def saved_alphazero(tmp_path) -> str:
    """A saved agent whose class needs torch (settings are not read before its module is imported)."""
    path = tmp_path / "az"
    path.mkdir()
    (path / "agent.json").write_text(json.dumps({"format": 1, "class": "agents.alphazero.agent:AlphaZeroAgent",
                                                 "name": "az", "settings": {}}))
    return str(path)


def test_require_returns_the_module_or_names_the_extra(monkeypatch):
    assert require("json") is json
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingExtraError) as missing:
        require("torch", purpose="this test")
    assert isinstance(missing.value, ImportError) and missing.value.name == "torch"
    assert str(missing.value) == ("this test needs torch, which the [agents] extra installs: "
                                  "pip install 'minichess-envs[agents]'")


def test_only_the_module_asked_for_is_translated(monkeypatch, tmp_path):
    # A module it needs that is missing is not fixed by installing the extra: that error stands as it is.
    (tmp_path / "needs_more.py").write_text("import no_such_dependency_of_it\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as missing:
        require("needs_more", "agents")
    assert not isinstance(missing.value, MissingExtraError) and missing.value.name == "no_such_dependency_of_it"
    with pytest.raises(MissingExtraError, match=r"pip install 'minichess-envs\[play\]'"):
        require("no_such_module.sub", "play")  # its package missing: the extra is what to install


def test_every_extra_named_exists():
    try:
        import tomllib
    except ImportError:
        pytest.skip("tomllib is Python 3.11+")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(extras)


def test_loading_a_saved_agent_without_torch_names_the_agents_extra(tmp_path):
    run = without(["torch"], f"""
        import agents
        from minichess_envs.extras import MissingExtraError
        try:
            agents.load({saved_alphazero(tmp_path)!r})
        except MissingExtraError as exc:
            print(exc)
        """, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "loading the saved agent in" in run.stdout and "pip install 'minichess-envs[agents]'" in run.stdout


def test_the_command_line_names_the_extra_in_one_line(tmp_path):
    path = saved_alphazero(tmp_path)
    run = without(["torch"], f"""
        from minichess_envs.cli import main
        sys.exit(main(["play", "3x3", "--opponent", {path!r}, "--pgn", "-"]))
        """, tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"minichess: error: loading the saved agent in {os.path.join(path, 'agent.json')} needs torch, which the "
        "[agents] extra installs: pip install 'minichess-envs[agents]'"]
    run = without(["starlette"], """
        from minichess_envs.cli import main
        sys.exit(main(["serve"]))
        """, tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip() == ("minichess: error: minichess serve needs starlette, which the [play] extra "
                                  "installs: pip install 'minichess-envs[play]'")


def test_the_web_app_says_which_extra_a_saved_agent_needs(tmp_path):
    pytest.importorskip("starlette", reason="the web app needs the [play] extra")
    run = without(["torch"], f"""
        from starlette.exceptions import HTTPException
        from agents.play.web import PlayServer
        from agents.play.web import HUMAN
        from minichess_envs import get_variant
        server = PlayServer(None, [{saved_alphazero(tmp_path)!r}])
        try:
            server.make_agents((HUMAN, *server.saved()), get_variant("3x3"))
        except HTTPException as exc:
            print(exc.status_code, exc.detail)
        """, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("422 ") and "pip install 'minichess-envs[agents]'" in run.stdout
