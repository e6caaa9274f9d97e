"""The files of a model folder and its identity (no heavy imports: the app uses it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .errors import DataError

WEIGHTS, CARD = "model.pt", "card.json"


def model_hash(model_dir: str | Path) -> str:
    """SHA-256 (16 hex) of a model folder's weights and card."""
    digest = hashlib.sha256()
    for name in (WEIGHTS, CARD):
        digest.update(Path(model_dir, name).read_bytes())
    return digest.hexdigest()[:16]


def read_card(model_dir: str | Path) -> dict[str, Any]:
    """A model folder's card as a mapping; DataError names a missing or corrupt card."""
    path = Path(model_dir, CARD)
    if not path.is_file():
        raise DataError(f"'{model_dir}' is not a model folder (no {CARD})")
    try:
        card = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"model card '{path}' is corrupt ({exc})") from None
    if not isinstance(card, dict):
        raise DataError(f"model card '{path}' is corrupt (not a mapping)")
    return card
