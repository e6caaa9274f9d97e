"""Where the shipped models, scenarios and timelines are, and what a model folder offers:
its network, the scenario shown first and that scenario's current timeline."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError, DataError
from .model_folder import read_card
from .scenario import DRAWN_RANGES, ScenarioConfig, load_config
from .timeline import timeline_is_current

if TYPE_CHECKING:
    from .network import Network

_PACKAGE = Path(__file__).resolve().parent
#: Holds models/ and simulations/: the package itself when installed (they install as its
#: package data), the repository root in a checkout (also an editable install).
SHIPPED_ROOT = _PACKAGE if (_PACKAGE / "models").is_dir() else _PACKAGE.parent
DEFAULT_MODEL = SHIPPED_ROOT / "models" / "default"
DEFAULT_SCENARIO = SHIPPED_ROOT / "simulations" / "default_scenario.yaml"
DEFAULT_TIMELINE = DEFAULT_MODEL / "default_timeline.npz"
SAMPLE_READINGS = SHIPPED_ROOT / "models" / "hanoi-sensors" / "sample_readings.csv"
"""Readings of the sensor model's sensors in the default scenario, with a missing, an
out-of-range and a stuck reading (``scripts/sample_readings.py``): what the Replay page
replays before a utility has its own."""


def shipped(path: str | Path) -> Path:
    """``path`` itself when it exists (or is absolute), else the shipped file or folder of
    that relative name (``models/default``, ``simulations/waq.yaml``), so that the defaults
    work from any working directory."""
    path = Path(path)
    if path.exists() or path.is_absolute() or not (SHIPPED_ROOT / path).exists():
        return path
    return SHIPPED_ROOT / path


def default_model() -> Path:
    """The model the app and CLI use unless told otherwise: ``WDN_EXPLAIN_MODEL`` or the
    shipped default."""
    return shipped(os.environ.get("WDN_EXPLAIN_MODEL", DEFAULT_MODEL))


# What a water model folder may hold beside model.pt and card.json: the scenario the app and
# ``explain`` show first for it (scenario 0 of a simulation config) and that scenario's timeline.
MODEL_SCENARIO, MODEL_TIMELINE = "default_scenario.yaml", "default_timeline.npz"


def user_models_dir() -> Path:
    """Where the user's own models go (``wdn-explain network onboard`` by default, the app's
    upload) and where the app looks for them besides ``models/``: ``$WDN_EXPLAIN_MODELS``,
    else ``~/.local/share/wdn-explain/models``."""
    default = Path.home() / ".local" / "share" / "wdn-explain" / "models"
    return Path(os.environ.get("WDN_EXPLAIN_MODELS", default))


MODEL_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,99}")
"""A user model's name, its folder in :func:`user_models_dir`: a letter or digit, then up to
99 letters, digits, ``.``, ``-`` and ``_`` (no separators, no ``..``)."""


def user_model_folder(name: str) -> Path:
    """The folder of the user model ``name`` in :func:`user_models_dir`.

    Raises:
        ConfigError: a name outside :data:`MODEL_NAME`.
    """
    if not MODEL_NAME.fullmatch(name):
        shown = name if len(name) <= 60 else f"{name[:60]}... ({len(name)} characters)"
        raise ConfigError(
            f"model name '{shown}' must start with a letter or digit and hold only letters, "
            "digits, '.', '-' and '_' (at most 100 characters)"
        )
    return user_models_dir() / name


def model_name_for(inp_name: str) -> str:
    """The default model name of a network file: its stem in lower case with every run of
    other characters as ``-``, cut to 100 characters ("" when nothing usable is left)."""
    name = re.sub(r"[^\w.-]+", "-", Path(inp_name).stem.lower())
    return name.lstrip("._-")[:100].rstrip(".-")


def model_target(model_dir: str | Path) -> str:
    """What a water model forecasts, from its card: ``share`` (the share of chlorinated
    nodes; every card older than ``inputs.target``) or ``node_chlorine_mg_l`` (chlorine at
    every node). DataError for a folder without a readable card."""
    return read_card(model_dir).input_spec.target


def water_models(targets: Collection[str] | None = None) -> dict[str, Path]:
    """The models the app offers, by name: :func:`default_model` first (its folder name, or
    its path when it lies outside ``models/``), then every water model folder under the
    shipped ``models/`` (a card with ``data.network``; ``models/chem`` is skipped), then
    every one under :func:`user_models_dir` (by folder name, or by path where a shipped
    model has that name).

    Args:
        targets: Keep only models of these targets (:func:`model_target`); None (the
            default, what the app offers) keeps every water model: the share models and the
            node-level ones such as ``models/hanoi-nodes``.
    """
    root = SHIPPED_ROOT / "models"
    first: Path | None = default_model()
    found: dict[str, Path] = {}
    with contextlib.suppress(DataError):  # a broken override is offered: the app says why
        if targets is not None and model_target(first) not in targets:
            first = None
    seen = set()
    if first is not None:
        found[first.name if first.resolve().parent == root else str(first)] = first
        seen.add(first.resolve())
    for folder in (root, user_models_dir()):
        for card in sorted(folder.glob("*/card.json")):
            model = card.parent
            if model.name == "chem" or model.resolve() in seen:
                continue
            with contextlib.suppress(DataError):  # not a water model folder
                if targets is None or model_target(model) in targets:
                    found[str(model) if model.name in found else model.name] = model
                    seen.add(model.resolve())
    return found


def model_network(model_dir: str | Path) -> Network:
    """The network a model was trained on: the card's network by name (every network that
    ships inside ``epyt``), or ``<name>.inp`` in the model folder; its SHA-256 must match the
    card's. DataError naming the network and what to do otherwise."""
    from .network import builtin_networks, load_network

    info = read_card(model_dir).data.network
    name = info.name
    local = Path(model_dir, f"{name}.inp")
    if local.is_file():
        network = load_network(local)
    elif name.lower() in builtin_networks():
        network = load_network(name)
    else:
        raise DataError(
            f"model '{model_dir}' was trained on network '{name}', which does not ship with "
            f"epyt: copy that network's .inp file into the model folder as '{local}'"
        )
    if network.file_sha256 != info.sha256:
        raise DataError(
            f"model '{model_dir}' was trained on another version of network '{name}' (sha256 "
            f"{info.sha256[:12]}..., '{network.inp_path}' has "
            f"{network.file_sha256[:12]}...): copy the .inp it was trained on into the model "
            f"folder as '{local}'"
        )
    return network


