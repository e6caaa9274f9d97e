"""The risk model: a node GNN of the forecaster's family trained for the risk of
non-compliance (issue 31), beside the forecaster in its model folder (``risk.pt``).

The forecaster's own forecast is a poor score for "chlorine at the horizon below the
minimum": a logistic head on it (:mod:`.risk`) cannot see what the forecast averages away.
The risk model sees the forecaster's inputs and is trained with the log loss on that
outcome: :class:`~.model.NodeChlorineGNN`'s architecture (edge-feature message passing, a
linear head on every node), its output g_i a logit. It starts from the forecaster's weights,
its head mapped by the logistic regression of the outcome on the forecaster's output over
the training split (so it starts as a sensible risk and learns from there), and is fitted by
:func:`~.training.fit` (``loss="logistic"``, early stopping on the validation log loss). The
calibration split then fits the card's heads on g_i (:func:`~.risk.fit_risk`: an affine map
per node and kind of injection, Platt scaling), so

    logit P(chlorine_i(t + h) < minimum) = a_ik + b_ik g_i,

and the engine's exact interaction indices of g_i (the risk model is explained like the
forecaster) times b_ik are those of the risk's logit. The card's ``risk`` record holds the
heads and ``model`` (architecture, training, the minimum it learnt, the weights' SHA-256,
checked on load like ``model.pt``'s); a card without ``model`` reads its heads on the
forecast, as before.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import recipe
from .errors import ConfigError, DataError
from .features import check_min_residual
from .progress import ProgressArg

if TYPE_CHECKING:
    import torch

    from .dataset import StackedSamples, WaqDataset
    from .model import NodeChlorineGNN
    from .records import ModelCard

RISK_WEIGHTS = "risk.pt"


def load_risk_model(
    model_dir: str | Path, card: ModelCard, map_location: str = "cpu"
) -> NodeChlorineGNN | None:
    """The folder's risk model (eval mode; SHA-256 checked), None for a card without one."""
    from .model import ModelConfig, NodeChlorineGNN
    from .model_folder import load_state

    record = (card.risk or {}).get("model")
    if record is None:
        return None
    try:
        model = NodeChlorineGNN(ModelConfig(**record["config"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"model card of '{model_dir}' is corrupt: risk model ({exc})") from None
    return load_state(model, model_dir, record["weights_sha256"], map_location, RISK_WEIGHTS)


def risk_scorer(model_dir: str | Path, card: ModelCard, forecaster: torch.nn.Module):
    """The network whose node outputs the card's risk heads read: the risk model where the
    folder has one, else the forecaster itself."""
    return load_risk_model(model_dir, card) or forecaster


SCORES = {False: "the node forecast", True: "the risk model's output (risk.pt)"}
"""What the risk heads read, by whether the folder has a risk model (the record's method)."""


def risk_record(
    scorer: torch.nn.Module,
    calib_set: WaqDataset,
    min_residual_mg_l: float,
    risk_model: bool = False,
) -> dict[str, Any] | None:
    """The card's ``risk`` heads (:func:`~.risk.fit_risk`) on ``scorer``'s node outputs over
    the calibration split at ``min_residual_mg_l`` (``scorer`` the risk model or the
    forecaster); None for a share model."""
    from .evaluation import predict
    from .risk import fit_risk

    if not calib_set.inputs.node_level:
        return None
    return fit_risk(
        predict(scorer, calib_set),
        calib_set.targets(),
        calib_set.factor_levels()["injection"],
        min_residual_mg_l,
        f"'{calib_set.folder}'",
        SCORES[risk_model],
    )


def recalibrated_risk(
    model_dir: str | Path,
    card: ModelCard,
    forecaster: torch.nn.Module,
    calib_set: WaqDataset,
    min_residual_mg_l: float,
) -> dict[str, Any] | None:
    """The card's ``risk`` record calibrated again (``calibrate``): the heads on the risk
    model's outputs, its ``model`` record kept, or on the forecast without a risk model.

    Raises:
        ConfigError: a risk model trained for another minimum residual.
    """
    trained = (card.risk or {}).get("model")
    if trained is not None and trained["min_residual_mg_l"] != min_residual_mg_l:
        raise ConfigError(
            f"min_residual_mg_l: the risk model of '{model_dir}' learnt chlorine below "
            f"{trained['min_residual_mg_l']:g} mg/L, not {min_residual_mg_l:g}: train it again "
            f"with `wdn-explain train-risk --min-residual {min_residual_mg_l:g}` (got "
            f"{min_residual_mg_l:g})"
        )
    scorer = risk_scorer(model_dir, card, forecaster)
    record = risk_record(scorer, calib_set, min_residual_mg_l, trained is not None)
    return record if trained is None else record | {"model": trained}


def outcome_samples(dataset: WaqDataset, min_residual_mg_l: float) -> StackedSamples:
    """A node dataset's stacked samples labelled 1 where the chlorine at the horizon lies
    below ``min_residual_mg_l``, else 0."""
    stacked = dataset.stacked()
    return replace(stacked, y=(stacked.y < min_residual_mg_l).float())


def initial_risk_model(
    forecaster: NodeChlorineGNN, train_set: WaqDataset, min_residual_mg_l: float
) -> NodeChlorineGNN:
    """A copy of the forecaster whose head outputs a + b f_i: the logistic regression of
    the outcome on its forecast f_i over the training split (one a, b for every node)."""
    import copy

    import torch
    from sklearn.linear_model import LogisticRegression

    from .evaluation import predict
    from .risk import PRECISION

    forecast = predict(forecaster, train_set).reshape(-1, 1)
    below = (train_set.targets() < min_residual_mg_l).reshape(-1)
    head = LogisticRegression(C=PRECISION, max_iter=1000).fit(forecast, below)
    model = copy.deepcopy(forecaster)
    with torch.no_grad():
        model.readout.weight.mul_(float(head.coef_[0, 0]))
        model.readout.bias.mul_(float(head.coef_[0, 0])).add_(float(head.intercept_[0]))
    return model


def train_risk_model(
    model_dir: str | Path,
    data_dir: str | Path,
    *,
    min_residual_mg_l: float | None = None,
    epochs: int = recipe.RISK_EPOCHS,
    device: str = "auto",
    overwrite: bool = False,
    progress: ProgressArg = False,
) -> dict[str, Any]:
    """Train a node model's risk model on its own data folder and calibrate its heads: writes
    ``risk.pt`` and the card's ``risk`` record together (both or neither; the forecaster
    stays). Refused, with nothing written, for a share model, a minimum residual negative or
    not finite (default: the card's), a folder that already has a risk model (unless
    ``overwrite``), data of another design, or splits without non-compliant node forecasts.

    Returns:
        The updated card.
    """
    import torch

    from .dataset import WaqDataset
    from .files import atomic_write, check_output, claimed, write_torch
    from .model_folder import CARD, file_sha256, load_model, resolve_device
    from .records import ModelCard
    from .risk import outcomes
    from .training import TrainConfig, fit, own_data

    forecaster, card = load_model(model_dir)
    if not card.input_spec.node_level:
        raise DataError(
            f"model '{model_dir}' forecasts the share of chlorinated nodes: the risk of "
            "non-compliance needs a node model (`train --target node`)"
        )
    minimum = check_min_residual(
        card.input_spec.min_residual_mg_l if min_residual_mg_l is None else min_residual_mg_l
    )
    if not overwrite and (card.risk or {}).get("model") is not None:
        raise DataError(f"model '{model_dir}' has a risk model; use --overwrite to replace it")
    folder = Path(model_dir)
    for name in (RISK_WEIGHTS, CARD):
        check_output(folder / name, what="model file")
    dev = resolve_device(device)
    with claimed(folder, "model folder"):
        arrays = own_data(model_dir, card, data_dir)
        splits = {s: WaqDataset.for_card(card, data_dir, s, arrays) for s in ("train", "val")}
        calib_set = WaqDataset.for_card(card, data_dir, "calib", arrays)
        for split in (*splits.values(), calib_set):  # before training
            outcomes(split.targets(), minimum, f"'{data_dir}' ({split.split})")
        # the recipe's optimisation, the forecaster's seed
        config = TrainConfig(epochs=epochs, seed=card.train.get("seed", 0)).for_device(dev)
        torch.manual_seed(config.seed)
        model = initial_risk_model(forecaster, splits["train"], minimum).to(dev)
        result = fit(
            model,
            outcome_samples(splits["train"], minimum),
            outcome_samples(splits["val"], minimum),
            config,
            dev,
            loss="logistic",
            progress=progress,
        )
        model.load_state_dict(result.best_state)
        model.cpu().eval()
        heads = risk_record(model, calib_set, minimum, risk_model=True)
        trained = {
            "config": model.config.to_dict(),
            "min_residual_mg_l": minimum,
            "train": {"epochs": epochs, "batch_size": config.batch_size, "lr": config.lr},
            "initial": f"the forecaster (weights_sha256 {card.weights_sha256}) with its head "
            "mapped by a logistic regression on the training split",
            "history": result.history,
            "interrupted": result.interrupted,
            "device": str(dev),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        with (
            atomic_write(folder / CARD) as card_tmp,
            atomic_write(folder / RISK_WEIGHTS) as weights_tmp,
        ):
            write_torch(model.state_dict(), weights_tmp, folder / RISK_WEIGHTS)
            trained["weights_sha256"] = file_sha256(weights_tmp)
            record = card.to_json() | {"risk": heads | {"model": trained}}
            text = json.dumps(ModelCard.parse(record, folder / CARD).to_json(), indent=2)
            card_tmp.write_text(text)
    return record
