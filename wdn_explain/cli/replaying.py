"""``wdn-explain replay``: a sensor model's forecasts and explanations from readings, step by
step (:mod:`wdn_explain.replay`)."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import _resumable, _scenario_from, app


@app.command()
def replay(
    readings: Path = typer.Argument(
        ...,
        help="readings: a CSV (time_s,chlorine_mg_l@<node>,...) or an EPyT-Flow ScadaData file "
        "(.epytflow_scada_data)",
    ),
    scenario: str = typer.Option(
        None,
        help="scenario YAML file or inline YAML mapping: the dosing plan and the hydraulics "
        "[default: the model's default scenario]",
    ),
    model: Path = typer.Option(
        Path("models/hanoi-sensors"), help="a sensor model folder (train --sensors)"
    ),
    out: Path = typer.Option(..., help="replay folder: one file per step; a rerun resumes"),
    index: int = typer.Option(0, help="which scenario of a multi-scenario file"),
    follow: bool = typer.Option(
        False, help="keep reading the file as it grows, until the scenario's last report"
    ),
    poll: float = typer.Option(1.0, help="with --follow, seconds between reads"),
    overwrite: bool = typer.Option(False, help="replace a replay of another model or scenario"),
) -> None:
    """Replay sensor readings: at each report, the forecast at every node, its interval, the
    risk of non-compliance and the exact explanation over the sensors, one line per step.
    Bad readings (missing, out of range, stuck, drifting) are marked and left out; a bad file
    is refused in one line with nothing written."""
    from ..model_folder import read_card
    from ..replay import ReplayStep
    from ..replay import replay as run
    from ..shipped import default_scenario, shipped

    model = shipped(model)
    with _resumable(f"replayed steps are kept in {out}; run again to resume"):
        spec = default_scenario(model) if scenario is None else _scenario_from(scenario, index)
        inputs = read_card(model).input_spec

        def show(step: ReplayStep) -> None:
            typer.echo(step.summary(inputs.quality_node_sensors, inputs.min_residual_mg_l))

        result, kept = run(
            readings,
            spec,
            model,
            out,
            follow=follow,
            poll_s=poll,
            overwrite=overwrite,
            on_step=show,
        )
    resumed = f" ({kept} kept from an earlier run)" if kept else ""
    typer.echo(f"replayed {len(result.steps)} steps{resumed} -> {out}")
