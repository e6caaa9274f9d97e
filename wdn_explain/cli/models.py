"""Commands on forecasting models: ``train``, ``evaluate`` (against the baselines),
``calibrate`` (conformal intervals) and ``train-risk`` (a node model's risk model)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from .. import recipe
from ..errors import ConfigError, WdnExplainError, WdnExplainWarning
from ..features import DEFAULT_HORIZON, DEFAULT_THRESHOLD
from .common import _auto, _fail, _optional, _resumable, app


@contextmanager
def _training(saved: str) -> Iterator[None]:
    """A training command's run (:func:`_resumable`: a project error exits 1, Ctrl-C 130):
    interrupted before the first epoch ended, nothing is saved; after training
    (:class:`~wdn_explain.training.Unscored`), ``saved`` says what is kept and how to finish."""
    from ..training import Unscored

    with _resumable("nothing is saved (the first epoch had not ended)"):
        try:
            yield
        except Unscored:
            typer.echo(f"interrupted after training: {saved}")
            raise typer.Exit(130) from None


@app.command()
def train(
    data: Path = typer.Option(..., help="WAQ folder (from `simulate`)"),
    out: Path = typer.Option(..., help="model folder to write (model.pt, card.json)"),
    epochs: int = typer.Option(recipe.EPOCHS, help="maximum epochs (early stopping on validation)"),
    hidden: int = typer.Option(recipe.HIDDEN_CHANNELS, help="hidden channels"),
    layers: int = typer.Option(recipe.NUM_LAYERS, help="message-passing layers"),
    batch_size: str = typer.Option(
        "auto", help="graphs per batch, or auto: 2048 on a GPU, 64 on a CPU"
    ),
    lr: str = typer.Option("auto", help="peak learning rate, or auto: 3e-3 x sqrt(batch / 64)"),
    warmup_epochs: str = typer.Option(
        "auto", help="epochs of linear learning-rate warm-up, or auto: 2 above batch 64, else 0"
    ),
    schedule: str = typer.Option(
        recipe.SCHEDULE,
        help="learning-rate schedule after the warm-up: cosine (down to 1 % of the peak) or "
        "plateau (halved when the validation MAE stalls)",
    ),
    ema_decay: str = typer.Option(
        str(recipe.EMA_DECAY),
        help="decay of the weights' moving average that is validated and saved, or none",
    ),
    horizon: int = typer.Option(DEFAULT_HORIZON, help="forecast lead in reported steps"),
    threshold: float = typer.Option(
        DEFAULT_THRESHOLD, help="chlorine that counts as chlorinated, in the first feature's unit"
    ),
    features: str = typer.Option(
        ",".join(recipe.NODE_FEATURES),
        help="node features, comma-separated: chlorine_mg_l, source_mg_l, source_plan_mg_l "
        "(the dosing plan over the horizon), chlorine_history_mg_l (chlorine at the horizon's "
        "number of previous reports), source_arrival_mg_l (the setpoint reaching each node "
        "now and at the horizon by plug flow along the flows now), chlorine_fraction (the WAQ "
        "paper's model: chlorine_fraction)",
    ),
    edge_features: str = typer.Option(
        ",".join(recipe.EDGE_FEATURES),
        help="edge features, comma-separated: flow (signed flow), pipe_flushes (signed flushes "
        "of the pipe per report step: its inverse travel time, capped at the horizon)",
    ),
    target: str = typer.Option(
        "share",
        help="share (the share of chlorinated nodes) or node (chlorine in mg/L at every node, "
        "and the share of nodes below --min-residual derived from it)",
    ),
    min_residual: float = typer.Option(
        0.2, help="with --target node: the minimum chlorine residual (mg/L) of the compliance share"
    ),
    sensors: str = typer.Option(
        None,
        help="chlorine sensors (EPyT-Flow's quality_node_sensors), comma-separated node ids: "
        "the model reads chlorine only there; all: at every node [default: the data design's "
        "sensors, else every node]",
    ),
    seed: int = typer.Option(0, help="seed of initialisation and shuffling"),
    device: str = typer.Option("auto", help="auto (CUDA when available), cpu, cuda or cuda:N"),
    network: str = typer.Option(None, help="refuse data simulated on another network"),
    overwrite: bool = typer.Option(False, help="replace a model already in --out"),
) -> None:
    """Train the forecasting GNN; saves weights and a model card."""
    from ..explain.threads import numeric_threads
    from ..features import InputSpec
    from ..model import ModelConfig
    from ..scoring import metrics_line
    from ..training import TrainConfig
    from ..training import train as run_training

    saved = (
        f"the model is saved in {out} without its intervals and test scores; "
        f"`wdn-explain calibrate --model {out} --data {data}` adds them"
    )
    with _training(saved):
        node_features = tuple(f.strip() for f in features.split(",") if f.strip())
        quality_node_sensors = (
            None
            if sensors is None
            else "all"
            if sensors.strip() == "all"
            else tuple(n.strip() for n in sensors.split(",") if n.strip())
        )
        edges = tuple(f.strip() for f in edge_features.split(",") if f.strip())
        label = {"node": "node_chlorine_mg_l", "share": "share"}.get(target)
        if label is None:
            raise ConfigError(f"--target must be share or node (got '{target}')")
        InputSpec(
            node_features=node_features,
            horizon=horizon,
            threshold=threshold,
            target=label,
            min_residual_mg_l=min_residual,
            quality_node_sensors=None if quality_node_sensors == "all" else quality_node_sensors,
            edge_features=edges,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", WdnExplainWarning)
            # one thread for torch, OpenMP and BLAS unless the user chose: a busy machine's
            # default threads spin (17x slower epochs measured in onboarding, docs/speed.md)
            with numeric_threads():
                card = run_training(
                    data,
                    out,
                    model_config=ModelConfig(
                        hidden_channels=hidden,
                        num_layers=layers,  # in and edge channels: from the features
                    ),
                    train_config=TrainConfig(
                        epochs=epochs,
                        batch_size=_auto(batch_size, "batch size", int),
                        lr=_auto(lr, "lr", float),
                        warmup_epochs=_auto(warmup_epochs, "warmup epochs", int),
                        schedule=schedule,
                        ema_decay=_optional(ema_decay, "ema decay"),
                        horizon=horizon,
                        threshold=threshold,
                        node_features=node_features,
                        seed=seed,
                        target=label,
                        min_residual_mg_l=min_residual,
                        quality_node_sensors=quality_node_sensors,
                        edge_features=edges,
                    ),
                    device=device,
                    network=network,
                    overwrite=overwrite,
                    progress=True,
                )
    for warning in caught:
        if issubclass(warning.category, WdnExplainWarning):
            typer.echo(f"warning: {warning.message}", err=True)
    m = card["metrics"]
    if card["interrupted"]:
        typer.echo("interrupted: saved the best epoch so far")
    scores = f"test {metrics_line(m)}" if m else "no test scenarios to score"
    typer.echo(
        f"saved {out} ({len(card['history'])} epochs on {card['device']}, "
        f"{card['epoch_seconds']:.1f} s/epoch): {scores}"
    )
    for warning in m.get("warnings", []):
        typer.echo(f"warning: {warning}")


@app.command()
def evaluate(
    model: Path = typer.Option(
        None, help="model folder [default: $WDN_EXPLAIN_MODEL, else the shipped models/default]"
    ),
    data: Path = typer.Option(..., help="WAQ folder"),
    split: str = typer.Option("test", help="train, val, test or all"),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N"),
    fit_data: Path = typer.Option(
        None,
        help="WAQ folder whose training split the tree baseline is fitted on (the model's own "
        "training data when scoring fresh scenarios) [default: --data]",
    ),
) -> None:
    """Print MAE, RMSE and R² of the model beside persistence, the time-step climatology and
    a gradient-boosted tree on the same inputs, overall, per scenario factor (and whether a
    source switches within the horizon) and per time step."""
    from ..scoring import score_lines, score_model, score_warnings
    from ..shipped import default_model, shipped

    model = default_model() if model is None else shipped(model)
    try:
        scores = score_model(model, data, split, device, fit_data, progress=True)
    except WdnExplainError as exc:
        _fail(exc)
    for warning in score_warnings(scores):
        typer.echo(f"warning: {warning}", err=True)
    for line in score_lines(scores):
        typer.echo(line)


@app.command()
def calibrate(
    model: Path = typer.Option(..., help="model folder (its card.json is rewritten)"),
    data: Path = typer.Option(..., help="the WAQ folder the model was trained on"),
    min_residual: float = typer.Option(
        None,
        help="node models: the minimum residual (mg/L) of the risk of non-compliance "
        "(default: the card's)",
        show_default=False,
    ),
) -> None:
    """Calibrate a trained model's forecast intervals (split conformal, Mondrian), its
    uncertainty notice and a node model's risk of non-compliance on the held-out splits of
    its data, and score it again on the test split."""
    from ..explain.threads import numeric_threads
    from ..shipped import shipped
    from ..training import calibrate_model

    try:
        with numeric_threads():  # the refitted trees too: one thread unless the user chose
            card = calibrate_model(shipped(model), data, min_residual)
    except WdnExplainError as exc:
        _fail(exc)
    c, m = card["conformal"], card["metrics"]
    covered = f", test coverage {m['coverage']:.3f}" if "coverage" in m else ""
    typer.echo(
        f"calibrated {model}: {c['confidence']:.0%} intervals from {c['n_calibration']} "
        f"forecasts in {len(c['half_width'])} groups{covered}"
    )
    if r := card.get("risk"):
        typer.echo(_risk_summary(r))


def _risk_summary(r: dict) -> str:
    """A card's ``risk`` record in one line: its minimum, calibration error and Brier score."""
    return (
        f"risk of non-compliance (chlorine < {r['min_residual_mg_l']:g} mg/L) from "
        f"{r['n_calibration']} node forecasts: calibration error {r['calibration_error']:.4f}, "
        f"Brier score {r['brier']:.4f} on the calibration split"
    )


