"""Atomic file writing and up-front output checks: every file the project writes appears
complete or not at all, and a bad output path is refused before any work starts."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import uuid
import warnings
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal

import numpy as np

from .errors import DataError


@contextmanager
def atomic_write(path: str | Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place when the block succeeds.

    The temporary name (``.NAME.<pid>.<thread>.<random>.tmp``) is unique per process, thread and call, so
    concurrent writers of one file never share it; the last complete write wins. An
    interrupted write leaves at most that hidden file, never a file that looks complete
    (resumable generation relies on this). A missing folder is created; ``path`` itself is
    replaced, so a symbolic link there is never written through. A failed clean-up
    (read-only file system) never hides the original error. ``suffix`` ends the temporary
    name, for writers that insist on one (shapiq's JSON files: ``.json``).
    """
    path = Path(path)
    tmp = path.with_name(
        f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.tmp{suffix}"
    )  # created by the writer, so it gets the usual permissions (mkstemp's are 0600)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:  # read-only, full disk: one line naming the file
        raise DataError(f"cannot write '{path}' ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def write_npz(handle: IO[bytes], arrays: dict[str, np.ndarray], *, compresslevel: int) -> None:
    """Write ``arrays`` to ``handle`` as ``np.savez_compressed`` does (an ``.npz`` that
    ``np.load`` reads, without pickles), at zlib level ``compresslevel`` (numpy's is fixed
    at 6)."""
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel) as zf:
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)


def save_torch(obj: object, path: str | Path) -> Path:
    """``torch.save`` atomically; a failed write is a DataError naming the file."""
    path = Path(path)
    with atomic_write(path) as tmp:
        write_torch(obj, tmp, path)
    return path


def write_torch(obj: object, tmp: Path, path: Path) -> None:
    """``torch.save(obj, tmp)``, ``tmp`` being the temporary of ``path`` (:func:`atomic_write`).

    torch's zip writer reports a full disk or a failing file system as ``RuntimeError``
    ("[enforce fail at inline_container.cc] . unexpected pos ..."), not ``OSError``: a
    DataError naming ``path``.
    """
    import torch

    try:
        torch.save(obj, tmp)
    except RuntimeError as exc:
        raise DataError(
            f"cannot write '{path}' (torch's writer failed: {str(exc).splitlines()[0]}; "
            "is the disk full?)"
        ) from None


def read_json(path: str | Path, what: str) -> object:
    """The JSON document in ``path``; DataError in one line for text that is not JSON, not
    UTF-8, or nested too deeply for the parser (a recursion bomb)."""
    import json

    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{what} '{path}' is corrupt ({exc})") from None
    except RecursionError:
        raise DataError(f"{what} '{path}' is corrupt (nested too deeply)") from None


MAX_INFLATION = 200
"""How many times its size on disk an ``.npz`` may inflate to (beyond :data:`INFLATION_FLOOR`):
measured 1x (scenario files), 3-4x (timelines), 37x (a paper_version.npz); an array of
zeros, the stuff of a decompression bomb, inflates ~1 000x."""

INFLATION_FLOOR = 256e6
"""Bytes an ``.npz`` may always inflate to, however small it is on disk."""


def load_npz(path: str | Path) -> np.lib.npyio.NpzFile:
    """``np.load(path, allow_pickle=False)`` of an ``.npz`` checked before anything inflates:
    its members' declared sizes together stay within :data:`MAX_INFLATION` times the file
    (or :data:`INFLATION_FLOOR`), and no array header asks for more bytes than its member
    holds (numpy allocates what the header asks first).

    Raises:
        DataError: a decompression bomb (a ValueError, as numpy's own refusals are).
        OSError, zipfile.BadZipFile: as ``np.load`` raises them.
    """
    path = Path(path)
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        _check_inflation(path, sum(m.file_size for m in members))
        for member in members:
            _check_header(path, archive, member)
    return np.load(path, allow_pickle=False)


def load_npz_member(path: str | Path, name: str) -> np.ndarray:
    """The one array ``name`` of an ``.npz``, read alone (a timeline's metadata: its file holds
    some 1 500 arrays, whose headers :func:`load_npz` reads in ~0.4 s), with the checks of
    :func:`load_npz` applied to it.

    Raises:
        KeyError: the file holds no array ``name``.
        DataError, OSError, zipfile.BadZipFile: as :func:`load_npz`.
    """
    path = Path(path)
    with zipfile.ZipFile(path) as archive:
        member = archive.getinfo(f"{name}.npy")
        _check_inflation(path, member.file_size)
        _check_header(path, archive, member)
        with archive.open(member) as handle:
            return np.lib.format.read_array(handle, allow_pickle=False)


def _check_inflation(path: Path, declared: int) -> None:
    """DataError when ``declared`` bytes exceed what ``path`` may inflate to."""
    limit = max(MAX_INFLATION * path.stat().st_size, INFLATION_FLOOR)
    if declared > limit:
        raise DataError(
            f"'{path}' would inflate to {declared / 1e6:,.0f} MB from "
            f"{path.stat().st_size / 1e6:,.2f} MB (over {MAX_INFLATION}x): refused unread"
        )


