"""A real install: the wheel built from this checkout, installed (not editable) into a fresh
virtual environment, runs the README's researcher commands from an unrelated directory and
finds its shipped models and scenario files; without its extras the command names the extra
to install."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin folder of a fresh virtual environment holding the built wheel (dependencies
    come from the running interpreter's site-packages; the package itself only from the
    wheel)."""
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    litter = ("build", "dist", "*.egg-info", "__pycache__", ".git", "data", ".*_cache")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*litter))
    build = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-q", "-w", str(tmp / "dist")], check=True, cwd=tmp)
    (wheel,) = (tmp / "dist").glob("wdn_explain-*.whl")
    venv.create(tmp / "venv", system_site_packages=True, with_pip=True)
    # the dependencies of the interpreter running the tests: when pytest itself runs in a
    # virtual environment, the new one's "system" site packages are the base interpreter's
    (inner,) = (tmp / "venv" / "lib").glob("python*/site-packages")
    (inner / "_running_interpreter.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    bin_dir = tmp / "venv" / "bin"
    install = [bin_dir / "python", "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed"]
    subprocess.run([*install, str(wheel)], check=True, cwd=tmp)
    return bin_dir


def _run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WDN_EXPLAIN_MODEL")}
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        cwd=cwd,
        env=env | {"OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_wheel_runs_the_researcher_commands_anywhere(installed, tmp_path):
    where = _run(
        installed, tmp_path, "python", "-c", "import wdn_explain; print(wdn_explain.__file__)"
    )
    assert where.returncode == 0 and str(installed.parent) in where.stdout  # not the checkout
    steps = [
        ("simulate", "--config", "simulations/smoke.yaml", "--out", "data", "--workers", "1"),
        ("data-stats", "data"),
        ("train", "--data", "data", "--out", "mine", "--epochs", "1", "--layers", "2"),
        ("evaluate", "--model", "mine", "--data", "data", "--split", "all"),
        (
            "explain",
            "--scenario",
            "{duration_s: 2400}",
            "--model",
            "models/default",
            "--out",
            "t.npz",
        ),
        ("report", "--timeline", "t.npz", "--out", "report.html"),
        ("export", "--timeline", "t.npz", "--index", "FSII", "--order", "2", "--csv", "t.csv"),
        ("complexity", "--layers", "1", "--layers", "2", "--csv", "c.csv"),
    ]
    for args in steps:
        result = _run(installed, tmp_path, "wdn-explain", *args)
        assert result.returncode == 0, f"{args}: {result.stdout}{result.stderr}"
    for name in ("data/manifest.json", "mine/card.json", "t.npz", "report.html", "t.csv", "c.csv"):
        assert (tmp_path / name).is_file(), name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["data", "mine", "t.npz", "report.html", "t.csv", "c.csv"]
    )


def test_without_the_cli_extra_the_command_names_it():
    code = (
        "import sys; sys.modules['typer'] = None\n"  # as if typer were not installed
        "from wdn_explain.__main__ import main\n"
        "main()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: the wdn-explain command needs the 'cli' extra (typer is not installed): "
        "pip install 'wdn-explain[cli]'"
    )


def test_the_wheel_lists_every_subpackage():
    """setuptools packages by name: a module split into a subpackage must be listed, or a
    non-editable install lacks it (the cli/ and plot/ splits did)."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "wdn_explain").rglob("__init__.py")
    }
    assert found - listed == set()
