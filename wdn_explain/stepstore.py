"""Explained steps streamed to disk while a timeline is computed, so that an interrupted or
failed run resumes where it stopped instead of starting again.

The steps of ``t.npz`` live in ``.t.npz.partial/`` beside it (one ``step_NNNNNN.npz`` each,
written atomically) with ``key.json``, the identity of the run (scenario, model, engine,
options); a folder with another key is discarded. The folder is removed once the timeline
file is written.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import zipfile
from pathlib import Path
from typing import Any

from .errors import WdnExplainError
from .explain import Explanation
from .files import atomic_write

logger = logging.getLogger(__name__)


class StepStore:
    """One explained step per file in a scratch folder beside the timeline file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def beside(cls, out: str | Path, key: dict[str, Any]) -> StepStore:
        """The store of timeline file ``out`` for the run identified by ``key``."""
        out = Path(out)
        store = cls(out.with_name(f".{out.name}.partial"))
        text = json.dumps(key, sort_keys=True)
        stamp = store.folder / "key.json"
        with contextlib.suppress(OSError, WdnExplainError):  # only a resume aid
            if store.folder.is_dir() and (not stamp.is_file() or stamp.read_text() != text):
                store.remove()  # steps of another run
            store.folder.mkdir(parents=True, exist_ok=True)
            if not stamp.is_file():
                with atomic_write(stamp) as tmp:
                    tmp.write_text(text)
        return store

    def _path(self, step: int) -> Path:
        return self.folder / f"step_{step:06d}.npz"

    def get(self, step: int) -> Explanation | None:
        """The stored explanation of ``step``, or None when absent or unreadable."""
        path = self._path(step)
        if not path.is_file():
            return None
        try:
            return Explanation.load(path)
        except (WdnExplainError, EOFError, zipfile.BadZipFile):
            logger.warning("stored step %s is damaged; explaining it again", path)
            return None

    def has(self, step: int) -> bool:
        """Whether ``step`` is stored and readable."""
        return self.get(step) is not None

    def save(self, step: int, explanation: Explanation) -> None:
        """Store ``step``, raising DataError when it cannot be written (cluster tasks, whose
        stored step is their only output)."""
        explanation.save(self._path(step))

    def put(self, step: int, explanation: Explanation) -> None:
        """Store ``step``; a failure (full disk, folder removed by a concurrent run) only
        costs the ability to resume."""
        with contextlib.suppress(OSError, WdnExplainError):
            explanation.save(self._path(step))

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
