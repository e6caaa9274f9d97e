"""Progress reporting: library calls take ``progress=True | callable``; the CLI shows tqdm."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ProgressCallback = Callable[[int, int], None]
ProgressArg = bool | ProgressCallback | None


@contextmanager
def progress_callback(progress: ProgressArg, desc: str) -> Iterator[ProgressCallback | None]:
    """Turn ``progress`` into a ``callback(done, total)``; True shows a tqdm bar, opened at
    the first report (input errors raised before any work print no empty bar), drawn
    only once the work has taken over a second, its rate counted from the start of the work
    (a call that reports everything at once reads e.g. 15k it/s, not 20M it/s)."""
    if progress is not True:
        yield progress or None
        return
    from tqdm.auto import tqdm

    bars: list[tqdm] = []
    entered = time.monotonic()

    def update(done: int, total: int) -> None:
        if not bars:
            delay = max(0.0, 1.0 - (time.monotonic() - entered))
            bar = tqdm(
                desc=desc, total=total, unit="it", unit_scale=True, dynamic_ncols=True, delay=delay
            )
            # the rate counts from the start of the work, not from this report (tqdm's clock)
            bar.start_t = bar._time() - (time.monotonic() - entered)
            bars.append(bar)
        bars[0].total = total
        bars[0].update(done - bars[0].n)  # update() honours the delay, refresh() would not

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()