@app.command("train-risk")
def train_risk(
    model: Path = typer.Option(..., help="node model folder (risk.pt is written beside model.pt)"),
    data: Path = typer.Option(..., help="the WAQ folder the model was trained on"),
    min_residual: float = typer.Option(
        None,
        help="the minimum residual (mg/L) whose non-compliance the risk model learns "
        "(default: the card's)",
        show_default=False,
    ),
    epochs: int = typer.Option(
        recipe.RISK_EPOCHS, help="maximum epochs (early stopping on the validation Brier score)"
    ),
    layers: int = typer.Option(
        None,
        help="message-passing layers of the risk model (default: the forecaster's "
        f"+ {recipe.RISK_ADDED_LAYERS}; the added ones start near the identity)",
        show_default=False,
    ),
    members: int = typer.Option(
        recipe.RISK_MEMBERS,
        help="risk models trained with seeds apart, served as one (their mean logit)",
    ),
    device: str = typer.Option("auto", help="auto (CUDA when available), cpu, cuda or cuda:N"),
    overwrite: bool = typer.Option(False, help="replace the folder's risk model"),
) -> None:
    """Train a node model's risk of non-compliance: a GNN of the forecaster's family with a
    logistic loss on "chlorine at the horizon below the minimum residual", its output
    calibrated per node and kind of injection on the calibration split (card: ``risk``)."""
    from ..explain.threads import numeric_threads
    from ..risk_training import train_risk_model
    from ..shipped import shipped

    saved = (
        f"the risk model is saved in {model}, its intervals not yet grouped by it; "
        f"`wdn-explain calibrate --model {model} --data {data}` does it"
    )
    with _training(saved):
        with numeric_threads():
            card = train_risk_model(
                shipped(model),
                data,
                min_residual_mg_l=min_residual,
                epochs=epochs,
                num_layers=layers,
                members=members,
                device=device,
                overwrite=overwrite,
                progress=True,
            )
    r = card["risk"]
    history = r["model"]["history"]
    epochs = " + ".join(
        str(sum(row.get("member", 0) == m for row in history))
        for m in range(r["model"]["train"].get("members", 1))
    )
    if r["model"]["interrupted"]:
        typer.echo("interrupted: saved the best epoch so far")
    typer.echo(f"saved {Path(model) / 'risk.pt'} ({epochs} epochs): {_risk_summary(r)}")
