"""Training a node model's risk model (:mod:`.risk_model`) beside its forecaster: the
``train-risk`` command's work."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import recipe
from .errors import ConfigError, DataError
from .features import check_min_residual
from .progress import ProgressArg
from .risk_model import RISK_WEIGHTS, initial_risk_model, outcome_samples, risk_record


def train_risk_model(
    model_dir: str | Path,
    data_dir: str | Path,
    *,
    min_residual_mg_l: float | None = None,
    epochs: int = recipe.RISK_EPOCHS,
    num_layers: int | None = None,
    members: int = recipe.RISK_MEMBERS,
    device: str = "auto",
    overwrite: bool = False,
    progress: ProgressArg = False,
) -> dict[str, Any]:
    """Train a node model's risk model on its own data folder and calibrate its heads: writes
    ``risk.pt`` and the card's ``risk`` record together (both or neither; the forecaster
    stays), then calibrates the card again (:func:`~.training.calibrate_model`: the
    intervals grouped by the risk, the test scores). Refused, with nothing written, for a share model, a minimum residual negative or
    not finite (default: the card's), a folder that already has a risk model (unless
    ``overwrite``), data of another design, splits without non-compliant node forecasts, or
    fewer ``num_layers`` than the forecaster's (default: its own plus
    :data:`~.recipe.RISK_ADDED_LAYERS`, added by :func:`~.model.deepened`) or ``members``
    below 1. ``members`` risk models are trained with seeds apart (the forecaster's seed, + 1,
    ...) and saved as one GNN, :func:`~.model.side_by_side` (their mean logit).

    An interruption (Ctrl-C) before the first epoch ends saves nothing (KeyboardInterrupt);
    after it, the best epoch so far is saved (``"interrupted": true`` in the risk record);
    during the calibration after the save, :class:`~.training.Unscored` is raised (the risk
    model is saved, ``calibrate`` groups the intervals by it).

    Returns:
        The updated card.
    """
    import torch

    from .dataset import WaqDataset
    from .files import atomic_write, check_output, claimed, write_torch
    from .model import deepened, side_by_side
    from .model_folder import CARD, file_sha256, load_model, resolve_device
    from .records import ModelCard
    from .risk import outcomes
    from .risk_net import RiskScorer
    from .training import TrainConfig, Unscored, calibrate_model, fit, own_data

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
    if members < 1:
        raise ConfigError(f"members must be >= 1 (got {members})")
    own_layers = forecaster.config.num_layers
    layers = own_layers + recipe.RISK_ADDED_LAYERS if num_layers is None else num_layers
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
        model = initial_risk_model(forecaster, splits["train"], minimum)
        start = model.gnn if isinstance(model, RiskScorer) else model  # fitted on risk inputs
        train_on, val_on = (outcome_samples(splits[s], minimum, model) for s in ("train", "val"))
        fitted, history, interrupted = [], [], False
        for member in range(members):  # seeds apart; served as their mean logit
            seed = config.seed + member
            gnn = deepened(copy.deepcopy(start), layers, seed).to(dev)
            try:
                result = fit(
                    gnn,
                    train_on,
                    val_on,
                    replace(config, seed=seed),
                    dev,
                    loss="logistic",
                    progress=progress,
                )
            except KeyboardInterrupt:
                if not fitted:
                    raise
                interrupted = True  # keep the members trained
                break
            gnn.load_state_dict(result.best_state)
            fitted.append(gnn.cpu())
            history += [row | {"member": member} for row in result.history]
            if result.interrupted:
                interrupted = True
                break
        gnn = side_by_side(fitted)
        if isinstance(model, RiskScorer):
            model.gnn = gnn
        else:
            model = gnn
        model.cpu().eval()
        heads = risk_record(forecaster, calib_set, minimum, model)
        trained = {
            "config": model.config.to_dict(),
            "added_inputs": list(model.added) if isinstance(model, RiskScorer) else [],
            "min_residual_mg_l": minimum,
            "train": {
                "epochs": epochs,
                "batch_size": config.batch_size,
                "lr": config.lr,
                "members": len(fitted),
            },
            "initial": f"the forecaster (weights_sha256 {card.weights_sha256}) with its head "
            "mapped by a logistic regression on the training split, the added inputs at zero "
            f"weights, {layers - own_layers} layer(s) added near the identity; {len(fitted)} "
            "such model(s) trained with seeds apart, side by side (their mean logit)",
            "history": history,
            "interrupted": interrupted,
            "device": str(dev),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        with (
            atomic_write(folder / CARD) as card_tmp,
            atomic_write(folder / RISK_WEIGHTS) as weights_tmp,
        ):
            write_torch(gnn.state_dict(), weights_tmp, folder / RISK_WEIGHTS)
            trained["weights_sha256"] = file_sha256(weights_tmp)
            record = card.to_json() | {"risk": heads | {"model": trained}}
            text = json.dumps(ModelCard.parse(record, folder / CARD).to_json(), indent=2)
            card_tmp.write_text(text)
    try:
        return calibrate_model(model_dir, data_dir, minimum)  # intervals grouped by the risk
    except KeyboardInterrupt:  # the risk model is saved; `calibrate` groups the intervals
        raise Unscored(folder) from None
