"""Plain-language texts for a timeline, shared by the app and the reports: what a forecast
is (made when, for when, in which unit), what the values are relative to, and one sentence
per step naming the strongest drivers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .explain.indices import check_index, index_name
from .features import within_range
from .network import Network
from .scenario import ScenarioConfig
from .timeline import REFERENCES, Timeline, read_meta

UNIT = "share of nodes chlorinated"
ROUND_OFF = 1e-6
"""Values of smaller magnitude (share of nodes, or mg/L) are the float32 round-off of sums
that are exactly 0 (a node no sensor sees on hanoi-sensors came out at 8e-9): read as 0."""


def unit(timeline: Timeline) -> str:
    """What the timeline's forecast and values measure: :data:`UNIT` for a share model,
    ``mg/L chlorine at node 27`` for a node-level model's target (:attr:`Timeline.node`)."""
    return f"mg/L chlorine at node {timeline.node}" if timeline.node_level else UNIT


def value_unit(timeline: Timeline) -> str:
    """The short unit of the timeline's values on axes, colour bars and hovers: ``share of
    nodes``, or ``mg/L`` for a node-level model."""
    return "mg/L" if timeline.node_level else "share of nodes"


# The timeline's warnings about the simulation and the forecasts (meta keys), with the
# headings the app and the HTML report give them.
CHECKS = {
    "pressure_warning": "Check the hydraulics",
    "delivery_warning": "Check the hydraulics",
    "forecast_warning": "Check the model on this scenario",
}
OUTSIDE_DESIGN = "Outside what this model learned"


def warnings_of(timeline: Timeline) -> list[tuple[str, str]]:
    """What a reader must see before trusting the timeline, as (heading, text): the scenario
    lies outside the model's training design (naming what), its simulation has negative
    pressures or demand it did not deliver, its forecasts leave their range. Shown by the app and the HTML report."""
    out = []
    if timeline.meta.get("out_of_design"):
        out.append(
            (
                OUTSIDE_DESIGN,
                "the forecast is an extrapolation and its explanation describes that "
                "extrapolation: " + "; ".join(timeline.meta["out_of_design"]),
            )
        )
    return out + [(h, timeline.meta[k]) for k, h in CHECKS.items() if timeline.meta.get(k)]


HOW_TO_READ = """
**What the model forecasts.** The share of the network's nodes that will carry chlorine
(at least the threshold) a fixed time ahead: "forecast made at 40 min for 60 min" uses the
network's state at 40 min to forecast the share at 60 min. A **node-level** model (such as
`hanoi-nodes`) forecasts chlorine in mg/L at every node instead: the page explains its
forecast at the **explained node** (sidebar), every value is in mg/L at that node, the
followed node's chart draws that node's forecast with its interval, and the sentence under
the chlorine map counts the nodes the forecast puts below the minimum residual.

**What the map says.** Each node's **colour and size** is how much it moves that forecast,
in the same unit (share of nodes, or mg/L), compared with the **reference**: the forecast the model
makes when every node is replaced by the reference (the network average, as in the paper,
or no chlorine at all). Red raises the forecast, blue lowers it; the values add up to the
forecast minus the reference forecast. **Curved lines** between two nodes are pairwise
interactions: their joint effect beyond their separate ones (red: reinforce, blue:
compete), also between nodes that are not directly connected. **Straight grey lines** are
the pipes, darker and wider the more water they carry, with an arrow pointing downstream
(hover it for the pipe's diameter, length and flow). **Shaded shapes with a ▲ marker** are interactions of three or more nodes (hover the
marker for its members).

**Which index.** All five divide the same forecast difference among nodes and groups of
nodes. **SV** (Shapley value) gives each node one number, its fair share, interactions
included. **Möbius** interactions are the raw joint effects of every group (what a group adds
beyond all its subgroups): exact but many, and large ones of opposite sign can cancel.
**k-SII** of order 1 is SV; of order 2 it adds pair values and adjusts the node values so
that all of them still add up to the difference: the default, and the one to pick first.
**STII** keeps the lower orders as Möbius values and gathers every larger group into the
top order; **FSII** is the best (Shapley-weighted least-squares) fit of the model by nodes
and pairs alone. Order 1 of any index is a node ranking; order 2 or 3 shows which nodes act
together.

**Why exact.** The values are computed exactly (GraphSHAP-IQ): the model only looks a few
pipes away from each node, so only interactions inside such neighbourhoods can be non-zero.
The square marks the reservoir; the orange star marks where chlorine enters, labelled
"source on" with its setpoint while it doses (grey, "source off", while it does not).
"""

