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

The package ships the snapshots of the built-in networks its models use (:data:`SHIPPED`,
written by ``python scripts/network_snapshots.py``), read when the user cache has none, so
that a machine's very first app page does not wait for the readers either; they carry the
same names, so a shipped snapshot serves only the readers' versions and the code it was
made with (a test checks that it is current and equal to a fresh read).
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

SHIPPED = Path(__file__).with_name("networks")
"""The snapshots that ship with the package (read-only, never written by a read)."""

logger = logging.getLogger(__name__)


def snapshot_name(file_sha256: str) -> str:
    """The file name of the snapshot of the .inp with content ``file_sha256`` under the
    installed readers and the current code (the same in the user cache and :data:`SHIPPED`)."""
    digest = hashlib.sha256(file_sha256.encode())
    digest.update(readers().encode())
    for module in CODE:
        digest.update(module.read_bytes())
    return f"network_{digest.hexdigest()[:32]}.npz"


def snapshot_path(file_sha256: str) -> Path:
    """Where the user cache keeps the snapshot of the .inp with content ``file_sha256``.

    Raises:
        DataError: the cache folder is not private to this user or cannot be made.
    """
    return private_cache_dir("networks") / snapshot_name(file_sha256)


def readers() -> str:
    """The installed readers' versions, as a snapshot records them
    (``epyt-flow=0.17.3 wntr=1.5.0``)."""
    return " ".join(f"{name}={_version(name)}" for name in READERS)


def read_snapshot(file_sha256: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` kept for the .inp with content ``file_sha256``, from the user
    cache or else :data:`SHIPPED`; None when neither has a snapshot that can be read (the
    network is then read from the file again)."""
    places = [SHIPPED / snapshot_name(file_sha256)]
    try:
        places.insert(0, snapshot_path(file_sha256))
    except DataError as exc:  # a cache others may write: only the package's own
        logger.warning("network cache not used (%s)", exc)
    for path in places:
        try:
            if not path.is_file():
                continue
            with load_npz(path) as arrays:
                return {name: arrays[name] for name in names}
        except (DataError, OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            logger.warning("network snapshot %s not used (%s)", path, exc)
    return None


def write_snapshot(
    file_sha256: str, arrays: dict[str, np.ndarray], folder: Path | None = None
) -> Path | None:
    """Keep ``arrays`` (and the readers' versions) for the next process that reads the .inp
    with content ``file_sha256``, in the user cache or ``folder``; the file written, None
    when it cannot be written (logged)."""
    try:
        path = folder / snapshot_name(file_sha256) if folder else snapshot_path(file_sha256)
        with atomic_write(path) as tmp, open(tmp, "wb") as handle:
            write_npz(handle, arrays | {"readers": np.array(readers())}, compresslevel=1)
    except (DataError, OSError) as exc:
        logger.info("network %s not kept in the cache (%s)", file_sha256[:16], exc)
        return None
    return path


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"
