"""Worker-process hygiene: workers die with their parent (even after ``kill -9``), leave
Ctrl-C to the parent (which stops them, so no worker prints a traceback), and run in a
scratch folder that is removed afterwards: EPANET writes its ``enXXXXXX`` scratch files
into the current directory."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ConfigError

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def init_worker(parent_pid: int, scratch: str) -> None:
    """Pool initializer: die with ``parent_pid``, ignore SIGINT, work inside ``scratch``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    else:  # no parent-death signal: watch for re-parenting instead
        threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    os.chdir(scratch)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def worker_count(requested: int | None) -> tuple[int, str | None]:
    """How many worker processes to start for ``requested`` (None or 0: every usable core),
    capped by :func:`usable_cores` -- more only share the cores and multiply the memory --
    and the sentence saying so when the request was capped (else None).

    Raises:
        ConfigError: a negative request (it used to mean every core, silently).
    """
    if requested is not None and requested < 0:
        raise ConfigError(f"workers must be >= 0, 0 for every usable core (got {requested})")
    cores = usable_cores()
    if not requested:
        return cores, None
    if requested > cores:
        return cores, (
            f"{requested} workers asked for, but this machine gives this process "
            f"{cores} cores; using {cores}"
        )
    return requested, None


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(1.0)
    os._exit(1)


@contextmanager
def scratch_folder() -> Iterator[Path]:
    """A temporary working folder for simulator scratch files, removed on exit."""
    with tempfile.TemporaryDirectory(prefix="wdn-explain-", ignore_cleanup_errors=True) as tmp:
        yield Path(tmp)


@contextmanager
def working_directory(path: str | Path) -> Iterator[None]:
    """Run a block inside ``path`` (for in-process simulation), then return."""
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)
