"""Predict with a forecaster and score it: its outputs on a dataset (stacked on the device once,
or streamed from the host), and its errors against the simulated truth beside the baselines
it must beat (persistence, climatology, a gradient-boosted tree)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

from .compliance import compliance_share, served_text
from .conformal import SHARE_GROUPS, forecast_groups, interval_risk, intervals
from .dataset import Batch, StackedSamples, WaqDataset
from .errors import DataError
from .features import (
    LABEL_RANGE,
)
from .model_folder import (
    resolve_device,
)
from .progress import ProgressArg, progress_callback
from .tree import flat_tree_forecast, tree_forecast, tree_nodes

if TYPE_CHECKING:
    from .records import ModelCard, WaqManifest

logger = logging.getLogger(__name__)

RESIDENT_FRACTION = 0.5
"""A split is kept on a CUDA device when it takes at most this fraction of its free memory;
a larger split stays on the host and each batch is copied over (streamed)."""


EVAL_NODES = 1 << 17
"""Nodes per batch when only predicting (4096 Hanoi graphs, 166 of L-Town's)."""


def place(samples: StackedSamples, device: torch.device) -> StackedSamples:
    """``samples`` moved to ``device`` once, unless a CUDA device has too little free memory
    for them (:data:`RESIDENT_FRACTION`): then they stay on the host and batches stream."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        if samples.nbytes > RESIDENT_FRACTION * free:
            logger.info(
                "%.1f GB of samples stay on the host (%.1f GB free on %s); streaming batches",
                samples.nbytes / 1e9,
                free / 1e9,
                device,
            )
            return samples
    return samples.to(device)


def eval_batch_size(samples: StackedSamples) -> int:
    """Graphs per batch when only predicting: :data:`EVAL_NODES` nodes' worth."""
    return max(1, EVAL_NODES // samples.x.shape[1])


@torch.no_grad()
def model_outputs(model: torch.nn.Module, batches: Iterable[Batch | Data]) -> torch.Tensor:
    """Model outputs of all batches concatenated, on the model's device; eval mode inside."""
    was = model.training
    model.eval()
    try:
        out = [model(b.x, b.edge_index, b.edge_attr, b.batch) for b in batches]
    finally:
        model.train(was)
    return torch.cat(out) if out else torch.zeros(0)


def predict(
    model: torch.nn.Module,
    dataset,
    device: torch.device | str = "cpu",
    batch_size: int | None = None,
) -> np.ndarray:
    """Model outputs for every sample of ``dataset``, in order, shape (len(dataset),), or
    (len(dataset), n) for a node-level :class:`WaqDataset`.

    A :class:`WaqDataset` is stacked and moved to the device once (batches of
    :func:`eval_batch_size` by default); any other PyG dataset goes through a DataLoader.
    """
    device = torch.device(device)
    if isinstance(dataset, WaqDataset):
        samples = place(dataset.stacked(), device)
        batches = samples.batches(batch_size or eval_batch_size(samples), device=device)
        out = model_outputs(model, batches).cpu().numpy()
        return out.reshape(len(dataset), -1) if dataset.inputs.node_level else out
    loader = DataLoader(dataset, batch_size=batch_size or 512, shuffle=False)
    return model_outputs(model, (batch.to(device) for batch in loader)).cpu().numpy()


def forecast_bins(
    dataset: WaqDataset,
    pred: np.ndarray,
    node_risk: np.ndarray | None = None,
    *,
    groups: str = SHARE_GROUPS,
) -> np.ndarray:
    """The conformal group of every forecast of ``dataset`` (``pred``'s shape,
    :func:`~.conformal.forecast_groups`): the sample's (:meth:`WaqDataset.mondrian_bins`)
    and the forecast's level, for a node-level model with the band of its risk of
    non-compliance when given; ``groups``: those of the card's record being served."""
    return forecast_groups(
        dataset.mondrian_bins(), pred, dataset.inputs.node_level, node_risk, groups=groups
    )


def _scores(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    err = pred - true
    var = float(((true - true.mean()) ** 2).sum())
    return {
        "mae": float(np.abs(err).mean()) if len(err) else float("nan"),
        "rmse": float(np.sqrt((err**2).mean())) if len(err) else float("nan"),
        "r2": float(1 - (err**2).sum() / var) if var > 0 else float("nan"),
    }


BASELINES = ("persistence", "climatology", "tree", "flat_tree")
NODE_BASELINES = ("persistence", "climatology", "tree")
"""The node target's baselines: the tree is one per node; the flat tree is the share's only."""
TREES = ("tree", "flat_tree")


def evaluate(
    model: torch.nn.Module,
    dataset: WaqDataset,
    device: str = "cpu",
    conformal: dict[str, Any] | None = None,
    tree_data: WaqDataset | None = None,
    node_risk: np.ndarray | None = None,
    trees: bool = True,
    compliance: dict[str, Any] | None = None,
    progress: ProgressArg = None,
) -> dict[str, Any]:
    """Test MAE, RMSE and R² of the model beside its baselines, overall, per time step and
    per scenario factor (injection site, pattern, strength, start, demand, decay, and whether a
    source switches within the horizon).

    Baselines: persistence (y(t + h) = y(t)), the time-step climatology (the mean
    training-split label at the same step, :meth:`WaqDataset.climatology`), the strong tree
    (:func:`~.tree.tree_forecast`: the model's inputs, the plan over the horizon and
    summaries; one tree per node for a node-level model, whose compliance share it also
    forecasts) and, for the share target, the flat tree (:func:`~.tree.flat_tree_forecast`).
    On a large network the trees are fitted at a sample of its nodes
    (:func:`~.tree.tree_nodes`) only: ``tree_*`` scores those nodes, ``tree_model_*`` the model
    on the same nodes, ``tree_nodes`` names them, and no tree forecasts the compliance share.

    For a node-level model (``node_chlorine_mg_l``) the scores are per-node errors in mg/L
    over every node of every sample, and ``compliance_*`` score the compliance share the model
    serves (:func:`~.compliance.compliance_share`: per kind of injection the estimator
    ``compliance``, the card's choice, names, from the node forecasts or their ``node_risk``) against the true share, beside the share's own persistence and
    climatology (:meth:`WaqDataset.compliance_forecasts`).

    ``tree_data``: where the tree is fitted (the model's own training data when scoring
    fresh scenarios; default: ``dataset``'s folder). With a card's ``conformal`` record,
    also the empirical coverage of its intervals and
    their mean half-width, overall and per factor level (``coverage``, ``half_width``);
    ``node_risk``: each forecast's risk of non-compliance (the risk model's, which intervals
    calibrated with risk bands and a share served from the risk need,
    :func:`~.conformal.interval_risk`). ``trees=False``
    leaves the tree baselines out (minutes of fitting on a full design) where a card already
    holds their scores on the same test split (:func:`with_tree_scores`).
    ``forecast_warning`` flags forecasts outside the label's range (see
    :meth:`~.features.InputSpec.range_warning`). ``progress`` follows a node model's trees
    (one per node, minutes each on a full design).

    Raises:
        DataError: the split holds no scenario (a small folder's test split may be empty).
    """
    dev = resolve_device(device)
    if len(dataset) == 0:
        raise DataError(
            f"data folder '{dataset.folder}' has no {dataset.split} scenarios (its "
            f"{dataset.arrays.n_scenarios} scenarios are split by scenario into train, val "
            "and test); choose another --split, or simulate more scenarios"
        )
    inputs = dataset.inputs
    model = model.to(dev)
    pred = predict(model, dataset, dev)
    true = dataset.targets()
    forecasts = {"model": pred, "persistence": dataset.persistence()}
    forecasts["climatology"] = dataset.climatology()
    baselines = NODE_BASELINES if inputs.node_level else BASELINES
    if not trees:
        baselines = tuple(b for b in baselines if b not in TREES)
    nodes = tree_nodes(true.shape[1]) if inputs.node_level else None  # share: no nodes
    sampled = nodes is not None and "tree" in baselines and len(nodes) < true.shape[1]
    scored = [("", forecasts, true)]  # (key prefix, forecasts, their truth)
    with progress_callback(progress, "node trees") as advance:
        if sampled:  # the trees, and the model beside them, at the sampled nodes only
            tree = tree_forecast(dataset, tree_data, nodes=nodes, progress=advance)
        elif "tree" in baselines:
            forecasts["tree"] = tree_forecast(dataset, tree_data, progress=advance)
    if sampled:
        scored += [
            ("", {"tree": tree}, true[:, nodes]),
            ("tree_", {"model": pred[:, nodes]}, true[:, nodes]),
        ]
    if "flat_tree" in baselines:
        forecasts["flat_tree"] = flat_tree_forecast(dataset, tree_data)
    if inputs.node_level:
        share = dataset.compliance_forecasts()
        kinds = dataset.factor_levels()["injection"]
        minimum = inputs.min_residual_mg_l
        share_forecasts = {"model": compliance_share(compliance, pred, node_risk, kinds, minimum)}
        if "tree" in forecasts:  # the share needs every node's forecast
            share_forecasts["tree"] = inputs.compliance(forecasts["tree"])
        share_forecasts |= {b: share[b] for b in ("persistence", "climatology")}
        scored.append(("compliance_", share_forecasts, share["truth"]))

    def maes(sel: np.ndarray) -> dict[str, float]:
        return {
            f"{prefix}{name}_mae": float(np.abs(f[name][sel] - truth[sel]).mean())
            for prefix, f, truth in scored
            for name in f
        }

    steps = dataset.sample_index()[1]
    per_step = [
        {"t": t, **_scores(pred[steps == t], true[steps == t]), **maes(steps == t)}
        for t in range(dataset.n_times)
    ]
    covered = half = None
    if conformal is not None:
        limits = LABEL_RANGE[inputs.target]
        risk = interval_risk(conformal, node_risk)
        bins = forecast_bins(dataset, pred, risk, groups=conformal.get("groups", ""))
        lower, upper = intervals(conformal, pred, bins, limits, risk)
        covered, half = (true >= lower) & (true <= upper), (upper - lower) / 2
    per_factor = {}
    for factor, levels in dataset.factor_levels().items():
        per_factor[factor] = [
            {
                "level": str(level),
                "n_samples": int((levels == level).sum()),
                **maes(levels == level),
                **(
                    {
                        "coverage": float(covered[levels == level].mean()),
                        "half_width": float(half[levels == level].mean()),
                    }
                    if covered is not None
                    else {}
                ),
            }
            for level in sorted(set(levels.tolist()))
        ]
    out: dict[str, Any] = _scores(pred, true)
    for prefix, f, truth in (entry for entry in scored if entry[0] != "compliance_"):
        for name in (n for n in f if (prefix, n) != ("", "model")):  # the model's: just above
            out.update({f"{prefix}{name}_{k}": v for k, v in _scores(f[name], truth).items()})
    if sampled:
        out["tree_nodes"] = [dataset.arrays.manifest.network.node_ids[i] for i in nodes]
    if inputs.node_level:
        _, share_forecasts, share_truth = scored[-1]
        for name, forecast in share_forecasts.items():
            prefix = "compliance_" if name == "model" else f"compliance_{name}_"
            out.update({f"{prefix}{k}": v for k, v in _scores(forecast, share_truth).items()})
        out["min_residual_mg_l"] = inputs.min_residual_mg_l
        out["compliance_served"] = served_text(compliance)
    out["forecast_warning"] = inputs.range_warning(pred)
    if covered is not None:
        out |= {
            "coverage": float(covered.mean()),
            "half_width": float(half.mean()),
            "confidence": conformal["confidence"],
        }
    return {**out, "n_samples": len(true), "per_step": per_step, "per_factor": per_factor}


def with_tree_scores(results: dict[str, Any], scored: dict[str, Any]) -> dict[str, Any] | None:
    """``results`` (:func:`evaluate` with ``trees=False``) completed with the tree baselines'
    scores of ``scored`` (a card's ``metrics``): the trees depend on the data, its split and
    the model's inputs, not on the weights or the intervals, so ``calibrate`` need not fit
    them again. None where ``scored`` has no tree scores or scored another test split (other
    sample counts or factor levels)."""
    carried = {k: v for k, v in scored.items() if "tree_" in k}
    if not carried or scored.get("n_samples") != results["n_samples"]:
        return None
    per_factor = {}
    for factor, rows in results["per_factor"].items():
        old = {row["level"]: row for row in scored.get("per_factor", {}).get(factor, [])}
        if any(old.get(row["level"], {}).get("n_samples") != row["n_samples"] for row in rows):
            return None
        per_factor[factor] = [
            row | {k: v for k, v in old[row["level"]].items() if "tree_" in k} for row in rows
        ]
    return results | carried | {"per_factor": per_factor}


def check_data_matches(card: ModelCard, manifest: WaqManifest, data_dir: str | Path) -> None:
    """Refuse data simulated on another network than the model was trained on."""
    want, got = card.data.network, manifest.network
    if want.sha256 != got.sha256:
        raise DataError(
            f"data folder '{data_dir}' was simulated on network '{got.name}' "
            f"({got.sha256[:12]}), the model on '{want.name}' ({want.sha256[:12]})"
        )