# Shown above every map of a network without coordinates (see Network.has_coordinates).
NO_COORDINATES = (
    "This network's .inp has no coordinates; the map shows a computed layout (node "
    "positions say which nodes are connected, not where they are)."
)


def clock_time(timeline: Timeline, seconds: float) -> str:
    """The time of day ``seconds`` after the simulation's start (the scenario's
    ``start_hour``), e.g. ``07:15``."""
    minutes_of_day = round(timeline.scenario.start_hour * 60 + seconds / 60) % (24 * 60)
    return f"{minutes_of_day // 60:02d}:{minutes_of_day % 60:02d}"


def reference_label(reference: str) -> str:
    """The short plain name of a reference (``mean`` -> ``the network average``)."""
    return REFERENCES[reference][1].split(" (")[0]


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min"


def horizon_s(timeline: Timeline) -> int:
    """How far ahead the forecasts look, in s."""
    return int(timeline.meta["horizon"]) * timeline.scenario.reporting_step_s


def forecast_time(timeline: Timeline, step: int) -> str:
    """``forecast made at 40 min for 60 min``."""
    made = float(timeline.times_s[step])
    return f"forecast made at {minutes(made)} for {minutes(made + horizon_s(timeline))}"


def threshold_text(timeline: Timeline) -> str:
    """What counts as chlorinated, e.g. ``at least 0.05 mg/L``."""
    return f"at least {timeline.meta['threshold']:g} {timeline.meta['threshold_unit']}"


def resolved_order(timeline: Timeline, index: str, order: int | None) -> int:
    """The order ``index`` is shown at (SV and BV: 1; others default to 2)."""
    return check_index(index, order, timeline.explanations[0].blocks.max_size)[1]


def index_label(index: str, order: int) -> str:
    name = index_name(index)
    return name if index in ("SV", "BV") else f"{name} of order {order}"


def scenario_text(scenario: ScenarioConfig) -> str:
    """The scenario's plain name without its seed (:meth:`ScenarioConfig.describe`): the
    seed a timeline holds is derived from the simulation file's master seed and matches
    nothing the user wrote, so captions and titles leave it out."""
    return scenario.describe().rpartition(", seed ")[0]


def natural_key(node_id: str) -> tuple[int, str]:
    """Sort key: numeric ids by value (2 before 10), others after them by name."""
    return (int(node_id), "") if node_id.isdigit() else (1 << 62, node_id)


def driver_name(network: Network, members: tuple[int, ...]) -> str:
    """``junction 20``, ``the pair 4–20`` or ``the group 4–5–20``."""
    if len(members) == 1:
        return f"{network.node_roles[members[0]]} {network.node_ids[members[0]]}"
    ids = "–".join(sorted((network.node_ids[m] for m in members), key=natural_key))
    return f"the pair {ids}" if len(members) == 2 else f"the group {ids}"


def strongest(
    timeline: Timeline, step: int, index: str, order: int | None
) -> list[tuple[tuple[int, ...], float]]:
    """Every non-zero value of ``index`` at ``step`` (all sizes up to the order; round-off,
    :data:`ROUND_OFF`, is zero), largest magnitude first, as (members, value)."""
    e = timeline.explanations[step]
    order = resolved_order(timeline, index, order)
    items = []
    for size in range(1, order + 1):
        members, values = e.index_values(index, order, size)
        items += [
            (tuple(int(v) for v in m), float(x))
            for m, x in zip(members, values)
            if abs(x) > ROUND_OFF
        ]
    return sorted(items, key=lambda kv: -abs(kv[1]))


