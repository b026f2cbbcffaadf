"""Packaging: the version, what the sdist carries, and clear errors when the import names are not ours."""

from __future__ import annotations

import glob
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

import agents
import minichess_envs
from minichess_envs.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_version_names_the_installed_distribution(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    try:
        expected = importlib.metadata.version("minichess-envs")
    except importlib.metadata.PackageNotFoundError:
        expected = minichess_envs.__version__
    assert capsys.readouterr().out.split()[:2] == ["minichess", expected]


def test_an_agents_package_of_another_distribution_is_named(tmp_path):
    # What installing openai-agents after us leaves: its agents/__init__.py over ours, our modules beside it.
    fake = tmp_path / "agents"
    shutil.copytree(os.path.dirname(agents.__file__), fake)
    (fake / "__init__.py").write_text('"""Another distribution\'s agents package."""\n')
    site = os.path.dirname(os.path.dirname(os.path.abspath(minichess_envs.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), site])}
    run = subprocess.run([sys.executable, "-c", "import agents.players.random_agent"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "is not minichess-envs' agents" in run.stderr and "openai-agents" in run.stderr, run.stderr
    assert str(fake) in run.stderr


def test_an_unbuilt_checkout_says_so_instead_of_blaming_a_circular_import(tmp_path):
    source = os.path.dirname(os.path.abspath(minichess_envs.__file__))
    shutil.copytree(source, tmp_path / "minichess_envs", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    # Without editable-install finders: they would supply another checkout's engine by module name.
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in f.__module__]; "
            "import minichess_envs")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0
    assert "has no compiled engine" in run.stderr and "circular" not in run.stderr, run.stderr


def test_the_sdist_carries_everything_the_tests_need(tmp_path):
    pytest.importorskip("build", reason="needs build: pip install build (in the dev extra)")
    if not os.path.isdir(os.path.join(ROOT, ".git")) and not os.path.isfile(os.path.join(ROOT, ".git")):
        pytest.skip("needs a git checkout (to list the files it tracks)")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path), ROOT],
                   check=True, capture_output=True)
    (sdist,) = glob.glob(str(tmp_path / "*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    tracked = subprocess.run(["git", "ls-files", "tests", "docs", "experiments", "minichess_envs", "agents"],
                             cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    missing = sorted(set(tracked) - names)
    assert not missing, f"not in the sdist: {missing}"
    assert {"tests/oracles.py", "LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "setup.py",
            "MANIFEST.in"} <= names


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> str:
    """The sdist of this checkout (or of this unpacked sdist), built without isolation (no index needed)."""
    pytest.importorskip("build", reason="needs build: pip install build (in the dev extra)")
    pytest.importorskip("setuptools", minversion="77", reason="builds without isolation: needs setuptools>=77")
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), ROOT],
                   check=True, capture_output=True)
    (path,) = glob.glob(str(out / "*.tar.gz"))
    return path


@pytest.mark.parametrize("how", ["no compiler on PATH", "CC names a missing compiler"])
def test_the_sdist_without_a_compiler_says_what_to_install_first(tmp_path, sdist, how):
    env = {key: value for key, value in os.environ.items() if key not in ("CC", "CFLAGS", "LDSHARED")}
    if how == "no compiler on PATH":
        env["PATH"] = str(tmp_path / "empty")  # nothing at all on PATH: pip runs by sys.executable
    else:
        env["CC"] = str(tmp_path / "no-such-cc")
    run = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                          "--target", str(tmp_path / "target"), sdist], env=env, capture_output=True, text=True)
    assert run.returncode != 0
    lines = run.stdout.splitlines() + run.stderr.splitlines()
    # pip frames the build's own output between "[N lines of output]" and "[end of output]"
    start = next(i for i, line in enumerate(lines) if "lines of output]" in line)
    first = lines[start + 1].strip()
    assert first.startswith("minichess-envs: no C compiler found ("), run.stdout + run.stderr
    assert ("install" in first and "prebuilt wheel" in first
            and ("no-such-cc" in first if how.startswith("CC") else "is not on PATH" in first))
    if sys.platform.startswith("linux") and shutil.which("apt-get"):
        assert "sudo apt install gcc python3" in first
    assert lines[start + 2].strip() == "[end of output]"  # one line, not setuptools' page
