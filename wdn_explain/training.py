"""Train, save, load and evaluate the forecasting GNN.

A model folder holds ``model.pt`` (a state_dict, loaded with ``weights_only=True``) and
``card.json`` (architecture, training config, data manifest hash and network, feature
scales, metrics, code version, date). Training uses L1 loss, Adam, a cosine (or plateau)
learning-rate schedule, an exponential moving average of the weights and early stopping on
the validation split, all seeded. Predicting and scoring a model: :mod:`.evaluation`.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch.optim import swa_utils

from . import recipe
from .conformal import (
    NODE_GROUPS,
    RISK_BANDS,
    RISK_GROUPS,
    SHARE_GROUPS,
    absolute_errors,
    calibrate,
)
from .dataset import StackedSamples, WaqArrays, WaqDataset, load_waq_arrays
from .design import DesignEnvelope
from .errors import ConfigError, DataError, WdnExplainWarning
from .evaluation import (
    check_data_matches,
    eval_batch_size,
    evaluate,
    forecast_bins,
    model_outputs,
    place,
    predict,
    with_tree_scores,
)
from .features import (
    DEFAULT_HORIZON,
    DEFAULT_MIN_RESIDUAL_MG_L,
    DEFAULT_THRESHOLD,
    LABEL_RANGE,
    InputSpec,
    Target,
    check_min_residual,
)
from .files import claimed
from .model import ModelConfig, forecaster
from .model_folder import (
    CARD,
    check_model_output,
    load_model,
    resolve_device,
    save_model,
    write_card,
)
from .notice import MIN_SCENARIOS as NOTICE_MIN_SCENARIOS
from .notice import design_notice, held_out_errors
from .progress import ProgressArg
from .records import ModelCard, WaqManifest
from .risk import outcomes
from .risk_model import dataset_risk, load_risk_model, recalibrated_risk, risk_record
from .scenario import ScenarioConfig, SimulationConfig, checked_sensors

logger = logging.getLogger(__name__)


BASE_BATCH_SIZE = 64
BASE_LR = 3e-3
AUTO_BATCH_SIZE = {"cuda": 2048, "cpu": 64}
"""``batch_size=None`` per device type. On a GPU a step costs about the same from 64 to a few
thousand graphs (launch-bound), so large batches cut the epoch time by their size; on a CPU
the cost follows the samples, and batch 64 reached the best test MAE per wall second of the
sizes measured (README, "Training")."""
AUTO_WARMUP_EPOCHS = 2
"""``warmup_epochs=None``: this many epochs above batch 64, none at 64 or below."""
LOSSES = {
    "l1": torch.nn.functional.l1_loss,
    "logistic": torch.nn.functional.binary_cross_entropy_with_logits,
}
"""Training losses of :func:`fit` by name: ``l1`` for a forecast (the MAE), ``logistic`` for
a logit whose label is an outcome in {0, 1} (the log loss; the risk model, :mod:`.risk_model`)."""


def brier_of_logits(logit: torch.Tensor, outcome: torch.Tensor) -> torch.Tensor:
    """The Brier score of the probabilities sigmoid(``logit``) of the 0/1 ``outcome``."""
    return (torch.sigmoid(logit) - outcome).square().mean()


SELECTED_BY = {"logistic": ("brier", brier_of_logits)}
"""The validation score :func:`fit` keeps and stops on where it is not the loss itself: a
risk is judged by its Brier score (issue 31), which the log loss's best epoch does not
minimise (a 4-layer risk model on Hanoi: fresh Brier 0.00344 at the best validation log
loss, 0.00333 at the best validation Brier; docs, forecasting)."""
SCHEDULES = ("cosine", "plateau")
"""Learning-rate schedules after the warm-up: ``cosine`` decays to ``final_lr_fraction`` of
the peak over the remaining steps; ``plateau`` halves it when the validation MAE stalls."""


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (stored, resolved for the device, in the model card).

    ``batch_size=None`` picks :data:`AUTO_BATCH_SIZE` for the device, ``lr=None`` scales
    :data:`BASE_LR` (tuned at batch 64) by the square root of ``batch_size / 64``, and the
    learning rate rises linearly from zero over the first ``warmup_epochs``
    (``None``: :data:`AUTO_WARMUP_EPOCHS` above batch 64, else none). Then ``schedule``
    (:data:`SCHEDULES`) takes over. With ``ema_decay`` the model validated, kept and saved
    is the exponential moving average of the weights (updated after every step; ``None``:
    the raw weights): still one model of the same architecture, smoother than any single
    step's weights.
    """

    epochs: int = recipe.EPOCHS
    batch_size: int | None = None
    lr: float | None = None
    warmup_epochs: int | None = None
    schedule: str = recipe.SCHEDULE
    final_lr_fraction: float = 0.01
    ema_decay: float | None = recipe.EMA_DECAY
    lr_factor: float = 0.5
    lr_patience: int = 3
    patience: int = 8
    horizon: int = DEFAULT_HORIZON
    threshold: float = DEFAULT_THRESHOLD
    node_features: tuple[str, ...] = recipe.NODE_FEATURES
    split_seed: int = 0
    seed: int = 0
    target: Target = "share"
    min_residual_mg_l: float = DEFAULT_MIN_RESIDUAL_MG_L
    quality_node_sensors: tuple[str, ...] | Literal["all"] | None = None
    """The chlorine sensors the model reads: node ids, ``"all"`` (every node) or ``None``
    (the training data's design decides: its ``sensors``, else every node; see
    :func:`train`)."""
    edge_features: tuple[str, ...] = recipe.EDGE_FEATURES

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_features", tuple(self.node_features))
        object.__setattr__(self, "edge_features", tuple(self.edge_features))
        if self.quality_node_sensors not in (None, "all"):
            object.__setattr__(
                self, "quality_node_sensors", checked_sensors(self.quality_node_sensors)
            )
        check_min_residual(self.min_residual_mg_l)
        for name in ("epochs", "batch_size", "patience", "horizon"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1 (got {value})")
        if self.warmup_epochs is not None and self.warmup_epochs < 0:
            raise ConfigError(f"warmup_epochs must be >= 0 (got {self.warmup_epochs})")
        if self.lr is not None and not (math.isfinite(self.lr) and self.lr > 0):
            raise ConfigError(f"lr must be a positive finite number (got {self.lr})")
        if self.schedule not in SCHEDULES:
            raise ConfigError(
                f"schedule must be one of {', '.join(SCHEDULES)} (got '{self.schedule}')"
            )
        if not 0 <= self.final_lr_fraction <= 1:
            raise ConfigError(
                f"final_lr_fraction must be between 0 and 1 (got {self.final_lr_fraction})"
            )
        if self.ema_decay is not None and not 0 < self.ema_decay < 1:
            raise ConfigError(
                f"ema_decay must be between 0 and 1, exclusive, or None (got {self.ema_decay})"
            )

    @property
    def inputs(self) -> InputSpec:
        """The inputs and label this config trains on (flow scale, link volumes and report
        step: set from the data)."""
        return InputSpec(
            node_features=self.node_features,
            horizon=self.horizon,
            threshold=self.threshold,
            target=self.target,
            min_residual_mg_l=self.min_residual_mg_l,
            quality_node_sensors=(
                None if self.quality_node_sensors == "all" else self.quality_node_sensors
            ),
            edge_features=self.edge_features,
        )

    def with_design_sensors(self, manifest: WaqManifest) -> TrainConfig:
        """This config with its sensor set resolved against the training data's
        ``manifest``: ``None`` takes the design's ``sensors`` (every node when it has
        none), ``"all"`` reads every node; an explicit set is kept."""
        if self.quality_node_sensors == "all":
            return replace(self, quality_node_sensors=None)
        if self.quality_node_sensors is not None:
            return self
        design = SimulationConfig.from_record(manifest.config).sensors
        return replace(self, quality_node_sensors=design and design.quality_node_sensors)

    def for_device(self, device: torch.device) -> TrainConfig:
        """This config with ``batch_size``, ``lr`` and ``warmup_epochs`` resolved for ``device``."""
        batch_size = self.batch_size or AUTO_BATCH_SIZE[device.type]
        lr = self.lr or BASE_LR * math.sqrt(batch_size / BASE_BATCH_SIZE)
        warmup = self.warmup_epochs
        if warmup is None:
            warmup = AUTO_WARMUP_EPOCHS if batch_size > BASE_BATCH_SIZE else 0
        return replace(self, batch_size=batch_size, lr=lr, warmup_epochs=warmup)


def _code_version() -> str:
    try:
        return version("wdn-explain")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class FitResult:
    """What :func:`fit` returns: the best epoch's weights (on the CPU), the per-epoch
    history and whether a KeyboardInterrupt ended the run."""

    best_state: dict[str, torch.Tensor]
    history: list[dict[str, float]]
    interrupted: bool


def fit(
    model: torch.nn.Module,
    train_set: StackedSamples,
    val_set: StackedSamples,
    config: TrainConfig,
    device: torch.device | str,
    *,
    loss: str = "l1",
    progress: ProgressArg = False,
) -> FitResult:
    """Train ``model`` (already on ``device``) in place: the ``loss`` of :data:`LOSSES`, Adam,
    linear warm-up, the config's schedule, an optional moving average of the weights (torch's
    ``AveragedModel``) and early stopping on the validation loss of the model kept (the
    average when there is one) -- on its :data:`SELECTED_BY` score where the loss has one;
    the same loop on every device and target (a node-level model's loss runs over every
    node's output). The history names the loss ``mae`` for ``l1`` (``train_mae``,
    ``val_mae``), else by its name (``train_logistic``, ...), and the selecting score beside
    it (``val_brier``).

    Both splits are moved to the device once (:func:`place`). Each epoch draws its seeded
    permutation on the host (so CPU and GPU see the same batches) and copies it over in one
    transfer; batches are then cut by indexing on the device, the loss is summed there and
    read back once per epoch, with the validation MAE.

    Args:
        config: Resolved (:meth:`TrainConfig.for_device`).
        progress: True shows a tqdm bar with the live losses; a callable gets
            ``(epoch, epochs)`` after each epoch.
    """
    cfg = config
    if cfg.batch_size is None or cfg.lr is None or cfg.warmup_epochs is None:
        raise ConfigError("fit needs a resolved TrainConfig (use config.for_device(device))")
    device = torch.device(device)
    criterion, name = LOSSES[loss], "mae" if loss == "l1" else loss
    selected, score = SELECTED_BY.get(loss, (name, criterion))
    generator = torch.Generator().manual_seed(cfg.seed)
    train_on, val_on = place(train_set, device), place(val_set, device)
    val_y = val_on.y.to(device).reshape(-1)
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    steps_per_epoch = math.ceil(len(train_set) / cfg.batch_size)
    warmup_steps = cfg.warmup_epochs * steps_per_epoch
    if cfg.schedule == "cosine":
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
            optimiser,
            T_max=max(1, cfg.epochs * steps_per_epoch - warmup_steps),
            eta_min=cfg.lr * cfg.final_lr_fraction,
        )
    else:
        schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimiser, factor=cfg.lr_factor, patience=cfg.lr_patience
        )
    kept = model  # the model validated and saved: the weights' moving average if any
    if cfg.ema_decay is not None:
        kept = swa_utils.AveragedModel(model, multi_avg_fn=_ema(cfg.ema_decay), use_buffers=True)
    step, best, best_state, stale, history, interrupted = 0, float("inf"), None, 0, [], False
    bar = None
    if progress is True:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.epochs, desc="train", unit="epoch", dynamic_ncols=True)
    try:
        for epoch in range(cfg.epochs):
            start = time.perf_counter()
            model.train()
            total = torch.zeros((), device=device)
            order = torch.randperm(len(train_set), generator=generator)
            for batch in train_on.batches(cfg.batch_size, order, device=device):
                if step < warmup_steps:
                    for group in optimiser.param_groups:
                        group["lr"] = cfg.lr * (step + 1) / warmup_steps
                step += 1
                optimiser.zero_grad()
                value = criterion(
                    model(batch.x, batch.edge_index, batch.edge_attr, batch.batch), batch.y
                )
                value.backward()
                optimiser.step()
                if step > warmup_steps and cfg.schedule == "cosine":
                    schedule.step()
                if kept is not model:
                    kept.update_parameters(model)
                total += value.detach() * batch.y.numel()
            pred = model_outputs(kept, val_on.batches(eval_batch_size(val_on), device=device))
            val = torch.stack([total / train_set.y.numel(), criterion(pred, val_y)])
            if selected != name:
                val = torch.cat([val, score(pred, val_y)[None]])
            train_mae, val_mae, *kept_score = val.tolist()
            val_score = kept_score[0] if kept_score else val_mae
            if epoch >= cfg.warmup_epochs and cfg.schedule == "plateau":
                schedule.step(val_mae)
            seconds = time.perf_counter() - start
            row = {"epoch": epoch + 1, f"train_{name}": train_mae, f"val_{name}": val_mae}
            if selected != name:
                row[f"val_{selected}"] = val_score
            history.append(row | {"seconds": seconds})
            if val_score < best - 1e-6:
                best, stale = val_score, 0
                best_state = {k: v.detach().cpu().clone() for k, v in _weights(kept).items()}
            else:
                stale += 1
            if bar is not None:
                bar.set_postfix(train=f"{train_mae:.4f}", val=f"{val_mae:.4f}", best=f"{best:.4f}")
                bar.update(1)
            elif callable(progress):
                progress(epoch + 1, cfg.epochs)
            logger.info(
                "epoch %d train %.4f val %.4f (%.2fs)", epoch + 1, train_mae, val_mae, seconds
            )
            if stale >= cfg.patience:
                break
    except KeyboardInterrupt:
        if best_state is None:  # not one epoch finished: nothing worth saving
            raise
        interrupted = True  # keep the best epoch so far
        logger.warning("training interrupted after %d epochs; saving the best one", len(history))
    finally:
        if bar is not None:
            bar.close()
    return FitResult(best_state, history, interrupted)


