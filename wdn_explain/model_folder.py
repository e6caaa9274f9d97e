"""The files of a model folder and its identity (no heavy imports: the app uses it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .errors import DataError
from .files import check_output

WEIGHTS, CARD = "model.pt", "card.json"
_CARD_FIELDS = {"model": (), "train": ("horizon", "threshold", "split_seed"), "data": ("network",)}


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


def read_card(model_dir: str | Path) -> dict[str, Any]:
    """A model folder's card as a mapping with its required sections; DataError names a
    missing or corrupt card and what it lacks."""
    path = Path(model_dir, CARD)
    if not path.is_file():
        raise DataError(f"'{model_dir}' is not a model folder (no {CARD})")
    try:
        card = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"model card '{path}' is corrupt ({exc})") from None
    if not isinstance(card, dict):
        raise DataError(f"model card '{path}' is corrupt: a {type(card).__name__}, not a mapping")
    missing = [s for s in _CARD_FIELDS if not isinstance(card.get(s), dict)]
    missing += [
        f"{section}.{key}"
        for section, keys in _CARD_FIELDS.items()
        if section not in missing
        for key in keys
        if key not in card[section]
    ]
    if not missing and not isinstance(card["data"]["network"], dict):
        missing.append("data.network")
    elif not missing and "sha256" not in card["data"]["network"]:
        missing.append("data.network.sha256")
    if not missing and "inputs" not in card and "flow_scale_lps" not in card["data"]:
        missing.append("inputs (or data.flow_scale_lps)")
    if missing:
        raise DataError(f"model card '{path}' is corrupt: it lacks {', '.join(missing)}")
    return card


def file_sha256(path: str | Path) -> str:
    """Full SHA-256 of a file (recorded in the model card as ``weights_sha256``)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_model_output(out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Refuse, before any work, a model folder that cannot be written or already holds a
    model (unless ``overwrite``)."""
    out = check_output(out_dir, kind="dir", what="model folder")
    for name in (WEIGHTS, CARD):
        check_output(out / name, what="model file")
    if not overwrite and any((out / name).exists() for name in (WEIGHTS, CARD)):
        raise DataError(f"model folder '{out}' holds a model; use --overwrite to replace it")
    return out
