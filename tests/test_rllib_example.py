"""The README's RLlib example, run exactly as printed (docs/rllib.md shows the same block)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import minichess_envs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rllib_example(path: str) -> str:
    """The Python block that follows the ``**RLlib**`` paragraph of the README (the only one using RLlib there)."""
    with open(path) as f:
        text = f.read()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "MaskedPPOModule" in b]
    assert len(blocks) == 1, f"expected one RLlib example in {path}, found {len(blocks)}"
    return blocks[0]


def test_docs_show_the_readme_example():
    assert rllib_example(os.path.join(ROOT, "docs", "rllib.md")) == rllib_example(os.path.join(ROOT, "README.md"))


def test_readme_rllib_example_runs(tmp_path):
    pytest.importorskip("ray.rllib", reason="needs ray[rllib]: pip install -e '.[rllib]'")
    code = rllib_example(os.path.join(ROOT, "README.md"))
    # The packages as this test imports them: the checkout's, or an installed wheel's.
    site = os.path.dirname(os.path.dirname(os.path.abspath(minichess_envs.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])),
           "RAY_DEDUP_LOGS": "0"}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    single = re.search(r"mean return: (\S+)", run.stdout)
    assert single and -1.0 <= float(single.group(1)) <= 1.0, run.stdout
    line = re.search(r"mean returns: (\{.*\})", run.stdout)
    assert line, run.stdout
    for player in ("player_0", "player_1"):  # RLlib's dict has either order
        multi = re.search(rf"'{player}': (?:np\.float64\()?(-?[\d.]+)", line.group(1))
        assert multi and -1.0 <= float(multi.group(1)) <= 1.0, run.stdout
