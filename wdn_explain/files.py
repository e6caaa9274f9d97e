"""Atomic file writing and up-front output checks: every file the project writes appears
complete or not at all, and a bad output path is refused before any work starts."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from .errors import DataError


@contextmanager
def atomic_write(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place when the block succeeds.

    The temporary name (``.NAME.<pid>.<thread>.<random>.tmp``) is unique per process, thread and call, so
    concurrent writers of one file never share it; the last complete write wins. An
    interrupted write leaves at most that hidden file, never a file that looks complete
    (resumable generation relies on this). A failed clean-up (read-only file system) never
    hides the original error.
    """
    path = Path(path)
    tmp = path.with_name(
        f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.tmp"
    )  # created by the writer, so it gets the usual permissions (mkstemp's are 0600)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:  # read-only, full disk: one line naming the file
        raise DataError(f"cannot write '{path}' ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def remove_stray_temporaries(folder: str | Path, pattern: str) -> int:
    """Delete temporary files left by interrupted writes (``.NAME.<pid>.*.tmp``) whose
    process is gone (a live writer's file is left alone); return how many were removed."""
    removed = 0
    for tmp in Path(folder).glob(f".{pattern}.*.tmp"):
        if _writer_alive(tmp):
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed += 1
    return removed


def _writer_alive(tmp: Path) -> bool:
    """Whether the process named in a temporary file's name still runs."""
    parts = tmp.name.split(".")  # "", NAME (may hold dots), pid, thread, random, "tmp"
    if len(parts) < 6 or not parts[-4].isdigit():
        return False
    try:
        os.kill(int(parts[-4]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def check_output(
    path: str | Path,
    *,
    kind: Literal["file", "dir"] = "file",
    what: str = "result file",
    is_output: Callable[[Path], bool] | None = None,
    overwrite: bool = True,
) -> Path:
    """Refuse an output path before the work starts, so a result is never lost to a late
    write error.

    Args:
        path: Where the result will be written.
        kind: ``file`` or ``dir`` (a folder, created if missing).
        what: What the output is, for the messages ("timeline file", "model folder").
        is_output: For an existing file: whether it is an output of this kind (for example
            a ``.npz`` for a timeline); anything else is never replaced.
        overwrite: Whether an existing ``path`` may be replaced.

    Raises:
        DataError: the path is of the wrong kind, an existing non-output file, an existing
            output without ``overwrite``, or in a folder that cannot be written.
    """
    path = Path(path)
    if path.exists():
        if kind == "file" and path.is_dir():
            raise DataError(f"{what} '{path}' is a directory, expected a file")
        if kind == "dir" and not path.is_dir():
            raise DataError(f"{what} '{path}' is a file, expected a folder")
        if is_output is not None and not is_output(path):
            raise DataError(f"'{path}' exists and is not a {what}; choose another path")
        if not overwrite:
            raise DataError(f"{what} '{path}' exists; use --overwrite to replace it")
    folder = path if kind == "dir" else path.parent
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        raise DataError(f"cannot write {what} '{path}': '{existing}' is a file")
    if not _writable(existing):
        raise DataError(f"cannot write {what} '{path}': '{existing}' is not writable")
    return path


def _writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (tried, as permissions can lie: read-only
    mounts, root)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False
