"""The risk of non-compliance (:mod:`wdn_explain.risk`) against oracles built in the test: a
synthetic design whose probabilities are known, the calibration error and Brier score
counted by hand, the exact Shapley values of the risk's logit by enumeration, and bad input
refused in one line."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.special import expit

from wdn_explain.errors import ConfigError, DataError
from wdn_explain.risk import brier_score, calibration_error, fit_risk, node_logits, node_risk

from conftest import path_graph

MINIMUM = 0.2
TRUE_LOGIT = [(4.0, -12.0), (1.0, -5.0), (2.5, -20.0)]
"""Per node (a, b): P(chlorine < MINIMUM | forecast f) = sigmoid(a + b f)."""


def synthetic(n_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forecasts, truths and the true probability of non-compliance of a design where the
    truth lies below the minimum with a known probability given the forecast."""
    rng = np.random.default_rng(seed)
    forecast = rng.uniform(0.0, 1.0, size=(n_samples, len(TRUE_LOGIT)))
    a, b = np.array(TRUE_LOGIT).T
    p = expit(a + b * forecast)
    truth = np.where(rng.random(forecast.shape) < p, 0.1, 0.6)  # 0.1 mg/L: below 0.2
    return forecast, truth, p


def test_risk_recovers_the_known_probabilities_of_a_synthetic_design():
    forecast, truth, _ = synthetic(20_000, seed=0)
    record = fit_risk(forecast, truth, MINIMUM)
    assert np.allclose(record["intercept"], [a for a, _ in TRUE_LOGIT], atol=0.5)
    assert np.allclose(record["slope"], [b for _, b in TRUE_LOGIT], rtol=0.1)
    fresh, fresh_truth, p = synthetic(20_000, seed=1)
    risk = node_risk(record, fresh)
    assert np.abs(risk - p).max() < 0.05
    below = fresh_truth < MINIMUM
    assert calibration_error(risk, below) < 0.02
    assert brier_score(risk, below) < brier_score(p, below) + 0.002  # as good as the truth
    assert brier_score(risk, below) < brier_score(np.full_like(p, below.mean()), below)


def test_a_node_that_never_complied_takes_the_pooled_coefficients():
    forecast, truth, _ = synthetic(5_000, seed=2)
    truth[:, 1] = 0.0  # node 1 dry throughout calibration
    record = fit_risk(forecast, truth, MINIMUM)
    assert [record["intercept"][1], record["slope"][1]] == record["pooled"]
    assert record["non_compliant_share"] == pytest.approx((truth < MINIMUM).mean())


def test_calibration_error_and_brier_counted_by_hand():
    risk = np.array([0.05, 0.15, 0.95, 0.91, 0.5])
    below = np.array([0, 1, 1, 1, 0])
    # bins of width 0.1: [0.05] -> 0.05; [0.15] -> 0.85; [0.95, 0.91] -> 0.07 twice; [0.5] -> 0.5
    assert calibration_error(risk, below) == pytest.approx((0.05 + 0.85 + 2 * 0.07 + 0.5) / 5)
    assert brier_score(risk, below) == pytest.approx(
        (0.05**2 + 0.85**2 + 0.05**2 + 0.09**2 + 0.5**2) / 5
    )


def test_shapley_values_of_the_risk_logit_are_the_forecasts_times_its_slope():
    """The exact Shapley values of the risk's logit at one node, enumerated over all 2^7
    masked graphs here, equal the engine's values of the node's forecast times b_i."""
    from wdn_explain.explain import GraphSHAPIQ
    from wdn_explain.model import NodeChlorineGNN

    n, target = 7, 3
    data = path_graph(n, seed=5, features=2, extra=[(0, 5)])
    torch.manual_seed(2)
    model = NodeChlorineGNN(in_channels=2, hidden_channels=8, num_layers=2).double().eval()
    record = {"intercept": [0.3 * i for i in range(n)], "slope": [-2.0 - i for i in range(n)]}
    mean = data.x.mean(dim=0)

    def logit(coalition: frozenset[int]) -> float:
        x = data.x.clone()
        x[[i for i in range(n) if i not in coalition]] = mean
        with torch.no_grad():
            forecast = model(x, data.edge_index, data.edge_attr).numpy()
        return float(node_logits(record, forecast)[target])

    values = {
        frozenset(c): logit(frozenset(c))
        for k in range(n + 1)
        for c in itertools.combinations(range(n), k)
    }
    shapley = np.zeros(n)
    for i in range(n):
        for coalition, value in values.items():
            if i not in coalition:
                k = len(coalition)
                weight = math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n)
                shapley[i] += weight * (values[coalition | {i}] - value)
    explanation = GraphSHAPIQ(model).explain_nodes(data, [target])[0]
    assert np.allclose(explanation.node_values("SV") * record["slope"][target], shapley)


@pytest.mark.parametrize("minimum", [-0.1, float("nan"), float("inf")])
def test_a_minimum_residual_negative_or_not_finite_is_refused(minimum):
    forecast, truth, _ = synthetic(100, seed=3)
    with pytest.raises(ConfigError, match=r"min_residual_mg_l must be a finite .* >= 0 mg/L"):
        fit_risk(forecast, truth, minimum)


def test_a_calibration_set_without_non_compliant_cases_is_refused():
    forecast, _, _ = synthetic(100, seed=4)
    with pytest.raises(DataError, match=r"holds no non-compliant node forecasts .* below 0.2"):
        fit_risk(forecast, np.full_like(forecast, 0.5), MINIMUM, where="'data/x'")
    with pytest.raises(DataError, match=r"holds no compliant node forecasts .* at or above"):
        fit_risk(forecast, np.zeros_like(forecast), MINIMUM)
    with pytest.raises(DataError, match="is empty"):
        fit_risk(np.zeros((0, 3)), np.zeros((0, 3)), MINIMUM)


def test_risk_of_a_model_without_one_is_refused():
    with pytest.raises(DataError, match="the model has no risk of non-compliance"):
        node_risk(None, np.zeros((2, 3)))
    with pytest.raises(DataError, match="calibrates 3 nodes; the forecast has 4"):
        node_risk({"intercept": [0] * 3, "slope": [0] * 3}, np.zeros((2, 4)))
