"""AlphaZero on a CUDA GPU: training with the learner and the in-process search there (a chess variant's C search
and a board game's), checkpoints that resume on the CPU, and agents that play the same on either device. Skipped
without a CUDA GPU: run ``pytest tests/test_cuda.py`` on a GPU machine."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents import zoo  # noqa: E402
from agents.alphazero.agent import AlphaZeroAgent  # noqa: E402
from agents.alphazero.search import SearchConfig  # noqa: E402
from agents.alphazero.train import Config, train, with_changes  # noqa: E402
from agents.games import new_game  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here: run on a GPU machine")

GAMES = ["3x3", "gardner", "connect_four", "checkers", "gomoku7k4"]


def tiny(run_dir, game: str, **changes) -> Config:
    config = with_changes(Config(), game=game, run_dir=str(run_dir), iterations=1, games_per_iteration=8,
                          random_start_fraction=0.5, random_start_plies=4,
                          search=SearchConfig(simulations=16, leaves_per_tree=2), blocks=1, channels=16,
                          policy_channels=4, batch_size=32, buffer_size=4000, threads=1)
    return with_changes(config, **changes)


def positions(game: str, count: int = 24) -> list:
    rng = np.random.default_rng(1)
    return [new_game(game).random_start(rng, 6) for _ in range(count)]


@pytest.mark.parametrize("workers", [0, 1])
@pytest.mark.parametrize("game", GAMES)
def test_training_on_cuda_checkpoints_cpu_tensors_that_resume_on_the_cpu(tmp_path, game, workers):
    state = train(tiny(tmp_path, game, device="cuda", workers=workers), verbose=False)
    assert state["iteration"] == 1 and state["metrics"][0]["samples"] > 0
    assert all(t.device.type == "cpu" for t in state["model"].values())
    assert all(np.isfinite(state["metrics"][0][k]) for k in ("policy_loss", "value_loss"))
    resumed = train(tiny(tmp_path, game, device="cpu", workers=workers, iterations=2), resume=True, verbose=False)
    assert resumed["iteration"] == 2


@pytest.mark.parametrize("game", GAMES)
def test_an_agent_on_cuda_sees_what_it_sees_on_the_cpu_and_saves_for_the_cpu(tmp_path, game):
    torch.manual_seed(0)
    state = train(tiny(tmp_path / "run", game, device="cpu"), verbose=False)
    cpu = AlphaZeroAgent.from_checkpoint(state, 32)
    gpu = AlphaZeroAgent.from_checkpoint(state, 32).to("cuda")
    assert next(gpu.net.parameters()).device.type == "cuda"
    games = positions(game)
    (p_cpu, v_cpu), (p_gpu, v_gpu) = cpu.policy_value(games), gpu.policy_value(games)
    # cuDNN's convolutions may use TF32: equal to about 1e-3, not bit for bit
    np.testing.assert_allclose(p_gpu, p_cpu, atol=2e-3)
    np.testing.assert_allclose(v_gpu, v_cpu, atol=2e-3)
    moves_cpu, moves_gpu = cpu.act_games(games), gpu.act_games(games)
    for g, a in zip(games, moves_gpu):
        assert g.legal_mask()[a], (game, a)
    assert np.mean(moves_cpu == moves_gpu) >= 0.9  # a search may break a near tie the other way
    gpu.save(str(tmp_path / "saved"))
    again = AlphaZeroAgent.load(str(tmp_path / "saved"))  # on the CPU
    for name, tensor in cpu.net.state_dict().items():
        assert torch.equal(again.net.state_dict()[name], tensor), name


@pytest.mark.parametrize("name", [n for n in zoo.names() if zoo.card(n).algorithm == "AlphaZero"])
def test_every_alphazero_zoo_entry_plays_on_cuda(name):
    cpu = zoo.load(name, casual=True)
    gpu = zoo.load(name, casual=True).to("cuda")
    games = positions(zoo.card(name).game, 8)
    np.testing.assert_allclose(gpu.policy_value(games)[0], cpu.policy_value(games)[0], atol=2e-3)
    assert all(g.legal_mask()[a] for g, a in zip(games, gpu.act_games(games)))
