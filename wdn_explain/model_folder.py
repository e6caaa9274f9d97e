"""Model folders, for every model kind (water forecasters and molecule classifiers): their
files, identity, saving and loading with a weight hash, and the device rule. torch is
imported only by the functions that need it (the app reads cards without it)."""

from __future__ import annotations

import hashlib
import json
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ConfigError, DataError, WdnExplainWarning
from .files import atomic_write, check_output, load_torch, read_json, write_torch
from .records import ModelCard

if TYPE_CHECKING:
    import torch
    from pydantic import BaseModel

    from .model import ChlorineGNN

    Card = TypeVar("Card", dict, BaseModel)

WEIGHTS, CARD = "model.pt", "card.json"


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


def read_card(model_dir: str | Path) -> ModelCard:
    """A water model folder's card as its typed record; DataError in one line for a missing
    or corrupt card (naming the field and value) or a card of another version."""
    path = Path(model_dir, CARD)
    if not path.is_file():
        raise DataError(f"'{model_dir}' is not a model folder (no {CARD})")
    return ModelCard.parse(read_json(path, "model card"), path)


def file_sha256(path: str | Path) -> str:
    """Full SHA-256 of a file (recorded in the model card as ``weights_sha256``)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` -> CUDA when available, else CPU; otherwise the named device, checked.

    Raises:
        ConfigError: an unknown device or CUDA asked for without a GPU.
    """
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ConfigError(f"unknown device '{device}' (use auto, cpu, cuda or cuda:N)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device '{device}' asked for, but no CUDA GPU is available")
    if dev.type not in ("cpu", "cuda"):
        raise ConfigError(f"unsupported device '{device}' (use auto, cpu, cuda or cuda:N)")
    return dev


def check_model_output(out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Refuse, before any work, a model folder that cannot be written or already holds a
    model (unless ``overwrite``)."""
    out = check_output(out_dir, kind="dir", what="model folder")
    for name in (WEIGHTS, CARD):
        check_output(out / name, what="model file")
    if not overwrite and any((out / name).exists() for name in (WEIGHTS, CARD)):
        raise DataError(f"model folder '{out}' holds a model; use --overwrite to replace it")
    return out


def save_folder(model: torch.nn.Module, card: Card, out_dir: str | Path) -> Card:
    """Write ``model.pt`` (the state_dict) and ``card.json`` into ``out_dir``, both or
    neither; the card (a mapping or a pydantic record) records the weights' SHA-256 as
    ``weights_sha256``, which :func:`load_state` checks. Returns the card as written.

    When the writing fails (a full disk), the model is written to a new temporary folder
    instead and the DataError names it, so a finished training is not lost.
    """
    try:
        return _write_folder(model, card, Path(out_dir))
    except DataError as exc:
        rescue = Path(tempfile.mkdtemp(prefix="wdn-explain-model-"))
        _write_folder(model, card, rescue)
        raise DataError(f"{exc}; the trained model was saved to '{rescue}' instead") from None


def _write_folder(model: torch.nn.Module, card: Card, out: Path) -> Card:
    """Both files to temporary names first, renamed into place only once both are complete:
    a write that fails after ``model.pt`` leaves no half model folder."""
    with atomic_write(out / CARD) as card_tmp, atomic_write(out / WEIGHTS) as weights_tmp:
        write_torch(model.state_dict(), weights_tmp, out / WEIGHTS)
        digest = file_sha256(weights_tmp)
        if isinstance(card, Mapping):
            card = {**card, "weights_sha256": digest}
            text = json.dumps(card, indent=2)
        else:
            card = card.model_copy(update={"weights_sha256": digest})
            text = card.model_dump_json(indent=2)
        try:
            card_tmp.write_text(text)
        except OSError as exc:  # not left to the weights' writer, which would name model.pt
            raise DataError(f"cannot write '{out / CARD}' ({exc.strerror or exc})") from None
    return card


def load_state(
    model: torch.nn.Module,
    model_dir: str | Path,
    recorded_sha256: str | None,
    map_location: str | torch.device = "cpu",
    weights: str = WEIGHTS,
) -> torch.nn.Module:
    """Load a folder's weights (file ``weights``: the forecaster's by default) into ``model``
    (``weights_only=True``) and put it in eval mode; DataError for weights whose SHA-256
    differs from ``recorded_sha256`` (when the card records one), an unreadable file, or a
    state_dict that does not fit the architecture."""
    path = Path(model_dir, weights)
    if not path.is_file():
        raise DataError(f"'{model_dir}' is not a model folder (needs {weights} and {CARD})")
    if recorded_sha256 is None:
        warnings.warn(
            f"the card of '{model_dir}' records no weights_sha256: a damaged or replaced "
            f"{weights} cannot be told from the trained one (save the model again to record it)",
            WdnExplainWarning,
            stacklevel=2,
        )
    elif recorded_sha256 != file_sha256(path):
        raise DataError(
            f"weights '{path}' do not match the SHA-256 recorded in its card "
            "(damaged or replaced file)"
        )
    state = load_torch(path, map_location)
    if not isinstance(state, Mapping):
        raise DataError(f"weights '{path}' hold a {type(state).__name__}, not a state_dict")
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    shapes = [
        f"{k} {tuple(state[k].shape)} vs {tuple(expected[k].shape)}"
        for k in sorted(set(expected) & set(state))
        if expected[k].shape != state[k].shape
    ]
    parts = [
        f"{what} {', '.join(keys)}"
        for what, keys in (
            ("missing", missing),
            ("unexpected", unexpected),
            ("shape mismatch", shapes),
        )
        if keys
    ]
    if parts:
        raise DataError(
            f"checkpoint '{path}' does not fit the architecture in its card: {'; '.join(parts)}"
        )
    model.load_state_dict(state)
    return model.eval()


def write_card(model_dir: str | Path, card: dict[str, Any]) -> None:
    """Rewrite a forecaster's ``card.json`` atomically (checked against
    :class:`~wdn_explain.records.ModelCard` first); the weights stay."""
    path = Path(model_dir, CARD)
    record = ModelCard.parse(card, path)
    with atomic_write(path) as tmp:
        tmp.write_text(json.dumps(record.to_json(), indent=2))


def save_model(model: ChlorineGNN, card: dict[str, Any], out_dir: str | Path) -> Path:
    """Write a forecaster's ``model.pt`` and ``card.json`` atomically into ``out_dir``; the
    card (checked against :class:`~wdn_explain.records.ModelCard` first) records the weights'
    SHA-256 (``weights_sha256``, also set in ``card``), which :func:`load_model` checks."""
    record = ModelCard.parse(card, Path(out_dir, CARD)).to_json()
    card.update(save_folder(model, record, out_dir))
    return Path(out_dir)


def load_model(
    model_dir: str | Path, map_location: str | torch.device = "cpu"
) -> tuple[ChlorineGNN, ModelCard]:
    """Load a forecaster's model folder (eval mode); DataError for a missing file, a corrupt
    card or a checkpoint of another architecture."""
    from .model import ModelConfig, forecaster

    folder = Path(model_dir)
    if not (folder / CARD).is_file() or not (folder / WEIGHTS).is_file():
        raise DataError(f"'{folder}' is not a model folder (needs {WEIGHTS} and {CARD})")
    card = read_card(folder)
    try:
        model = forecaster(ModelConfig(**card.model), card.input_spec.node_level)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"model card '{folder / CARD}' is corrupt ({exc})") from None
    load_state(model, folder, card.weights_sha256, map_location)
    return model, card