def default_scenario(model_dir: str | Path, network: Network | None = None) -> ScenarioConfig:
    """The scenario the app and ``explain`` show first for a model: scenario 0 of the
    folder's ``default_scenario.yaml``; else, for a model of the default scenario's network
    (Hanoi), ``simulations/default_scenario.yaml``; else the middle of the model's training
    design (its first injection node and mode, each range's midpoint, the injection start
    and the bulk decay at their low ends, as the app's form starts, and the design's
    duration, steps and hydraulics where its card records them), or the plain defaults
    at the first reservoir for a card without a design.

    Args:
        network: The model's network (:func:`model_network`), when already loaded.
    """
    own = Path(model_dir, MODEL_SCENARIO)
    if own.is_file():
        return load_config(own).scenario_config(0)
    card = read_card(model_dir)
    fallback = load_config(DEFAULT_SCENARIO)
    if card.data.network.name == fallback.scenario.network:
        return fallback.scenario_config(0)
    network = network or model_network(model_dir)
    local = network.inp_path.resolve().parent == Path(model_dir).resolve()
    name = network.inp_path.resolve() if local else network.name
    envelope = card.design
    if envelope is None:
        return ScenarioConfig(network=str(name))
    step = envelope.reporting_step_s
    factors = {
        key: lo if key in ("injection_start_s", "bulk_decay_per_day") else (lo + hi) / 2
        for key, (lo, hi) in envelope.ranges.items()
    }
    node = envelope.injection_nodes[0] if envelope.injection_nodes else None
    return ScenarioConfig(
        network=str(name),
        reporting_step_s=step,
        hydraulic_step_s=envelope.hydraulic_step_s or step,
        pattern_step_s=envelope.pattern_step_s or step,
        quality_step_s=envelope.quality_step_s or min(60, step),
        **({"duration_s": envelope.duration_s} if envelope.duration_s else {}),
        injection_node=None if node in network.reservoirs else node,
        injection_mode=envelope.injection_modes[0] if envelope.injection_modes else "constant",
        **{k: round(v) if DRAWN_RANGES[k] else v for k, v in factors.items()},
        **envelope.trained_hydraulics,
    )


def default_timeline(model_dir: str | Path) -> Path | None:
    """The folder's ``default_timeline.npz`` while it is current for the model
    (:func:`timeline_is_current`), else None (the caller computes it into its cache)."""
    path = Path(model_dir, MODEL_TIMELINE)
    return path if timeline_is_current(path, model_dir) else None
