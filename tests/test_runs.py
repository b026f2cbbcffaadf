"""The run machinery: resume checks, atomic checksummed checkpoints, stale files, TensorBoard across kills.

Independent truth: the files on disk (SHA256SUMS as ``sha256sum`` computes it),
TensorBoard's own event reader, and marker files that crafted payloads would create.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the run machinery's checkpoints need torch (pip install -e '.[agents]')")

from agents import runs  # noqa: E402
from minichess_envs.checksums import SUMS, write_checksums  # noqa: E402
from agents.runs import Run, checkpoint_dir, load_tensors, machine, machine_text, read_state  # noqa: E402


@dataclasses.dataclass
class Settings:
    lr: float = 0.1
    iterations: int = 3
    name: str = "x"


def run_loop(run_dir, settings: Settings, resume=False, crash_at=None, crash_in=None, monkeypatch=None):
    """A toy training loop on the machinery: ``w`` grows by ``lr`` every iteration."""
    run = Run(run_dir, settings, "toy", resume=resume, may_differ=("iterations",), verbose=False)
    w = run.tensors()["w"] if run.resumed else torch.zeros(3)
    try:
        for iteration in range(run.state.iteration + 1, settings.iterations + 1):
            w = w + settings.lr
            run.state.iteration = iteration
            if iteration == crash_at:
                monkeypatch.setattr(runs, crash_in, _crash)
            run.save({"w0": float(w[0]), "square": iteration ** 2}, tensors={"w": w})
    finally:
        run.close()
    return run.state, w


def _crash(*args, **kwargs):
    raise KeyboardInterrupt("killed")


def test_resume_refuses_other_settings_with_a_clear_message(tmp_path):
    run_dir = str(tmp_path / "run")
    run_loop(run_dir, Settings(iterations=2))
    with pytest.raises(ValueError, match="already holds a run: pass resume=True"):
        run_loop(run_dir, Settings(iterations=2))
    with pytest.raises(ValueError, match=r"other settings.*lr: 0.5 now, 0.1 saved"):
        run_loop(run_dir, Settings(lr=0.5, iterations=3), resume=True)
    with pytest.raises(ValueError, match="is a toy run; cannot resume it as other"):
        Run(run_dir, Settings(), "other", resume=True, verbose=False)
    state, w = run_loop(run_dir, Settings(iterations=4), resume=True)  # a longer budget may differ
    assert state.iteration == 4 and torch.allclose(w, torch.full((3,), 0.4))
    assert [row["iteration"] for row in state.metrics] == [1, 2, 3, 4]
    lines = open(os.path.join(run_dir, "metrics.csv")).read().splitlines()
    assert lines[0].startswith("w0,square,iteration") and len(lines) == 5


def test_checkpoints_are_checksummed_as_sha256sum_does(tmp_path):
    run_dir = str(tmp_path)
    run_loop(run_dir, Settings(iterations=1))
    checkpoint = checkpoint_dir(run_dir)
    listed = dict(line.split("  ")[::-1] for line in open(os.path.join(checkpoint, SUMS)).read().splitlines())
    assert set(listed) == {"state.json", "tensors.pt"}
    for name, digest in listed.items():
        assert hashlib.sha256(open(os.path.join(checkpoint, name), "rb").read()).hexdigest() == digest


@pytest.mark.parametrize("name", ["tensors.pt", "state.json"])
def test_bit_flips_in_checkpoints_are_refused(tmp_path, name):
    run_dir = str(tmp_path)
    run_loop(run_dir, Settings(iterations=2))
    file = os.path.join(checkpoint_dir(run_dir), name)
    original = open(file, "rb").read()
    rng = np.random.default_rng(1)
    for _ in range(100):
        data = bytearray(original)
        bit = int(rng.integers(len(data) * 8))
        data[bit // 8] ^= 1 << (bit % 8)
        open(file, "wb").write(bytes(data))
        with pytest.raises(ValueError, match=f"corrupt checkpoint.*{name}"):
            run_loop(run_dir, Settings(iterations=3), resume=True)
    open(file, "wb").write(original)
    assert run_loop(run_dir, Settings(iterations=3), resume=True)[0].iteration == 3


def test_pickled_code_in_a_checkpoint_never_runs(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'ran'}",))

    run_dir = str(tmp_path / "run")
    run_loop(run_dir, Settings(iterations=1))
    checkpoint = checkpoint_dir(run_dir)
    torch.save({"w": Payload()}, os.path.join(checkpoint, "tensors.pt"))
    write_checksums(checkpoint, ["tensors.pt"])  # a crafted file with a matching checksum
    with pytest.raises(ValueError, match="corrupt checkpoint.*tensors.pt"):
        load_tensors(checkpoint)
    with pytest.raises(ValueError, match="corrupt checkpoint.*tensors.pt"):
        run_loop(run_dir, Settings(iterations=2), resume=True)
    assert not (tmp_path / "ran").exists()


def test_a_checkpoint_without_checksums_is_refused(tmp_path):
    run_loop(str(tmp_path), Settings(iterations=1))
    os.remove(os.path.join(checkpoint_dir(str(tmp_path)), SUMS))
    with pytest.raises(ValueError, match="SHA256SUMS is missing"):
        read_state(checkpoint_dir(str(tmp_path)))


def test_stale_files_are_cleaned_up_and_a_cut_swap_is_recovered(tmp_path):
    run_dir = str(tmp_path)
    run_loop(run_dir, Settings(iterations=2))
    # a kill mid-write leaves temporary files; a kill between the swap's two renames leaves checkpoint.old only
    for name in ("checkpoint.pt.tmp", "metrics.csv.tmp"):
        open(os.path.join(run_dir, name), "w").write("half")
    os.makedirs(os.path.join(run_dir, "checkpoint.new"))
    os.replace(os.path.join(run_dir, "checkpoint"), os.path.join(run_dir, "checkpoint.old"))
    state, _ = run_loop(run_dir, Settings(iterations=3), resume=True)
    assert state.iteration == 3
    assert sorted(os.listdir(run_dir)) == ["checkpoint", "metrics.csv", "tensorboard"]


def tensorboard_steps(run_dir: str, tag: str) -> list[tuple[int, float]]:
    """``(step, value)`` of a scalar as TensorBoard shows it (its reader applies purges)."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(os.path.join(run_dir, "tensorboard"))
    events.Reload()
    return [(e.step, e.value) for e in events.Scalars(tag)]


