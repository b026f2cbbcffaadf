"""The `minichess` command line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from minichess_envs import VARIANTS, Position
from minichess_envs.cli import main


def test_variants_lists_every_variant(capsys):
    assert main(["variants"]) == 0
    out = capsys.readouterr().out
    for v in VARIANTS.values():
        assert v.name in out and v.gym_id in out


def test_perft_prints_the_node_count_last(capsys):
    assert main(["perft", "gardner", "3"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "506"
    fen = "k4/2P2/5/5/4K w - - 0 1"
    assert main(["perft", "gardner", "2", "--fen", fen, "--divide"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert int(lines[-1]) == Position("gardner", fen).perft(2)
    assert "c4c5n: " in "\n".join(lines)
    assert sum(int(line.split(": ")[1]) for line in lines[:-1]) == int(lines[-1])


def test_show_prints_board_moves_and_outcome(capsys):
    assert main(["show", "3x3", "--fen", "k2/1Q1/2K b - - 0 1"]) == 0
    out = capsys.readouterr().out
    assert "♚" in out and "checkmate, white wins (1-0)" in out


def test_bad_input_is_one_clear_line(capsys):
    assert main(["show", "gardner", "--fen", "rnbqk/ppppp/5/PPPPP w - - 0 1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("minichess: error: bad FEN") and "Traceback" not in err
    assert main(["perft", "nope", "2"]) == 2
    assert "unknown variant 'nope'" in capsys.readouterr().err


def test_demo_plays_every_variant(capsys):
    assert main(["demo", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("== ") == len(VARIANTS)


@pytest.mark.parametrize("module", ["minichess_envs.cli"])
def test_runs_as_a_module_and_import_stays_light(module):
    out = subprocess.run([sys.executable, "-m", module, "perft", "3x3", "2"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "15"
    code = "import sys, minichess_envs; print(sorted(m for m in ('torch', 'ray', 'stable_baselines3', 'jax') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr
