"""Run simulation and explanation tasks on a Dask distributed cluster.

The tasks are the ones that run locally (:func:`wdn_explain.waq._run_task`, one per
scenario; :func:`wdn_explain.pipeline._explain_task`, one per explained step). Each is
keyed by what it computes, skips work whose output already exists and writes its output
atomically itself, so a task retried after a worker died, or run twice, leaves each output
exactly once and complete. Outputs go to a folder every worker can reach (a shared file
system); the bytes do not depend on where a task ran.

Tasks never change the working directory (a worker runs several tasks at once in threads).
EPANET, on Linux, writes its scratch files (``enXXXXXX``) into the current directory and
offers no other place, so every worker process is moved once, when a run first reaches it,
into its own scratch folder (:class:`ScratchFolder`), removed when the worker exits.

A run waits for a bounded time: a scheduler that cannot be reached is refused within
:data:`CONNECT_TIMEOUT_S`, a scheduler lost mid-run within :data:`LOST_SCHEDULER_S`, and a
cluster without workers after :data:`NO_WORKERS_S`, each in one line; finished outputs stay
and a rerun resumes.

**Worker memory.** Workers start with :data:`~wdn_explain.allocator.MALLOC_SETTINGS`, glibc
malloc thresholds that keep the engine's freed buffers for its next step (Dask's nanny, or
glibc's own dynamic thresholds and a task thread's arena of 64 MiB heaps, handed them back to
the kernel: 0.1-2.4 million page faults a placement chunk; see :mod:`.allocator`). Start
workers of another cluster (``dask worker``) the same way: in the worker machine's Dask
config, ``distributed.nanny.pre-spawn-environ`` set to those variables.

**Background work.** :func:`local_cluster` starts no dashboard, so nothing shows what Dask
samples for one, and on a machine with as many cores as workers every sample is taken from a
task. Its workers do not sample their stacks (every 10 ms by default: over two placement
chunks on one worker, its event-loop thread used 0.93 s of CPU with the sampler and 0.39 s
without, its task thread 16.87 s and 16.39 s; ``distributed.worker.profile.enabled``), and
its scheduler, nannies and workers look at their event loop, process and memory less often
(:data:`QUIET_MONITORS`). The scheduler and the nannies run in the calling process: over a
100-scenario placement on two workers it used 3.3 s of CPU with Dask's intervals and 0.7-1.0 s
with these, and each worker switched involuntarily ~200 times against ~40.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from typing import Any

from .errors import ConfigError, WdnExplainError, WdnExplainWarning

try:  # the [cluster] extra; without it only the error of :func:`connect` is reachable
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover
    WorkerPlugin = object

CONNECT_TIMEOUT_S = 5
"""How long to wait for the scheduler before refusing its address."""

LOST_SCHEDULER_S = 10
"""How long a run waits for a scheduler that went away before giving up."""

NO_WORKERS_S = 30
"""How long a run waits while the cluster has no worker (none started yet, or all died)."""

POLL_S = 1.0
"""How often a run checks the scheduler and its workers while no task finishes."""

TICK_S = 0.05
"""How often a run looks for finished tasks."""

QUIET_MONITORS = {
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}
"""Dask's intervals for :func:`local_cluster` (defaults 20 ms, 500 ms and 100 ms): the
event-loop watch still reports a loop blocked past ``distributed.admin.tick.limit`` (3 s),
and a worker over its memory limit is still paused or restarted, within a second."""

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


@contextmanager
def local_cluster(workers: int) -> Iterator[str]:
    """The address of a Dask LocalCluster of ``workers`` single-threaded processes on this
    machine, started with :data:`~wdn_explain.allocator.MALLOC_SETTINGS`, without the
    profiler's sampling and with :data:`QUIET_MONITORS` (module docstring: "Worker memory",
    "Background work"); ConfigError without Dask distributed."""
    try:
        import dask
        from distributed import LocalCluster
    except ImportError:
        raise ConfigError(
            "--workers needs Dask distributed: pip install 'wdn-explain[cluster]'"
        ) from None
    from .allocator import MALLOC_SETTINGS

    settings = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in MALLOC_SETTINGS.items()}
    settings["distributed.worker.profile.enabled"] = False
    settings.update(QUIET_MONITORS)
    with (
        dask.config.set(settings),
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
    ):
        yield cluster.scheduler_address


def check_reachable(address: str) -> None:
    """ConfigError unless the scheduler at ``address`` answers (see :func:`connect`): called
    before a run writes anything."""
    connect(address).close()


class ScratchFolder(WorkerPlugin):
    """Dask worker plugin: move the worker process, once, into a private scratch folder
    (EPANET's scratch files land in the working directory), removed when it exits. Later
    registrations (each run registers it) change nothing, so running tasks are never
    disturbed."""

    name = "wdn-explain-scratch"
    idempotent = True

    def setup(self, worker: Any = None) -> None:
        global _SCRATCH
        if _SCRATCH is None:
            _SCRATCH = tempfile.mkdtemp(prefix="wdn-explain-worker-")
            atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
            os.chdir(_SCRATCH)

    def teardown(self, worker: Any = None) -> None:
        """Nothing: the folder lives as long as the worker process."""


_SCRATCH: str | None = None


def gpu_resources(client: Any, want_gpu: bool) -> dict[str, int] | None:
    """``{"GPU": 1}`` when GPU workers are asked for and some worker offers that resource;
    None (any worker, CPU included) otherwise."""
    if not want_gpu:
        return None
    workers = client.scheduler_info()["workers"].values()
    if any(w.get("resources", {}).get("GPU", 0) >= 1 for w in workers):
        return {"GPU": 1}
    warnings.warn(
        "no Dask worker offers a GPU resource; explaining on CPU workers",
        WdnExplainWarning,
        stacklevel=2,
    )
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
    with _quiet_client_log(), connect(address) as client:
        client.register_plugin(ScratchFolder())
        resources = gpu_resources(client, want_gpu)
        futures = [
            client.submit(
                _settled, fn, *args, key=key, retries=RETRIES, resources=resources, pure=False
            )
            for key, args in tasks
        ]
        completed, watch, left = as_completed(futures), _Watch(client, address), len(futures)
        del futures  # released one by one as they finish
        while left:
            finished = completed.next_batch(block=False)
            if not finished:
                watch.pause(left)
                continue
            for future in finished:
                try:
                    reason = _failure(future)
                except TimeoutError:  # its result died with its worker: waited for, watched
                    completed.add(future)
                    continue
                except OSError:  # the scheduler was lost: its tasks are gone too
                    watch.fail(f"lost the scheduler '{address}'", left)
                if reason is not None:
                    failures[future.key] = reason
                done, left = done + 1, left - 1
                if progress:
                    progress(done, total)
                future.release()
            watch.since.clear()
    return failures


@contextmanager
def _quiet_client_log() -> Iterator[None]:
    """Silence Dask's client-side log for a run: a lost scheduler or worker is reported by
    the run itself in one line, not also as Dask's reconnection tracebacks."""
    loggers = [logging.getLogger(name) for name in ("distributed", "distributed.client")]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for log, level in zip(loggers, levels):
            log.setLevel(level)


def _failure(future: Any) -> str | None:
    """Why a finished future failed, in one line (None when it succeeded).

    A future reported finished can be lost again before this look: the worker holding its
    result died, and the scheduler recomputes it. An ``error`` status is a failure, and so is a
    cancel by the scheduler the client is still connected to.

    Raises:
        TimeoutError: the result is not back within :data:`POLL_S` (being recomputed, maybe
            with no worker left): the caller waits for it again under its bounded watch.
        ConnectionError: the future is cancelled because the client lost the scheduler
            (before or while this look fetched the result): the caller reports the lost
            scheduler, not a failed task.
    """
    if future.status == "error":
        return repr(future.exception())
    try:
        if future.status != "cancelled":
            result = future.result(timeout=POLL_S)
            return str(result) if isinstance(result, WdnExplainError) else None
    except CancelledError:  # cancelled while fetched
        pass
    if future.client.status != "running":  # cancelled with the scheduler the client lost
        raise ConnectionError("lost the scheduler")
    return "cancelled by the scheduler"


class _Watch:
    """Bounded waiting while no task finishes: ConfigError when the scheduler has been
    unreachable for :data:`LOST_SCHEDULER_S` or the cluster without a worker for
    :data:`NO_WORKERS_S`."""

    def __init__(self, client: Any, address: str) -> None:
        self.client, self.address = client, address
        self.since: dict[str, float] = {}  # when each condition was first seen, this wait
        self.next_check = 0.0

    def pause(self, n_pending: int) -> None:
        """Sleep a moment; every :data:`POLL_S` look at the scheduler and its workers."""
        time.sleep(TICK_S)
        now = time.monotonic()
        if now < self.next_check:
            return
        self.next_check = now + POLL_S
        if self.client.status != "running":
            problem = f"lost the scheduler '{self.address}'"
            self._limit("scheduler", LOST_SCHEDULER_S, problem, n_pending)
            return
        self.since.pop("scheduler", None)
        if self.client.scheduler_info().get("workers"):
            self.since.pop("workers", None)
            return
        problem = f"the cluster at '{self.address}' has had no workers"
        self._limit("workers", NO_WORKERS_S, problem, n_pending)

    def _limit(self, what: str, limit: float, problem: str, n_pending: int) -> None:
        if time.monotonic() - self.since.setdefault(what, time.monotonic()) >= limit:
            self.fail(f"{problem} for {limit:g} s", n_pending)

    def fail(self, problem: str, n_pending: int) -> None:
        """Give up in one line; what finished stays, so a rerun resumes."""
        hint = f"start workers with `dask worker {self.address}`; " if "workers" in problem else ""
        raise ConfigError(
            f"{problem} ({n_pending} tasks unfinished); {hint}finished outputs are kept: "
            "run again to resume"
        )


def failure_report(failures: dict[str, str], what: str) -> str:
    """One message listing every failed task (for the error raised at the end of a run)."""
    lines = [f"{len(failures)} {what} failed on the cluster:"]
    lines += [f"  {key}: {reason}" for key, reason in sorted(failures.items())]
    return "\n".join(lines)
