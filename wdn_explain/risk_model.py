"""The risk model: a node GNN of the forecaster's family trained for the risk of
non-compliance (issue 31), beside the forecaster in its model folder (``risk.pt``); here
loading it, its scores and the heads on them (training it: :mod:`.risk_training`).

The forecaster's own forecast is a poor score for "chlorine at the horizon below the
minimum": a logistic head on it (:mod:`.risk`) cannot see what the forecast averages away.
The risk model sees the forecaster's inputs -- and, where those hold the source and the plan,
the source's setpoint now and over the horizon at every node and, where they hold the flows
and the links' volumes, each node's travel time from the source along the flows now and the
setpoint that reaches it by the horizon (:data:`~.features.RISK_INPUTS`, served by :class:`~.risk_net.RiskScorer`: a reservoir's
switch reaches nodes beyond a 3-layer field within the horizon) -- and is trained with the
log loss on that outcome (on inputs built once per split, :func:`outcome_samples`): :class:`~.model.NodeChlorineGNN`'s architecture (edge-feature message passing, a
linear head on every node), its output g_i a logit. It starts from the forecaster's weights
(the added input columns at zero; by default one layer deeper, :func:`~.model.deepened`),
its head mapped by the logistic regression of the outcome on the forecaster's output over
the training split (so it starts as a sensible risk and learns from there), and is fitted by
:func:`~.training.fit` (``loss="logistic"``, early stopping on the validation Brier score). The
calibration split then fits the card's heads on g_i (:func:`~.risk.fit_risk`: an affine map
per node and kind of injection, Platt scaling), so

    logit P(chlorine_i(t + h) < minimum) = a_ik + b_ik g_i,

and the engine's exact interaction indices of g_i (the risk model is explained like the
forecaster, on :meth:`~.risk_net.RiskScorer.risk_inputs`) times b_ik are those of the risk's
logit. The card's ``risk`` record holds the heads and ``model`` (architecture,
``added_inputs``, training, the minimum it learnt, the weights' SHA-256, checked on load like
``model.pt``'s); a card without ``model`` reads its heads on the forecast, as before.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ConfigError, DataError

if TYPE_CHECKING:
    import torch

    from .dataset import StackedSamples, WaqDataset
    from .model import NodeChlorineGNN
    from .records import ModelCard
    from .risk_net import RiskScorer

RISK_WEIGHTS = "risk.pt"


def load_risk_model(
    model_dir: str | Path, card: ModelCard, map_location: str = "cpu"
) -> NodeChlorineGNN | RiskScorer | None:
    """The folder's risk model (eval mode; SHA-256 checked), None for a card without one:
    a :class:`~.risk_net.RiskScorer` where the record names ``added_inputs``, else its GNN
    alone (a risk model trained on the forecaster's inputs only)."""
    from .model import ModelConfig, NodeChlorineGNN
    from .model_folder import load_state
    from .risk_net import RiskScorer

    record = (card.risk or {}).get("model")
    if record is None:
        return None
    try:
        model = NodeChlorineGNN(ModelConfig(**record["config"]))
        added = tuple(record.get("added_inputs", ()))
        scorer = RiskScorer(model, card.input_spec, added) if added else model
    except (KeyError, TypeError, ValueError, ConfigError) as exc:
        raise DataError(f"model card of '{model_dir}' is corrupt: risk model ({exc})") from None
    load_state(model, model_dir, record["weights_sha256"], map_location, RISK_WEIGHTS)
    return scorer.eval()


def risk_scorer(model_dir: str | Path, card: ModelCard, forecaster: torch.nn.Module):
    """The network whose node outputs the card's risk heads read: the risk model where the
    folder has one, else the forecaster itself."""
    return load_risk_model(model_dir, card) or forecaster


SCORES = {False: "the node forecast", True: "the risk model's output (risk.pt)"}
"""What the risk heads read, by whether the folder has a risk model (the record's method)."""


def risk_record(
    forecaster: torch.nn.Module,
    calib_set: WaqDataset,
    min_residual_mg_l: float,
    risk_net: torch.nn.Module | None = None,
) -> dict[str, Any] | None:
    """The card's ``risk`` record over the calibration split at ``min_residual_mg_l``: the
    heads (:func:`~.risk.fit_risk`) on the risk model's node outputs, or on the forecaster's
    without one (``risk_net`` None), and with a risk model of the share's own minimum the
    compliance share's estimator per kind of injection (``compliance``,
    :func:`~.compliance.fit_compliance`); None for a share model."""
    from .compliance import fit_compliance
    from .evaluation import predict
    from .risk import fit_risk, node_risk

    if not calib_set.inputs.node_level:
        return None
    forecast = predict(forecaster, calib_set)
    scores = forecast if risk_net is None else predict(risk_net, calib_set)
    truth, kinds = calib_set.targets(), calib_set.factor_levels()["injection"]
    where = f"'{calib_set.folder}'"
    record = fit_risk(scores, truth, kinds, min_residual_mg_l, where, SCORES[risk_net is not None])
    if risk_net is None or min_residual_mg_l != calib_set.inputs.min_residual_mg_l:
        return record
    risk = node_risk(record, scores, kinds)
    forecast = calib_set.inputs.physical(forecast)
    return record | {"compliance": fit_compliance(forecast, risk, truth, kinds, min_residual_mg_l)}


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
    record = risk_record(forecaster, calib_set, min_residual_mg_l, load_risk_model(model_dir, card))
    return record if trained is None else record | {"model": trained}


def dataset_risk(
    risk_net: torch.nn.Module | None, record: dict[str, Any], dataset: WaqDataset
) -> np.ndarray | None:
    """The risk of non-compliance of every node forecast of ``dataset`` (N, n) from the risk
    model and the heads of ``record`` (a card's ``risk``); None without a risk model."""
    from .evaluation import predict
    from .risk import node_risk

    if risk_net is None:
        return None
    return node_risk(record, predict(risk_net, dataset), dataset.factor_levels()["injection"])


def outcome_samples(
    dataset: WaqDataset, min_residual_mg_l: float, scorer: torch.nn.Module | None = None
) -> StackedSamples:
    """A node dataset's stacked samples labelled 1 where the chlorine at the horizon lies
    below ``min_residual_mg_l``, else 0; with a :class:`~.risk_net.RiskScorer` ``scorer``,
    its GNN's inputs (:meth:`~.risk_net.RiskScorer.risk_inputs`, built once here rather
    than in every batch of every epoch)."""
    from .risk_net import RiskScorer

    stacked = dataset.stacked()
    y = (stacked.y < min_residual_mg_l).float()
    if not isinstance(scorer, RiskScorer):
        return replace(stacked, y=y)
    n, n_nodes = stacked.x.shape[:2]
    x = scorer.risk_inputs(
        stacked.x.reshape(n * n_nodes, -1),
        stacked.edge_index,
        stacked.edge_attr.reshape(-1, stacked.edge_attr.shape[-1]),
        n_graphs=n,
    )
    return replace(stacked, x=x.reshape(n, n_nodes, -1), y=y)


def initial_risk_model(
    forecaster: NodeChlorineGNN, train_set: WaqDataset, min_residual_mg_l: float
) -> NodeChlorineGNN | RiskScorer:
    """A copy of the forecaster whose output is a + b f_i: the logistic regression of the
    outcome on its forecast f_i over the training split (one a, b for every node), reading
    :data:`~.features.RISK_INPUTS` too where the forecaster reads the source and the plan
    (:func:`~.risk_net.addable`; a :class:`~.risk_net.RiskScorer`). The added input columns
    start with zero weights, so it starts as that map of the forecast and learns what they
    add."""
    import torch
    from sklearn.linear_model import LogisticRegression

    from .evaluation import predict
    from .model import NodeChlorineGNN
    from .risk import PRECISION
    from .risk_net import RiskScorer, addable, added_channels

    forecast = predict(forecaster, train_set).reshape(-1, 1)
    below = (train_set.targets() < min_residual_mg_l).reshape(-1)
    head = LogisticRegression(C=PRECISION, max_iter=1000).fit(forecast, below)
    inputs = train_set.inputs
    added = addable(inputs)
    config = forecaster.config
    width = added_channels(inputs, added)
    gnn = NodeChlorineGNN(replace(config, in_channels=config.in_channels + width))
    state = forecaster.state_dict()
    encoder = state["node_encoder.weight"]
    state["node_encoder.weight"] = torch.cat(
        [encoder, encoder.new_zeros(encoder.shape[0], width)], dim=1
    )
    gnn.load_state_dict(state)
    with torch.no_grad():
        gnn.readout.weight.mul_(float(head.coef_[0, 0]))
        gnn.readout.bias.mul_(float(head.coef_[0, 0])).add_(float(head.intercept_[0]))
    return RiskScorer(gnn, inputs, added) if added else gnn
