"""One run machinery for every training loop: run directory, checkpoints (swapped in whole: a kill leaves the last
one), resume, metrics, progress, machine; layout and usage: docs/runs.md."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import math
import os
import platform
import shutil
import sys
import time
from typing import Any, Callable

from agents.base import Closing
from minichess_envs.checksums import SUMS, read_checksums, verify_checksum, write_checksums

# Idle OpenMP threads sleep instead of spinning: with other work on a 2-core machine, spinning threads
# slowed training 20-50x in our runs. Set here, the one place, before torch loads OpenMP: every
# experiment imports this module first; a process that chose a policy keeps it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

CHECKPOINT = "checkpoint"
STATE = "state.json"
TENSORS = "tensors.pt"
METRICS = "metrics.csv"
TENSORBOARD = "tensorboard"


@dataclasses.dataclass
class RunState:
    """A run's progress, saved in ``checkpoint/state.json`` (plain JSON)."""

    kind: str  # which loop wrote it ("alphazero", "rllib", "sb3", ...)
    settings: dict
    iteration: int = 0
    env_steps: int = 0
    elapsed_s: float = 0.0  # wall-clock across resumes
    metrics: list = dataclasses.field(default_factory=list)


def settings_dict(settings) -> dict:
    """A settings dataclass (or dict, or one setting's value) as JSON gives it back (tuples become lists)."""
    plain = dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) else settings
    return json.loads(json.dumps(plain, default=float))


def with_defaults(saved: dict, template) -> dict:
    """``saved`` settings with the fields they lack at ``template``'s dataclass defaults (nested ones too), so that
    adding a setting does not stop older runs resuming."""
    if not dataclasses.is_dataclass(template):
        return saved
    out = dict(saved)
    for f in dataclasses.fields(template):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if f.name not in out:
            out[f.name] = settings_dict(default)
        elif dataclasses.is_dataclass(default) and isinstance(out[f.name], dict):
            out[f.name] = with_defaults(out[f.name], default)
    return out


def checkpoint_dir(run_dir: str) -> str | None:
    """The run's last whole checkpoint directory, or ``None`` (also after a swap cut short by a kill)."""
    for name in (CHECKPOINT, CHECKPOINT + ".old"):
        path = os.path.join(run_dir, name)
        if os.path.exists(os.path.join(path, STATE)):
            return path
    return None


def read_state(checkpoint: str) -> RunState:
    """The checkpoint's :class:`RunState`, after checking every file against SHA256SUMS; ``ValueError`` naming the
    file when one is missing, corrupt or not a run state."""
    sums = read_checksums(checkpoint)
    if STATE not in sums:
        raise ValueError(f"corrupt checkpoint {checkpoint}: {SUMS} is missing or does not list {STATE}")
    for name in sums:
        try:
            verify_checksum(checkpoint, name)
        except ValueError as exc:
            raise ValueError(f"corrupt checkpoint: {exc}") from None
    file = os.path.join(checkpoint, STATE)
    try:
        with open(file, encoding="utf-8") as f:
            return RunState(**json.load(f))
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"corrupt checkpoint {file}: {type(exc).__name__}: {exc}") from None


def load_tensors(checkpoint: str) -> dict:
    """The checkpoint's ``tensors.pt``: tensors and plain data only (``torch.load(weights_only=True)``)."""
    import torch

    file = os.path.join(checkpoint, TENSORS)
    try:
        verify_checksum(checkpoint, TENSORS)
        return torch.load(file, map_location="cpu", weights_only=True)
    except Exception as exc:  # a missing, corrupt or foreign file raises many kinds of errors
        message = str(exc) if file in str(exc) else f"{file}: {type(exc).__name__}: {exc}"
        raise ValueError(f"corrupt checkpoint {message}") from None


def save_checkpoint(run_dir: str, state: RunState, tensors: dict | None = None,
                    write_files: Callable[[str], None] | None = None) -> str:
    """Write ``state.json``, ``tensors.pt`` (if given), ``write_files(directory)``'s files and SHA256SUMS
    to ``checkpoint.new/``, then swap it in by renames; returns the checkpoint's path."""
    path = os.path.join(run_dir, CHECKPOINT)
    new, old = path + ".new", path + ".old"
    shutil.rmtree(new, ignore_errors=True)
    os.makedirs(new)
    if tensors is not None:
        import torch
        torch.save(tensors, os.path.join(new, TENSORS))
    if write_files is not None:
        write_files(new)
    with open(os.path.join(new, STATE), "w", encoding="utf-8") as f:
        json.dump(dataclasses.asdict(state), f, indent=1, default=float)
    files = sorted(os.path.relpath(os.path.join(root, name), new)
                   for root, _, names in os.walk(new) for name in names)
    write_checksums(new, files)
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(path):
        os.replace(path, old)
    os.replace(new, path)
    shutil.rmtree(old, ignore_errors=True)
    return path


