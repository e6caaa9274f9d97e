"""Intra-op threads for the engine's work: one unless the user chose otherwise.

An explanation is many small tensor operations (a Hanoi step: ~0.1 s of chunks of a few
thousand node states). torch's default intra-op pool (one thread per core) only pays on
large operations on an idle machine; with one other busy process on a 2-core machine its
threads spin against each other and one ``wdn-explain explain`` of the shipped node-12
scenario took 141 s instead of 11.3 s on one thread. Measured with
``benchmarks/speed/bench_threads.py`` (README "Speed"): one thread is never slower on the work
this project explains, so the engine runs on one thread by default and restores the
caller's setting afterwards.

Who decides, first match wins:

1. ``num_threads=`` given to the engine (``GraphSHAPIQ(num_threads=...)``);
2. the user's own setting: ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` in the environment
   (torch reads them at start-up), or a ``torch.set_num_threads(k)`` with k different from
   torch's default count (one thread per physical core, which torch also gives its
   inter-op pool: ``torch.get_num_interop_threads()``). To ask for exactly torch's
   default, pass it as ``num_threads``;
3. otherwise one thread.

numpy's BLAS is used only by the Möbius transforms, on one thread (:mod:`.hypercube`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import numpy as np
import torch

from ..errors import ExplainError

T = TypeVar("T")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def check_num_threads(num_threads: int | None) -> int | None:
    """``num_threads`` validated: None or an integer >= 1.

    Raises:
        ExplainError: anything else.
    """
    if num_threads is None:
        return None
    if isinstance(num_threads, bool) or not isinstance(num_threads, int | np.integer):
        raise ExplainError(f"num_threads must be an integer >= 1 or None (got {num_threads!r})")
    if num_threads < 1:
        raise ExplainError(f"num_threads must be an integer >= 1 or None (got {num_threads})")
    return int(num_threads)


def engine_num_threads(num_threads: int | None = None) -> int:
    """The intra-op thread count the engine uses (see the module docstring)."""
    if num_threads is not None:
        return num_threads
    current = torch.get_num_threads()
    if any(os.environ.get(v) for v in THREAD_VARIABLES):
        return current
    if current != torch.get_num_interop_threads():  # torch's default: one per physical core
        return current
    return 1


@contextmanager
def engine_threads(num_threads: int | None = None) -> Iterator[int]:
    """Run the block with :func:`engine_num_threads` threads; the caller's count is restored."""
    before = torch.get_num_threads()
    chosen = engine_num_threads(num_threads)
    if chosen != before:
        torch.set_num_threads(chosen)
    try:
        yield chosen
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@contextmanager
def numeric_threads(num_threads: int | None = None) -> Iterator[int]:
    """:func:`engine_threads`, and as many threads for every other OpenMP runtime and BLAS
    loaded (scikit-learn's gradient-boosted trees bring their own OpenMP, NumPy its BLAS):
    for work that trains and fits as well as explains (a network's onboarding), with the
    same choice and for the same reason; the callers' counts are restored."""
    from threadpoolctl import threadpool_limits

    with engine_threads(num_threads) as chosen, threadpool_limits(chosen):
        yield chosen


def in_engine_threads(method: Callable[..., T]) -> Callable[..., T]:
    """Decorate an explainer method to run in :func:`engine_threads` of ``self.num_threads``."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs) -> T:
        with engine_threads(self.num_threads):
            return method(self, *args, **kwargs)

    return wrapper
