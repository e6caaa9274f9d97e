"""``network onboard``: a utility's own EPANET .inp becomes a model the app lists."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import recipe
from ..errors import ConfigError, WdnExplainError
from .common import _fail, _resumable, network_app


@network_app.command("onboard")
def onboard(
    inp: Path = typer.Argument(..., help="the network's EPANET .inp file"),
    out: Path = typer.Option(
        None,
        help="model folder (default: the file stem, lower case, in the user models folder, "
        "which the app lists: $WDN_EXPLAIN_MODELS, else ~/.local/share/wdn-explain/models)",
    ),
    scenarios: int = typer.Option(
        recipe.ONBOARD_SCENARIOS,
        help=f"scenarios of the default design (at least {recipe.ONBOARD_MIN_SCENARIOS})",
    ),
    epochs: int = typer.Option(
        recipe.ONBOARD_EPOCHS, help="maximum training epochs (early stopping)"
    ),
    layers: int = typer.Option(
        None, help="message-passing layers (default: 3 where exact explanations stay cheap, else 2)"
    ),
    seed: int = typer.Option(0, help="seed of the design and the training"),
    workers: int = typer.Option(0, help="simulation worker processes (0: all cores)"),
    device: str = typer.Option("auto", help="auto (CUDA when available), cpu, cuda or cuda:N"),
    overwrite: bool = typer.Option(
        False, help="start afresh in a folder that holds another design or model"
    ),
) -> None:
    """Check a network, write its default monitoring design (design.yaml), simulate it,
    train, calibrate and evaluate a forecaster (evaluation.txt) and explain its default
    scenario (default_scenario.yaml, default_timeline.npz): a model folder like the shipped
    ones. A network that cannot be simulated is refused in one line, with nothing written;
    run the same command again to resume an interrupted run."""
    from ..model_folder import read_card
    from ..onboard import onboard as run_onboarding
    from ..onboard import onboard_verdict
    from ..shipped import model_name_for, user_model_folder, water_models

    try:
        folder = out or user_model_folder(model_name_for(inp.name) or inp.name)
    except WdnExplainError as exc:
        _fail(ConfigError(f"{exc}; name the model folder with --out"))
    with _resumable(f"run the same command again to resume in {folder}"):
        done = run_onboarding(
            inp,
            folder,
            n_scenarios=scenarios,
            seed=seed,
            epochs=epochs,
            layers=layers,
            n_workers=workers or None,
            device=device,
            overwrite=overwrite,
            say=typer.echo,
            progress=True,
        )
    listed = done.folder.resolve() in {m.resolve() for m in water_models().values()}
    typer.echo(
        f"model folder {done.folder}: {onboard_verdict(read_card(done.folder))}; "
        + (
            "the app (`streamlit run app/main.py`) lists it"
            if listed
            else f"the app lists it with WDN_EXPLAIN_MODEL={done.folder.resolve()}"
        )
    )
