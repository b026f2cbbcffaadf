"""Optional dependencies: import one, or fail with the ``pip install`` line of the extra that provides it.

>>> torch = require("torch", "agents")                                    # doctest: +SKIP
>>> with extra_hint("loading a saved agent"):                            # doctest: +SKIP
...     import agents.alphazero.agent     # torch missing: MissingExtraError naming [agents]

The extras are pyproject.toml's ``[project.optional-dependencies]``; :data:`EXTRAS` maps the
top-level modules they bring to the extra to name.
"""

from __future__ import annotations

import contextlib
import importlib
from types import ModuleType
from typing import Iterator

DISTRIBUTION = "minichess-envs"

#: Top-level module -> the extra that installs it (the smallest one, where several do).
EXTRAS = {
    "torch": "agents",
    "matplotlib": "agents",
    "tqdm": "agents",
    "tensorboard": "agents",
    "starlette": "play",
    "uvicorn": "play",
    "ray": "rllib",
    "stable_baselines3": "sb3",
    "sb3_contrib": "sb3",
    "bitbully": "games",
    "moviepy": "video",
    "pygame": "dev",
    "chess": "test",
    "pyffish": "test",
}


class MissingExtraError(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra and the command that installs it.

    A :class:`ModuleNotFoundError` (so an :class:`ImportError`), so code that catches those still does.
    """

    def __init__(self, module: str, extra: str, purpose: str | None = None):
        self.extra = extra
        need = f"{purpose} needs {module}" if purpose else f"{module} is not installed"
        super().__init__(f"{need}, which the [{extra}] extra installs: pip install '{DISTRIBUTION}[{extra}]'",
                         name=module)


def require(module: str, extra: str | None = None, purpose: str | None = None) -> ModuleType:
    """Import and return ``module``; :class:`MissingExtraError` naming ``extra`` if it is not installed.

    ``extra`` defaults to the one :data:`EXTRAS` lists for the module's top-level package;
    ``purpose`` says what needs it (``"minichess serve"``). Only a missing ``module`` (or its
    package) is translated: a module it imports that is missing, or an installed one that fails to
    load, raises as it is, since installing the extra would not fix it.
    """
    with extra_hint(purpose, only=module, extra=extra):
        return importlib.import_module(module)


@contextlib.contextmanager
def extra_hint(purpose: str | None = None, *, only: str | None = None, extra: str | None = None) -> Iterator[None]:
    """Turn a ``ModuleNotFoundError`` for a module an extra provides (:data:`EXTRAS`), raised inside, into
    :class:`MissingExtraError`: for imports that happen deep inside a call (a saved agent's class importing torch).

    ``only`` limits it to that module and its parent packages, and then ``extra`` (if given) is the one
    named; without ``only``, ``extra`` is named for a missing module that :data:`EXTRAS` does not list.
    """
    try:
        yield
    except MissingExtraError as exc:
        if purpose is None:
            raise
        # The outermost purpose is what the user asked for ("loading the saved agent in ..."): say that.
        raise MissingExtraError(exc.name, exc.extra, purpose) from exc.__cause__
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        top = missing.partition(".")[0]
        if only is not None and not (only == missing or only.startswith(missing + ".")):
            raise
        name = (extra or EXTRAS.get(top)) if only is not None else (EXTRAS.get(top) or extra)
        if name is None:
            raise
        raise MissingExtraError(top if only is None else missing, name, purpose) from exc
