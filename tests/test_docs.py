"""Every code block of the README and of the documentation site (docs/, less docs/pending/,
which the lead folds in): ``python`` blocks run (a block right after ``<!-- slow -->`` only
under ``pytest -m slow``), ``bash`` blocks are checked line by line against what they name,
``text`` blocks are output and not run. A block in any other language fails: say what it is."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md") if "pending" not in p.relative_to(ROOT / "docs").parts
)
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
# Programs of bash blocks that are not ours to run: installers, linters, the test runner,
# Dask's own commands; lines setting a variable are skipped too.
NOT_OURS = {"pip", "ruff", "pytest", "mkdocs", "dask", "cd", "export"}


def _blocks() -> list[tuple[str, str, str, bool]]:
    """(where, language, code, slow) of every fenced block."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in BLOCK.finditer(text):
            line = text[: m.start()].count("\n") + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            where = f"{page.relative_to(ROOT)}:{line}"
            found.append((where, m.group(1), m.group(2), before == "<!-- slow -->"))
    return found


BLOCKS = _blocks()


def _params(language: str):
    return [
        pytest.param(code, id=where, marks=[pytest.mark.slow] if slow else [])
        for where, lang, code, slow in BLOCKS
        if lang == language
    ]


def test_every_block_says_its_language():
    known = {"python", "bash", "text"}
    assert [(w, lang) for w, lang, _, _ in BLOCKS if lang not in known] == []


@pytest.mark.parametrize("code", _params("python"))
def test_python_block_runs(code, tmp_path):
    """Run from a temporary folder: a block must not depend on the repository root."""
    script = tmp_path / "block.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]


def _commands(code: str) -> list[list[str]]:
    """The command lines of a bash block: continuations joined, comments dropped, split at
    ``&&``, leading variable assignments and ``nice -n N`` dropped (a line of assignments
    only is no command)."""
    out = []
    for line in re.sub(r"\\\n\s*", " ", code).splitlines():
        command: list[str] = []
        for word in [*shlex.split(line, comments=True), "&&"]:
            if word != "&&":
                command.append(word)
                continue
            while command and ("=" in command[0] or command[0] == "nice"):
                command = command[3:] if command[0] == "nice" else command[1:]
            if command:
                out.append(command)
            command = []
    return out


def _cli():
    import typer

    from wdn_explain.cli import app

    return typer.main.get_command(app)


def _check_wdn_explain(words: list[str]) -> str | None:
    """Why ``wdn-explain ...`` would fail to parse (None: every command and option exists)."""
    command = _cli()
    rest = words[1:]
    while rest and hasattr(command, "commands") and rest[0] in command.commands:
        command, rest = command.commands[rest[0]], rest[1:]
    if hasattr(command, "commands"):
        return f"no command {rest[:1]} in {words}"
    options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    unknown = [
        w.split("=")[0] for w in rest if w.startswith("--") and w.split("=")[0] not in options
    ]
    return f"unknown options {unknown} in {words}" if unknown else None


@pytest.mark.parametrize("code", _params("bash"))
def test_bash_block_names_what_exists(code):
    problems = []
    for words in _commands(code):
        program = words[0]
        if program in NOT_OURS or words[:2] == ["python", "-m"]:
            continue
        if program == "wdn-explain":
            problems.append(_check_wdn_explain(words))
        elif program == "streamlit":
            problems.append(None if (ROOT / words[2]).is_file() else f"no file {words[2]}")
        elif program == "python" and words[1] != "-m":
            script = next(w for w in words[1:] if not w.startswith("-"))
            problems.append(None if (ROOT / script).is_file() else f"no file {script}")
        else:
            problems.append(f"a command this test does not know: {words}")
    assert [p for p in problems if p] == []


def test_the_readme_test_command_is_the_one_ci_runs():
    readme = [
        code for where, lang, code, _ in BLOCKS if where.startswith("README") and lang == "bash"
    ]
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci in [block.strip() for block in readme]
    assert "mkdocs build --strict" in ci