def remove_stale_files(run_dir: str) -> None:
    """Delete what a killed run leaves behind: ``*.tmp`` files and a half-written ``checkpoint.new/``;
    also ``checkpoint.old/`` when ``checkpoint/`` is whole."""
    for name in sorted(os.listdir(run_dir)):
        path = os.path.join(run_dir, name)
        if (name.endswith(".tmp") and os.path.isfile(path)) or name == CHECKPOINT + ".new" or (
                name == CHECKPOINT + ".old" and os.path.exists(os.path.join(run_dir, CHECKPOINT, STATE))):
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


class Run(Closing):
    """A training run in ``run_dir``: a new one, or (``resume=True``) the one saved there. Refuses to start over a saved
    run without ``resume``, and to resume one of another ``kind`` or with other settings (keys in ``may_differ`` may
    change: budgets, worker counts). :attr:`state` holds the counters and metrics rows; :meth:`save` records an
    iteration. Close it (or use ``with``) to flush TensorBoard."""

    def __init__(self, run_dir: str, settings, kind: str, *, resume: bool = False,
                 may_differ: tuple[str, ...] = (), verbose: bool = True):
        self.run_dir = run_dir
        os.makedirs(run_dir, exist_ok=True)
        remove_stale_files(run_dir)
        template, settings = settings, settings_dict(settings)
        self.checkpoint = checkpoint_dir(run_dir)
        if self.checkpoint is None and os.path.exists(os.path.join(run_dir, "checkpoint.pt")):
            raise ValueError(f"{run_dir} holds a checkpoint.pt from an older version, which cannot be loaded "
                             "safely; start a new run directory")
        if self.checkpoint is None:
            self.state = RunState(kind, settings)
        elif not resume:
            raise ValueError(f"{run_dir} already holds a run: pass resume=True (--resume) to continue it, "
                             "or use another directory")
        else:
            self.state = read_state(self.checkpoint)
            if self.state.kind != kind:
                raise ValueError(f"{run_dir} is a {self.state.kind} run; cannot resume it as {kind}")
            self.state.settings = with_defaults(self.state.settings, template)
            diff = {k: (settings.get(k), self.state.settings.get(k)) for k in set(settings) | set(self.state.settings)
                    if k not in may_differ and settings.get(k) != self.state.settings.get(k)}
            if diff:
                listed = ", ".join(f"{k}: {now!r} now, {saved!r} saved" for k, (now, saved) in sorted(diff.items()))
                raise ValueError(f"{run_dir} was run with other settings; resume with the same ones or start a new "
                                 f"run directory ({listed})")
            self.state.settings = settings
            write_csv(os.path.join(run_dir, METRICS), self.state.metrics)  # in case a kill came before it
            if verbose:
                print(f"resuming {run_dir} after iteration {self.state.iteration}"
                      + (f" ({self.state.env_steps:,} env steps)" if self.state.env_steps else ""), flush=True)
        self.resumed = self.checkpoint is not None
        self._started = time.perf_counter() - self.state.elapsed_s
        self.verbose = verbose
        self.writer = _tensorboard(os.path.join(run_dir, TENSORBOARD),
                                   purge_step=self.state.iteration + 1 if self.resumed else None)

    def tensors(self) -> dict:
        """``tensors.pt`` of the checkpoint resumed from (checksummed; tensors and plain data only)."""
        if self.checkpoint is None:
            raise ValueError(f"{self.run_dir} has no checkpoint to load")
        return load_tensors(self.checkpoint)

    def elapsed(self) -> float:
        """Wall-clock seconds of the run, across resumes."""
        return time.perf_counter() - self._started

    def save(self, row: dict, tensors: dict | None = None, write_files: Callable[[str], None] | None = None) -> None:
        """Record one iteration: ``row`` (its numbers; ``iteration``, ``env_steps`` and ``elapsed_s`` are
        filled in from :attr:`state`) to TensorBoard, then the checkpoint, then ``metrics.csv``."""
        state = self.state
        state.elapsed_s = self.elapsed()
        row.setdefault("iteration", state.iteration)
        row.setdefault("elapsed_s", state.elapsed_s)
        state.metrics.append(row)
        if self.writer is not None:
            for key, value in row.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "iteration":
                    self.writer.add_scalar(key, value, state.iteration)
            self.writer.flush()
        save_checkpoint(self.run_dir, state, tensors, write_files)
        self.checkpoint = os.path.join(self.run_dir, CHECKPOINT)
        write_csv(os.path.join(self.run_dir, METRICS), state.metrics)

    def progress(self, total: int, desc: str, unit: str = "it", done: int | None = None) -> Progress:
        """A progress bar from ``done`` (default: the iterations already run) to ``total``."""
        return Progress(total, desc, self.state.iteration if done is None else done, unit, self.verbose)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _tensorboard(log_dir: str, purge_step: int | None):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is optional: metrics.csv has everything
        return None
    return SummaryWriter(log_dir, purge_step=purge_step)