def _ema(decay: float) -> Callable[[list[torch.Tensor], list[torch.Tensor], torch.Tensor], None]:
    """``AveragedModel``'s ``multi_avg_fn`` for an exponential moving average whose decay
    rises as min(decay, (1 + n) / (10 + n)) after n updates: a short run averages its late
    steps instead of staying near the initial weights. Vectorised over the tensors of a
    device and dtype (three ``torch._foreach_*`` calls), the weight a tensor computed on
    the device from n: no host sync (``_foreach_lerp_`` reads a tensor weight as a Python
    number: a sync per update; the per-tensor ``float(n)`` before, one per tensor)."""

    @torch.no_grad()
    def average(averaged: list[torch.Tensor], current: list[torch.Tensor], n: torch.Tensor):
        floating = torch.is_floating_point(averaged[0])
        # the weight in the weights' precision, at least float32's: 1 - 0.999 in bfloat16
        # is 0 (the average would stop moving) and in float16 0.0015
        n = n.to(
            torch.promote_types(averaged[0].dtype, torch.float32) if floating else torch.float64
        )
        weight = 1 - torch.clamp((1 + n) / (10 + n), max=decay)
        if floating:  # averaged += weight * (current - averaged)
            step = torch._foreach_sub(current, averaged)
            torch._foreach_mul_(step, weight)
            torch._foreach_add_(averaged, step)
        else:  # integer buffers (e.g. batch norm's count): lerp takes floats only
            for a, c in zip(averaged, current, strict=True):
                a.copy_(a + weight * (c - a))

    return average


