"""Generate the WaterQuality (WAQ) dataset: many seeded scenarios, one file each.

A WAQ folder holds ``manifest.json`` (config, its hash, seed, package versions, SHA-256 of
the network file) and ``scenario_00000.npz`` ... (format: :mod:`wdn_explain.simulation`).
Generation runs in worker processes, is resumable (finished files are kept and skipped;
every file is written under a temporary name and renamed, so a file that exists is
complete) and deterministic (the same config gives identical arrays).
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .errors import ConfigError, DataError, WdnExplainError
from .files import atomic_write, check_output, read_json, remove_stray_temporaries
from .network import Network, load_network
from .records import ManifestNetwork, WaqManifest
from .scenario import SimulationConfig
from .servable import check_design
from .simulation import SimulationResult, injection_node, simulate
from .sizes import check_size, estimate_waq
from .workers import init_worker, scratch_folder, worker_count, working_directory

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


def build_manifest(config: SimulationConfig, network: Network) -> WaqManifest:
    """The manifest written beside the scenario files."""
    return WaqManifest(
        format=FORMAT,
        config=config.model_dump(mode="json"),
        config_hash=config.config_hash(),
        seed=config.seed,
        n_scenarios=config.n_scenarios,
        network=ManifestNetwork(
            name=network.name,
            sha256=network.file_sha256,
            n_nodes=network.n_nodes,
            n_links=network.n_links,
            node_ids=list(network.node_ids),
            reservoirs=list(network.reservoirs),
            link_nodes=network.link_nodes.tolist(),
        ),
        versions=_versions(),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def read_manifest(folder: str | Path) -> WaqManifest:
    """Read a WAQ folder's manifest as its typed record; DataError in one line if the folder
    or manifest is missing, corrupt (naming the field and value) or of another format."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not folder.is_dir():
        raise DataError(f"data folder '{folder}' does not exist")
    if not path.is_file():
        raise DataError(f"'{folder}' is not a WAQ folder (no {MANIFEST})")
    data = read_json(path, "manifest")
    if isinstance(data, dict) and data.get("format") != FORMAT:
        raise DataError(f"manifest '{path}' has format {data.get('format')!r}, not {FORMAT}")
    return WaqManifest.parse(data, path)


