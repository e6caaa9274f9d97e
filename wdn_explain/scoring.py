"""A model folder scored on a WAQ folder, and the text of those scores: what ``wdn-explain
evaluate`` prints and ``wdn-explain network onboard`` saves as ``evaluation.txt``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .compliance import SERVED_FROM
from .features import InputSpec
from .progress import ProgressArg


@dataclass(frozen=True)
class Scores:
    """:func:`~wdn_explain.training.evaluate`'s results, with what their text needs.

    Attributes:
        results: The results (overall, per factor, per step; ``forecast_warning``).
        inputs: How the model's inputs and labels are built (horizon, threshold, unit).
        split: The scored split (``train``, ``val``, ``test`` or ``all``).
        step_s: Seconds between reported states of the data.
    """

    results: dict[str, Any]
    inputs: InputSpec
    split: str
    step_s: int


def score_model(
    model_dir: str | Path,
    data_dir: str | Path,
    split: str = "test",
    device: str = "auto",
    fit_data: str | Path | None = None,
    progress: ProgressArg = None,
) -> Scores:
    """Score a model folder on a split of a WAQ folder beside the baselines
    (:func:`~wdn_explain.training.evaluate`; ``progress`` follows a node model's trees).

    Args:
        fit_data: WAQ folder whose training split the tree baseline is fitted on
            (default: ``data_dir``).

    Raises:
        DataError: a missing or corrupt model or data folder, data of another network, an
            empty split.
    """
    from .dataset import WaqDataset, load_waq_arrays
    from .evaluation import check_data_matches, evaluate
    from .model_folder import load_model
    from .risk_model import dataset_risk, load_risk_model

    net, card = load_model(model_dir)
    arrays = load_waq_arrays(data_dir)
    check_data_matches(card, arrays.manifest, data_dir)
    ds = WaqDataset.for_card(card, data_dir, split, arrays)
    fit_on = None
    if fit_data is not None:
        fit_arrays = load_waq_arrays(fit_data)
        check_data_matches(card, fit_arrays.manifest, fit_data)
        fit_on = WaqDataset.for_card(card, fit_data, "train", fit_arrays)
    risk = dataset_risk(load_risk_model(model_dir, card), card.risk, ds)  # bands, served share
    results = evaluate(
        net,
        ds,
        device,
        card.conformal,
        fit_on,
        node_risk=risk,
        compliance=card.compliance,
        progress=progress,
    )
    step_s = int(arrays.times_s[1] - arrays.times_s[0]) if len(arrays.times_s) > 1 else 0
    return Scores(results, card.input_spec, split, step_s)


def score_warnings(scores: Scores) -> list[str]:
    """Plain warnings on the scores (:func:`metric_warnings`)."""
    return metric_warnings(scores.results, scores.split)


def metric_warnings(results: dict[str, Any], split: str = "test") -> list[str]:
    """Plain warnings on :func:`~wdn_explain.training.evaluate`'s results (or a card's
    metrics): the forecasts leave their range (damaged weights, say), the model is no better
    than persistence (the present value carried forward), so its forecasts, and their
    explanations, add nothing to a reading of the network now, or no better than the strong
    tree (:func:`tree_verdict`)."""
    res = results
    found = [res["forecast_warning"]] if res.get("forecast_warning") else []
    if res["mae"] >= res["persistence_mae"]:
        found.append(
            f"the model is no better than persistence on the {split} split (MAE "
            f"{res['mae']:.4f} against {res['persistence_mae']:.4f}): its forecasts add "
            "nothing to the present reading; a design whose target barely changes (every "
            "node chlorinated from the start, say) teaches a model little"
        )
    if verdict := tree_verdict(res, split):
        found.append(verdict)
    return found


def beats_tree(results: dict[str, Any]) -> bool | None:
    """Whether the model's MAE is below the strong tree's on the nodes the trees forecast
    (every node, or the sample :func:`~wdn_explain.tree.tree_nodes` of a large network);
    None: no tree was scored."""
    if "tree_mae" not in results:
        return None
    return bool(model_beside_tree_mae(results) < results["tree_mae"])


def model_beside_tree_mae(results: dict[str, Any]) -> float:
    """The model's MAE on the nodes its trees forecast."""
    return results.get("tree_model_mae", results["mae"])


def _tree_sample(results: dict[str, Any]) -> str:
    """Where the trees were fitted at a sample of the nodes, the words saying so."""
    nodes = results.get("tree_nodes")
    return f" at the trees' {len(nodes)} sampled nodes" if nodes else ""


def tree_verdict(results: dict[str, Any], split: str = "test") -> str | None:
    """One sentence when the model is no better than the strong tree
    (:func:`~wdn_explain.tree.tree_forecast`) on the scored split, with the remedy; None
    when it is better or no tree was scored."""
    if beats_tree(results) is not False:
        return None
    return (
        f"the model is no better than a gradient-boosted tree on the same inputs on the "
        f"{split} split (MAE {model_beside_tree_mae(results):.4f} against the tree's "
        f"{results['tree_mae']:.4f}{_tree_sample(results)}): the tree is the better forecast and the explanations "
        "describe a weaker one; simulate more scenarios or train more epochs"
    )


