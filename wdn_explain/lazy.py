"""Lazy public names for a package: imported from their module on first use (PEP 562), so
importing the package stays cheap (the CLI starts fast; the app shows saved results without
loading torch)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_getattr(package: str, table: dict[str, str], namespace: dict) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``name`` from ``package.table[name]`` and keeps
    it in ``namespace`` (the package's globals) for later lookups."""

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{table[name]}", package), name)
        namespace[name] = value
        return value

    return __getattr__