class Progress(Closing):
    """A progress bar: tqdm when installed, else a plain line per update; silent unless ``verbose``."""

    def __init__(self, total: int, desc: str, done: int = 0, unit: str = "it", verbose: bool = True):
        self.total, self.desc, self.done, self.unit, self.verbose, self.bar = total, desc, done, unit, verbose, None
        if verbose:
            with contextlib.suppress(ImportError):  # tqdm is optional
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc=desc, initial=min(done, total), unit=unit,
                                unit_scale=unit not in ("it", "s", "game", "position"), dynamic_ncols=True)

    def update(self, done: int, info: str = "") -> None:
        """Move to ``done`` of ``total``, showing ``info``."""
        self.done = done
        if not self.verbose:
            return
        if self.bar is None:
            print(f"{self.desc} {done:,}/{self.total:,}" + (f": {info}" if info else ""), flush=True)
            return
        if info:
            self.bar.set_postfix_str(info, refresh=False)
        self.bar.update(min(done, self.total) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def training_seconds(metrics: list[dict]) -> float:
    """A run's training wall-clock from its metrics rows, evaluation left out: the last row's ``training_s`` where
    the learner records it (AlphaZero), else its ``elapsed_s`` less the rows' ``eval_s`` (PPO); 0 without rows."""
    if not metrics:
        return 0.0
    if "training_s" in metrics[-1]:
        return metrics[-1]["training_s"]
    return metrics[-1]["elapsed_s"] - sum(m.get("eval_s", 0.0) for m in metrics)


def cosine_rate(peak: float, final: float, t: float) -> float:
    """A learning rate on a cosine from ``peak`` at ``t = 0`` to ``final`` at ``t = 1`` (``t`` clamped to [0, 1]):
    ``final + (peak - final) * (1 + cos(pi t)) / 2`` (Loshchilov and Hutter, SGDR, ICLR 2017)."""
    t = min(max(t, 0.0), 1.0)
    return final + 0.5 * (peak - final) * (1.0 + math.cos(math.pi * t))


def write_csv(path: str, rows: list[dict]) -> None:
    """Rewrite a CSV file from all rows, atomically (columns: every key, in order of appearance)."""
    if not rows:
        return
    keys = list(dict.fromkeys(k for row in rows for k in row))
    with open(path + ".tmp", "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=keys)
        out.writeheader()
        out.writerows(rows)
    os.replace(path + ".tmp", path)


def write_json(path: str, data: Any) -> None:
    """Write JSON atomically (numpy numbers as floats), making its folder if need be."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1, default=float)
    os.replace(path + ".tmp", path)


def read_json(path: str) -> Any:
    """JSON from ``path``; ``ValueError`` naming the file if it is missing or corrupt."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine() -> dict:
    """The machine now: CPU model, cores, torch threads and CUDA GPU (if torch is loaded), and the load average."""
    torch = sys.modules.get("torch")
    try:
        load = list(os.getloadavg())
    except OSError:  # not on every platform
        load = None
    gpu = torch.cuda.get_device_name(0) if torch is not None and torch.cuda.is_available() else None
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "gpu": gpu,
            "torch_threads": torch.get_num_threads() if torch is not None else None, "load_average": load}


def machine_text(start: dict, end: dict | None = None) -> str:
    """One sentence for a report: what the timings were measured on, with the load at start and end."""
    end = end or machine()
    load = ["unknown" if m["load_average"] is None else " / ".join(f"{x:.2f}" for x in m["load_average"])
            for m in (start, end)]
    threads = end["torch_threads"] if end["torch_threads"] is not None else start["torch_threads"]
    gpu = start.get("gpu") or end.get("gpu")  # "auto" puts the networks there
    return (f"Measured on {start['cpu']} ({start['cores']} cores)" + (f" and a GPU ({gpu})" if gpu else "") + ", "
            + (f"{threads} torch thread{'s' if threads != 1 else ''} in the main process; " if threads else "")
            + f"load average (1 / 5 / 15 min) {load[0]} at the start and {load[1]} at the end "
            "(a load above the core count means other work shared the machine).")


def command_line(defaults, presets: dict[str, dict] | None = None, argv: list[str] | None = None):
    """An experiment's options: the dataclass instance ``defaults``, changed by a named preset (``--preset NAME``),
    then by the fields' flags (tyro; ``--help`` lists the fields with their docs, and the presets)."""
    import tyro

    argv = list(sys.argv[1:] if argv is None else argv)
    presets = presets or {}
    if "--preset" in argv:
        i = argv.index("--preset")
        name = argv[i + 1] if i + 1 < len(argv) else ""
        if name not in presets:
            raise SystemExit(f"--preset takes one of {', '.join(presets) or 'no preset here'}, got {name!r}")
        defaults = dataclasses.replace(defaults, **presets[name])
        del argv[i:i + 2]
    description = (type(defaults).__doc__ or "").strip()
    if presets:
        description += "\n\nPresets (--preset NAME, before other flags take effect): " + "; ".join(
            f"{name}: " + ", ".join(f"{k}={v!r}" for k, v in changes.items()) for name, changes in presets.items())
    return tyro.cli(type(defaults), default=defaults, args=argv, description=description)
