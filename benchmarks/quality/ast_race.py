"""CPython 3.11's "AST constructor recursion depth mismatch", reproduced without the app.

The app once showed this SystemError from a thread (issue 33, item 10). CPython 3.11 keeps
the AST constructor's recursion depth in one per-interpreter state: when a finalizer runs
Python code while one thread builds an AST (``ast.parse``), another thread may parse and
reset that depth, and the first one raises. Streamlit's "magic" parses every page script
with ``ast``; the app turns it off (``.streamlit/config.toml``), so its script thread no
longer builds ASTs beside the warm-up thread.

Usage: python benchmarks/quality/ast_race.py [SECONDS] [PARSING_THREADS]

Prints the Python version and how many SystemErrors the parsing threads met while a third
thread makes garbage cycles whose finalizers run Python code.
"""

from __future__ import annotations

import ast
import gc
import sys
import threading
import time

SOURCE = (
    "x = " + "(" * 40 + "1" + ")" * 40 + "\n" + "def f():\n    return [i for i in range(3)]\n" * 200
)


class Cycle:
    """Garbage whose finalizer runs Python code, so the collector may switch threads."""

    def __del__(self) -> None:
        sum(range(200))


def churn(stop: threading.Event) -> None:
    while not stop.is_set():
        cycle = Cycle()
        cycle.me = cycle
        del cycle


def parse(stop: threading.Event, errors: list[str]) -> None:
    while not stop.is_set():
        try:
            ast.parse(SOURCE)
        except SystemError as exc:
            errors.append(str(exc))


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
    parsers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    gc.set_threshold(50, 5, 5)
    sys.setswitchinterval(1e-6)
    stop, errors = threading.Event(), []
    threads = [threading.Thread(target=parse, args=(stop, errors)) for _ in range(parsers)]
    threads.append(threading.Thread(target=churn, args=(stop,)))
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    print(f"python {sys.version.split()[0]}, {parsers} parsing threads, {seconds:g} s")
    print(f"SystemErrors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))


if __name__ == "__main__":
    main()
