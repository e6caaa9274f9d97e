"""Generate the WaterQuality (WAQ) dataset: many seeded scenarios, one file each.

A WAQ folder holds ``manifest.json`` (config, its hash, seed, package versions, SHA-256 of
the network file) and ``scenario_00000.npz`` ... (format: :mod:`wdn_explain.simulation`).
Generation runs in worker processes, is resumable (finished files are kept and skipped;
every file is written under a temporary name and renamed, so a file that exists is
complete) and deterministic (the same config gives identical arrays).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
from collections.abc import Callable
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from .errors import ConfigError, DataError
from .files import atomic_write
from .network import Network, load_network
from .scenario import SimulationConfig
from .simulation import simulate

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
FORMAT = "wdn-explain-waq/2"  # 2: scenario files hold node_source_mg_l

Progress = Callable[[int, int], None]
"""Progress callback: ``progress(done, total)``."""


def scenario_path(folder: str | Path, index: int) -> Path:
    """Path of scenario ``index`` inside a WAQ folder."""
    return Path(folder) / f"scenario_{index:05d}.npz"


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("wdn-explain", "epyt-flow", "epyt", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def build_manifest(config: SimulationConfig, network: Network) -> dict[str, Any]:
    """The manifest written beside the scenario files."""
    return {
        "format": FORMAT,
        "config": config.model_dump(mode="json"),
        "config_hash": config.config_hash(),
        "seed": config.seed,
        "n_scenarios": config.n_scenarios,
        "network": {
            "name": network.name,
            "sha256": network.file_sha256,
            "n_nodes": network.n_nodes,
            "n_links": network.n_links,
            "node_ids": list(network.node_ids),
            "reservoirs": list(network.reservoirs),
            "link_nodes": network.link_nodes.tolist(),
        },
        "versions": _versions(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """Read a WAQ folder's manifest; DataError if the folder or manifest is missing or bad."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not folder.is_dir():
        raise DataError(f"data folder '{folder}' does not exist")
    if not path.is_file():
        raise DataError(f"'{folder}' is not a WAQ folder (no {MANIFEST})")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"manifest '{path}' is corrupt ({exc})") from None
    if manifest.get("format") != FORMAT:
        raise DataError(f"manifest '{path}' has format {manifest.get('format')!r}, not {FORMAT}")
    return manifest


def _prepare_folder(
    folder: Path, config: SimulationConfig, network: Network, overwrite: bool
) -> None:
    existing = sorted(folder.glob("scenario_*.npz")) if folder.is_dir() else []
    manifest_path = folder / MANIFEST
    if manifest_path.is_file() and not overwrite:
        old = read_manifest(folder)
        if old.get("config_hash") != config.config_hash():
            raise DataError(
                f"output folder '{folder}' holds a WAQ set of another config "
                f"(hash {old.get('config_hash')}, this one {config.config_hash()}); "
                "use --overwrite to replace it"
            )
        return
    if existing and not overwrite:
        raise DataError(
            f"output folder '{folder}' holds scenario files but no manifest; "
            "use --overwrite to replace them"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for path in existing:
        path.unlink()
    with atomic_write(manifest_path) as tmp:
        tmp.write_text(json.dumps(build_manifest(config, network), indent=2))


def check_config_nodes(config: SimulationConfig, network: Network) -> None:
    """ConfigError naming the key when the template or design names a node the network lacks."""
    named = [("scenario.injection_node", config.scenario.injection_node)]
    if config.design is not None:
        named += [
            ("design.injection_nodes", n) for n in config.design.booster_nodes(network.junctions)
        ]
    for key, node in named:
        if node is not None:
            try:
                network.node_index(node)
            except ConfigError as exc:
                raise ConfigError(f"{key}: {exc}") from None
    config.scenario_config(0, network.junctions)


_WORKER: dict[str, Any] = {}


def _init_worker(config_json: str, folder: str) -> None:
    config = SimulationConfig.model_validate_json(config_json)
    _WORKER.update(config=config, folder=folder, network=load_network(config.scenario.network))


def _run_one(index: int) -> int:
    config: SimulationConfig = _WORKER["config"]
    network = _WORKER["network"]
    result = simulate(config.scenario_config(index, network.junctions), network)
    result.save(scenario_path(_WORKER["folder"], index))
    return index


def generate_waq(
    config: SimulationConfig,
    folder: str | Path,
    *,
    n_workers: int | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Simulate every scenario of ``config`` into ``folder``; return the folder.

    Args:
        config: The WAQ design (template scenario, number of scenarios, master seed).
        folder: Output folder; created if missing.
        n_workers: Worker processes (default: all cores; 1 runs in this process).
        overwrite: Replace a folder made from another config instead of refusing.
        progress: Called as ``progress(done, total)`` after every scenario.

    Raises:
        DataError: the folder holds another config's files and ``overwrite`` is off.
        ConfigError: the config names an unknown network or injection node.
    """
    folder = Path(folder)
    network = load_network(config.scenario.network)
    check_config_nodes(config, network)  # before touching the folder
    _prepare_folder(folder, config, network, overwrite)
    todo = [i for i in range(config.n_scenarios) if not scenario_path(folder, i).exists()]
    total, done = config.n_scenarios, config.n_scenarios - len(todo)
    logger.info("WAQ: %d of %d scenarios to simulate in %s", len(todo), total, folder)
    if progress:
        progress(done, total)
    n_workers = max(1, min(n_workers or os.cpu_count() or 1, len(todo) or 1))
    args = (config.model_dump_json(), str(folder))
    if n_workers == 1:
        _init_worker(*args)
        results = map(_run_one, todo)
    else:
        pool = multiprocessing.get_context("fork").Pool(n_workers, _init_worker, args)
        results = pool.imap_unordered(
            _run_one, todo, chunksize=max(1, len(todo) // (8 * n_workers))
        )
    try:
        for _ in results:
            done += 1
            if progress:
                progress(done, total)
    finally:
        if n_workers > 1:
            pool.terminate()
            pool.join()
        _WORKER.clear()
    return folder
