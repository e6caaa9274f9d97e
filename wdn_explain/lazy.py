"""Lazy public names for a package: imported from their module on first use (PEP 562), so
importing the package stays cheap (the CLI starts fast; the app shows saved results without
loading torch); and names that moved to another module, still importable from the old one
with a DeprecationWarning."""

from __future__ import annotations

import importlib
import warnings
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


def moved_getattr(module: str, moved: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names that moved from ``module`` to
    ``wdn_explain.<moved[name]>``: the name still imports, with a DeprecationWarning that
    names its new home."""

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home = f"wdn_explain.{moved[name]}"
        warnings.warn(
            f"{module}.{name} moved to {home}.{name}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)

    return __getattr__