@pytest.mark.parametrize("crash_in", ["save_checkpoint", "write_csv"])
def test_a_kill_around_the_checkpoint_loses_no_tensorboard_point(tmp_path, monkeypatch, crash_in):
    """Killed after iteration 2's TensorBoard point but before (or right after) its checkpoint: the resumed
    run shows every iteration exactly once, with the values of an uninterrupted run."""
    pytest.importorskip("tensorboard")
    straight = str(tmp_path / "straight")
    run_loop(straight, Settings(iterations=4))
    run_dir = str(tmp_path / "killed")
    with pytest.raises(KeyboardInterrupt):
        run_loop(run_dir, Settings(iterations=4), crash_at=2, crash_in=crash_in, monkeypatch=monkeypatch)
    monkeypatch.undo()
    state, _ = run_loop(run_dir, Settings(iterations=4), resume=True)
    assert state.iteration == 4
    for tag in ("w0", "square"):
        assert tensorboard_steps(run_dir, tag) == tensorboard_steps(straight, tag)
    assert [s for s, _ in tensorboard_steps(run_dir, "square")] == [1, 2, 3, 4]
    assert open(os.path.join(run_dir, "metrics.csv")).read().count("\n") == 5


def test_machine_text_states_cpu_threads_and_load():
    start = machine()
    assert start["cores"] == os.cpu_count() and start["cpu"]
    text = machine_text(start)
    assert str(os.cpu_count()) in text and "load average" in text and f"{torch.get_num_threads()} torch thread" in text
    assert (" GPU" in text) == torch.cuda.is_available()  # a GPU the networks may run on is named


def test_stale_tablebase_temporaries_are_removed(tmp_path):
    from minichess_envs.tablebase import Tablebase

    stale, fresh = tmp_path / ".tablebase-killed.tmp", tmp_path / ".tablebase-writing.tmp"
    for file in (stale, fresh):
        file.write_bytes(b"half a table")
    os.utime(stale, (0, 1_000_000))  # untouched for decades: left by a killed save
    Tablebase.build("3x3", white="KQ", black="k").save(str(tmp_path / "small.npz"))
    assert not stale.exists() and fresh.exists()  # a recent one may be another process's save
    assert (tmp_path / "small.npz").exists()


def test_a_run_saved_before_a_setting_existed_resumes_at_that_setting_s_default(tmp_path):
    import dataclasses as dc

    from agents.runs import Run

    @dc.dataclass
    class Inner:
        a: int = 1

    @dc.dataclass
    class Old:
        lr: float = 0.1
        inner: Inner = dc.field(default_factory=Inner)

    @dc.dataclass
    class NewInner:
        a: int = 1
        b: str = "x"  # added later

    @dc.dataclass
    class New:
        lr: float = 0.1
        inner: NewInner = dc.field(default_factory=NewInner)
        window: int = 0  # added later

    with Run(str(tmp_path), Old(), "test", verbose=False) as run:
        run.state.iteration = 1
        run.save({"loss": 1.0})
    with Run(str(tmp_path), New(), "test", resume=True, verbose=False) as run:
        assert run.resumed and run.state.iteration == 1
    with pytest.raises(ValueError, match="window: 5 now, 0 saved"):
        Run(str(tmp_path), New(window=5), "test", resume=True, verbose=False)
