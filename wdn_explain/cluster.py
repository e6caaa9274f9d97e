"""Run simulation and explanation tasks on a Dask distributed cluster.

The tasks are the ones that run locally (:func:`wdn_explain.waq._run_task`, one per
scenario; :func:`wdn_explain.pipeline._explain_task`, one per explained step). Each is
keyed by what it computes, skips work whose output already exists and writes its output
atomically itself, so a task retried after a worker died, or run twice, leaves each output
exactly once and complete. Outputs go to a folder every worker can reach (a shared file
system); the bytes do not depend on where a task ran.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from .errors import ConfigError, WdnExplainError

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5
"""How long to wait for the scheduler before refusing its address."""

RETRIES = 3
"""How often a task that raised an unexpected error is retried on another worker (a worker
that dies is handled by the scheduler's ``allowed-failures``). A task's own
:class:`WdnExplainError` -- bad input, the same on every worker -- is not retried."""


def connect(address: str):
    """A Dask client of the scheduler at ``address``; ConfigError when it cannot be reached
    within :data:`CONNECT_TIMEOUT_S` seconds."""
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(
            "--scheduler needs Dask distributed: pip install 'wdn-explain[cluster]'"
        ) from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise ConfigError(
            f"scheduler '{address}' is not reachable within {CONNECT_TIMEOUT_S} s "
            f"({type(exc).__name__}: {exc}); start one with `dask scheduler`"
        ) from None


def gpu_resources(client: Any, want_gpu: bool) -> dict[str, int] | None:
    """``{"GPU": 1}`` when GPU workers are asked for and some worker offers that resource;
    None (any worker, CPU included) otherwise."""
    if not want_gpu:
        return None
    workers = client.scheduler_info()["workers"].values()
    if any(w.get("resources", {}).get("GPU", 0) >= 1 for w in workers):
        return {"GPU": 1}
    logger.warning("no Dask worker offers a GPU resource; explaining on CPU workers")
    return None


def _settled(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` on a worker; a WdnExplainError comes back as the task's value, so
    Dask does not retry a failure that would repeat identically."""
    try:
        return fn(*args)
    except WdnExplainError as exc:
        return exc


def run_tasks(
    address: str,
    fn: Callable[..., Any],
    tasks: Iterable[tuple[str, tuple]],
    *,
    progress: Callable[[int, int], None] | None = None,
    done: int = 0,
    total: int | None = None,
    want_gpu: bool = False,
) -> dict[str, str]:
    """Run ``fn(*args)`` for every ``(key, args)`` on the cluster at ``address``.

    Args:
        fn: The task; it must be idempotent and write its own output atomically.
        tasks: Task keys (unique, naming what the task computes) and arguments.
        progress: Called as ``progress(done, total)`` as tasks end.
        done: Work already finished before this call (for the progress count).
        total: Total work (default: ``done`` plus the number of tasks).
        want_gpu: Ask for workers with a ``GPU`` resource, falling back to any worker.

    Returns:
        Failed task keys mapped to one-line reasons (empty when every task succeeded).
    """
    from distributed import as_completed

    tasks = list(tasks)
    total = done + len(tasks) if total is None else total
    failures: dict[str, str] = {}
    with connect(address) as client:
        resources = gpu_resources(client, want_gpu)
        futures = [
            client.submit(
                _settled, fn, *args, key=key, retries=RETRIES, resources=resources, pure=False
            )
            for key, args in tasks
        ]
        for future in as_completed(futures):
            if future.status == "cancelled":  # the scheduler dropped it (e.g. lost all workers)
                failures[future.key] = "cancelled by the scheduler"
            elif future.status != "finished":
                failures[future.key] = repr(future.exception())
            elif isinstance(result := future.result(), WdnExplainError):
                failures[future.key] = str(result)
            done += 1
            if progress:
                progress(done, total)
            future.release()
    return failures


def failure_report(failures: dict[str, str], what: str) -> str:
    """One message listing every failed task (for the error raised at the end of a run)."""
    lines = [f"{len(failures)} {what} failed on the cluster:"]
    lines += [f"  {key}: {reason}" for key, reason in sorted(failures.items())]
    return "\n".join(lines)
