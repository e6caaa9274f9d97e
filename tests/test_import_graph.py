"""The package's import graph (scripts/import_graph.py): no cycle, no import against the data
flow, every module in a stage; and the measure itself sees lazy and typing-only imports."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "import_graph.py"


def _script():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_package_has_no_cycle_no_back_import_and_no_unstaged_module():
    found = _script().measures(ROOT / "wdn_explain")
    assert found["cycles"] == []
    assert found["back"] == []
    assert found["unstaged"] == []
    # the graph is the package's: the timeline reads its settings, the CLI runs the pipeline
    graph = found["graph"]
    assert graph.has_edge("wdn_explain.timeline", "wdn_explain.explain_settings")
    assert graph.has_edge("wdn_explain.cli.explaining", "wdn_explain.pipeline")


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for name, text in files.items():
        (root / f"{name}.py").write_text(text)
    return root


def test_a_lazy_and_a_typing_only_import_make_a_cycle(tmp_path):
    """network imports scenario inside a function, scenario imports network only for type
    checking: one cycle, and network -> scenario runs against the data flow."""
    root = _package(
        tmp_path,
        {
            "network": "def later():\n    from .scenario import Scenario\n    return Scenario\n",
            "scenario": (
                "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                "    from .network import later\n\nclass Scenario:\n    pass\n"
            ),
        },
    )
    found = _script().measures(root)
    assert found["cycles"] == [{"pkg.network", "pkg.scenario"}]
    assert found["back"] == [("pkg.network", "pkg.scenario")]
    assert found["unstaged"] == []


def test_the_script_exits_1_naming_the_cycle_and_the_unstaged_module(tmp_path):
    root = _package(
        tmp_path,
        {
            "network": "from . import scenario\n",
            "scenario": "from .network import *\n",
            "gadget": "",
        },
    )
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True
    )
    assert out.returncode == 1, out.stderr
    assert "cycles: 1" in out.stdout
    assert "cycle: pkg.network <-> pkg.scenario" in out.stdout
    assert "in no stage: pkg.gadget (add it to STAGES)" in out.stdout


def test_the_script_exits_0_on_the_package():
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cycles: 0; imports against the data flow: 0" in out.stdout
