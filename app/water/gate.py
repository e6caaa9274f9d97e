"""The gate between script runs and the warm-up's import of a library Plotly probes.

Plotly looks libraries up in ``sys.modules`` without importing them
(``_plotly_utils.optional_imports.get_module(name, should_load=False)``, pandas among them,
every time a figure is built). A figure built while the warm-up thread is importing pandas
meets a module in ``sys.modules`` that is not initialised yet: "partially initialized module
'pandas' has no attribute 'Series'", a failed page (seen on a switch of model about 3 s
after the first page, when the warm-up starts). Script runs share the gate; the import waits
until no run is in progress and holds new runs back until it is done (well under a second,
once per server process).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any

PROBED = ("pandas",)
"""The libraries Plotly looks up without importing that the server may import later."""


class ImportGate:
    """Shared by script runs (:meth:`run`, re-entrant per thread: a fragment inside a full
    run passes), exclusive to an import (:meth:`importing`), which runs arriving during it
    wait for and which, once it waits, no new run overtakes."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._runs = 0
        self._importing = False
        self._depth = threading.local()

    @contextmanager
    def run(self) -> Iterator[None]:
        """A script run: waits while an import holds the gate."""
        depth = getattr(self._depth, "value", 0)
        if depth == 0:
            with self._changed:
                self._changed.wait_for(lambda: not self._importing)
                self._runs += 1
        self._depth.value = depth + 1
        try:
            yield
        finally:
            self._depth.value = depth
            if depth == 0:
                with self._changed:
                    self._runs -= 1
                    self._changed.notify_all()

    @contextmanager
    def importing(self) -> Iterator[None]:
        """An import: waits until no run is in progress; runs arriving meanwhile wait."""
        with self._changed:
            self._importing = True
            self._changed.wait_for(lambda: self._runs == 0)
        try:
            yield
        finally:
            with self._changed:
                self._importing = False
                self._changed.notify_all()


GATE = ImportGate()
"""The server process's gate."""


def gated(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` run through :data:`GATE` (a fragment, which reruns on its own)."""

    @wraps(function)
    def through_gate(*args: Any, **kwargs: Any) -> Any:
        with GATE.run():
            return function(*args, **kwargs)

    return through_gate