def _prepare_folder(
    folder: Path, config: SimulationConfig, network: Network, overwrite: bool
) -> None:
    existing = sorted(folder.glob("scenario_*.npz")) if folder.is_dir() else []
    manifest_path = folder / MANIFEST
    if manifest_path.is_file() and not overwrite:
        old = read_manifest(folder)
        if old.config_hash != config.config_hash():
            raise DataError(
                f"output folder '{folder}' holds a WAQ set of another config "
                f"(hash {old.config_hash}, this one {config.config_hash()}); "
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
        tmp.write_text(json.dumps(build_manifest(config, network).to_json(), indent=2))


def check_config_nodes(config: SimulationConfig, network: Network) -> None:
    """ConfigError naming the key when the template, design or sensor set names a node the
    network lacks, or when the network has nodes no reservoir or tank supplies."""
    network.check_connected()
    named = [("scenario.injection_node", config.scenario.injection_node)]
    if config.design is not None:
        named += [
            ("design.injection_nodes", n) for n in config.design.booster_nodes(network.junctions)
        ]
    if config.sensors is not None:
        named += [("sensors.quality_node_sensors", n) for n in config.sensors.quality_node_sensors]
    for key, node in named:
        if node is not None:
            try:
                network.node_index(node)
            except ConfigError as exc:
                raise ConfigError(f"{key}: {exc}") from None
    injection_node(config.scenario_config(0, network.junctions), network)


_WORKER: dict[str, Any] = {}
"""The inputs of this pool worker (or of the in-process run): config, network, folder."""


def _load_worker(config_json: str, folder: str) -> None:
    config, network = _inputs(config_json)
    _WORKER.update(config=config, folder=folder, network=network)


def _inputs(config_json: str) -> tuple[SimulationConfig, Network]:
    """A config and its loaded network (cluster workers keep the last few across tasks)."""
    if config_json not in _TASK_INPUTS:
        config = SimulationConfig.model_validate_json(config_json)
        _TASK_INPUTS[config_json] = (config, load_network(config.scenario.network))
        while len(_TASK_INPUTS) > 4:  # threads may trim at once: pop tolerates a missing key
            _TASK_INPUTS.pop(next(iter(_TASK_INPUTS), None), None)
    return _TASK_INPUTS[config_json]


_TASK_INPUTS: dict[str, tuple[SimulationConfig, Network]] = {}


def _init_worker(config_json: str, folder: str, parent_pid: int, scratch: str) -> None:
    _load_worker(config_json, folder)  # before init_worker changes the directory
    init_worker(parent_pid, scratch)


def _run_one(index: int) -> int:
    """Scenario ``index`` of this worker's config (:data:`_WORKER`) into its folder."""
    return _simulate_into(_WORKER["config"], _WORKER["network"], _WORKER["folder"], index)


def _run_guarded(index: int) -> int:
    """:func:`_run_one`, with a simulator failure turned into one line naming the scenario."""
    return _guarded(index, _run_one, index)


def _simulate_into(config: SimulationConfig, network: Network, folder: str, index: int) -> int:
    """Simulate scenario ``index`` and save its file into ``folder``."""
    result = simulate(config.scenario_config(index, network.junctions), network)
    result.save(scenario_path(folder, index))
    return index


def _guarded(index: int, fn: Callable[..., int], *args: Any) -> int:
    """``fn(*args)``, with a simulator failure of scenario ``index`` turned into one line."""
    try:
        return fn(*args)
    except WdnExplainError:
        raise
    except Exception as exc:  # EPANET/EPyT-Flow refusals: one line, not a worker traceback
        raise ConfigError(
            f"scenario {index} failed in the simulator ({type(exc).__name__}: {exc})"
        ) from None


def _run_task(config_json: str, folder: str, index: int) -> int:
    """Scenario ``index`` as a cluster task: skipped when its file is already complete (a
    retried or duplicated task), else simulated and saved atomically. The task leaves the
    working directory alone (a worker's threads share one): the worker already runs in
    its scratch folder (:class:`~.cluster.ScratchFolder`); it shares no state with tasks of
    other runs on the same worker."""
    config, network = _inputs(config_json)
    path = scenario_path(folder, index)
    if path.is_file() and _is_complete(path, config, network):
        return index
    return _guarded(index, _simulate_into, config, network, folder, index)


def _run_on_cluster(
    scheduler: str,
    config: SimulationConfig,
    folder: Path,
    todo: list[int],
    progress: Progress | None,
) -> None:
    """Run the ``todo`` scenarios as :func:`_run_task` tasks on the Dask cluster at
    ``scheduler``; ConfigError listing every failed scenario at the end."""
    from .cluster import failure_report, run_tasks

    config_json, where = config.model_dump_json(), str(folder.absolute())
    run = hashlib.sha256(f"{config.config_hash()} {where}".encode()).hexdigest()[:12]
    failures = run_tasks(
        scheduler,
        _run_task,
        [(f"simulate-{run}-scenario-{i:05d}", (config_json, where, i)) for i in todo],
        progress=progress,
        done=config.n_scenarios - len(todo),
        total=config.n_scenarios,
    )
    if failures:
        raise ConfigError(failure_report(failures, "scenarios"))


def _is_complete(path: Path, config: SimulationConfig, network: Network) -> bool:
    """Cheap check of a finished scenario file: loadable, the expected shapes."""
    try:
        result = SimulationResult.load(path)
    except DataError:
        return False
    return result.node_chlorine_mg_l.shape == (config.scenario.n_reports, network.n_nodes)


def _todo(folder: Path, config: SimulationConfig, network: Network) -> list[int]:
    """Scenarios still to simulate; a damaged finished file is removed and redone."""
    present = {entry.name for entry in os.scandir(folder)}
    todo = []
    for index in range(config.n_scenarios):
        path = scenario_path(folder, index)
        if path.name in present and _is_complete(path, config, network):
            continue
        if path.name in present:
            logger.warning("WAQ: %s is damaged; simulating it again", path)
            path.unlink()
        todo.append(index)
    return todo


def generate_waq(
    config: SimulationConfig,
    folder: str | Path,
    *,
    n_workers: int | None = None,
    overwrite: bool = False,
    allow_large: bool = False,
    progress: Progress | None = None,
    scheduler: str | None = None,
    notice: Callable[[str], None] | None = None,
) -> Path:
    """Simulate every scenario of ``config`` into ``folder``; return the folder.

    Args:
        config: The WAQ design (template scenario, number of scenarios, master seed).
        folder: Output folder; created if missing.
        n_workers: Worker processes (default: all usable cores, also the cap; 1 runs in
            this process).
        overwrite: Replace a folder made from another config instead of refusing.
        allow_large: Proceed with a set whose estimate exceeds :data:`~.sizes.LIMITS`.
        progress: Called as ``progress(done, total)`` after every scenario.
        scheduler: Address of a Dask scheduler to run the scenarios on (see
            :mod:`.cluster`; ``folder`` must be reachable by its workers); None runs here.
        notice: Called once, before simulating, with the hydraulics and the design check
            (:func:`~.servable.check_design`) in two lines.

    Raises:
        DataError: the folder holds another config's files and ``overwrite`` is off, or
            cannot be written.
        ConfigError: the config names an unknown network or injection node, a
            pressure-driven design asks more demand than the network serves at the required
            pressure in every corner (:func:`~.servable.check_design`), a scenario fails in
            the simulator, or the set is too large without ``allow_large``.
    """
    folder = check_output(folder, kind="dir", what="output folder")
    network = load_network(config.scenario.network)
    check_config_nodes(config, network)  # before touching the folder
    check = check_design(config, network)  # refuses a design no pressure serves
    n_workers, capped = worker_count(n_workers)
    if capped:
        logger.warning("WAQ: %s", capped)
    check_size(estimate_waq(config, network, n_workers), folder, allow_large=allow_large)
    if scheduler is not None:
        from .cluster import check_reachable

        check_reachable(scheduler)  # before anything is written
    if notice:
        notice(f"hydraulics     {config.scenario.describe_hydraulics()}\n{check.message}")
    new_manifest = not (folder / MANIFEST).is_file() or overwrite
    _prepare_folder(folder, config, network, overwrite)
    remove_stray_temporaries(folder, "scenario_*")
    todo = _todo(folder, config, network)
    total, done = config.n_scenarios, config.n_scenarios - len(todo)
    logger.info("WAQ: %d of %d scenarios to simulate in %s", len(todo), total, folder)
    if progress:
        progress(done, total)
    n_workers = max(1, min(n_workers, len(todo) or 1))
    try:
        if scheduler is not None:
            _run_on_cluster(scheduler, config, folder, todo, progress)
            return folder
        with scratch_folder() as scratch:
            # workers run inside ``scratch``: they need the folder's absolute path
            args = (config.model_dump_json(), str(folder.absolute()), os.getpid(), str(scratch))
            for _ in _results(todo, n_workers, args):
                done += 1
                if progress:
                    progress(done, total)
    except WdnExplainError:
        if new_manifest and not any(folder.glob("scenario_*.npz")):
            (folder / MANIFEST).unlink(missing_ok=True)  # let a corrected config start afresh
        raise
    return folder


def _results(todo: list[int], n_workers: int, args: tuple) -> Iterator[int]:
    """Run :func:`_run_guarded` on every index, in this process or in a pool, yielding as they end."""
    if n_workers == 1:
        config_json, folder, _, scratch = args
        _load_worker(config_json, folder)
        try:
            with working_directory(scratch):
                yield from map(_run_guarded, todo)
        finally:
            _WORKER.clear()
        return
    pool = multiprocessing.get_context("fork").Pool(n_workers, _init_worker, args)
    window = 256 * n_workers  # bounds the task queue on huge sets
    try:
        for start in range(0, len(todo), window):  # one at a time: smooth progress
            yield from pool.imap_unordered(_run_guarded, todo[start : start + window])
    finally:
        pool.terminate()
        pool.join()


class HydraulicsSummary(NamedTuple):
    """What a set of scenarios' hydraulics did, one line each (None: it did not happen)."""

    negative: str | None
    """How many have negative pressures (demand-driven runs: flows not physical there)."""
    unmet: str | None
    """How many deliver less than their demand (pressure-driven, below the required pressure)."""

    @property
    def lines(self) -> list[str]:
        return [line for line in self if line]


def hydraulics_summary(results: Iterable[SimulationResult]) -> HydraulicsSummary:
    """The :class:`HydraulicsSummary` of a set of scenarios."""
    negative, short, n = [], [], 0
    asked = delivered = 0.0
    for result in results:
        n += 1
        negative += [(result.node_pressure_m.min(), result)] if result.pressure_warning else []
        short += [result] if result.delivery_warning else []
        requested = result.node_requested_demand_lps.clip(min=0)
        asked += float(requested.sum())
        delivered += float(np.minimum(result.node_demand_lps, requested).clip(min=0).sum())
    low, worst = min(negative, key=lambda pair: pair[0]) if negative else (0.0, None)
    return HydraulicsSummary(
        negative=(
            f"negative pressure in {len(negative)} of {n} scenarios, down to {low:.4g} m"
            + (
                " (demand-driven: flows and chlorine there are not physical; demand_model: PDA "
                "avoids it)"
                if worst.config.demand_model != "PDA"
                else ""
            )
            + f", e.g. seed {worst.config.seed}: {worst.pressure_warning}"
        )
        if worst
        else None,
        unmet=(
            f"demand not met in {len(short)} of {n} scenarios ({delivered / max(asked, 1e-12):.1%} "
            f"of all demand delivered), e.g. seed {short[0].config.seed}: "
            f"{short[0].delivery_warning}"
        )
        if short
        else None,
    )


def folder_hydraulics_summary(folder: str | Path) -> HydraulicsSummary:
    """:func:`hydraulics_summary` of the scenario files a WAQ folder holds."""
    paths = sorted(Path(folder).glob("scenario_*.npz"))
    return hydraulics_summary(SimulationResult.load(p) for p in paths)