def metrics_line(results: dict[str, Any]) -> str:
    """The scores in one line: MAE beside persistence, climatology and the tree (for a
    node-level model also the compliance share's), interval coverage when calibrated."""
    res = results
    others = [
        f"{name.replace('_', ' ')} {res[f'{name}_mae']:.4f}"
        for name in ("persistence", "climatology", "tree")
        if f"{name}_mae" in res
    ]
    if "tree_model_mae" in res:
        others[-1] += f"{_tree_sample(res)}, the model's there {res['tree_model_mae']:.4f}"
    line = f"MAE {res['mae']:.4f} ({', '.join(others)})"
    if "compliance_mae" in res:
        tree = res.get("compliance_tree_mae")
        line += f"; compliance share MAE {res['compliance_mae']:.4f}" + (
            f" (tree {tree:.4f})" if tree is not None else ""
        )
    if "coverage" in res:
        line += f"; {res['confidence']:.0%} interval coverage {res['coverage']:.3f}"
    return line


def score_lines(scores: Scores) -> list[str]:
    """The scores as text lines: the model beside persistence, the time-step climatology
    and the tree (MAE, RMSE, R²; for a node-level model also the compliance share it serves),
    the interval coverage, MAE per scenario factor and per forecast time (in minutes)."""
    res, inputs = scores.results, scores.inputs
    step_min = scores.step_s / 60
    minutes = inputs.horizon * step_min
    what = (
        "chlorine (mg/L) at every node, scored per node"
        if inputs.node_level
        else f"the share of nodes with chlorine >= {inputs.threshold:g} {inputs.threshold_unit}"
    )
    lines = [
        f"{scores.split}: {res['n_samples']} samples, forecasts {minutes:g} min "
        f"({inputs.horizon} steps) ahead of {what}"
    ]
    names = [
        n
        for n in ("model", "persistence", "climatology", "tree", "tree_model", "flat_tree")
        if f"{n}_mae" in res["per_factor"]["switch"][0]
    ]
    if "tree_model_mae" in res:
        lines.append(f"tree and tree_model: the trees and the model{_tree_sample(res)}")
    tables = [("", "")]
    if inputs.node_level:
        tables.append(
            (
                "compliance_",
                f"compliance share (nodes below {inputs.min_residual_mg_l:g} mg/L), "
                f"{res.get('compliance_served', SERVED_FROM['forecast'])}:",
            )
        )
    for prefix, title in tables:
        if title:
            lines.append(title)
        lines.append(f"{'':>12} {'MAE':>8} {'RMSE':>8} {'R2':>8}")
        for name in names:
            key = prefix + ("" if name == "model" else f"{name}_")
            if key + "mae" not in res:  # no tree forecasts a sample's compliance share
                continue
            lines.append(
                f"{name:>12} {res[key + 'mae']:>8.4f} {res[key + 'rmse']:>8.4f} "
                f"{res[key + 'r2']:>8.3f}"
            )
    if "coverage" in res:
        lines.append(
            f"{res['confidence']:.0%} intervals: empirical coverage {res['coverage']:.3f}, "
            f"mean half-width {res['half_width']:.4f}"
        )
    columns = [(f"{n}_mae", n[:7]) for n in names]
    if inputs.node_level:
        columns += [
            (f"compliance_{n}_mae", f"c.{n[:6]}")
            for n in names
            if f"compliance_{n}_mae" in res["per_factor"]["switch"][0]
        ]
    lines.append(
        "MAE per scenario factor" + (" (c.: compliance share):" if inputs.node_level else ":")
    )
    lines.append(
        f"  {'factor':<10} {'level':<14} {'samples':>7}"
        + "".join(f" {head:>8}" for _, head in columns)
        + (f" {'coverage':>8}" if "coverage" in res else "")
    )
    for factor, rows in res["per_factor"].items():
        for r in rows:
            lines.append(
                f"  {factor:<10} {r['level']:<14} {r['n_samples']:>7}"
                + "".join(f" {r[key]:>8.4f}" for key, _ in columns)
                + (f" {r['coverage']:>8.3f}" if "coverage" in r else "")
            )
    lines.append(f"per forecast time (forecast made at t min for t + {minutes:g} min):")
    lines.append(
        f"{'t (min)':>7} {'MAE':>8} {'RMSE':>8} {'R2':>8} {'persist MAE':>12} {'climat MAE':>11}"
    )
    for row in res["per_step"]:
        lines.append(
            f"{row['t'] * step_min:>7g} {row['mae']:>8.4f} {row['rmse']:>8.4f} {row['r2']:>8.3f} "
            f"{row['persistence_mae']:>12.4f} {row['climatology_mae']:>11.4f}"
        )
    return lines
