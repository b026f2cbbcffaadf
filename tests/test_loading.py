"""Loading files from strangers: saved agents and engine settings run no code, and corruption is refused.

Each crafted file below would create a marker file if any of its code ran;
the tests check the marker is never created, and that every refusal is a
``ValueError`` naming the file.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import stat

import numpy as np
import pytest

import agents
from agents import GreedyAgent, MinimaxAgent, RandomAgent
from agents.base import AGENT_TYPES, Agent, SeededAgent, register_agent, type_name

torch = pytest.importorskip("torch", reason="the saved-network tests need torch (pip install -e '.[agents]')")

from agents.alphazero.agent import AlphaZeroAgent  # noqa: E402
from agents.alphazero.network import NetConfig, PolicyValueNet  # noqa: E402
from agents.ppo.agent import ByColorAgent, EpsilonRandomAgent, PPOAgent  # noqa: E402
from agents.ppo.network import PPONet, PPONetConfig  # noqa: E402
from minichess_envs.encoding import ObservationEncoding  # noqa: E402
from minichess_envs.variants import get_variant  # noqa: E402


class Payload:
    """Unpickling this runs ``os.system``: the classic pickle exploit."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def write_json(path, data) -> None:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "agent.json"), "w") as f:
        json.dump(data, f)


def ppo_agent() -> PPOAgent:
    variant = get_variant("3x3")
    config = PPONetConfig(*ObservationEncoding(variant, 1, True).shape, variant.num_actions, channels=4,
                          conv_layers=1, value_hidden=8)
    return PPOAgent(PPONet(config), "3x3")


def alphazero_agent() -> AlphaZeroAgent:
    variant = get_variant("3x3")
    encoding = ObservationEncoding(variant, 1, False)
    net = PolicyValueNet(NetConfig(variant.height, variant.width, encoding.num_channels, variant.num_actions,
                                   blocks=1, channels=8, policy_channels=4, value_hidden=8))
    return AlphaZeroAgent(net, "3x3", simulations=4)


# -- agent manifests ------------------------------------------------------------------------------


def test_a_manifest_naming_its_own_module_is_refused_and_runs_nothing(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "payload.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from agents.base import Agent\n"
        "class Evil(Agent):\n"
        "    @classmethod\n"
        "    def load(cls, path):\n"
        "        return cls()\n")
    monkeypatch.chdir(agent_dir)  # even with the agent directory importable
    monkeypatch.syspath_prepend(str(agent_dir))
    for name in ("payload:Evil", "os:system", "subprocess:Popen", "agents.base:Agent", "builtins:eval"):
        write_json(agent_dir, {"format": 1, "class": name, "name": "x", "settings": {}})
        with pytest.raises(ValueError, match="not a registered agent type") as info:
            agents.load(str(agent_dir))
        assert str(agent_dir / "agent.json") in str(info.value)
    assert not marker.exists()


def test_every_shipped_agent_class_is_registered():
    """Walk the agents package: each Agent subclass with a saved form is on the allow-list."""
    found = set()
    import agents as package

    for module in pkgutil.walk_packages(package.__path__, "agents."):
        try:
            mod = importlib.import_module(module.name)
        except ImportError:  # optional extras (ray, sb3) may be missing
            continue
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, Agent) and cls not in (Agent, SeededAgent) and cls.__module__ == mod.__name__ \
                    and cls.save is not Agent.save:
                found.add(type_name(cls))
    assert found and found <= set(AGENT_TYPES), found - set(AGENT_TYPES)


def test_registered_user_agents_load(tmp_path):
    @register_agent
    class Mine(Agent):
        name = "mine"

        def save(self, path):
            agents.base.write_manifest(path, self)

        @classmethod
        def load(cls, path):
            return cls()

    Mine().save(str(tmp_path))
    assert isinstance(agents.load(str(tmp_path)), Mine)
    with pytest.raises(TypeError):
        register_agent(int)


@pytest.mark.parametrize("content, problem", [
    (b"\xff\xfe\x00garbage\x80", "corrupt agent manifest"),
    (b"{not json", "corrupt agent manifest"),
    (b"[1, 2]", "expected a JSON object"),
    (b'{"format": 1, "class": "agents.players.greedy:GreedyAgent"}', "no 'settings' entry"),
    (b'{"format": 1, "settings": {}}', "no 'class' entry"),
    (b'{"format": 7, "class": "agents.players.greedy:GreedyAgent", "settings": {}}', "format 7"),
])
def test_broken_manifests_name_the_file(tmp_path, content, problem):
    (tmp_path / "agent.json").write_bytes(content)
    with pytest.raises(ValueError, match=problem) as info:
        agents.load(str(tmp_path))
    assert str(tmp_path / "agent.json") in str(info.value)


