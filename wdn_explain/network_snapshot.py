"""A network as read once: its tables and .inp properties saved per file content.

Reading a network takes EPyT-Flow (its topology) and WNTR (its properties), whose imports
alone cost 3-6 s on 2 cores: the app's first page after a server start waited for them, as
every CLI process does. Once a network's properties are read
(:attr:`~wdn_explain.network.Network.properties`), its arrays are kept in the user cache
(``cache_root()/networks``, private to the user) under a name made of the file's SHA-256, the
readers' versions and the reading code (this module and ``network.py``), so any change of the
file, a reader or the code makes a new name (the old entry is never read again);
:func:`~wdn_explain.network.load_network` reads it first. An entry that cannot be read or
written is ignored: the network is read from the .inp as before.
"""

from __future__ import annotations

import hashlib
import logging
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from .errors import DataError
from .files import atomic_write, load_npz, private_cache_dir, write_npz

READERS = ("epyt-flow", "wntr")
"""The packages whose reading a snapshot keeps (their versions are part of its name)."""

CODE = (Path(__file__), Path(__file__).with_name("network.py"))
"""The code that reads a network and keeps it (its bytes are part of a snapshot's name)."""

logger = logging.getLogger(__name__)


def snapshot_path(file_sha256: str) -> Path:
    """Where the snapshot of the .inp with content ``file_sha256`` is kept.

    Raises:
        DataError: the cache folder is not private to this user or cannot be made.
    """
    digest = hashlib.sha256(file_sha256.encode())
    for name in READERS:
        digest.update(f"{name}={_version(name)}".encode())
    for module in CODE:
        digest.update(module.read_bytes())
    return private_cache_dir("networks") / f"network_{digest.hexdigest()[:32]}.npz"


def read_snapshot(file_sha256: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` kept for the .inp with content ``file_sha256``; None when there
    is no snapshot or it cannot be read (the network is then read from the file again)."""
    try:
        path = snapshot_path(file_sha256)
        if not path.is_file():
            return None
        with load_npz(path) as arrays:
            return {name: arrays[name] for name in names}
    except (DataError, OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        logger.warning("network snapshot %s not used (%s)", file_sha256[:16], exc)
        return None


def write_snapshot(file_sha256: str, arrays: dict[str, np.ndarray]) -> None:
    """Keep ``arrays`` for the next process that reads the .inp with content
    ``file_sha256``; nothing is kept when the cache cannot be written."""
    try:
        with atomic_write(snapshot_path(file_sha256)) as tmp, open(tmp, "wb") as handle:
            write_npz(handle, arrays, compresslevel=1)
    except (DataError, OSError) as exc:
        logger.info("network %s not kept in the cache (%s)", file_sha256[:16], exc)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"
