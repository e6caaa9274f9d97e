"""The malloc settings that keep the engine's freed buffers (wdn_explain.allocator): applied
to a process by the function and by every command, counted in page faults of a fresh
process started with Dask's nanny setting (every buffer over 128 KiB a fresh ``mmap``)."""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
PAGES_A_ROUND = 3 * (19 << 20) / os.sysconf("SC_PAGE_SIZE")  # three 19 MB buffers written

SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
from page_faults import faults_per_round
how = sys.argv[1]
if how == "function":
    from wdn_explain.allocator import keep_freed_memory
    assert keep_freed_memory()
elif how == "command":  # a command that fails at once: the settings come before its work
    from typer.testing import CliRunner
    from wdn_explain.cli import app
    result = CliRunner().invoke(app, ["explain", "--scenario", "no-such-file.yaml"])
    assert result.exit_code != 0, result.output
print(json.dumps(faults_per_round()))
"""


def _faults(how: str) -> list[int]:
    """Page faults a round in a fresh process set up ``how`` (``none``, ``function``,
    ``command``), started with ``MALLOC_TRIM_THRESHOLD_=65536`` as Dask's nanny starts one."""
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    script = SCRIPT.format(tests=str(TESTS))
    done = subprocess.run(
        [sys.executable, "-c", script, how], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc settings")
def test_without_the_settings_every_round_faults_its_buffers_in_again():
    counts = _faults("none")
    assert min(counts[1:]) >= 0.9 * PAGES_A_ROUND, counts


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc settings")
@pytest.mark.parametrize("how", ["function", "command"])
def test_with_the_settings_freed_buffers_come_back_without_faults(how):
    counts = _faults(how)
    assert counts[0] >= 0.9 * (19 << 20) / os.sysconf("SC_PAGE_SIZE")  # faults are counted
    assert max(counts[2:]) < 100, counts  # the first round may grow the heap


@pytest.mark.skipif(platform.libc_ver()[0] == "glibc", reason="another C library")
def test_elsewhere_nothing_is_changed():
    from wdn_explain.allocator import keep_freed_memory

    assert keep_freed_memory() is False
