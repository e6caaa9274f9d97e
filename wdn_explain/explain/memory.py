"""How much memory the engine may use: the default host budget and a GPU's free memory."""

from __future__ import annotations

import os

import torch

DEFAULT_FRACTION = 0.5  # of the memory available when explaining


def available_bytes() -> int:
    """Host memory available now (``MemAvailable`` on Linux, else free physical pages)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def default_memory_budget_gb() -> float:
    """Half of the host memory available now, in GB (2**30 bytes), at least 0.5 GB."""
    return max(0.5, DEFAULT_FRACTION * available_bytes() / 2**30)


def device_free_bytes(device: torch.device) -> int:
    """Free memory of a CUDA device, counting blocks the caching allocator can reuse."""
    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
