"""Minor page faults of glibc's malloc and free, counted by the tests of the allocator settings
(the command line's process, a Dask worker's task thread)."""

from pathlib import Path


def minor_faults() -> int:
    """Minor page faults of the calling thread so far (Linux)."""
    return int(Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()[7])


def faults_per_round(mb: int = 19, buffers: int = 3, rounds: int = 4) -> list[int]:
    """The calling thread's minor faults while it allocates ``buffers`` of ``mb`` MB from
    glibc's malloc, writes them and frees them, round after round (the engine's layers do
    this every step), after one fresh ``mmap`` of that size written (sure to fault)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    size = mb << 20
    before = minor_faults()
    with mmap.mmap(-1, size) as fresh:
        fresh.write(b"\1" * size)
    counts = [minor_faults() - before]
    for _ in range(rounds):
        before = minor_faults()
        pointers = [libc.malloc(size) for _ in range(buffers)]
        for pointer in pointers:
            ctypes.memset(pointer, 1, size)
        for pointer in pointers:
            libc.free(ctypes.c_void_p(pointer))
        counts.append(minor_faults() - before)
    return counts
