"""Progress reporting: library calls take ``progress=True | callable``; the CLI shows tqdm."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

ProgressCallback = Callable[[int, int], None]
ProgressArg = bool | ProgressCallback | None


@contextmanager
def progress_callback(progress: ProgressArg, desc: str) -> Iterator[ProgressCallback | None]:
    """Turn ``progress`` into a ``callback(done, total)``: True shows a tqdm bar."""
    if progress is True:
        from tqdm.auto import tqdm

        bar = tqdm(desc=desc, unit="it", dynamic_ncols=True)

        def update(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            yield update
        finally:
            bar.close()
    else:
        yield progress or None
