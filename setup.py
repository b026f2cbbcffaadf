"""Build the C rules engine; all other metadata lives in pyproject.toml."""
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CSRC = "minichess_envs/csrc/"

# The setup.py commands that compile the engine (pip runs bdist_wheel or editable_wheel; `setup.py
# build_ext --inplace` builds a checkout). sdist and egg_info compile nothing, so they need no compiler.
COMPILING = {"build", "build_ext", "bdist_wheel", "bdist", "bdist_egg", "editable_wheel", "develop", "install"}


def missing_compiler() -> str | None:
    """What is missing to compile the engine, as one line naming the fix; ``None`` when nothing is (or when unsure)."""
    try:
        from distutils.ccompiler import new_compiler  # setuptools' copy (imported above), on every Python
        from distutils.sysconfig import customize_compiler

        compiler = new_compiler()
        if compiler.compiler_type == "msvc":
            try:
                compiler.initialize()  # finds Visual C++ through vswhere/vcvarsall, or raises
            except Exception:
                return ("no C compiler found (Microsoft Visual C++ 14.0 or later builds the rules engine). Install "
                        "one: Microsoft C++ Build Tools, https://visualstudio.microsoft.com/visual-cpp-build-tools/ "
                        "(workload 'Desktop development with C++'); or install a prebuilt wheel: "
                        "pip install --only-binary=minichess-envs minichess-envs")
            return None
        customize_compiler(compiler)  # the compiler Python was built with, or $CC
        executable = compiler.compiler_so[0]
    except Exception:  # an unusual setuptools or platform: let the build itself say what fails
        return None
    named = f"CC={os.environ['CC']!r}" if os.environ.get("CC") else repr(executable)
    if shutil.which(executable) is None:
        found = f"{named} is not on PATH"
    elif sys.platform == "darwin" and not _runs([executable, "--version"]):
        found = f"{named} does not run"  # /usr/bin/clang is a stub until the Command Line Tools are installed
    elif not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        return (f"the Python headers (Python.h) are missing, and the rules engine is C built against them. Install "
                f"them: {_install_command(headers_only=True)}; or install a prebuilt wheel: "
                "pip install --only-binary=minichess-envs minichess-envs")
    else:
        return None
    return (f"no C compiler found ({found}; it builds the rules engine). Install one: {_install_command()}; or "
            "install a prebuilt wheel: pip install --only-binary=minichess-envs minichess-envs")


def _runs(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _install_command(headers_only: bool = False) -> str:
    """The command that installs a C compiler (and the Python headers) with this system's package manager."""
    if sys.platform == "darwin":
        return "xcode-select --install"
    dev = f"python{sys.version_info[0]}.{sys.version_info[1]}-dev"
    managers = [  # (package manager, compiler and headers, headers alone)
        ("apt-get", f"sudo apt install gcc {dev}", f"sudo apt install {dev}"),
        ("dnf", "sudo dnf install gcc python3-devel", "sudo dnf install python3-devel"),
        ("yum", "sudo yum install gcc python3-devel", "sudo yum install python3-devel"),
        ("zypper", "sudo zypper install gcc python3-devel", "sudo zypper install python3-devel"),
        ("apk", "apk add build-base python3-dev", "apk add python3-dev"),
        ("pacman", "sudo pacman -S gcc", "sudo pacman -S python"),
        ("conda", "conda install -c conda-forge c-compiler", "conda install -c conda-forge python"),
    ]
    for manager, both, headers in managers:
        if shutil.which(manager):
            return headers if headers_only else both
    return (f"gcc or clang and the Python headers from your system's packages (Debian/Ubuntu: "
            f"sudo apt install gcc {dev})")


if {arg for arg in sys.argv[1:] if not arg.startswith("-")} & COMPILING:
    # Before setup() runs, so that this is the first line of the build's output, not after a page of setuptools'.
    problem = missing_compiler()
    if problem:
        print(f"minichess-envs: {problem}", file=sys.stderr, flush=True)
        sys.exit(1)


class BuildExt(build_ext):
    """build_ext with the flags of the compiler in use: GCC and Clang take the same ones, Visual C++ its own."""

    FLAGS = {
        "unix": ["-O3", "-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter",
                 "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
        "msvc": ["/O2", "/std:c11"],  # /std:c11: Visual Studio 2019 16.8 and later
    }

    def build_extensions(self):
        for ext in self.extensions:
            ext.extra_compile_args = self.FLAGS.get(self.compiler.compiler_type, []) + ext.extra_compile_args
        super().build_extensions()


setup(
    cmdclass={"build_ext": BuildExt},
    # Package data is what pyproject.toml's package-data lists, no more: with the default (True) every file
    # MANIFEST.in puts in the sdist under a package is data, and setuptools warns that minichess_envs/csrc
    # (the C sources, compiled into _core, not shipped) looks like a package left out.
    include_package_data=False,
    ext_modules=[
        Extension(
            "minichess_envs._core",
            # the engine (plain C, engine.h), then the Python bindings, batched stepping and search on top
            sources=[CSRC + name for name in ("engine.c", "module.c", "batch.c", "search.c")],
            depends=[CSRC + "engine.h", CSRC + "core.h"],
        )
    ],
)
