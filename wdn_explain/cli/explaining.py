"""Commands that explain: ``explain`` (a scenario's timeline) and ``complexity`` (model calls per
graph)."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from ..compliance import SERVED_FROM
from ..errors import WdnExplainError
from .common import (
    _config_scheduler,
    _count,
    _csv_count,
    _fail,
    _resumable,
    _scenario_from,
    _suffix,
    app,
)


@app.command()
def complexity(
    network: list[str] = typer.Option(["hanoi"], help="network name or .inp path (repeatable)"),
    layers: list[int] = typer.Option([1, 2, 3], help="message-passing layers L (repeatable)"),
    csv: Path = typer.Option(
        None,
        help="also write the table as CSV (counts of 10^15 or more, such as 2^n of large "
        "networks, in scientific notation, e.g. 2.035e+236 for 2^785)",
    ),
    max_exact_field: int = typer.Option(
        24, help="count |I| exactly up to this field size, else bound"
    ),
    dataset: list[str] = typer.Option(
        None,
        help="a molecule dataset instead of networks (repeatable): one CSV per dataset and L "
        "plus the log10 model calls plot, as `wdn-explain chem complexity` (exact up to 23 nodes)",
    ),
    out: Path = typer.Option(Path("complexity"), help="with --dataset: folder for CSVs and plots"),
    root: Path = typer.Option(None, help="with --dataset: folder holding the dataset files"),
    plot: Path = typer.Option(
        None, help="also draw log10 |I| against n with the 2^n line (PNG; bounds hollow)"
    ),
) -> None:
    """Per graph and L: n, largest receptive field, |I| (exact model calls, or the flagged
    Thm. 3.7 bound where counting would be costly) and 2^n; for networks, or with --dataset
    for every molecule of a dataset."""
    if dataset:
        from ..chem.cli import complexity as molecule_complexity

        molecule_complexity(dataset=dataset, layers=layers, out=out, max_exact_field=23, root=root)
        return
    import csv as csv_module

    from ..explain import complexity as compute
    from ..files import atomic_write, check_output
    from ..network import load_network

    rows = []
    try:
        if csv:
            check_output(csv, what="CSV file", is_output=_suffix(".csv"))
        if plot:
            check_output(plot, what="plot file", is_output=_suffix(".png"))
        for name in network:
            net = load_network(name)
            for n_layers in layers:
                c = compute(net.edge_index, net.n_nodes, n_layers, max_exact_field=max_exact_field)
                rows.append(
                    {
                        "graph": net.name,
                        "n": c.n_nodes,
                        "layers": c.n_layers,
                        "max_field": c.max_field,
                        "interactions": c.n_interactions,
                        "exact": c.exact,
                        "coalitions": c.n_coalitions,
                    }
                )
    except WdnExplainError as exc:
        _fail(exc)
    typer.echo(f"{'graph':<10} {'n':>4} {'L':>2} {'max|N_i|':>8} {'|I|':>12} {'2^n':>22}")
    for r in rows:
        approx = "" if r["exact"] else " (bound)"
        typer.echo(
            f"{r['graph']:<10} {r['n']:>4} {r['layers']:>2} {r['max_field']:>8} "
            f"{_count(r['interactions']):>12}{approx} {_count(r['coalitions']):>22}"
        )
    try:
        if csv:
            with atomic_write(csv) as tmp, open(tmp, "w", newline="") as handle:
                writer = csv_module.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(
                    r | {k: _csv_count(r[k]) for k in ("interactions", "coalitions")} for r in rows
                )
            typer.echo(f"wrote {csv}")
        if plot:
            _complexity_plot(rows, plot)
            typer.echo(f"wrote {plot}")
    except WdnExplainError as exc:
        _fail(exc)


def _complexity_plot(rows: list[dict], path: Path) -> None:
    """The chemistry command's log10 model calls figure, over networks (points named)."""
    from ..chem.complexity import plot_complexity
    from ..files import atomic_write

    tables: dict[int, list[dict]] = {}
    for r in rows:
        point = {"graph_id": r["graph"], "n": r["n"], "exact": r["exact"]}
        point["log10_calls"] = math.log10(max(r["interactions"], 1))
        tables.setdefault(r["layers"], []).append(point)
    fig = plot_complexity(tables, "networks", annotate=True)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")


def _kept_hint(out: Path) -> str:
    """What an interrupted ``explain`` kept, and how to go on."""
    from ..stepstore import kept_steps

    if kept := kept_steps(out):
        steps = "1 explained step is" if kept == 1 else f"{kept} explained steps are"
        return f"{steps} kept beside {out}; run again to resume"
    return "no step was explained yet, nothing is kept; run again to start over"


