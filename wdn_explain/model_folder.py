"""The files of a model folder and its identity (no heavy imports: the app uses it)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .errors import DataError

WEIGHTS, CARD = "model.pt", "card.json"
CARD_KEYS = ("model", "train", "data")


def model_hash(model_dir: str | Path) -> str:
    """SHA-256 (16 hex) of a model folder's weights and card; DataError if one is missing."""
    digest = hashlib.sha256()
    for name in (WEIGHTS, CARD):
        try:
            digest.update(Path(model_dir, name).read_bytes())
        except OSError:
            raise DataError(
                f"'{model_dir}' is not a model folder (needs {WEIGHTS} and {CARD})"
            ) from None
    return digest.hexdigest()[:16]


def file_sha256(path: str | Path) -> str:
    """Full SHA-256 of a file (recorded in the model card as ``weights_sha256``)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
