"""The README's Python API example: it says it runs from any directory, so every shipped
file it names goes through ``shipped()``; the whole example is run from a temporary folder
(slow: it simulates, trains nothing, explains three timelines)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_FOLDERS = ("models/", "simulations/")


def _api_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return next(b for b in blocks if "explain_scenario(" in b)


def test_api_example_names_shipped_files_through_shipped():
    tree = ast.parse(_api_example())
    wrapped = {
        id(arg)
        for call in ast.walk(tree)
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "shipped"
        for arg in call.args
    }
    bare = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith(SHIPPED_FOLDERS)
        and id(node) not in wrapped
    ]
    assert bare == []  # a bare "models/default" works only from the repository root


@pytest.mark.slow
def test_api_example_runs_from_another_directory(tmp_path):
    script = tmp_path / "example.py"
    script.write_text(_api_example())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[-1] in {"computed", "cached"}
    assert (tmp_path / "booster20_seed7.npz").exists() and (tmp_path / "booster20_l2.npz").exists()