@pytest.mark.parametrize("make, key, bad", [
    (lambda: MinimaxAgent(2), "depth", "2"),
    (lambda: MinimaxAgent(2), "depth", 0),
    (lambda: GreedyAgent(seed=1), "seed", "one"),
    (lambda: GreedyAgent(seed=1), "colour", 1),  # an unknown setting
    (lambda: RandomAgent(seed=1), "seed", 1.5),
    (ppo_agent, "sample", "yes"),
    (ppo_agent, "variant", "no-such-variant"),
    (ppo_agent, "history", 3),
    (alphazero_agent, "simulations", "64"),
    (alphazero_agent, "simulations", -1),
    (alphazero_agent, "search", {"simulations": "many"}),
    (alphazero_agent, "variant", "gardner"),
])
def test_bad_settings_fail_at_load_naming_the_file(tmp_path, make, key, bad):
    make().save(str(tmp_path))
    manifest = json.loads((tmp_path / "agent.json").read_text())
    manifest["settings"][key] = bad
    (tmp_path / "agent.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError) as info:
        agents.load(str(tmp_path))
    assert str(tmp_path) in str(info.value)


def test_nested_agents_stay_inside_their_directory(tmp_path):
    pair = ByColorAgent(RandomAgent(1), RandomAgent(2), "3x3")
    pair.save(str(tmp_path / "pair"))
    assert isinstance(agents.load(str(tmp_path / "pair")), ByColorAgent)
    manifest = json.loads((tmp_path / "pair" / "agent.json").read_text())
    manifest["settings"]["white"] = "../../elsewhere"
    (tmp_path / "pair" / "agent.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="not a plain subdirectory name"):
        agents.load(str(tmp_path / "pair"))
    mixed = EpsilonRandomAgent(GreedyAgent(seed=3), 0.25, seed=4)
    mixed.save(str(tmp_path / "mixed"))
    loaded = agents.load(str(tmp_path / "mixed"))
    assert (loaded.eps, loaded.seed, type(loaded.inner)) == (0.25, 4, GreedyAgent)


# -- network weights -------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [ppo_agent, alphazero_agent])
def test_pickled_code_in_weights_never_runs(tmp_path, make):
    marker = tmp_path / "ran"
    path = tmp_path / "agent"
    make().save(str(path))
    # a weights file that runs code when unpickled, with a matching checksum
    torch.save({"net_config": {}, "model": Payload(marker)}, str(path / "weights.pt"))
    from minichess_envs.checksums import write_checksums

    write_checksums(str(path), ["weights.pt"])
    with pytest.raises(ValueError, match="weights.pt"):
        agents.load(str(path))
    assert not marker.exists()


@pytest.mark.parametrize("make", [ppo_agent, alphazero_agent])
def test_bit_flips_in_weights_are_refused(tmp_path, make):
    path = tmp_path / "agent"
    make().save(str(path))
    file = path / "weights.pt"
    original = file.read_bytes()
    rng = np.random.default_rng(0)
    for _ in range(50):
        data = bytearray(original)
        bit = int(rng.integers(len(data) * 8))
        data[bit // 8] ^= 1 << (bit % 8)
        file.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=f"{file}.*corrupt|corrupt.*{file}"):
            agents.load(str(path))
    file.write_bytes(original)
    assert isinstance(agents.load(str(path)), (PPOAgent, AlphaZeroAgent))


def test_weights_without_a_checksum_load_with_a_warning(tmp_path):
    ppo_agent().save(str(tmp_path))
    os.remove(tmp_path / "SHA256SUMS")
    from minichess_envs.checksums import ChecksumWarning

    with pytest.warns(ChecksumWarning, match="weights.pt"):
        agents.load(str(tmp_path))


# -- engine settings ----------------------------------------------------------------------------------


def fake_engine(directory, marker) -> str:
    """An executable that would create ``marker`` if it were ever run."""
    directory.mkdir(exist_ok=True)
    script = directory / "fairy-stockfish"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_saved_engine_agent_cannot_choose_the_binary(tmp_path, monkeypatch):
    from agents.players import uci

    marker = tmp_path / "ran"
    evil = fake_engine(tmp_path / "evil", marker)
    harmless = tmp_path / "bin"
    harmless.mkdir()
    (harmless / "fairy-stockfish").write_text("#!/bin/sh\nexit 0\n")
    (harmless / "fairy-stockfish").chmod(0o755)
    monkeypatch.setenv("PATH", str(harmless))
    monkeypatch.setattr(uci, "SEARCH_DIRS", ())
    write_json(tmp_path / "agent", {"format": 1, "class": "agents.players.uci:UCIEngineAgent", "name": "fsf", "settings": {
        "variant": "gardner", "engine": "fairy-stockfish", "binary": evil, "nodes": 10}})
    with pytest.warns(UserWarning, match="binary is ignored"):
        agent = agents.load(str(tmp_path / "agent"))
    assert agent.binary == str(harmless / "fairy-stockfish")
    # the engine name is checked too: a manifest cannot name another program
    write_json(tmp_path / "agent", {"format": 1, "class": "agents.players.uci:UCIEngineAgent", "name": "fsf", "settings": {
        "variant": "gardner", "engine": evil, "nodes": 10}})
    with pytest.raises(ValueError, match="engine must be"):
        agents.load(str(tmp_path / "agent"))
    assert not marker.exists()
    # the caller may choose the binary explicitly
    write_json(tmp_path / "agent", {"format": 1, "class": "agents.players.uci:UCIEngineAgent", "name": "fsf", "settings": {
        "variant": "gardner", "engine": "fairy-stockfish", "nodes": 10}})
    other = tmp_path / "other-fsf"
    other.write_text("#!/bin/sh\nexit 0\n")
    other.chmod(0o755)
    assert uci.UCIEngineAgent.load(str(tmp_path / "agent"), binary=str(other)).binary == str(other)


@pytest.mark.parametrize("options, problem", [
    ({"Hash": "16\nsetoption name Debug Log File value /tmp/x"}, "one-line"),
    ({"Hash\nquit": 16}, "printable"),
    ({"Hash value 1 name Threads": 16}, "keyword"),
    ({"Debug Log File": "/tmp/engine.log"}, "file_options=True"),
    ({"debug   log FILE": "/tmp/engine.log"}, "file_options=True"),
    ({"EvalFile": "net.nnue"}, "file_options=True"),
    ({"UCI_Variant": "chess"}, "set by the agent"),
    ({"Hash": [1, 2]}, "one-line str, int, float or bool"),
])
def test_engine_options_are_validated(tmp_path, monkeypatch, options, problem):
    from agents.players import uci

    marker = tmp_path / "ran"
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(uci, "SEARCH_DIRS", ())
    fake_engine(tmp_path / "bin", marker)
    with pytest.raises(ValueError, match=problem):
        uci.UCIEngineAgent("gardner", options=options)
    # the same options from a saved agent are refused at load
    write_json(tmp_path / "agent", {"format": 1, "class": "agents.players.uci:UCIEngineAgent", "name": "fsf", "settings": {
        "variant": "gardner", "engine": "fairy-stockfish", "nodes": 10, "options": options}})
    with pytest.raises(ValueError, match=problem):
        agents.load(str(tmp_path / "agent"))
    assert not marker.exists()


def test_file_options_need_the_callers_opt_in(tmp_path, monkeypatch):
    from agents.players import uci

    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(uci, "SEARCH_DIRS", ())
    fake_engine(tmp_path / "bin", tmp_path / "ran")
    agent = uci.UCIEngineAgent("gardner", options={"Debug Log File": str(tmp_path / "log")}, file_options=True)
    agent.save(str(tmp_path / "agent"))
    with pytest.raises(ValueError, match="file_options=True"):
        agents.load(str(tmp_path / "agent"))  # the file cannot opt in by itself
    loaded = uci.UCIEngineAgent.load(str(tmp_path / "agent"), file_options=True)
    assert loaded.options == {"Debug Log File": str(tmp_path / "log")}
    assert not (tmp_path / "ran").exists()


def test_saved_agents_hold_json_and_tensors_only(tmp_path):
    for i, agent in enumerate([GreedyAgent(seed=1), ppo_agent(), alphazero_agent()]):
        agent.save(str(tmp_path / str(i)))
        for name in os.listdir(tmp_path / str(i)):
            file = tmp_path / str(i) / name
            if name.endswith(".json"):
                json.loads(file.read_text())
            elif name == "weights.pt":
                torch.load(file, weights_only=True)  # refuses anything but tensors and plain data
            else:
                assert name == "SHA256SUMS", name
