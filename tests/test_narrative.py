"""Notes on the reference in the per-step sentence, checked against the shipped timelines'
values (read back through shapiq's InteractionValues)."""

from __future__ import annotations

import pytest

from wdn_explain.narrative import BIAS, reference_notes, summary
from wdn_explain.shipped import SHIPPED_ROOT
from wdn_explain.timeline import Timeline


def shipped(model: str) -> Timeline:
    return Timeline.load(SHIPPED_ROOT / "models" / model / "default_timeline.npz")


@pytest.mark.parametrize("model", ["waq-paper", "default"])
def test_a_reference_forecast_without_chlorine_is_called_the_models_bias(model, hanoi):
    """waq-paper forecasts 0.25 of the nodes chlorinated with no chlorine anywhere: said at
    every step where the reference forecast is that far from 0, and only relative to no
    chlorine (the network average is not 'no chlorine')."""
    tl = shipped(model)
    said = 0
    none, mean = tl.relative_to("none"), tl.relative_to("mean")
    for step in range(len(tl)):
        empty = none.explanations[step].empty_prediction
        text = summary(none, hanoi, step, "k-SII", 2)
        bias = f"The reference forecast {round(empty, 2) + 0.0:.2f} with no chlorine anywhere"
        assert (bias in text) == (abs(empty) >= BIAS), (step, empty)
        said += bias in text
        assert not reference_notes(mean, hanoi, step, "k-SII", 2)
    assert said == (len(tl) if model == "waq-paper" else 0)


def test_a_node_that_lowers_its_own_forecast_while_it_carries_chlorine_is_explained(hanoi):
    """hanoi-nodes relative to no chlorine: node 27's own k-SII is about -0.2 mg/L while it
    carries ~0.9 mg/L. The note names both numbers wherever that holds (own value from
    shapiq, chlorine from the timeline), and nowhere else."""
    tl = shipped("hanoi-nodes")
    for reference in tl.references:
        view = tl.relative_to(reference)
        i = hanoi.node_index(view.node)
        for step in range(len(view)):
            own = view.interaction_values(step, "k-SII", 2).dict_values.get((i,), 0.0)
            carries = float(view.chlorine[step, i])
            notes = " ".join(reference_notes(view, hanoi, step, "k-SII", 2))
            odd = round(own, 2) < 0 and carries >= 0.2
            assert (f"Node {view.node}'s own value is" in notes) == odd, (reference, step)
            if odd:
                assert f"is {own:+.2f} mg/L though it carries {carries:.2f} mg/L" in notes
                assert notes in summary(view, hanoi, step, "k-SII", 2)
        # (last wave's node model showed the case at node 27; the model retrained on the
        # pressure-driven design need not: the check above holds at every step either way)


@pytest.mark.parametrize(
    ("value", "gap", "said"),
    [
        (0.3, 0.6, "+50%"),
        (-0.0011, 0.6, "0%"),
        (0.0011, -0.6, "0%"),
        (-0.2, 0.4, "-50%"),
        (1, 0, ""),
    ],
)
def test_a_drivers_share_of_the_difference_never_reads_minus_zero(value, gap, said):
    from wdn_explain.narrative import share_of

    assert share_of(value, gap) == said


def test_the_at_risk_table_lists_equal_risks_by_their_forecast(hanoi):
    """Risks that read the same (100 %) are listed lowest forecast first, not by the noise
    under the shown percent: every step of hanoi-nodes' timeline, read from the rows."""
    from wdn_explain.narrative import risk_label, risk_table

    tl = shipped("hanoi-nodes")
    for step in range(len(tl)):
        rows = risk_table(tl, hanoi, step)
        keys = [(int(r[risk_label(tl)].rstrip("%")), float(r["forecast (mg/L)"])) for r in rows]
        risks = [risk for risk, _ in keys]
        assert risks == sorted(risks, reverse=True)
        for (r1, f1), (r2, f2) in zip(keys, keys[1:]):
            if r1 == r2:
                assert f1 <= f2, (step, rows)
