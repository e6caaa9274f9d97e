"""Commands that make and describe data: ``simulate`` (a WAQ dataset from a YAML config) and
``data-stats``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from ..errors import WdnExplainError
from .common import _fail, _resumable, app


@app.command()
def simulate(
    config: Path = typer.Option(
        Path("simulations/waq.yaml"), help="simulation YAML file (shipped ones found anywhere)"
    ),
    out: Path = typer.Option(..., help="output folder (created; resumed if it holds this config)"),
    workers: int = typer.Option(
        0, help="worker processes (0: all cores; more than the cores are capped, with a warning)"
    ),
    overwrite: bool = typer.Option(False, help="replace a folder made from another config"),
    yes: bool = typer.Option(False, "--yes", help="proceed beyond the size limits"),
    scheduler: str = typer.Option(
        None, help="Dask scheduler address (default: the config's scheduler key, else local)"
    ),
) -> None:
    """Simulate the scenarios of a config (e.g. the WAQ dataset) into a folder."""
    from ..progress import progress_callback
    from ..scenario import load_config
    from ..shipped import shipped
    from ..waq import folder_hydraulics_summary, generate_waq
    from ..workers import worker_count

    with _resumable(f"finished scenarios are kept in {out}; run again to resume"):
        workers, capped = worker_count(workers)
        if capped:
            typer.echo(f"warning: {capped}", err=True)
        cfg = load_config(shipped(config))
        with progress_callback(True, "simulate") as cb:
            generate_waq(
                cfg,
                out,
                n_workers=workers,
                overwrite=overwrite,
                allow_large=yes,
                progress=cb,
                scheduler=scheduler or cfg.scheduler,
                notice=typer.echo,
            )
    typer.echo(f"{cfg.n_scenarios} scenarios in {out}")
    for line in folder_hydraulics_summary(out).lines:
        typer.echo(f"warning: {line}", err=True)


@app.command("data-stats")
def data_stats(
    folder: Path = typer.Argument(..., help="WAQ folder"),
    horizon: int = typer.Option(4, help="forecast lead in reported steps"),
    threshold: float = typer.Option(0.05, help="chlorine (mg/L) that counts as chlorinated"),
) -> None:
    """Print counts, shapes, the label distribution, the drawn scenario factors and chlorine
    arrival times."""
    from ..dataset import WaqDataset, arrival_steps, load_waq_arrays
    from ..design import factor_levels
    from ..features import describe_sensors
    from ..narrative import natural_key
    from ..scenario import SimulationConfig

    try:
        arrays = load_waq_arrays(folder)
        sets = {
            s: WaqDataset(folder, s, horizon=horizon, threshold=threshold, arrays=arrays)
            for s in ("train", "calib", "val", "test")
        }
    except WdnExplainError as exc:
        _fail(exc)
    n_s, n_t, n = arrays.chlorine_mg_l.shape
    manifest = arrays.manifest
    step = int(arrays.times_s[1] - arrays.times_s[0]) if n_t > 1 else 0
    typer.echo(
        f"network        {manifest.network.name} ({n} nodes, {manifest.network.n_links} links)"
    )
    typer.echo(
        f"scenarios      {n_s} x {n_t} reported steps of {step} s (config {manifest.config_hash})"
    )
    for split, ds in sets.items():
        typer.echo(f"{split:<14} {len(ds.scenarios)} scenarios, {len(ds)} samples")
    sample = sets["train"][0] if len(sets["train"]) else sets["test"][0]
    typer.echo(
        f"sample shapes  x {tuple(sample.x.shape)}, edge_index {tuple(sample.edge_index.shape)}, "
        f"edge_attr {tuple(sample.edge_attr.shape)}, y {tuple(sample.y.shape)}"
    )
    y = np.concatenate([ds.targets() for ds in sets.values()])
    q = np.quantile(y, [0, 0.25, 0.5, 0.75, 1])
    typer.echo(
        f"label y        mean {y.mean():.3f}, min/q1/median/q3/max {' / '.join(f'{v:.3f}' for v in q)}, "
        f"{(y == 0).mean():.1%} zero, {(y == 1).mean():.1%} one"
    )
    typer.echo(f"flow scale     {sets['train'].inputs.flow_scale_lps:.1f} L/s")
    typer.echo(f"hydraulics     {arrays.configs[0].describe_hydraulics()}")
    sensors = SimulationConfig.from_record(manifest.config).sensors
    typer.echo(f"sensors        {describe_sensors(sensors and sensors.quality_node_sensors)}")
    for line in arrays.hydraulics.lines:
        typer.echo(f"warning: {line}", err=True)
    _echo_factors(arrays.configs, tuple(manifest.network.reservoirs), factor_levels)
    arrival = arrival_steps(arrays.chlorine_mg_l, threshold)
    typer.echo(
        f"arrival of chlorine >= {threshold:g} mg/L per node (mean over scenarios reaching it):"
    )
    typer.echo(f"  {'node':>6} {'reached':>8} {'mean step':>10} {'mean s':>8}")
    node_ids = manifest.network.node_ids
    for k in sorted(range(len(node_ids)), key=lambda k: natural_key(node_ids[k])):
        nid = node_ids[k]
        hit = arrival[:, k][arrival[:, k] >= 0]
        mean = hit.mean() if len(hit) else float("nan")
        typer.echo(f"  {nid:>6} {len(hit) / n_s:>8.0%} {mean:>10.1f} {mean * step:>8.0f}")


def _echo_factors(configs, reservoirs: tuple[str, ...], factor_levels) -> None:
    """What the design drew: a table of scenario counts per level of every factor, the drawn
    range of every numeric factor, and the injection nodes (numeric ids by value)."""
    from collections import Counter

    from ..narrative import natural_key
    from ..scenario import DRAWN_RANGES

    levels = [factor_levels(c, reservoirs) for c in configs]
    typer.echo("scenario factors (scenarios per level):")
    for factor in levels[0]:
        counts = Counter(lv[factor] for lv in levels)
        shown = ", ".join(f"{level} {count}" for level, count in sorted(counts.items()))
        typer.echo(f"  {factor:<10} {shown}")
    typer.echo("drawn values (min / mean / max over scenarios):")
    for name in DRAWN_RANGES:
        v = np.array([getattr(c, name) for c in configs], dtype=float)
        typer.echo(f"  {name:<24} {v.min():>9.3f} {v.mean():>9.3f} {v.max():>9.3f}")
    nodes = Counter(c.injection_node or "(reservoir)" for c in configs)
    typer.echo(
        f"injection nodes ({len(nodes)}): "
        + ", ".join(
            f"{node} {count}"
            for node, count in sorted(nodes.items(), key=lambda kv: natural_key(kv[0]))
        )
    )
