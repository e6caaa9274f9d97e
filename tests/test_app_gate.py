"""The gate between script runs and the warm-up's import of what Plotly probes
(app/water/gate.py): an import never overlaps a run, checked by the order of events."""

from __future__ import annotations

import sys
import threading
import time

from conftest import ROOT

sys.path.insert(0, str(ROOT / "app"))  # the app's folder is not a package
from water.gate import ImportGate


def _later(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_an_import_waits_for_the_runs_in_progress_and_holds_new_ones_back():
    gate, events = ImportGate(), []
    running, run_may_end = threading.Event(), threading.Event()

    def first_run():
        with gate.run():
            events.append("run 1 starts")
            running.set()
            run_may_end.wait(5)
            events.append("run 1 ends")

    def the_import():
        with gate.importing():
            events.append("import starts")
            time.sleep(0.2)  # a second run arrives meanwhile
            events.append("import ends")

    def second_run():
        with gate.run():
            events.append("run 2 starts")

    one = _later(first_run)
    running.wait(5)
    imp = _later(the_import)
    time.sleep(0.1)  # the import is waiting for run 1
    assert events == ["run 1 starts"]
    run_may_end.set()
    while "import starts" not in events:
        time.sleep(0.01)
    two = _later(second_run)
    for thread in (one, imp, two):
        thread.join(5)
    assert events == ["run 1 starts", "run 1 ends", "import starts", "import ends", "run 2 starts"]


def test_a_fragment_inside_a_run_passes_while_an_import_waits():
    """A full run calls the page's fragment in the same thread: the inner run must not wait
    for an import that itself waits for the outer run (a deadlock)."""
    gate, events = ImportGate(), []
    outer_in = threading.Event()

    def run_with_fragment():
        with gate.run():
            outer_in.set()
            time.sleep(0.2)  # the import is waiting now
            with gate.run():
                events.append("fragment")
        events.append("run ends")

    def the_import():
        with gate.importing():
            events.append("import")

    run = _later(run_with_fragment)
    outer_in.wait(5)
    imp = _later(the_import)
    run.join(5)
    imp.join(5)
    assert not run.is_alive() and not imp.is_alive()
    assert events == ["fragment", "run ends", "import"]
