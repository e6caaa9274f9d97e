"""The risk of non-compliance (:mod:`wdn_explain.risk`) against oracles built in the test: a
synthetic design whose probabilities are known, the calibration error and Brier score
counted by hand, the exact Shapley values of the risk's logit by enumeration, and bad input
refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import expit

from wdn_explain.errors import ConfigError, DataError
from wdn_explain.risk import (
    brier_score,
    calibration_error,
    fit_risk,
    node_logits,
    node_risk,
    risk_head,
)

from conftest import brute_force_shapley, path_graph

MINIMUM = 0.2
TRUE_LOGIT = {
    "reservoir": [(4.0, -12.0), (1.0, -5.0), (2.5, -20.0)],
    "booster": [(6.0, -10.0), (2.0, -12.0), (0.5, -4.0)],
}
"""Per kind of injection and node, (a, b): P(chlorine < MINIMUM | forecast f) = sigmoid(a + b f)."""


def synthetic(n_samples: int, seed: int) -> tuple[np.ndarray, ...]:
    """Forecasts, truths, kinds of injection and the true probability of non-compliance of a
    design where the truth lies below the minimum with a known probability given the
    forecast and the kind."""
    rng = np.random.default_rng(seed)
    kinds = np.where(rng.random(n_samples) < 0.4, "reservoir", "booster")
    forecast = rng.uniform(0.0, 1.0, size=(n_samples, 3))
    coef = np.array([TRUE_LOGIT[k] for k in kinds])  # (N, n, 2)
    p = expit(coef[..., 0] + coef[..., 1] * forecast)
    truth = np.where(rng.random(forecast.shape) < p, 0.1, 0.6)  # 0.1 mg/L: below 0.2
    return forecast, truth, kinds, p


def test_risk_recovers_the_known_probabilities_of_a_synthetic_design():
    forecast, truth, kinds, _ = synthetic(40_000, seed=0)
    record = fit_risk(forecast, truth, kinds, MINIMUM)
    for kind, coef in TRUE_LOGIT.items():
        intercept, slope = risk_head(record, kind)
        assert np.allclose(intercept, [a for a, _ in coef], atol=0.6), kind
        assert np.allclose(slope, [b for _, b in coef], rtol=0.15), kind
    fresh, fresh_truth, fresh_kinds, p = synthetic(40_000, seed=1)
    risk = node_risk(record, fresh, fresh_kinds)
    assert np.abs(risk - p).max() < 0.05
    below = fresh_truth < MINIMUM
    assert calibration_error(risk, below) < 0.02
    assert brier_score(risk, below) < brier_score(p, below) + 0.002  # as good as the truth
    assert brier_score(risk, below) < brier_score(np.full_like(p, below.mean()), below)
    one_head = fit_risk(forecast, truth, np.full(len(kinds), "reservoir"), MINIMUM)
    assert brier_score(node_risk(one_head, fresh, "reservoir"), below) > brier_score(
        risk, below
    )  # the kinds' heads differ: one head for both loses
    unseen = node_risk(record, fresh, "tank")  # a kind never calibrated: the heads over both
    assert np.allclose(unseen, node_risk(one_head, fresh, "reservoir"))


def test_a_node_that_never_complied_takes_the_coefficients_over_both_kinds_then_pooled():
    forecast, truth, kinds, _ = synthetic(5_000, seed=2)
    truth[kinds == "booster", 1] = 0.0  # node 1 dry in every booster scenario
    record = fit_risk(forecast, truth, kinds, MINIMUM)
    booster, every = risk_head(record, "booster"), risk_head(record, "any")
    assert [booster[0][1], booster[1][1]] == [every[0][1], every[1][1]]
    truth[:, 1] = 0.0  # dry throughout
    record = fit_risk(forecast, truth, kinds, MINIMUM)
    assert [risk_head(record, "reservoir")[k][1] for k in (0, 1)] == record["pooled"]
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
    head = {"intercept": [0.3 * i for i in range(n)], "slope": [-2.0 - i for i in range(n)]}
    record = {"heads": {"any": head, "booster": head}}
    mean = data.x.mean(dim=0)

    def logit(coalition: frozenset[int]) -> float:
        x = data.x.clone()
        x[[i for i in range(n) if i not in coalition]] = mean
        with torch.no_grad():
            forecast = model(x, data.edge_index, data.edge_attr).numpy()
        return float(node_logits(record, forecast[None], "booster")[0, target])

    shapley = brute_force_shapley(logit, n)
    explanation = GraphSHAPIQ(model).explain_nodes(data, [target])[0]
    assert np.allclose(explanation.node_values("SV") * head["slope"][target], shapley)


@pytest.mark.parametrize("minimum", [-0.1, float("nan"), float("inf")])
def test_a_minimum_residual_negative_or_not_finite_is_refused(minimum):
    forecast, truth, kinds, _ = synthetic(100, seed=3)
    with pytest.raises(ConfigError, match=r"min_residual_mg_l must be a finite .* >= 0 mg/L"):
        fit_risk(forecast, truth, kinds, minimum)


def test_a_calibration_set_without_non_compliant_cases_is_refused():
    forecast, _, kinds, _ = synthetic(100, seed=4)
    with pytest.raises(DataError, match=r"holds no non-compliant node forecasts .* below 0.2"):
        fit_risk(forecast, np.full_like(forecast, 0.5), kinds, MINIMUM, where="'data/x'")
    with pytest.raises(DataError, match=r"holds no compliant node forecasts .* at or above"):
        fit_risk(forecast, np.zeros_like(forecast), kinds, MINIMUM)
    with pytest.raises(DataError, match="is empty"):
        fit_risk(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, dtype=str), MINIMUM)


def test_risk_of_a_model_without_one_is_refused():
    with pytest.raises(DataError, match="the model has no risk of non-compliance"):
        node_risk(None, np.zeros((2, 3)), "booster")
    head = {"intercept": [0] * 3, "slope": [0] * 3}
    with pytest.raises(DataError, match="calibrates 3 nodes; the forecast has 4"):
        node_risk({"heads": {"any": head}}, np.zeros((2, 4)), "booster")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("heads"), "risk must hold heads, 'any' among them"),
        (lambda r: r["heads"]["booster"]["slope"].pop(), "'booster' must hold as many intercepts"),
        (lambda r: r["heads"]["any"]["slope"].__setitem__(0, "x"), "'any' holds a coefficient"),
        (  # the timeline and the risk CSV say what the risk is about from it (outside cases)
            lambda r: r.update(min_residual_mg_l=-1),
            r"risk min_residual_mg_l must be a finite chlorine residual >= 0 mg/L \(got -1\)",
        ),
        (lambda r: r.update(min_residual_mg_l="0.2"), "must be a number in mg/L .got '0.2'."),
        (lambda r: r.pop("min_residual_mg_l"), "must be a number in mg/L .got None."),
    ],
)
def test_a_card_with_a_damaged_risk_is_refused_in_one_line(change, message):
    import json

    from wdn_explain.records import ModelCard

    from conftest import ROOT

    path = ROOT / "models" / "hanoi-nodes" / "card.json"
    card = json.loads(path.read_text())
    assert ModelCard.parse(card, path).risk == card["risk"]
    change(card["risk"])
    with pytest.raises(DataError, match=f"model card '.*' is corrupt: risk: .*{message}"):
        ModelCard.parse(card, path)