def _check_header(path: Path, archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> None:
    """DataError when ``member``'s array header asks for more bytes than the member holds."""
    with archive.open(member) as handle:
        asked = _npy_bytes(handle)
    if asked is not None and asked > member.file_size:
        raise DataError(
            f"'{path}': array '{member.filename}' asks for {asked} bytes but holds "
            f"{member.file_size}: refused unread"
        )


def _npy_bytes(handle: IO[bytes]) -> int | None:
    """The bytes the ``.npy`` header at ``handle`` asks for (None: not an ``.npy`` header that
    numpy's public readers parse; ``np.load`` then judges it)."""
    readers = {
        (1, 0): np.lib.format.read_array_header_1_0,
        (2, 0): np.lib.format.read_array_header_2_0,
    }
    try:
        shape, _, dtype = readers[np.lib.format.read_magic(handle)](handle)
    except (KeyError, ValueError, EOFError, OSError):
        return None
    return int(np.prod(shape, dtype=object)) * dtype.itemsize


def cache_root() -> Path:
    """``$WDN_EXPLAIN_CACHE``, else ``~/.cache/wdn-explain``: where derived files are cached."""
    env = os.environ.get("WDN_EXPLAIN_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "wdn-explain"


def private_cache_dir(name: str) -> Path:
    """The folder ``cache_root()/name``, private to this user: created 0700 and refused
    unless this user owns it and nobody else may write it (nor any folder it was made in),
    so no other user can plant a file that a cache load reads.

    Raises:
        DataError: the folder (or a parent made for it) belongs to another user or is
            writable by others, or it cannot be created.
    """
    folder = cache_root() / name
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path in (folder, folder.parent):
            info = path.lstat()
            if info.st_uid != os.getuid() or info.st_mode & 0o022 or path.is_symlink():
                raise DataError(
                    f"cache folder '{path}' is not private (owner uid {info.st_uid}, mode "
                    f"{info.st_mode & 0o777:o}): it must belong to uid {os.getuid()} and be "
                    "writable by it alone; remove it or set WDN_EXPLAIN_CACHE"
                )
    except OSError as exc:
        raise DataError(f"cannot create cache folder '{folder}' ({exc.strerror or exc})") from None
    return folder


LOCK = ".wdn-explain.lock"
"""The claim file of a folder being written (see :func:`claimed`)."""


def load_torch(path: str | Path, map_location: object = "cpu") -> object:
    """``torch.load(path, weights_only=True)``; DataError in one line naming the file.

    A file holding Python objects beyond tensors (a malicious or foreign pickle) is refused
    by the safe load; the message names what was refused, without torch's advice to load
    it unsafely, and without torch's warning about the file's pickle protocol before it.
    """
    import pickle

    import torch

    path = Path(path)
    try:
        with warnings.catch_warnings():  # torch's note on a foreign pickle protocol
            warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        lines = [line.strip() for line in str(exc).splitlines()]
        why = next(
            (line for line in lines if line.lower().startswith(("trying", "unsupported"))), ""
        )
        raise DataError(
            f"weights '{path}' hold Python objects that a safe load refuses"
            + (f" ({why.rstrip('.')})" if why else "")
            + "; the file is damaged or not a plain state_dict"
        ) from None
    except Exception as exc:  # torch raises many types for damaged files
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"weights '{path}' cannot be read ({first})") from None


@contextmanager
def claimed(
    folder: str | Path, what: str = "output folder", *, output: str | Path | None = None
) -> Iterator[Path]:
    """Hold ``folder`` for one writer: a claim file (``.wdn-explain.lock``, holding the
    process id) created exclusively, removed afterwards. A second writer is refused at once
    with a DataError naming the holder; a claim whose process is gone is taken over. A folder
    made for the claim is removed again if nothing was written into it. ``output``: the file
    that messages name when the folder is its scratch space (default: the folder itself)."""
    folder = Path(folder)
    named = f"{what} '{output or folder}'"
    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / LOCK
    mine = folder / f"{LOCK}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        mine.write_text(str(os.getpid()))
        for _ in range(2):
            try:
                os.link(mine, lock)  # atomic: the claim appears complete or not at all
                break
            except FileExistsError:
                holder = _lock_holder(lock)
                if holder is not None and _alive(holder):
                    raise DataError(
                        f"{named} is being written by another process (pid {holder}, claim "
                        f"file {lock}); wait for it or choose another "
                        + ("folder" if output is None else "file")
                    ) from None
                with contextlib.suppress(OSError):
                    lock.unlink()  # its writer is gone
        else:
            raise DataError(f"{named} is being claimed by another process; try again")
    except OSError as exc:
        raise DataError(f"cannot write {named} ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(OSError):
            mine.unlink()
    try:
        yield folder
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()
            if made:
                folder.rmdir()  # only when empty: the work failed before writing


def _lock_holder(lock: Path) -> int | None:
    """The process id in a claim file (None when unreadable)."""
    try:
        return int(lock.read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


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
    return _alive(int(parts[-4]))


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
        if is_output is not None and not (is_output(path) and is_output(path.resolve())):
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
