"""Build the C rules engine; all other metadata lives in pyproject.toml."""
from setuptools import Extension, setup

CSRC = "minichess_envs/csrc/"

setup(
    ext_modules=[
        Extension(
            "minichess_envs._core",
            # the engine (plain C, engine.h), then the Python bindings, batched stepping and search on top
            sources=[CSRC + name for name in ("engine.c", "module.c", "batch.c", "search.c")],
            depends=[CSRC + "engine.h", CSRC + "core.h"],
            extra_compile_args=["-O3", "-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra",
                                "-Wno-unused-parameter", "-Wno-missing-field-initializers",
                                "-Wno-cast-function-type"],
        )
    ]
)