def _weights(kept: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict of the model itself (an ``AveragedModel``'s averaged copy)."""
    if isinstance(kept, swa_utils.AveragedModel):
        return kept.module.state_dict()
    return kept.state_dict()


def train(
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    device: str = "auto",
    network: str | None = None,
    overwrite: bool = False,
    progress: ProgressArg = False,
) -> dict[str, Any]:
    """Train a :class:`ChlorineGNN` on a WAQ folder and save weights and card to ``out_dir``.

    Args:
        network: If given, refuse a data folder simulated on another network.
        overwrite: Replace a model already in ``out_dir`` (refused otherwise, before training).
        progress: True shows a tqdm bar with the live losses; a callable gets
            ``(epoch, epochs)``.

    An interruption (Ctrl-C) after the first epoch saves the best epoch so far, with
    ``"interrupted": true`` in the card, instead of losing the run. The model is saved
    before its calibration and test scores: an interruption there keeps it, with
    ``"unscored": true`` in the card, and raises :class:`Unscored`.

    Returns:
        The model card (also written to ``out_dir/card.json``).
    """
    from .waq import read_manifest

    dev = resolve_device(device)
    cfg = (train_config or TrainConfig()).for_device(dev)
    manifest = read_manifest(data_dir)
    cfg = cfg.with_design_sensors(manifest)  # the inputs' width follows it
    cfg.inputs.measured(manifest.network.node_ids)  # a sensor off the network: before the data
    # the input width follows the node features (the plan takes one column per step)
    model_config = replace(
        model_config or ModelConfig(),
        in_channels=cfg.inputs.in_channels,
        edge_channels=cfg.inputs.edge_channels,
    )
    check_model_output(out_dir, overwrite=overwrite)
    with claimed(out_dir, "model folder"):  # a second `train` into it is refused at once
        check_model_output(out_dir, overwrite=overwrite)  # claimed: no one else writes now
        return _train_into(data_dir, out_dir, model_config, cfg, dev, network, progress)


def _train_into(
    data_dir: str | Path,
    out_dir: str | Path,
    model_config: ModelConfig,
    cfg: TrainConfig,
    dev: torch.device,
    network: str | None,
    progress: ProgressArg,
) -> dict[str, Any]:
    """:func:`train` once the output folder is checked and claimed."""
    arrays = load_waq_arrays(data_dir)
    if arrays.pressure_warning:
        warnings.warn(
            f"training data '{data_dir}': {arrays.pressure_warning}",
            WdnExplainWarning,
            stacklevel=3,
        )
    data_net = arrays.manifest.network.name
    if network is not None and network.lower() != data_net:
        raise DataError(
            f"data folder '{data_dir}' was simulated on network '{data_net}', not '{network}'"
        )
    common = dict(
        horizon=cfg.horizon,
        threshold=cfg.threshold,
        node_features=cfg.node_features,
        split_seed=cfg.split_seed,
        arrays=arrays,
        target=cfg.target,
        min_residual_mg_l=cfg.min_residual_mg_l,
        quality_node_sensors=cfg.quality_node_sensors,
        edge_features=cfg.edge_features,
    )
    train_set = WaqDataset(data_dir, "train", **common)
    val_set = WaqDataset(data_dir, "val", **common)
    if len(train_set) == 0 or len(val_set) == 0:
        raise DataError(
            f"data folder '{data_dir}' has too few scenarios for train and validation splits"
        )
    calib_set = WaqDataset(data_dir, "calib", **common)
    _check_calibration(calib_set)
    if cfg.inputs.node_level:  # the risk is calibrated after training: refused before it
        outcomes(calib_set.targets(), cfg.min_residual_mg_l, f"'{data_dir}'")
    torch.manual_seed(cfg.seed)
    model = forecaster(model_config, cfg.inputs.node_level).to(dev)
    result = fit(model, train_set.stacked(), val_set.stacked(), cfg, dev, progress=progress)
    history = result.history
    model.load_state_dict(result.best_state)
    model.cpu()
    test_set = WaqDataset(data_dir, "test", **common)
    card = {
        "model": model_config.to_dict(),
        "train": {
            **asdict(cfg),
            "node_features": list(cfg.node_features),
            "quality_node_sensors": train_set.inputs.to_dict()["quality_node_sensors"],
            "edge_features": list(cfg.edge_features),
        },
        "inputs": train_set.inputs.to_dict(),
        "design": training_envelope(arrays.manifest, arrays.configs).model_dump(mode="json"),
        "data": {
            "folder": str(data_dir),
            "config_hash": arrays.manifest.config_hash,
            "network": arrays.manifest.network.model_dump(
                include={"name", "sha256", "n_nodes", "n_links"}
            ),
            "n_scenarios": arrays.n_scenarios,
        },
        "metrics": {},
        "history": history,
        "interrupted": result.interrupted,
        "unscored": True,
        "device": str(dev),
        "epoch_seconds": float(np.mean([h["seconds"] for h in history])),
        "code_version": _code_version(),
        "torch_version": torch.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    save_model(model, card, out_dir)  # first: a Ctrl-C from here on keeps the trained model
    try:  # the held-out work: 32 node trees on a node model's test split take minutes
        card["conformal"] = conformal_record(model, calib_set)
        card["notice"] = notice_record(model, (val_set, calib_set))
        card["risk"] = risk_record(model, calib_set, cfg.min_residual_mg_l)
        if len(test_set):
            card["metrics"] = card_metrics(evaluate(model, test_set, conformal=card["conformal"]))
    except KeyboardInterrupt:
        raise Unscored(Path(out_dir)) from None
    card["unscored"] = False
    write_card(out_dir, card)
    return card


class Unscored(KeyboardInterrupt):
    """Ctrl-C after :func:`train` saved the model, before its intervals, notice, risk and
    test scores were in its card (``"unscored": true``); :func:`calibrate_model` adds them."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.folder = folder


def _check_calibration(calib_set: WaqDataset) -> None:
    if len(calib_set) == 0:
        raise DataError(
            f"calibration split of '{calib_set.folder}' is empty (0 of "
            f"{calib_set.arrays.n_scenarios} scenarios; the intervals need at least one: "
            "simulate more scenarios)"
        )


def conformal_record(
    model: torch.nn.Module, calib_set: WaqDataset, node_risk: np.ndarray | None = None
) -> dict[str, Any]:
    """The card's ``conformal`` record: the model's errors on the held-out calibration
    split turned into Mondrian split-conformal half-widths (:mod:`.conformal`); a node-level
    model's errors at every node, each in its sample's group and its forecast's level, and,
    given the risk model's risk of each forecast (``node_risk``), its risk band (the record
    then holds ``risk_bands``)."""
    _check_calibration(calib_set)
    pred = predict(model, calib_set)
    node_level = calib_set.inputs.node_level
    groups = NODE_GROUPS if node_level else SHARE_GROUPS
    record = calibrate(
        absolute_errors(calib_set.targets(), pred, LABEL_RANGE[calib_set.inputs.target]),
        forecast_bins(calib_set, pred, node_risk),
        where=f"'{calib_set.folder}'",
        groups=groups if node_risk is None else RISK_GROUPS,
    )
    return record if node_risk is None else record | {"risk_bands": list(RISK_BANDS)}


def notice_record(model: torch.nn.Module, held_out: Sequence[WaqDataset]) -> dict[str, Any] | None:
    """The card's ``notice`` record (:func:`~.notice.design_notice`) from the model's errors
    on the held-out splits (validation and calibration); None with fewer than
    :data:`~.notice.MIN_SCENARIOS` scenarios in them."""
    parts = [held_out_errors(d, predict(model, d)) for d in held_out if len(d)]
    features = [f for found, _ in parts for f in found]
    if len(features) < NOTICE_MIN_SCENARIOS:
        return None
    return design_notice(features, np.concatenate([mae for _, mae in parts]))


def calibrate_model(
    model_dir: str | Path, data_dir: str | Path, min_residual_mg_l: float | None = None
) -> dict[str, Any]:
    """Calibrate a trained model's intervals (and a node model's risk of non-compliance, at
    ``min_residual_mg_l``, default the card's) on the calibration split of its data folder
    and score it again on the test split: rewrites ``card.json`` (``conformal``, ``notice``,
    ``risk`` and ``metrics``; the weights stay). Refused, with nothing written, for data of
    another design than the model was trained on, an empty calibration split, a minimum
    residual that is negative or not finite, a calibration split without non-compliant node
    forecasts or a card that cannot be rewritten. Without a test split the card keeps no
    coverage (it measured the replaced intervals). The tree baselines' scores are the card's
    (:func:`~.evaluation.with_tree_scores`: minutes of fitting saved), else fitted again.

    Returns:
        The updated card.
    """
    from .files import check_output

    model, card = load_model(model_dir)
    minimum = card.input_spec.min_residual_mg_l if min_residual_mg_l is None else min_residual_mg_l
    check_min_residual(minimum)
    check_output(Path(model_dir, CARD), what="model card")  # a read-only folder: before the work
    arrays = own_data(model_dir, card, data_dir)
    calib_set = WaqDataset.for_card(card, data_dir, "calib", arrays)
    _check_calibration(calib_set)  # before the risk, whose fit needs forecasts too
    record = card.to_json()
    record["risk"] = recalibrated_risk(model_dir, card, model, calib_set, minimum)
    risk_net = load_risk_model(model_dir, card)  # its risk bands group the intervals
    calib_risk = dataset_risk(risk_net, record["risk"], calib_set)
    record["conformal"] = conformal_record(model, calib_set, calib_risk)
    val_set = WaqDataset.for_card(card, data_dir, "val", arrays)
    record["notice"] = notice_record(model, (val_set, calib_set))
    test_set = WaqDataset.for_card(card, data_dir, "test", arrays)
    metrics = {k: v for k, v in record.get("metrics", {}).items() if k != "coverage"}
    if len(test_set):
        test_risk = dataset_risk(risk_net, record["risk"], test_set)
        scored = partial(
            evaluate,
            model,
            test_set,
            conformal=record["conformal"],
            node_risk=test_risk,
            compliance=(record["risk"] or {}).get("compliance"),
        )
        results = with_tree_scores(scored(trees=False), metrics) or scored()
        metrics = card_metrics(results)
    record["metrics"] = metrics
    record["unscored"] = False
    write_card(model_dir, record)
    return record


def own_data(model_dir: str | Path, card: ModelCard, data_dir: str | Path) -> WaqArrays:
    """The arrays of the data folder a model was trained on; DataError for a folder of
    another network or design (calibrating on it would mix designs)."""
    arrays = load_waq_arrays(data_dir)
    check_data_matches(card, arrays.manifest, data_dir)
    if arrays.manifest.config_hash != card.data.config_hash:
        raise DataError(
            f"data folder '{data_dir}' holds another design (config hash "
            f"{arrays.manifest.config_hash}) than model '{model_dir}' was trained on "
            f"({card.data.config_hash}): use the model's own data folder"
        )
    return arrays


def card_metrics(results: dict[str, Any]) -> dict[str, Any]:
    """The card's ``metrics``: :func:`evaluate`'s test results without the per-step rows,
    with ``warnings`` (:func:`~.scoring.metric_warnings`: no better than persistence or the
    tree, forecasts out of range), so the card says what the model is worth; empty for no
    test split."""
    from .scoring import metric_warnings

    if not results:
        return {}
    kept = {k: v for k, v in results.items() if k not in ("per_step", "forecast_warning")}
    return kept | {"warnings": metric_warnings(results, "test")}


def training_envelope(
    manifest: WaqManifest, drawn: Sequence[ScenarioConfig] = ()
) -> DesignEnvelope:
    """The design envelope of a WAQ folder's config (what a model trained on it saw);
    ``drawn``: the folder's scenarios (their actual decay rates)."""
    from .network import load_network

    config = SimulationConfig.from_record(manifest.config)
    return DesignEnvelope.of(config, load_network(config.scenario.network), drawn)
