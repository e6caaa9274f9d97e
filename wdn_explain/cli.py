"""The ``wdn-explain`` command: parse, build a config, call one library function, show."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import typer

from . import recipe
from .chem.cli import app as chem_app
from .errors import ConfigError, DataError, WdnExplainError, WdnExplainWarning
from .features import DEFAULT_HORIZON, DEFAULT_NODE_FEATURES, DEFAULT_THRESHOLD

app = typer.Typer(
    help="Exact Shapley-interaction explanations of GNNs on water distribution networks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(chem_app, name="chem")
network_app = typer.Typer(
    help="Your own network: from its EPANET .inp file to a model the app lists.",
    no_args_is_help=True,
)
app.add_typer(network_app, name="network")


# Engine arguments named in messages, and the options of `explain` that set them.
_OPTIONS = {"memory_budget_gb": "--memory-gb", "budget": "--budget"}


def _fail(exc: WdnExplainError) -> None:
    """Print the error (engine arguments named as this CLI's options) and exit 1."""
    message = re.sub(r"\b(memory_budget_gb|budget)=", lambda m: _OPTIONS[m[1]] + " ", str(exc))
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


@contextmanager
def _resumable(hint: str) -> Iterator[None]:
    """Run a long, resumable step: a project error exits 1 (:func:`_fail`); Ctrl-C exits 130
    with ``hint``, how to resume."""
    try:
        yield
    except WdnExplainError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: {hint}")
        raise typer.Exit(130) from None


@app.command()
def simulate(
    config: Path = typer.Option(
        Path("simulations/waq.yaml"), help="simulation YAML file (shipped ones found anywhere)"
    ),
    out: Path = typer.Option(..., help="output folder (created; resumed if it holds this config)"),
    workers: int = typer.Option(
        0, help="worker processes (0: all cores; more than the cores are capped, with a warning)"
    ),
    overwrite: bool = typer.Option(False, help="replace a folder made from another config"),
    yes: bool = typer.Option(False, "--yes", help="proceed beyond the size limits"),
    scheduler: str = typer.Option(
        None, help="Dask scheduler address (default: the config's scheduler key, else local)"
    ),
) -> None:
    """Simulate the scenarios of a config (e.g. the WAQ dataset) into a folder."""
    from .progress import progress_callback
    from .scenario import load_config
    from .shipped import shipped
    from .waq import generate_waq
    from .workers import worker_count

    workers, capped = worker_count(workers)
    if capped:
        typer.echo(f"warning: {capped}", err=True)
    with _resumable(f"finished scenarios are kept in {out}; run again to resume"):
        cfg = load_config(shipped(config))
        with progress_callback(True, "simulate") as cb:
            generate_waq(
                cfg,
                out,
                n_workers=workers,
                overwrite=overwrite,
                allow_large=yes,
                progress=cb,
                scheduler=scheduler or cfg.scheduler,
            )
    typer.echo(f"{cfg.n_scenarios} scenarios in {out}")


@app.command("data-stats")
def data_stats(
    folder: Path = typer.Argument(..., help="WAQ folder"),
    horizon: int = typer.Option(4, help="forecast lead in reported steps"),
    threshold: float = typer.Option(0.05, help="chlorine (mg/L) that counts as chlorinated"),
) -> None:
    """Print counts, shapes, the label distribution, the drawn scenario factors and chlorine
    arrival times."""
    from .dataset import WaqDataset, arrival_steps, load_waq_arrays
    from .design import factor_levels
    from .narrative import natural_key

    try:
        arrays = load_waq_arrays(folder)
        sets = {
            s: WaqDataset(folder, s, horizon=horizon, threshold=threshold, arrays=arrays)
            for s in ("train", "calib", "val", "test")
        }
    except WdnExplainError as exc:
        _fail(exc)
    n_s, n_t, n = arrays.chlorine_mg_l.shape
    manifest = arrays.manifest
    step = int(arrays.times_s[1] - arrays.times_s[0]) if n_t > 1 else 0
    typer.echo(
        f"network        {manifest.network.name} ({n} nodes, {manifest.network.n_links} links)"
    )
    typer.echo(
        f"scenarios      {n_s} x {n_t} reported steps of {step} s (config {manifest.config_hash})"
    )
    for split, ds in sets.items():
        typer.echo(f"{split:<14} {len(ds.scenarios)} scenarios, {len(ds)} samples")
    sample = sets["train"][0] if len(sets["train"]) else sets["test"][0]
    typer.echo(
        f"sample shapes  x {tuple(sample.x.shape)}, edge_index {tuple(sample.edge_index.shape)}, "
        f"edge_attr {tuple(sample.edge_attr.shape)}, y {tuple(sample.y.shape)}"
    )
    y = np.concatenate([ds.targets() for ds in sets.values()])
    q = np.quantile(y, [0, 0.25, 0.5, 0.75, 1])
    typer.echo(
        f"label y        mean {y.mean():.3f}, min/q1/median/q3/max {' / '.join(f'{v:.3f}' for v in q)}, "
        f"{(y == 0).mean():.1%} zero, {(y == 1).mean():.1%} one"
    )
    typer.echo(f"flow scale     {sets['train'].inputs.flow_scale_lps:.1f} L/s")
    low = [i for i, w in enumerate(arrays.pressure_warnings) if w]
    if low:
        typer.echo(
            f"warning: {len(low)} of {n_s} scenarios have negative pressures, e.g. scenario "
            f"{low[0]}: {arrays.pressure_warnings[low[0]]}",
            err=True,
        )
    _echo_factors(arrays.configs, tuple(manifest.network.reservoirs), factor_levels)
    arrival = arrival_steps(arrays.chlorine_mg_l, threshold)
    typer.echo(
        f"arrival of chlorine >= {threshold:g} mg/L per node (mean over scenarios reaching it):"
    )
    typer.echo(f"  {'node':>6} {'reached':>8} {'mean step':>10} {'mean s':>8}")
    node_ids = manifest.network.node_ids
    for k in sorted(range(len(node_ids)), key=lambda k: natural_key(node_ids[k])):
        nid = node_ids[k]
        hit = arrival[:, k][arrival[:, k] >= 0]
        mean = hit.mean() if len(hit) else float("nan")
        typer.echo(f"  {nid:>6} {len(hit) / n_s:>8.0%} {mean:>10.1f} {mean * step:>8.0f}")


def _echo_factors(configs, reservoirs: tuple[str, ...], factor_levels) -> None:
    """What the design drew: a table of scenario counts per level of every factor, the drawn
    range of every numeric factor, and the injection nodes (numeric ids by value)."""
    from collections import Counter

    from .narrative import natural_key
    from .scenario import DRAWN_RANGES

    levels = [factor_levels(c, reservoirs) for c in configs]
    typer.echo("scenario factors (scenarios per level):")
    for factor in levels[0]:
        counts = Counter(lv[factor] for lv in levels)
        shown = ", ".join(f"{level} {count}" for level, count in sorted(counts.items()))
        typer.echo(f"  {factor:<10} {shown}")
    typer.echo("drawn values (min / mean / max over scenarios):")
    for name in DRAWN_RANGES:
        v = np.array([getattr(c, name) for c in configs], dtype=float)
        typer.echo(f"  {name:<24} {v.min():>9.3f} {v.mean():>9.3f} {v.max():>9.3f}")
    nodes = Counter(c.injection_node or "(reservoir)" for c in configs)
    typer.echo(
        f"injection nodes ({len(nodes)}): "
        + ", ".join(
            f"{node} {count}"
            for node, count in sorted(nodes.items(), key=lambda kv: natural_key(kv[0]))
        )
    )


def _auto(value: str, name: str, kind: type[int] | type[float]) -> int | float | None:
    """None for ``auto``, else ``value`` as ``kind``; ConfigError names the bad value."""
    if value.strip().lower() == "auto":
        return None
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(
            f"{name} must be 'auto' or {'an integer' if kind is int else 'a number'} "
            f"(got '{value}')"
        ) from None


def _optional(value: str, name: str) -> float | None:
    """None for ``none``, else ``value`` as a number; ConfigError names the bad value."""
    if value.strip().lower() == "none":
        return None
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{name} must be 'none' or a number (got '{value}')") from None


@app.command()
def train(
    data: Path = typer.Option(..., help="WAQ folder (from `simulate`)"),
    out: Path = typer.Option(..., help="model folder to write (model.pt, card.json)"),
    epochs: int = typer.Option(recipe.EPOCHS, help="maximum epochs (early stopping on validation)"),
    hidden: int = typer.Option(recipe.HIDDEN_CHANNELS, help="hidden channels"),
    layers: int = typer.Option(recipe.NUM_LAYERS, help="message-passing layers"),
    batch_size: str = typer.Option(
        "auto", help="graphs per batch, or auto: 2048 on a GPU, 64 on a CPU"
    ),
    lr: str = typer.Option("auto", help="peak learning rate, or auto: 3e-3 x sqrt(batch / 64)"),
    warmup_epochs: str = typer.Option(
        "auto", help="epochs of linear learning-rate warm-up, or auto: 2 above batch 64, else 0"
    ),
    schedule: str = typer.Option(
        recipe.SCHEDULE,
        help="learning-rate schedule after the warm-up: cosine (down to 1 % of the peak) or "
        "plateau (halved when the validation MAE stalls)",
    ),
    ema_decay: str = typer.Option(
        str(recipe.EMA_DECAY),
        help="decay of the weights' moving average that is validated and saved, or none",
    ),
    horizon: int = typer.Option(DEFAULT_HORIZON, help="forecast lead in reported steps"),
    threshold: float = typer.Option(
        DEFAULT_THRESHOLD, help="chlorine that counts as chlorinated, in the first feature's unit"
    ),
    features: str = typer.Option(
        ",".join(DEFAULT_NODE_FEATURES),
        help="node features, comma-separated: chlorine_mg_l, source_mg_l, source_plan_mg_l "
        "(the dosing plan over the horizon), chlorine_fraction (the WAQ paper's model: "
        "chlorine_fraction)",
    ),
    target: str = typer.Option(
        "share",
        help="share (the share of chlorinated nodes) or node (chlorine in mg/L at every node, "
        "and the share of nodes below --min-residual derived from it)",
    ),
    min_residual: float = typer.Option(
        0.2, help="with --target node: the minimum chlorine residual (mg/L) of the compliance share"
    ),
    seed: int = typer.Option(0, help="seed of initialisation and shuffling"),
    device: str = typer.Option("auto", help="auto (CUDA when available), cpu, cuda or cuda:N"),
    network: str = typer.Option(None, help="refuse data simulated on another network"),
    overwrite: bool = typer.Option(False, help="replace a model already in --out"),
) -> None:
    """Train the forecasting GNN; saves weights and a model card."""
    from .features import InputSpec
    from .model import ModelConfig
    from .training import TrainConfig
    from .training import train as run_training

    try:
        node_features = tuple(f.strip() for f in features.split(",") if f.strip())
        label = {"node": "node_chlorine_mg_l", "share": "share"}.get(target)
        if label is None:
            raise ConfigError(f"--target must be share or node (got '{target}')")
        InputSpec(
            node_features=node_features,
            horizon=horizon,
            threshold=threshold,
            target=label,
            min_residual_mg_l=min_residual,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", WdnExplainWarning)
            card = run_training(
                data,
                out,
                model_config=ModelConfig(
                    hidden_channels=hidden,
                    num_layers=layers,  # in_channels: from the features
                ),
                train_config=TrainConfig(
                    epochs=epochs,
                    batch_size=_auto(batch_size, "batch size", int),
                    lr=_auto(lr, "lr", float),
                    warmup_epochs=_auto(warmup_epochs, "warmup epochs", int),
                    schedule=schedule,
                    ema_decay=_optional(ema_decay, "ema decay"),
                    horizon=horizon,
                    threshold=threshold,
                    node_features=node_features,
                    seed=seed,
                    target=label,
                    min_residual_mg_l=min_residual,
                ),
                device=device,
                network=network,
                overwrite=overwrite,
                progress=True,
            )
    except WdnExplainError as exc:
        _fail(exc)
    for warning in caught:
        if issubclass(warning.category, WdnExplainWarning):
            typer.echo(f"warning: {warning.message}", err=True)
    m = card["metrics"]
    if card["interrupted"]:
        typer.echo("interrupted: saved the best epoch so far")
    tree = f", tree {m['tree_mae']:.4f}" if "tree_mae" in m else ""
    compliance = (
        f"; compliance share MAE {m['compliance_mae']:.4f}" if "compliance_mae" in m else ""
    )
    scores = (
        f"test MAE {m['mae']:.4f} (persistence {m['persistence_mae']:.4f}, "
        f"climatology {m['climatology_mae']:.4f}{tree}){compliance}; "
        f"{m['confidence']:.0%} interval coverage {m['coverage']:.3f}"
        if m
        else "no test scenarios to score"
    )
    typer.echo(
        f"saved {out} ({len(card['history'])} epochs on {card['device']}, "
        f"{card['epoch_seconds']:.1f} s/epoch): {scores}"
    )


@app.command()
def evaluate(
    model: Path = typer.Option(
        None, help="model folder [default: $WDN_EXPLAIN_MODEL, else the shipped models/default]"
    ),
    data: Path = typer.Option(..., help="WAQ folder"),
    split: str = typer.Option("test", help="train, val, test or all"),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N"),
    fit_data: Path = typer.Option(
        None,
        help="WAQ folder whose training split the tree baseline is fitted on (the model's own "
        "training data when scoring fresh scenarios) [default: --data]",
    ),
) -> None:
    """Print MAE, RMSE and R² of the model beside persistence, the time-step climatology and
    a gradient-boosted tree on the same inputs, overall, per scenario factor (and whether a
    source switches within the horizon) and per time step."""
    from .scoring import score_lines, score_model, score_warnings
    from .shipped import default_model, shipped

    model = default_model() if model is None else shipped(model)
    try:
        scores = score_model(model, data, split, device, fit_data)
    except WdnExplainError as exc:
        _fail(exc)
    for warning in score_warnings(scores):
        typer.echo(f"warning: {warning}", err=True)
    for line in score_lines(scores):
        typer.echo(line)


@app.command()
def calibrate(
    model: Path = typer.Option(..., help="model folder (its card.json is rewritten)"),
    data: Path = typer.Option(..., help="the WAQ folder the model was trained on"),
) -> None:
    """Calibrate a trained model's forecast intervals (split conformal, Mondrian) on the
    calibration split of its data and score it again on the test split."""
    from .shipped import shipped
    from .training import calibrate_model

    try:
        card = calibrate_model(shipped(model), data)
    except WdnExplainError as exc:
        _fail(exc)
    c, m = card["conformal"], card["metrics"]
    covered = f", test coverage {m['coverage']:.3f}" if "coverage" in m else ""
    typer.echo(
        f"calibrated {model}: {c['confidence']:.0%} intervals from {c['n_calibration']} "
        f"forecasts in {len(c['half_width'])} groups{covered}"
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
        from .chem.cli import complexity as molecule_complexity

        molecule_complexity(dataset=dataset, layers=layers, out=out, max_exact_field=23, root=root)
        return
    import csv as csv_module

    from .explain import complexity as compute
    from .files import atomic_write, check_output
    from .network import load_network

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
    from .chem.complexity import plot_complexity
    from .files import atomic_write

    tables: dict[int, list[dict]] = {}
    for r in rows:
        point = {"graph_id": r["graph"], "n": r["n"], "exact": r["exact"]}
        point["log10_calls"] = math.log10(max(r["interactions"], 1))
        tables.setdefault(r["layers"], []).append(point)
    fig = plot_complexity(tables, "networks", annotate=True)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")


def _count(value: int) -> str:
    """A count as digits while short, else in scientific notation (2^785 has 237 digits)."""
    return (
        str(value)
        if value < 10**15
        else f"{float(value):.3e}"
        if value < 2**1023
        else (f"~10^{len(str(value)) - 1}")
    )


def _csv_count(value: int) -> int | str:
    """A count for the CSV: the integer while below 10^15, else scientific notation with
    four significant digits (exact for any size: 2^785 is 2.035e+236)."""
    from decimal import Decimal

    return value if value < 10**15 else f"{Decimal(value):.3e}"


def _suffix(*suffixes: str) -> Callable[[Path], bool]:
    """Whether an existing file looks like an output of this kind (by its suffix)."""
    return lambda path: path.suffix.lower() in suffixes


def _scenario_from(spec: str, index: int):
    """A scenario from a YAML file (scenario ``index`` of it) or an inline YAML mapping."""
    import yaml

    from .errors import ConfigError
    from .scenario import load_config, parse_config
    from .shipped import shipped

    path = shipped(spec)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return load_config(path).scenario_config(index)
    try:
        data = yaml.safe_load(spec)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        raise ConfigError(
            f"scenario '{spec}' is neither a YAML file nor an inline mapping like "
            "\"{injection_node: '12', duration_s: 7200}\""
        )
    return parse_config({"scenario": data}, source="--scenario").scenario


def _config_scheduler(spec: str) -> str | None:
    """The ``scheduler`` key of a scenario YAML file (None for an inline mapping)."""
    from .scenario import load_config
    from .shipped import shipped

    path = shipped(spec)
    return load_config(path).scheduler if path.is_file() else None


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
        "[default: of the nodes the forecast brings to the minimum residual, the one with the "
        "lowest mean forecast; else the injection node]",
    ),
) -> None:
    """Simulate a scenario, then forecast and explain every time step exactly, or with
    --budget by the lambda-approximation (cached; an interrupted run resumes from the steps
    it finished).

    Warns (one line) when the scenario lies outside the model's training design."""
    from .design import UNKNOWN_DESIGN
    from .network import load_network
    from .shipped import default_model, default_scenario, shipped
    from .simulation import injection_node
    from .timeline import ExplainSettings, check_timeline_output

    model = default_model() if model is None else shipped(model)
    with _resumable(f"explained steps are kept beside {out}; run again to resume"):
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
        from .pipeline import explain_scenario

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
    ood = timeline.meta.get("out_of_design")
    if ood is None:
        typer.echo(f"warning: {UNKNOWN_DESIGN}", err=True)
    elif ood:
        typer.echo(f"warning: outside the model's training design: {'; '.join(ood)}", err=True)
    for key in ("pressure_warning", "forecast_warning"):
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
            "derived from the node forecast:"
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


REFERENCE_HELP = (
    "values relative to: none (no chlorine; the default) or mean (the network average, the paper's)"
)


@app.command()
def report(
    timeline: Path = typer.Option(..., help="timeline file from `explain`"),
    out: Path = typer.Option(Path("report.html"), help="self-contained HTML file"),
    index: str = typer.Option(
        "k-SII", help="SV, SII, k-SII, STII, FSII, BV, BII, FBII or Möbius (Moebius)"
    ),
    order: int = typer.Option(None, help="interaction order (default 2; SV and BV: 1)"),
    top_k: int = typer.Option(10, help="strongest interactions drawn per order"),
    reference: str = typer.Option(None, help=REFERENCE_HELP, show_default=False),
    gif: Path = typer.Option(
        None, help="also write an animated GIF (node values; pairs as lines from order 2)"
    ),
    overwrite: bool = typer.Option(False, help="replace an existing report or GIF file"),
) -> None:
    """Write a self-contained HTML report of a timeline (title, how to read it, the animated
    SI-Graph, forecast against simulated truth) and optionally a GIF."""
    from .files import atomic_write, check_output
    from .network import load_network
    from .report import report_html, write_gif
    from .timeline import Timeline

    try:
        check_output(
            out, what="report file", is_output=_suffix(".html", ".htm"), overwrite=overwrite
        )
        if gif:
            check_output(gif, what="GIF file", is_output=_suffix(".gif"), overwrite=overwrite)
        tl = Timeline.load(timeline)
        if tl.node_level:
            raise DataError(
                f"timeline '{timeline}' is a node-level model's (chlorine at nodes "
                f"{', '.join(tl.targets)}); reports draw share timelines only: use "
                "`wdn-explain export` for its values"
            )
        tl = tl.relative_to(reference or tl.default_reference)
        net = load_network(tl.scenario.network)
        page = report_html(tl, net, index=index, order=order, top_k=top_k)
        with atomic_write(out) as tmp:
            tmp.write_text(page, encoding="utf-8")
        if gif:
            write_gif(tl, net, gif, index=index, order=order, top_k=top_k)
    except WdnExplainError as exc:
        _fail(exc)
    typer.echo(f"wrote {out}" + (f" and {gif}" if gif else ""))


@app.command()
def export(
    timeline: Path = typer.Option(..., help="timeline file from `explain`"),
    index: str = typer.Option(
        "k-SII", help="SV, SII, k-SII, STII, FSII, BV, BII, FBII or Möbius (Moebius)"
    ),
    order: int = typer.Option(None, help="interaction order (default 2; SV and BV: 1)"),
    reference: str = typer.Option(None, help=REFERENCE_HELP, show_default=False),
    csv: Path = typer.Option(None, help="one row per (step, interaction), nodes by id"),
    json_dir: Path = typer.Option(
        None, help="one shapiq InteractionValues JSON file per step (with player -> node id)"
    ),
    overwrite: bool = typer.Option(False, help="replace an existing CSV file"),
) -> None:
    """Export a timeline's values as CSV and/or shapiq InteractionValues files."""
    from .files import atomic_write, check_output
    from .timeline import Timeline

    if csv is None and json_dir is None:
        typer.echo("error: give --csv and/or --json-dir", err=True)
        raise typer.Exit(1)
    try:
        if csv:
            check_output(csv, what="CSV file", is_output=_suffix(".csv"), overwrite=overwrite)
        if json_dir:
            check_output(json_dir, kind="dir", what="JSON folder")
        tl = Timeline.load(timeline)
        tl = tl.relative_to(reference or tl.default_reference)
        if csv:
            frame = tl.to_frame(index, order)
            with atomic_write(csv) as tmp:
                frame.to_csv(tmp, index=False)
        if json_dir:
            tl.write_json(json_dir, index, order)
    except WdnExplainError as exc:
        _fail(exc)
    label = index if order is None else f"{index} (order {order})"
    typer.echo(f"exported {label} of {len(tl)} steps")


@network_app.command("onboard")
def onboard(
    inp: Path = typer.Argument(..., help="the network's EPANET .inp file"),
    out: Path = typer.Option(
        None,
        help="model folder (default: the file stem, lower case, in the user models folder, "
        "which the app lists: $WDN_EXPLAIN_MODELS, else ~/.local/share/wdn-explain/models)",
    ),
    scenarios: int = typer.Option(
        recipe.ONBOARD_SCENARIOS,
        help=f"scenarios of the default design (at least {recipe.ONBOARD_MIN_SCENARIOS})",
    ),
    epochs: int = typer.Option(
        recipe.ONBOARD_EPOCHS, help="maximum training epochs (early stopping)"
    ),
    layers: int = typer.Option(
        None, help="message-passing layers (default: 3 where exact explanations stay cheap, else 2)"
    ),
    seed: int = typer.Option(0, help="seed of the design and the training"),
    workers: int = typer.Option(0, help="simulation worker processes (0: all cores)"),
    device: str = typer.Option("auto", help="auto (CUDA when available), cpu, cuda or cuda:N"),
    overwrite: bool = typer.Option(
        False, help="start afresh in a folder that holds another design or model"
    ),
) -> None:
    """Check a network, write its default monitoring design (design.yaml), simulate it,
    train, calibrate and evaluate a forecaster (evaluation.txt) and explain its default
    scenario (default_scenario.yaml, default_timeline.npz): a model folder like the shipped
    ones. A network that cannot be simulated is refused in one line, with nothing written;
    run the same command again to resume an interrupted run."""
    from .onboard import onboard as run_onboarding
    from .shipped import model_name_for, user_model_folder, water_models

    try:
        folder = out or user_model_folder(model_name_for(inp.name) or inp.name)
    except WdnExplainError as exc:
        _fail(ConfigError(f"{exc}; name the model folder with --out"))
    with _resumable(f"run the same command again to resume in {folder}"):
        done = run_onboarding(
            inp,
            folder,
            n_scenarios=scenarios,
            seed=seed,
            epochs=epochs,
            layers=layers,
            n_workers=workers or None,
            device=device,
            overwrite=overwrite,
            say=typer.echo,
            progress=True,
        )
    listed = done.folder.resolve() in {m.resolve() for m in water_models().values()}
    typer.echo(
        f"model folder {done.folder}: "
        + (
            "the app (`streamlit run app/main.py`) lists it"
            if listed
            else f"the app lists it with WDN_EXPLAIN_MODEL={done.folder.resolve()}"
        )
    )
