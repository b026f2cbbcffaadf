"""Build the C rules engine; all other metadata lives in pyproject.toml."""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "minichess_envs._core",
            sources=["minichess_envs/_core.c"],  # which #includes _search.c
            depends=["minichess_envs/_search.c"],
            extra_compile_args=["-O3", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
        )
    ]
)