@app.command()
def explain(
    scenario: str = typer.Option(
        None,
        help="scenario YAML file or inline YAML mapping [default: the model's default "
        "scenario: its folder's default_scenario.yaml, else simulations/default_scenario.yaml "
        "for Hanoi, else the middle of its training design]",
    ),
    model: Path = typer.Option(
        None, help="model folder [default: $WDN_EXPLAIN_MODEL, else the shipped models/default]"
    ),
    out: Path = typer.Option(..., help="timeline file (.npz); reused when it matches"),
    index: int = typer.Option(0, help="which scenario of a multi-scenario file"),
    overwrite: bool = typer.Option(False, help="replace a timeline file of another scenario"),
    yes: bool = typer.Option(False, "--yes", help="proceed beyond the size limits"),
    scheduler: str = typer.Option(
        None, help="Dask scheduler address (default: the YAML file's scheduler key, else local)"
    ),
    gpu: bool = typer.Option(False, help="on a cluster, ask for workers with a GPU resource"),
    budget: int = typer.Option(
        None,
        help="explain by the lambda-approximation with this lambda (largest interaction "
        "size evaluated) where exact is too large; labelled an approximation everywhere",
    ),
    memory_gb: float = typer.Option(
        None, help="memory budget of the exact engine in GB [default: half the available]"
    ),
    node: list[str] = typer.Option(
        None,
        help="node-level models: a node id whose chlorine forecast is explained (repeatable) "
        "[default: of the nodes the forecast brings to the minimum residual, the one falling "
        "back below it most often; else the injection node]",
    ),
) -> None:
    """Simulate a scenario, then forecast and explain every time step exactly, or with
    --budget by the lambda-approximation (cached; an interrupted run resumes from the steps
    it finished).

    Warns (one line) when the scenario lies outside the model's training design."""
    from ..design import UNKNOWN_DESIGN
    from ..network import load_network
    from ..shipped import default_model, default_scenario, shipped
    from ..simulation import injection_node
    from ..timeline import ExplainSettings, check_timeline_output

    model = default_model() if model is None else shipped(model)
    with _resumable(lambda: _kept_hint(out)):
        spec = default_scenario(model) if scenario is None else _scenario_from(scenario, index)
        check_timeline_output(out, spec, overwrite=overwrite)
        settings = ExplainSettings.of(
            approximation_lambda=budget,
            memory_budget_gb=memory_gb,
            target_nodes=tuple(node) if node else None,
        )
        network = load_network(spec.network)  # a bad node id is refused before torch loads
        injection_node(spec, network)
        for target in node or ():
            network.node_index(target)
        from ..pipeline import explain_scenario

        timeline, status = explain_scenario(
            spec,
            model,
            settings=settings,
            out=out,
            progress=True,
            allow_large=yes,
            scheduler=scheduler or (scenario and _config_scheduler(scenario)),
            gpu=gpu,
        )
    from ..narrative import CHECKS

    ood = timeline.meta.get("out_of_design")
    if ood is None:
        typer.echo(f"warning: {UNKNOWN_DESIGN}", err=True)
    elif ood:
        typer.echo(f"warning: outside the model's training design: {'; '.join(ood)}", err=True)
    for key in CHECKS:
        if timeline.meta.get(key):
            typer.echo(f"warning: {timeline.meta[key]}", err=True)
    if timeline.meta.get("uncertainty"):
        typer.echo(f"notice: {timeline.meta['uncertainty']}", err=True)
    for shown in [timeline.for_node(v) for v in timeline.targets] or [timeline]:
        if shown.lower is None:
            continue
        level = shown.meta["interval"]["confidence"]
        what = f"chlorine (mg/L) at node {shown.node}" if shown.node_level else "the share"
        typer.echo(f"forecast of {what} {shown.meta['horizon']} steps ahead, {level:.0%} interval:")
        for t, f, lo, hi, y in zip(
            shown.times_s, shown.forecast, shown.lower, shown.upper, shown.truth
        ):
            typer.echo(f"  {t / 60:>6g} min  {f:.3f}  [{lo:.3f}, {hi:.3f}]  simulated {y:.3f}")
    if timeline.node_level:
        typer.echo(
            f"compliance share (nodes below {timeline.meta['min_residual_mg_l']:g} mg/L), "
            f"{SERVED_FROM[timeline.meta.get('compliance_estimator') or 'forecast']}"
            " (the card's estimator for this scenario's kind of injection):"
        )
        for t, f, y in zip(
            timeline.times_s, timeline.compliance_forecast, timeline.compliance_truth
        ):
            typer.echo(f"  {t / 60:>6g} min  {f:.3f}  simulated {y:.3f}")
    e = timeline.explanations[0]
    held = f"|I| = {e.n_interactions}" if timeline.exact else f"{e.n_interactions} MIs held"
    targets = f" at node {', '.join(timeline.targets)}" if timeline.node_level else ""
    typer.echo(
        f"{status}: {len(timeline)} steps explained{targets} ({timeline.engine_label}, "
        f"{e.method}, {held} per step) -> {out}"
    )