def share_of(value: float, gap: float) -> str:
    """``value``'s share of the explained difference ``gap`` as a signed percentage: ``+42%``,
    ``0%`` for one that rounds to nothing (never ``-0%``), "" without a difference."""
    if abs(gap) <= 1e-9:
        return ""
    share = value / gap
    return f"{share:+.0%}" if abs(share) >= 0.005 else "0%"


def drivers_table(
    timeline: Timeline, network: Network, step: int, index: str, order: int | None, k: int = 10
) -> list[dict]:
    """The ``k`` strongest values at ``step`` (nodes, pairs, groups up to ``order``) as rows
    of a ranked table: driver, value and its share of the explained difference."""
    gap = timeline.explanations[step].prediction - timeline.explanations[step].empty_prediction
    return [
        {
            "driver": driver_name(network, members).removeprefix("the "),  # a narrow column
            f"value ({value_unit(timeline)})": round(value, 4),
            "of the difference": share_of(value, gap),
        }
        for members, value in strongest(timeline, step, index, order)[:k]
    ]


def markdown_table(rows: list[dict], formats: dict[str, str] | None = None) -> str:
    """``rows`` (equal keys) as a GitHub-flavoured Markdown table: its keys the header, the
    first column (what a row is) left-aligned, the others (its figures) right-aligned, each
    cell written with ``formats[column]`` where given (e.g. ``"{:+.4f}"``). The
    app draws it as a plain HTML table, every number visible and copyable, with none of the
    scripts a data frame element loads into a new browser."""
    formats = formats or {}
    columns = list(rows[0])

    def cell(column: str, value) -> str:
        text = formats.get(column, "{}").format(value)
        return text.replace("|", "\\|")

    lines = [
        "| " + " | ".join(columns) + " |",
        "|:---|" + "---:|" * (len(columns) - 1),
    ]
    lines += ["| " + " | ".join(cell(c, r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _names(network: Network, items) -> str:
    names = [driver_name(network, m) for m, _ in items]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def interval_range(timeline: Timeline, step: int) -> str:
    """``90% interval 0.55–0.70``: the forecast's calibrated interval at ``step`` with its
    nominal coverage ("" for a timeline without intervals)."""
    if timeline.lower is None or timeline.upper is None:
        return ""
    confidence = (timeline.meta.get("interval") or {}).get("confidence")
    level = f"{confidence:.0%} " if confidence else ""
    return f"{level}interval {timeline.lower[step]:.2f}–{timeline.upper[step]:.2f}"


def interval_text(timeline: Timeline, step: int) -> str:
    """``, 90% interval 0.55–0.70``: :func:`interval_range` as the sentence's clause ("" for a
    timeline without intervals)."""
    interval = interval_range(timeline, step)
    return f", {interval}" if interval else ""


def without_round_off(values: np.ndarray) -> np.ndarray:
    """``values`` with those within :data:`ROUND_OFF` of 0 set to 0."""
    values = np.asarray(values)
    return np.where(np.abs(values) > ROUND_OFF, values, 0.0)


def two_decimals(value: float) -> str:
    """``value`` to two decimals, never ``-0.00`` (a share forecast of -0.001 reads 0.00)."""
    return f"{round(value, 2) + 0.0:.2f}"


def summary(timeline: Timeline, network: Network, step: int, index: str, order: int | None) -> str:
    """One paragraph for one step: the forecast (made when, for when) with its interval
    (:func:`interval_text`), the simulated truth,
    the reference forecast, the explained difference and the strongest drivers (the two
    largest positive values and the largest negative one, of any size up to ``order``). The
    forecast is the one served (physical, :meth:`~.features.InputSpec.physical`); the values
    divide the model's raw output."""
    order = resolved_order(timeline, index, order)
    e = timeline.explanations[step]
    gap = e.prediction - e.empty_prediction
    head = (
        f"{_upper_first(forecast_time(timeline, step))}: {two_decimals(timeline.forecast[step])} "
        f"{unit(timeline)}{interval_text(timeline, step)} (simulated: "
        f"{timeline.truth[step]:.2f}). Relative to {reference_label(timeline.reference)} "
        f"(reference forecast {two_decimals(e.empty_prediction)}) that is {gap:+.2f}, which the "
        f"{index_label(index, order)} values divide among the nodes."
    )
    head += "".join(f" {note}" for note in reference_notes(timeline, network, step, index, order))
    items = strongest(timeline, step, index, order)
    cancel = two_decimals(gap).lstrip("-") == "0.00"  # the difference reads +0.00
    tol = SHOWN if cancel else 1e-3 * max(abs(gap), 1e-2)
    up = [kv for kv in items if kv[1] > tol][:2]
    down = [kv for kv in items if kv[1] < -tol][:1]
    if not up and not down:
        return (
            f"{head} No node differs from the reference enough to move the forecast."
            f"{later_move(timeline, step)}"
        )
    raises = f"{_names(network, up)} raise{'s' if len(up) == 1 else ''} the forecast" if up else ""
    lowers = f"{_names(network, down)} lowers it" if down else ""
    if cancel and up and down:
        return f"{head} The values cancel: {raises} and {lowers} by about as much."
    parts = [f"{words} most" for words in (raises, lowers) if words]
    return f"{head} {_upper_first('; '.join(parts))}."


SHOWN = 0.005
"""Where the explained difference reads +0.00, a value smaller than this (it reads 0.00 too)
is not named as a driver."""


def later_move(timeline: Timeline, step: int, tol: float = 1e-3) -> str:
    """Where a view at ``step`` shows nothing, when the next forecast that leaves the
    reference is made (:meth:`~.timeline.Timeline.informative_steps`): `` The next forecast
    that moves is made at 135 min (▶ play, or pick another explained node).``; "" when none
    does. The time cursor survives a switch of model, and a node-level model's explained node
    may be far from the chlorine then."""
    later = timeline.informative_steps(tol)
    later = later[later > step]
    if not len(later):
        return ""
    other = ", or pick another explained node" if timeline.node_level else ""
    made = minutes(float(timeline.times_s[later[0]]))
    return f" The next forecast that moves is made at {made} (▶ play{other})."


BIAS = 0.05
"""A reference forecast with no chlorine anywhere at least this far from 0 (share of nodes
or mg/L) is said to be the model's own bias."""


def reference_notes(
    timeline: Timeline, network: Network, step: int, index: str, order: int | None
) -> list[str]:
    """What the reference does to the values at ``step`` where a reader would misread them:
    a forecast of chlorine with no chlorine anywhere is the model's own bias (the values
    leave it out); a node-level model's explained node that carries chlorine yet lowers its
    own forecast is compared with the reference, not with zero."""
    e = timeline.explanations[step]
    notes = []
    if timeline.reference == "none" and abs(e.empty_prediction) >= BIAS:
        notes.append(
            f"The reference forecast {two_decimals(e.empty_prediction)} with no chlorine "
            "anywhere is the model's own bias, not chlorine: the values leave it out."
        )
    if not timeline.node_level:
        return notes
    i = network.node_index(timeline.node)
    own = e.node_values(index, resolved_order(timeline, index, order))[i]
    carries = float(timeline.chlorine[step, i])
    minimum = timeline.meta.get("min_residual_mg_l", 0.2)
    if round(own, 2) < 0 and carries >= minimum:  # (a value that reads -0.00 is not odd)
        replaced = (
            f"the network average ({float(timeline.chlorine[step].mean()):.2f} mg/L now)"
            if timeline.reference == "mean"
            else reference_label(timeline.reference)
        )
        notes.append(
            f"Node {timeline.node}'s own value is {own:+.2f} mg/L though it carries "
            f"{carries:.2f} mg/L: each value is the change from the reference, its inputs "
            f"replaced by {replaced}, not the chlorine it carries."
        )
    return notes


def compliance_text(timeline: Timeline, network: Network, step: int, minimum_mg_l: float) -> str:
    """How many customer nodes (:attr:`~wdn_explain.network.Network.consumers`: reservoirs and
    tanks are no taps) lack the minimum residual at ``step`` (simulated), in one sentence; a
    node-level model's timeline adds how many its forecast puts below it one horizon later,
    beside the simulated count then."""
    consumers = network.consumers
    below = int((timeline.chlorine[step][consumers] < minimum_mg_l).sum())
    n = int(consumers.sum())
    when = minutes(timeline.times_s[step])
    if not below:
        now = (
            f"Every customer node has at least {minimum_mg_l:g} mg/L chlorine at {when} "
            "(simulated)."
        )
    else:
        now = (
            f"{below} of {n} customer nodes have less than the minimum residual of "
            f"{minimum_mg_l:g} mg/L chlorine at {when} (simulated)."
        )
    if not timeline.node_level:
        return now
    ahead = minutes(timeline.times_s[step] + horizon_s(timeline))
    forecast, truth = (
        int((values[step][consumers] < minimum_mg_l).sum())
        for values in (timeline.node_forecast, timeline.node_truth)
    )
    return f"{now} Forecast for {ahead}: {forecast} of {n} below it (simulated: {truth})."


def timeline_label(path: str | Path) -> str:
    """A plain name of a cached timeline's scenario (where, how strongly, how long;
    :func:`scenario_text`)."""
    meta = read_meta(path) or {}
    try:
        return scenario_text(ScenarioConfig.from_record(meta["scenario"]))
    except (KeyError, TypeError, ValueError):
        return f"unreadable timeline {Path(path).name}"


def risk_label(timeline: Timeline) -> str:
    """``risk < 0.2 mg/L in 20 min``: what a node-level timeline's risk is the probability of."""
    minimum = timeline.meta["risk"]["min_residual_mg_l"]
    return f"risk < {minimum:g} mg/L in {horizon_s(timeline) // 60:g} min"


def risk_table(
    timeline: Timeline, network: Network, step: int, rows: int = 10
) -> list[dict[str, object]]:
    """The ``rows`` customer nodes (:attr:`~wdn_explain.network.Network.consumers`) most at
    risk of non-compliance one horizon after ``step``, riskiest first: node id, risk, forecast
    (at 0 mg/L where it lies below, as its interval: :func:`~.features.within_range`) and its
    interval (mg/L); empty without a risk."""
    if timeline.node_risk is None:
        return []
    risk = np.where(network.consumers, timeline.node_risk[step], -np.inf)
    # riskiest first as shown (whole percent), then the lowest forecast, then network order
    shown = np.round(np.where(np.isfinite(risk), risk, -1.0), 2)
    order = np.lexsort((np.arange(len(risk)), timeline.node_forecast[step], -shown))
    order = order[: min(rows, int(network.consumers.sum()))]
    table = []
    for i in order:
        row = {"node": str(timeline.node_ids[i]), risk_label(timeline): f"{risk[i]:.0%}"}
        forecast = within_range("node_chlorine_mg_l", timeline.node_forecast[step, i])
        row["forecast (mg/L)"] = f"{forecast:.2f}"  # at 0 where below, as its interval
        if timeline.node_lower is not None:
            row["interval (mg/L)"] = (
                f"{timeline.node_lower[step, i]:.2f}–{timeline.node_upper[step, i]:.2f}"
            )
        table.append(row)
    return table
