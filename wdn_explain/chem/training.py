"""Train, save and load molecule classifiers.

Training: a stratified train/val/test split (80/10/10 unless set; seeded, or cut as the
paper's code did: :func:`graphxai_split`), optionally on a pool that keeps every positive and
a seeded sample of negatives (the paper's AlkaneCarbonyl: two per positive,
:data:`PAPER_TRAINING`), Adam on cross-entropy over batches cut from splits collated once
(:class:`~wdn_explain.chem.batches.PackedGraphs`), early stopping on the validation accuracy
(ties: lower validation loss, or the later epoch), the best epoch's weights kept, GPU when
present. A model folder holds ``model.pt`` (a state_dict, loaded with
``weights_only=True``) and ``card.json`` (a typed :class:`ChemCard`: dataset and its
features, architecture, training config, split sizes, accuracies, history).
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader

from ..errors import ConfigError, DataError
from ..files import claimed
from ..model_folder import (
    CARD,
    WEIGHTS,
    check_model_output,
    load_state,
    resolve_device,
    save_folder,
)
from ..progress import ProgressArg, progress_callback
from ..records import first_problem
from .batches import PackedGraphs
from .datasets import DataVersion, MoleculeDataset
from .models import ChemModelConfig, MoleculeGNN


class ChemTrainConfig(BaseModel):
    """Optimisation settings (stored in the model card)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    epochs: int = Field(100, ge=1)
    patience: int = Field(20, ge=1)
    batch_size: int = Field(64, ge=1)
    lr: float = Field(3e-3, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    # learning rate schedule: constant, cosine decay to 0 over ``epochs``, or halved after
    # ``plateau_patience`` (None: ``patience // 4``) epochs without a lower validation loss
    schedule: Literal["constant", "cosine", "plateau"] = "constant"
    plateau_patience: int | None = Field(None, ge=1)
    # plateau schedule: a validation loss counts as lower when below the best by this relative
    # margin (PyTorch's default 1e-4; the paper's train_gnn.py 1e-3), and the learning rate is
    # never halved below ``min_lr`` (the paper's 1e-5)
    plateau_threshold: float = Field(1e-4, ge=0, lt=1)
    min_lr: float = Field(0.0, ge=0)
    # which epoch of equal best validation accuracy is kept: the one with the lower validation
    # loss, or the later one (the paper's train_gnn.py keeps ``val_acc >= best``); early
    # stopping counts the epochs since the kept one
    ties: Literal["lower_loss", "later"] = "lower_loss"
    # early stopping also waits while the validation loss reaches new lows: stop ``patience``
    # epochs after the later of the kept epoch and the lowest validation loss (the paper's
    # EarlyStopper), not after the kept epoch alone
    patience_on_loss: bool = False
    # the weights kept: those of the best validation epoch (above), or of the last epoch run
    # (with a schedule that decays the learning rate: no pick among noisy epochs on the
    # small validation split)
    keep: Literal["best", "last"] = "best"
    # weight the cross-entropy by inverse class frequency of the training split
    balanced: bool = False
    seed: int = 0
    max_graphs: int | None = Field(None, ge=10)
    # train/val/test fractions of the stratified split (sizes: see ``stratified_split``)
    split: tuple[float, float, float] = (0.8, 0.1, 0.1)
    # keep every positive (label 1) and this many negatives per positive, sampled with ``seed``
    negatives_per_positive: float | None = Field(None, gt=0)
    # the split as the paper's code ran it (:func:`graphxai_split`): the pool in GraphXAI's
    # order (the sampled negatives, then every positive) cut with sklearn's seed
    # :data:`PAPER_SEED` whatever ``seed``, so that with ``negatives_per_positive`` only the
    # negatives change between seeds and the same positives land in val and test every run
    paper_split: bool = False
    # seed of torch's random numbers -- initial weights, batch order, dropout masks -- when
    # not ``seed`` (the paper's code: :data:`PAPER_SEED` for every run, one
    # ``torch.manual_seed`` at import, so its re-runs differ only in the sampled negatives)
    torch_seed: int | None = None

    @field_validator("split")
    @classmethod
    def _fractions(cls, split: tuple[float, float, float]) -> tuple[float, float, float]:
        if min(split) <= 0 or abs(sum(split) - 1) > 1e-6:
            raise ValueError(f"split fractions must be positive and sum to 1 (got {split})")
        return split


#: The seed of the paper's split (``CustomTUDataset(seed=1234)``) and of its torch random
#: numbers (``torch.manual_seed(1234)`` at the import of its ``train_gnn.py``).
PAPER_SEED = 1234

#: The paper's training data per set of its data version (``version="paper"``): GraphXAI's
#: AlkaneCarbonyl keeps all 375 positives and 750 random negatives, split 900/113/112;
#: FluorideCarbonyl keeps every molecule, split 0.8/0.1/0.1 (its class defaults to 0.7/0.2/0.1,
#: but the paper's ``train_gnn.py`` passes ``split_sizes=(0.8, 0.1, 0.1)`` for every set).
PAPER_TRAINING: dict[str, dict] = {
    "AlkaneCarbonyl": {"negatives_per_positive": 2.0, "split": (0.8, 0.1, 0.1)},
    "FluorideCarbonyl": {"negatives_per_positive": None, "split": (0.8, 0.1, 0.1)},
}


class ChemCard(BaseModel):
    """What a model folder's ``card.json`` holds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dataset: str
    data_version: DataVersion = "csv"
    feature_names: list[str]
    model: ChemModelConfig
    train: ChemTrainConfig
    split_sizes: dict[str, int]
    accuracy: dict[str, float]
    best_epoch: int
    epochs_run: int
    seconds: float
    device: str
    history: list[dict[str, float]]
    torch_version: str
    date: str
    weights_sha256: str | None = None  # recorded by save_folder


def stratified_split(
    labels: np.ndarray, seed: int = 0, split: tuple[float, float, float] = (0.8, 0.1, 0.1)
) -> dict[str, np.ndarray]:
    """Indices of a stratified train/val/test split with fractions ``split``.

    Val and test together get ceil((val + test) n) graphs, val ceil(val n) of them and test
    the rest: 80/10/10 of the paper's 1 125 AlkaneCarbonyl graphs is 900/113/112.
    """
    n = len(labels)
    # rounded before ceil: 0.1 * 1130 is 113.00000000000001 in floating point
    n_rest = math.ceil(round((split[1] + split[2]) * n, 6))
    n_test = n_rest - math.ceil(round(split[1] * n, 6))
    index = np.arange(n)
    train, rest = train_test_split(index, test_size=n_rest, stratify=labels, random_state=seed)
    val, test = train_test_split(rest, test_size=n_test, stratify=labels[rest], random_state=seed)
    return {"train": np.sort(train), "val": np.sort(val), "test": np.sort(test)}


def downsample_negatives(
    labels: np.ndarray, per_positive: float, seed: int = 0, *, sort: bool = True
) -> np.ndarray:
    """Indices of every positive (label 1) and a seeded sample of ``per_positive`` negatives
    per positive (all negatives if there are fewer): the paper's AlkaneCarbonyl. Sorted, or
    in GraphXAI's order (``sort=False``: the negatives as drawn, then the positives)."""
    positives = np.flatnonzero(labels == 1)
    negatives = np.flatnonzero(labels != 1)
    n_neg = min(len(negatives), round(per_positive * len(positives)))
    keep = np.random.default_rng(seed).choice(negatives, n_neg, replace=False)
    pool = np.concatenate([keep, positives])
    return np.sort(pool) if sort else pool


def graphxai_split(
    labels: np.ndarray, split: tuple[float, float, float] = (0.8, 0.1, 0.1), seed: int = PAPER_SEED
) -> dict[str, np.ndarray]:
    """Indices of the stratified split of GraphXAI's ``GraphDataset`` (the paper's datasets):
    train against the rest, then the rest into test and val, val the second part with
    ceil(its share) graphs -- 900/113/112 of 1 125. The cut depends on ``seed`` and the
    label sequence only: on the pool of :func:`downsample_negatives` in GraphXAI's order the
    same positives land in test whatever negatives were drawn."""
    rest = split[1] + split[2]
    train, others = train_test_split(
        np.arange(len(labels)), test_size=rest, random_state=seed, stratify=labels
    )
    test, val = train_test_split(
        others, test_size=split[1] / rest, random_state=seed, stratify=labels[others]
    )
    return {"train": np.sort(train), "val": np.sort(val), "test": np.sort(test)}


def subset(labels: np.ndarray, size: int, seed: int = 0) -> np.ndarray:
    """A stratified subset of ``size`` graph indices."""
    if size >= len(labels):
        return np.arange(len(labels))
    keep, _ = train_test_split(
        np.arange(len(labels)), train_size=size, stratify=labels, random_state=seed
    )
    return np.sort(keep)


@torch.no_grad()
def accuracy_and_loss(model: MoleculeGNN, graphs: PackedGraphs) -> tuple[float, float]:
    """Accuracy and mean cross-entropy of a model on graphs (eval mode, one batch)."""
    model.eval()
    batch = graphs.all()
    logits = model(batch.x, batch.edge_index, batch.edge_attr, batch=batch.batch)
    loss = float(torch.nn.functional.cross_entropy(logits, batch.y, reduction="sum"))
    correct = int((logits.argmax(dim=1) == batch.y).sum())
    return correct / max(len(graphs), 1), loss / max(len(graphs), 1)


def train_classifier(
    dataset: MoleculeDataset,
    model_config: ChemModelConfig,
    config: ChemTrainConfig | None = None,
    out_dir: str | Path | None = None,
    *,
    device: str = "auto",
    overwrite: bool = False,
    progress: ProgressArg = False,
) -> tuple[MoleculeGNN, ChemCard]:
    """Train a classifier on a dataset; write the model folder when ``out_dir`` is given.

    The folder is checked before training (a file, an unwritable place, or a model there
    without ``overwrite`` is refused) and claimed while training, so a second run into it
    is refused instead of replacing this one's model.
    """
    if out_dir is None:
        return _fit(dataset, model_config, config, device, progress)
    check_model_output(out_dir, overwrite=overwrite)
    with claimed(out_dir, "model folder"):
        check_model_output(out_dir, overwrite=overwrite)
        model, card = _fit(dataset, model_config, config, device, progress)
        card = save_classifier(model, card, out_dir)
    return model, card


def _fit(
    dataset: MoleculeDataset,
    model_config: ChemModelConfig,
    config: ChemTrainConfig | None,
    device: str,
    progress: ProgressArg,
) -> tuple[MoleculeGNN, ChemCard]:
    """Train a classifier (CPU, eval mode afterwards) and its card; nothing is written."""
    config = config or ChemTrainConfig()
    if model_config.in_channels != len(dataset.feature_names):
        raise ConfigError(
            f"in_channels {model_config.in_channels} does not match the {len(dataset.feature_names)} "
            f"node features of '{dataset.name}'"
        )
    dev = resolve_device(device)
    torch_seed = config.seed if config.torch_seed is None else config.torch_seed
    torch.manual_seed(torch_seed)
    labels = dataset.labels.numpy()
    split = training_split(labels, config)
    # each split collated once; the training batches are cut from it in the order of a
    # shuffling DataLoader over graph positions (the order PyG's DataLoader drew before)
    graphs = {k: PackedGraphs([dataset.graphs[i] for i in v]).to(dev) for k, v in split.items()}
    order = DataLoader(
        range(len(split["train"])),
        batch_size=config.batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(torch_seed),
    )
    model = MoleculeGNN(model_config).to(dev)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    scheduler = _scheduler(optimiser, config)
    class_weight = None
    if config.balanced:
        class_weight = balanced_weights(labels[split["train"]], model_config.n_classes).to(dev)
    best, best_state, best_epoch, history = (-1.0, np.inf), None, 0, []
    lowest_loss, lowest_epoch = np.inf, 0
    start = time.perf_counter()
    with progress_callback(progress, f"train {model_config.architecture}") as cb:
        for epoch in range(1, config.epochs + 1):
            lr = optimiser.param_groups[0]["lr"]
            model.train()
            train_loss = correct = 0.0
            for index in order:
                batch = graphs["train"].batch(index)
                optimiser.zero_grad()
                logits = model(batch.x, batch.edge_index, batch.edge_attr, batch=batch.batch)
                loss = torch.nn.functional.cross_entropy(logits, batch.y, weight=class_weight)
                loss.backward()
                optimiser.step()
                train_loss += loss.item() * len(batch.y)
                correct += int((logits.argmax(dim=1) == batch.y).sum())
            # running figures of the epoch (train mode), not a second pass
            train_loss, train_acc = train_loss / len(split["train"]), correct / len(split["train"])
            val_acc, val_loss = accuracy_and_loss(model, graphs["val"])
            if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
                scheduler.step(val_loss)
            elif scheduler is not None:
                scheduler.step()
            history.append(
                {
                    "epoch": epoch,
                    "train_loss": train_loss,
                    "train_acc": train_acc,
                    "val_acc": val_acc,
                    "val_loss": val_loss,
                    "lr": lr,
                }
            )
            tie = config.ties == "later" or val_loss < best[1]
            if val_acc > best[0] or (val_acc == best[0] and tie):
                best, best_epoch = (val_acc, val_loss), epoch
                if config.keep == "best":  # keep="last" never loads it
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if cb:
                cb(epoch, config.epochs)
            if val_loss < lowest_loss:
                lowest_loss, lowest_epoch = val_loss, epoch
            waited_since = max(best_epoch, lowest_epoch if config.patience_on_loss else 0)
            if epoch - waited_since >= config.patience:
                break
    if config.keep == "last":
        best_epoch = len(history)
    else:
        model.load_state_dict(best_state)
    accuracy = {k: accuracy_and_loss(model, split_graphs)[0] for k, split_graphs in graphs.items()}
    card = ChemCard(
        dataset=dataset.name,
        data_version=dataset.version,
        feature_names=dataset.feature_names,
        model=model_config,
        train=config,
        split_sizes={k: len(v) for k, v in split.items()},
        accuracy=accuracy,
        best_epoch=best_epoch,
        epochs_run=len(history),
        seconds=round(time.perf_counter() - start, 1),
        device=str(dev),
        history=history,
        torch_version=torch.__version__,
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    return model.cpu().eval(), card


def training_split(labels: np.ndarray, config: ChemTrainConfig) -> dict[str, np.ndarray]:
    """Dataset indices of the train/val/test graphs a config trains on: the pool (every graph,
    or the sampled negatives and every positive; at most ``max_graphs``) and its split."""
    pool = np.arange(len(labels))
    if config.negatives_per_positive is not None:
        pool = downsample_negatives(
            labels, config.negatives_per_positive, config.seed, sort=not config.paper_split
        )
    pool = pool[subset(labels[pool], config.max_graphs or len(pool), config.seed)]
    if config.paper_split:
        cut = graphxai_split(labels[pool], config.split)
    else:
        cut = stratified_split(labels[pool], config.seed, config.split)
    return {k: pool[v] for k, v in cut.items()}


def balanced_weights(labels: np.ndarray, n_classes: int) -> torch.Tensor:
    """Cross-entropy class weights n / (C * count): every class weighs the same in total."""
    counts = np.bincount(labels, minlength=n_classes)
    return torch.tensor(len(labels) / (n_classes * np.maximum(counts, 1)), dtype=torch.float32)


def _scheduler(optimiser: torch.optim.Optimizer, config: ChemTrainConfig):
    """The learning rate scheduler of ``config.schedule`` (None when constant)."""
    if config.schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=config.epochs)
    if config.schedule == "plateau":
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimiser,
            factor=0.5,
            patience=config.plateau_patience or max(config.patience // 4, 1),
            threshold=config.plateau_threshold,
            min_lr=config.min_lr,
        )
    return None


def save_classifier(model: MoleculeGNN, card: ChemCard, out_dir: str | Path) -> ChemCard:
    """Write ``model.pt`` and ``card.json`` atomically into ``out_dir``; returns the card with
    the weights' SHA-256, which :func:`load_classifier` checks."""
    return save_folder(model, card, out_dir)


def load_classifier(model_dir: str | Path) -> tuple[MoleculeGNN, ChemCard]:
    """Load a model folder (CPU, eval mode).

    Raises:
        DataError: missing files, a corrupt card or weights that do not fit the card.
    """
    folder = Path(model_dir)
    if not (folder / CARD).is_file() or not (folder / WEIGHTS).is_file():
        raise DataError(f"'{folder}' is not a model folder (needs {WEIGHTS} and {CARD})")
    try:
        card = ChemCard.model_validate_json((folder / CARD).read_text())
    except ValidationError as exc:
        raise DataError(
            f"model card '{folder / CARD}' is not a molecule model card ({first_problem(exc)})"
        ) from None
    return load_state(MoleculeGNN(card.model), folder, card.weights_sha256), card


def check_features(card: ChemCard, dataset: MoleculeDataset) -> None:
    """Refuse a dataset whose node features are not the ones the model was trained on."""
    if card.feature_names != dataset.feature_names:
        same = card.dataset == dataset.name and card.data_version == dataset.version
        raise DataError(
            f"the model was trained on '{card.dataset}' with {len(card.feature_names)} node "
            f"features [{', '.join(card.feature_names)}]; '{dataset.name}' has "
            f"{len(dataset.feature_names)} [{', '.join(dataset.feature_names)}]"
            + ("; the featurisation changed since: retrain the model" if same else "")
        )
