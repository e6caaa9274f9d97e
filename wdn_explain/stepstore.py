"""Explained steps streamed to disk while a timeline is computed, so that an interrupted or
failed run resumes where it stopped instead of starting again.

The steps of ``t.npz`` live in ``.t.npz.partial/`` beside it (one ``step_NNNNNN.npz`` each,
written atomically) with ``key.json``, the identity of the run (scenario, model, engine,
options); a folder with another key is discarded. The folder is removed once the timeline
file is written. One run writes it at a time (:meth:`StepStore.claimed`): a second run into
the same file is refused while the first runs, so no run counts another's fresh steps as
kept from an interrupted one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import WdnExplainError
from .explain import Explanation
from .files import LOCK, atomic_write, claimed

logger = logging.getLogger(__name__)


_THREAD_LOCKS: dict[Path, threading.Lock] = {}
"""One lock per step folder for the threads of this process (the claim file holds the pid)."""
_THREADS_LOCK = threading.Lock()


def _folder(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(f".{out.name}.partial")


def kept_steps(out: str | Path) -> int:
    """How many explained steps are stored beside timeline file ``out``."""
    return len(list(_folder(out).glob("step_*.npz")))


class StepStore:
    """One explained step per file in a scratch folder beside the timeline file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    @contextlib.contextmanager
    def claimed(cls, out: str | Path) -> Iterator[StepStore]:
        """The store of timeline file ``out``, held for one run: threads of this process (app
        sessions) wait for each other, another process is refused (:func:`~.files.claimed`:
        DataError naming the holder). A run that ends early with no step stored leaves no
        folder behind."""
        store = cls(_folder(out))
        with _THREADS_LOCK:
            lock = _THREAD_LOCKS.setdefault(store.folder.resolve(), threading.Lock())
        with lock, claimed(store.folder, "timeline", output=out):
            try:
                yield store
            except BaseException:
                if not kept_steps(out):
                    store.remove()  # nothing to resume from
                raise

    def keep_only(self, key: dict[str, Any]) -> None:
        """Discard the steps of another run (another ``key``: scenario, model, engine,
        options) and stamp the folder with this one."""
        text = json.dumps(key, sort_keys=True)
        stamp = self.folder / "key.json"
        with contextlib.suppress(OSError, WdnExplainError):  # only a resume aid
            if not stamp.is_file() or stamp.read_text() != text:
                for path in self.folder.iterdir():
                    if not path.name.startswith(LOCK):  # the claim stays
                        path.unlink()
                with atomic_write(stamp) as tmp:
                    tmp.write_text(text)

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
