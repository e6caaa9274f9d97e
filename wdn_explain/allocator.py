"""glibc malloc settings that keep the engine's freed buffers for its next step.

The engine allocates and frees the same buffers (a layer's node states: up to ~25 MB for a
Hanoi node model) step after step. With glibc's own dynamic thresholds, whether a freed
buffer goes back to the kernel -- and its pages fault in again at the next step -- depends on
what the process freed before, so it differs from process to process and run to run:

- One process: a 10-scenario placement chunk took 5.7-6.8 s of CPU with the settings below
  and 7.5-7.9 s without, 1.0-1.2 s of it in the kernel for 0.5-0.6 million minor page faults
  (``benchmarks/speed/bench_chunks.py``; one 1 000-scenario run of ``bench_placement_dask.py``
  saw 0.5 million faults a chunk, another 5 000).
- A Dask worker runs its tasks in a thread whose arena is made of 64 MiB ``mmap`` heaps,
  unmapped as soon as they are empty; and Dask's nanny sets ``MALLOC_TRIM_THRESHOLD_=65536``,
  which fixes the mmap threshold at 128 KiB (every larger buffer a fresh ``mmap``).

:data:`MALLOC_SETTINGS` fixes the thresholds instead: buffers under 32 MiB (the ceiling of
glibc's dynamic threshold) come from the heap, up to 256 MiB of freed heap top is kept, and
every thread allocates from the main heap. The command line applies them to its own process
(:func:`keep_freed_memory`); :func:`~wdn_explain.cluster.local_cluster` starts its workers
with them as environment variables. A process keeps up to 256 MiB of freed memory more.
"""

from __future__ import annotations

import ctypes
import platform

MALLOC_SETTINGS = {
    "MALLOC_MMAP_THRESHOLD_": 32 * 2**20,
    "MALLOC_TRIM_THRESHOLD_": 256 * 2**20,
    "MALLOC_ARENA_MAX": 1,
}
"""glibc's environment variables for the settings (module docstring), read when a process
starts: for worker processes (Dask's ``distributed.nanny.pre-spawn-environ``)."""

_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_ARENA_MAX": -8}
"""``mallopt`` parameter of each variable (``M_TRIM_THRESHOLD``, ``M_MMAP_THRESHOLD``,
``M_ARENA_MAX`` in glibc's ``malloc.h``)."""


def keep_freed_memory() -> bool:
    """Apply :data:`MALLOC_SETTINGS` to this process with glibc's ``mallopt``; False where
    the C library is not glibc (nothing changed) or refuses a setting."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(mallopt(_MALLOPT[name], value) == 1 for name, value in MALLOC_SETTINGS.items())
