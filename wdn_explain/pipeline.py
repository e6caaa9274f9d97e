"""The run that makes a timeline: simulate a scenario, forecast and explain every step
(locally or as Dask tasks), cache the result (:mod:`.timeline` holds what it makes; node
targets: :mod:`.node_targets`; flows and pressures: :mod:`.hydraulics`)."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import closing, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .compliance import compliance_share, served_estimator
from .conformal import (
    forecast_groups,
    interval_risk,
    intervals,
    mondrian_bins,
    uncertainty_notice,
)
from .design import factor_levels
from .errors import ConfigError, DataError, ExplainError
from .explain.explanation import Explanation
from .features import InputSpec, check_plan, scenario_range, source_plan
from .hydraulics import hydraulics_at, with_hydraulics
from .node_targets import default_target, node_fields, node_forecasts, target_nodes
from .notice import hard_scenario_notice, scenario_features
from .progress import ProgressArg, progress_callback
from .risk import node_risk
from .risk_model import risk_scorer
from .scenario import ScenarioConfig
from .simulation import SimulationResult, injection_node, simulate
from .sizes import check_size, estimate_timeline
from .stepstore import StepStore
from .timeline import (
    ExplainSettings,
    Timeline,
    TimelineMeta,
    cache_identity,
    cache_mismatch,
)
from .workers import usable_cores

if TYPE_CHECKING:
    import torch
    from torch_geometric.data import Data

    from .explain import GraphSHAPIQ
    from .network import Network
    from .records import ModelCard

logger = logging.getLogger(__name__)


def scenario_node_inputs(
    result: SimulationResult, network: Network, inputs: InputSpec
) -> np.ndarray:
    """Node features at every report of a simulated scenario, built as in training, shape
    (T, n, ``inputs.in_channels``): the plan from the scenario's schedule (checked against
    the recorded source), chlorine from ``result`` (a replay puts its readings there)."""
    strength = np.full(result.n_steps, result.config.injection_strength_mg_l, dtype=np.float32)
    plan = None
    if inputs.uses_plan:
        source = network.node_index(injection_node(result.config, network))
        plan = source_plan(result.config, result.times_s, source, network.n_nodes, inputs.horizon)
        check_plan(plan, result.node_source_mg_l, network.node_ids)
    return inputs.node_inputs(
        result.node_chlorine_mg_l,
        result.node_source_mg_l,
        strength,
        plan,
        node_ids=network.node_ids,
        flow_lps=result.link_flow_lps,
        link_nodes=network.link_nodes,
    )


def scenario_graphs(result: SimulationResult, network: Network, inputs: InputSpec) -> list[Data]:
    """Model inputs at every report of a simulated scenario, built as in training."""
    x = scenario_node_inputs(result, network, inputs)
    edge_attr = inputs.edge_inputs(result.link_flow_lps)
    return [step_graph(network, x[t], edge_attr[t]) for t in range(result.n_steps)]


def step_graph(network: Network, x: np.ndarray, edge_attr: np.ndarray) -> Data:
    """The model's input graph of one report from its (n, C) node and (2 E, C) edge features."""
    import torch
    from torch_geometric.data import Data

    return Data(
        x=torch.from_numpy(x),
        edge_index=network.edge_index,
        edge_attr=torch.from_numpy(edge_attr),
    )


def out_of_design(scenario: ScenarioConfig, card: ModelCard, network: Network) -> list[str] | None:
    """What of ``scenario`` lies outside the model's training design (see
    :mod:`wdn_explain.design`); None when the card records no design."""
    envelope = card.design
    if envelope is None:
        return None
    return envelope.outside(scenario, injection_node(scenario, network))


def explain_scenario(
    scenario: ScenarioConfig,
    model_dir: str | Path,
    *,
    settings: ExplainSettings | None = None,
    out: str | Path | None = None,
    progress: ProgressArg = False,
    allow_large: bool = False,
    scheduler: str | None = None,
    gpu: bool = False,
    budget: int | None = None,
    memory_gb: float | None = None,
) -> tuple[Timeline, str]:
    """Simulate a scenario, forecast and explain every step, relative to every reference of
    ``settings`` (default: the network average and no chlorine); cache to ``out``.

    ``settings`` (:class:`~wdn_explain.timeline.ExplainSettings`) says how: the engine
    method and layers, exact or the lambda-approximation (``approximation_lambda``), the
    engine's memory budget; it travels unchanged to Dask workers, is stored in the timeline's
    metadata, and its value-changing fields are part of the cache key (a cached file is
    reused only when :func:`~wdn_explain.timeline.cache_mismatch` finds nothing).
    ``budget`` and ``memory_gb`` are deprecated: pass ``settings`` instead.

    Explained steps are streamed to a folder beside ``out`` (see :mod:`.stepstore`), so an
    interrupted run resumes; a scenario whose estimate exceeds :data:`~.sizes.LIMITS` is
    refused before any work unless ``allow_large``.

    With a node-level model (``inputs.target`` ``node_chlorine_mg_l``) the forecasts at
    ``settings.target_nodes`` (default: :func:`~.node_targets.default_target`) are explained per step by
    ``GraphSHAPIQ.explain_nodes`` (each relative to every reference), and the timeline holds
    every node's forecast and interval and the compliance share (see
    :class:`~wdn_explain.timeline.Timeline`); such models are explained locally only.

    Returns (timeline, status) where status is ``cached`` (a matching file was reused),
    ``computed``, or ``recomputed: <reason>`` (the file was corrupt or stale), followed by
    `` (resumed: k of n steps ...)`` when steps of an interrupted run were reused.
    With ``out`` the timeline is the file's (:meth:`~wdn_explain.timeline.Timeline.as_saved`:
    MIs rounded to float32), equal to what reading ``out`` returns, computed or cached.

    With ``scheduler`` (a Dask scheduler address, needs ``out``), the steps are explained
    by :func:`_explain_task` tasks on that cluster (on workers with a ``GPU`` resource when
    ``gpu`` and one has it, running the model there on CUDA) into the step store, then
    assembled here: the file's bytes are those of a local run (on CPU workers; a GPU's
    values agree to about 1e-7).
    """
    from .explain import GraphSHAPIQ
    from .model_folder import load_model
    from .network import load_network

    settings = _with_deprecated(settings or ExplainSettings(), budget, memory_gb)
    if scheduler is not None and out is None:
        raise ConfigError("explaining on a cluster needs an output file (out)")
    model, card = load_model(model_dir)
    network = load_network(scenario.network)
    if card.data.network.sha256 != network.file_sha256:
        raise DataError(
            f"model '{model_dir}' was trained on network '{card.data.network.name}', "
            f"the scenario runs on '{network.name}'"
        )
    side_by_side = parallel_references(settings)
    stop = threading.Event()  # set when the steps end (early: those in flight give up)
    explainers = {  # built first: a bad setting is refused before any simulation
        r: GraphSHAPIQ(
            model, progress=_giving_up(stop), **settings.explainer_options(r, side_by_side)
        )
        for r in settings.references
    }
    inputs = card.input_spec
    chosen = target_nodes(settings, inputs, network)
    if inputs.node_level and scheduler is not None:
        raise ConfigError(
            "node-level models are explained locally only (got a scheduler: run without it)"
        )
    identity = cache_identity(scenario, model_dir, settings)
    meta = {
        "version": TimelineMeta.VERSION,
        **identity,
        "scenario": scenario.model_dump(mode="json"),
        "settings": settings.model_dump(mode="json"),
        "horizon": inputs.horizon,
        "threshold": inputs.threshold,
        "threshold_unit": inputs.threshold_unit,
        "out_of_design": out_of_design(scenario, card, network),
        "target": inputs.target,
    }
    claim = StepStore.claimed(out) if out is not None else nullcontext()
    with claim as store:  # one run at a time; a waiting session finds the file it wrote
        cached, status = _cached(out, identity)
        if cached is not None:
            if cached.link_flow_lps is None:  # written before flows and pressures were stored
                cached = with_hydraulics(cached, network)
                if cached.link_flow_lps is not None:
                    cached.save(out)
                    status = "cached; flows and pressures added"
            return cached, status
        check_timeline_size(
            scenario,
            network,
            explainers["mean"].n_layers,
            settings.approximation_lambda,
            meta["horizon"],
            out,
            allow_large,
        )
        if scheduler is not None:
            from .cluster import check_reachable

            check_reachable(scheduler)  # before simulating
        if store is not None:
            store.keep_only(identity)  # the steps of another run go
        result = simulate(scenario, network)
        meta["pressure_warning"] = result.pressure_warning  # flows not physical where negative
        meta["delivery_warning"] = result.delivery_warning  # demand not met below the pressure
        horizon = meta["horizon"]
        if result.n_steps <= horizon:
            raise DataError(
                f"scenario has {result.n_steps} reported steps, not more than the horizon {horizon}"
            )
        graphs = scenario_graphs(result, network, inputs)
        steps = np.arange(result.n_steps - horizon)
        kept = 0
        if scheduler is not None:
            kept = _explain_on_cluster(
                scheduler, model_dir, settings, meta, graphs, steps, store, gpu, progress
            )
        if inputs.node_level:
            raw_forecast = node_forecasts(model, [graphs[t] for t in steps])
            node_forecast = inputs.physical(raw_forecast)
            if chosen is None:
                source = network.node_index(injection_node(scenario, network))
                chosen = [default_target(node_forecast, inputs.min_residual_mg_l, source)]
        series, resumed = _explain_steps(
            explainers, graphs, steps, store, settings, progress, stop, chosen
        )
        kept += resumed if scheduler is None else 0
        if kept:
            total = len(steps) * len(settings.references)
            status += f" (resumed: {kept} of {total} steps kept from an interrupted run)"
        labels = inputs.labels(
            result.node_chlorine_mg_l, np.full(result.n_steps, scenario.injection_strength_mg_l)
        )
        truth = labels[steps + horizon]
        node_arrays: dict[str, Any] = {}
        if inputs.node_level:
            ids = [network.node_ids[v] for v in chosen]
            node_arrays, series = node_fields(ids, series, node_forecast, truth, inputs)
            meta |= {
                "target_nodes": ids,
                "node": ids[0],
                "min_residual_mg_l": inputs.min_residual_mg_l,
            }
        explanations = series.pop("mean")
        forecast = (
            node_forecast
            if inputs.node_level
            else inputs.physical(np.array([e.prediction for e in explanations]))
        )
        meta["forecast_warning"] = inputs.range_warning(forecast)  # damaged weights, say
        if meta["forecast_warning"]:
            logger.warning("timeline of %s: %s", scenario.describe(), meta["forecast_warning"])
        risk = None
        if inputs.node_level and card.risk is not None:  # heads on the risk model, else forecast
            scorer = risk_scorer(model_dir, card, model)  # the risk model, else the forecaster
            scores = risk_scores(scorer, model, [graphs[t] for t in steps], raw_forecast)
            risk = scenario_risk(card, scenario, network, scores)
            node_arrays["node_risk"] = risk.astype(np.float32)
            meta["risk"] = {k: card.risk[k] for k in ("min_residual_mg_l", "method")}
        if inputs.node_level:  # the card's estimator for the scenario's kind of injection
            kind = injection_kind(scenario, network)
            meta["compliance_estimator"] = served_estimator(card.compliance, kind)
            node_arrays["compliance_forecast"] = compliance_share(
                card.compliance, node_forecast, risk, kind, inputs.min_residual_mg_l
            )
        lower, upper = _intervals(
            card, scenario, result, network, steps, forecast, meta, chosen, risk
        )
        if inputs.node_level:  # the timeline's own series follow the first target node
            node_arrays |= {"node_lower": lower, "node_upper": upper}
            i = chosen[0]
            forecast, truth = forecast[:, i], truth[:, i]
            lower, upper = (None, None) if lower is None else (lower[:, i], upper[:, i])
        every = [explanations, *series.values()]
        every += [
            es for by_ref in node_arrays.get("targets", {}).values() for es in by_ref.values()
        ]
        timeline = Timeline(
            steps=steps,
            times_s=result.times_s[steps],
            node_ids=np.asarray(network.node_ids),
            chlorine=result.node_chlorine_mg_l[steps].astype(np.float32),
            forecast=forecast,
            truth=truth,
            explanations=explanations,
            meta={
                **meta,
                "baseline": "mean",
                "reference": "mean",
                "model_dir": str(model_dir),
                "exact": all(e.exact for series_ in every for e in series_),
            },
            alternatives=series,
            lower=lower,
            upper=upper,
            **node_arrays,
            **hydraulics_at(result, steps),
        )
        if out is not None:  # returned as a later read returns it (MIs in float32)
            timeline = timeline.as_saved()
            timeline.save(out)
            store.remove()
        return timeline, status


def _intervals(
    card: ModelCard,
    scenario: ScenarioConfig,
    result: SimulationResult,
    network: Network,
    steps: np.ndarray,
    forecast: np.ndarray,
    meta: dict[str, Any],
    chosen: list[int] | None,
    node_risk: np.ndarray | None = None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The conformal (lower, upper) of every forecast (None without a calibrated card),
    inside the scenario's physical range (:func:`~wdn_explain.features.scenario_range`),
    grouped by the risk of non-compliance where the card's intervals are;
    records the interval's description and the uncertainty notice (for a node model: at the
    first target node) in ``meta``."""
    if card.conformal is None:
        return None, None
    inputs = card.input_spec
    lower, upper = forecast_intervals(
        card,
        scenario,
        network,
        result.times_s[steps],
        forecast,
        result.node_chlorine_mg_l[0],
        node_risk,
    )
    meta["interval"] = {k: card.conformal[k] for k in ("confidence", "method", "groups")}
    node_level = lower.ndim > 1
    if card.notice is not None:  # the scenario's expected error (issue 31)
        features = scenario_features(
            scenario, result.times_s, inputs.horizon, tuple(network.reservoirs)
        )
        meta["uncertainty"] = hard_scenario_notice(card.notice, features, node_level)
    else:  # a card older than the notice: its wide intervals
        meta["uncertainty"] = uncertainty_notice(
            card.conformal,
            *((lower[:, chosen[0]], upper[:, chosen[0]]) if node_level else (lower, upper)),
            result.times_s[steps],
            unit=f"mg/L at node {meta['node']}" if node_level else "of the nodes",
        )
    return lower, upper


def forecast_intervals(
    card: ModelCard,
    scenario: ScenarioConfig,
    network: Network,
    times_s: np.ndarray,
    forecast: np.ndarray,
    initial_mg_l: np.ndarray,
    node_risk: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The conformal (lower, upper) of forecasts made at ``times_s`` (shape (T,) or, for a
    node model, (T, n)) by a calibrated ``card``, inside the scenario's physical range
    (:func:`~wdn_explain.features.scenario_range`; ``initial_mg_l``: the node chlorine the
    scenario starts from, shape (n,)); ``node_risk`` (T, n): the forecasts' risk of
    non-compliance, which groups a node model's intervals where the card's are grouped so."""
    inputs = card.input_spec
    sample_bins = mondrian_bins(scenario, times_s, inputs.horizon, network.reservoirs)
    risk = interval_risk(card.conformal, node_risk)
    groups = card.conformal.get("groups", "")
    bins = forecast_groups(sample_bins, forecast, inputs.node_level, risk, groups=groups)
    limits = scenario_range(inputs.target, scenario.injection_strength_mg_l, initial_mg_l)
    return intervals(card.conformal, forecast, bins, limits, risk)


def risk_scores(
    scorer: torch.nn.Module,
    forecaster: torch.nn.Module,
    graphs: list[Data],
    raw_forecast: np.ndarray,
) -> np.ndarray:
    """The node outputs (T, n) the risk heads read for ``graphs``: the forecaster's raw
    forecasts, already made, when ``scorer`` is the forecaster, else the risk model's."""
    return raw_forecast if scorer is forecaster else node_forecasts(scorer, graphs)


def scenario_risk(
    card: ModelCard, scenario: ScenarioConfig, network: Network, scores: np.ndarray
) -> np.ndarray:
    """The risk of non-compliance at every node (:func:`~wdn_explain.risk.node_risk`) from
    the raw node outputs (T, n) the card's risk heads read in ``scenario`` (its kind of
    injection picks the heads): the risk model's
    (:func:`~wdn_explain.risk_model.risk_scorer`) where the folder has one, else the
    forecast's."""
    return node_risk(card.risk, scores, injection_kind(scenario, network))


def injection_kind(scenario: ScenarioConfig, network: Network) -> str:
    """The scenario's kind of injection (``reservoir`` or ``booster``,
    :func:`~wdn_explain.design.factor_levels`), which picks the risk heads and the
    compliance share's estimator."""
    return factor_levels(scenario, tuple(network.reservoirs))["injection"]


def _with_deprecated(
    settings: ExplainSettings, budget: int | None, memory_gb: float | None
) -> ExplainSettings:
    """``settings`` with the deprecated ``budget``/``memory_gb`` arguments folded in."""
    moved = {"approximation_lambda": budget, "memory_budget_gb": memory_gb}
    moved = {k: v for k, v in moved.items() if v is not None}
    if not moved:
        return settings
    warnings.warn(
        "explain_scenario(budget=, memory_gb=) are deprecated: pass "
        "settings=ExplainSettings(approximation_lambda=..., memory_budget_gb=...)",
        DeprecationWarning,
        stacklevel=3,
    )
    return ExplainSettings.of(**settings.model_dump() | moved)


def _cached(out: str | Path | None, identity: dict[str, Any]) -> tuple[Timeline | None, str]:
    """The timeline in ``out`` when it may be reused, else None and the status saying why
    it is (re)computed."""
    if out is None or not Path(out).exists():
        return None, "computed"
    try:
        cached = Timeline.load(out)
    except DataError as exc:
        status = f"recomputed: {exc}"
    else:
        stale = cache_mismatch(cached.meta, identity)
        if not stale:
            return cached, "cached"
        status = f"recomputed: cache made with another {', '.join(stale)}"
    logger.warning("timeline cache %s %s", out, status)
    return None, status


def parallel_references(settings: ExplainSettings) -> int:
    """How many references :func:`_explain_steps` explains side by side: one thread per
    reference, at most one per core this process may use
    (:func:`~wdn_explain.workers.usable_cores`; the engine itself runs on one thread, see
    :mod:`~wdn_explain.explain.threads`)."""
    return max(1, min(len(settings.references), usable_cores()))


def _explain_steps(
    explainers: dict[str, GraphSHAPIQ],
    graphs: list[Data],
    steps: np.ndarray,
    store: StepStore | None,
    settings: ExplainSettings,
    progress: ProgressArg,
    stop: threading.Event,
    nodes: list[int] | None = None,
) -> tuple[dict[str, list[Explanation | list[Explanation]]], int]:
    """Every step relative to every reference (stored steps reused), and how many were
    reused; with target ``nodes`` (a node-level model) each step is the list of their
    explanations (``explain_nodes``), stored one file per target.

    The references are explained side by side (:func:`parallel_references` threads, see
    :func:`_completed`; torch and NumPy release the GIL): on two idle cores a 2-hour Hanoi
    timeline's explanations take ~0.7 of the time. The values do not depend on it. Results
    are stored and reported (``progress``) by the calling thread as they complete, so an
    interrupted run keeps exactly the steps reported; ``stop`` is set when it ends early
    (see :func:`_completed`)."""
    from .explain.threads import engine_threads

    k = 1 if nodes is None else len(nodes)
    total = len(steps) * len(explainers)
    budget = settings.approximation_lambda
    series: dict[str, list] = {reference: [None] * len(steps) for reference in explainers}
    todo: dict[str, list[int]] = {reference: [] for reference in explainers}
    order = {reference: r for r, reference in enumerate(explainers)}

    def keys(reference: str, i: int) -> range:  # one store for every reference and target
        step = order[reference] * len(steps) + i
        return range(step * k, (step + 1) * k)

    kept = 0
    for reference in explainers:
        for i in range(len(steps)):
            stored = [store.get(key) for key in keys(reference, i)] if store is not None else [None]
            if all(e is not None for e in stored):
                series[reference][i] = stored[0] if nodes is None else stored
                kept += 1
            else:
                todo[reference].append(i)

    def explained(reference: str, i: int) -> list[Explanation]:
        graph = graphs[steps[i]]
        if nodes is None:
            return [explainers[reference].explain(graph, budget=budget)]
        return explainers[reference].explain_nodes(graph, nodes, budget=budget)

    workers = parallel_references(settings)
    with (
        progress_callback(progress, "explain timeline") as cb,
        engine_threads(settings.num_threads),  # set once here, not raced by the threads
        closing(_completed(explained, todo, workers, stop)) as completed,
    ):
        if cb and kept:
            cb(kept, total)
        done = kept
        for reference, i, explanations in completed:
            if store is not None:
                for key, explanation in zip(keys(reference, i), explanations):
                    store.put(key, explanation)
            series[reference][i] = explanations[0] if nodes is None else explanations
            done += 1
            if cb:
                cb(done, total)
    return series, kept


def _completed(
    explained: Callable[[str, int], list[Explanation]],
    todo: dict[str, list[int]],
    workers: int,
    stop: threading.Event,
) -> Iterator[tuple[str, int, list[Explanation]]]:
    """(reference, step index, ``explained(reference, index)``) for every index of ``todo``,
    as the steps complete: in the calling thread with one worker, else on ``workers``
    threads, one step per reference at a time (its explainer is never shared). Closing it
    early (an error, an interrupt) starts no other step and waits for none in flight: it
    sets ``stop``, so the steps in flight give up at their engine's next progress report
    (:func:`_giving_up`) and are dropped, unreported and unstored (a resumed run explains
    them). The engine reports after each chunk of the last layer's node states (exact
    values; the earlier layers run to their end first) or of coalitions (model calls), so
    the process does not wait at exit (where Python joins the threads) for whole steps."""
    if workers == 1:
        for reference, indices in todo.items():
            for i in indices:
                yield reference, i, explained(reference, i)
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="wdn-explain-reference")
    queues = {reference: iter(indices) for reference, indices in todo.items()}
    running: dict[Future, tuple[str, int]] = {}

    def submit(reference: str) -> None:
        i = next(queues[reference], None)
        if i is not None:
            running[pool.submit(explained, reference, i)] = (reference, i)

    try:
        for reference in queues:
            submit(reference)
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                reference, i = running.pop(future)
                yield reference, i, future.result()
                submit(reference)
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)


class _GivenUp(Exception):
    """A step abandoned in its worker thread after the run ended early (never seen by a
    caller: the step's future is dropped)."""


def _giving_up(stop: threading.Event) -> Callable[[int, int], None]:
    """An explainer's progress callback that abandons the step (raises :class:`_GivenUp`)
    once ``stop`` is set: the engine reports after each chunk of its last layer's node states
    or of its coalitions."""

    def check(done: int, total: int) -> None:
        if stop.is_set():
            raise _GivenUp

    return check


_TASK_EXPLAINERS: dict[tuple, GraphSHAPIQ] = {}


def _explain_task(
    model: tuple[str, str, bool],
    settings_json: str,
    reference: str,
    graph: Data,
    folder: str,
    key: int,
) -> int:
    """Explain one step relative to ``reference`` into the step store ``folder`` (a cluster
    task): skipped when the step is already stored, written atomically otherwise.
    ``model`` is the model folder, its hash (workers keep the model while it matches) and
    whether to run it on the worker's GPU when it has one; ``settings_json`` the run's
    :class:`ExplainSettings`, rebuilt unchanged on the worker."""
    import torch

    from .explain import GraphSHAPIQ
    from .model_folder import load_model

    store = StepStore(Path(folder))
    if store.has(key):
        return key
    settings = ExplainSettings.model_validate_json(settings_json)
    cache_key = (model, settings_json, reference)
    if cache_key not in _TASK_EXPLAINERS:  # workers keep the model across tasks
        device = "cuda" if model[2] and torch.cuda.is_available() else "cpu"
        _TASK_EXPLAINERS[cache_key] = GraphSHAPIQ(
            load_model(model[0])[0].to(device),
            progress=False,
            **settings.explainer_options(reference),
        )
    explanation = _TASK_EXPLAINERS[cache_key].explain(graph, budget=settings.approximation_lambda)
    store.save(key, explanation)
    return key


def _explain_on_cluster(
    scheduler: str,
    model_dir: str | Path,
    settings: ExplainSettings,
    meta: dict[str, Any],
    graphs: list[Data],
    steps: np.ndarray,
    store: StepStore,
    gpu: bool,
    progress: ProgressArg,
) -> int:
    """Explain the steps missing from ``store`` on the Dask cluster at ``scheduler``;
    return how many were already stored. ExplainError listing every failed step."""
    from .cluster import failure_report, run_tasks

    references = settings.references
    total = len(steps) * len(references)
    missing = [k for k in range(total) if not store.has(k)]
    folder = str(store.folder.absolute())
    model = (str(Path(model_dir).absolute()), meta["model_hash"], gpu)
    run = hashlib.sha256(json.dumps(meta, sort_keys=True).encode() + folder.encode())
    settings_json = settings.model_dump_json()
    tasks = []
    for key in missing:
        reference, t = references[key // len(steps)], int(steps[key % len(steps)])
        args = (model, settings_json, reference, graphs[t], folder, key)
        tasks.append((f"explain-{run.hexdigest()[:12]}-{reference}-step-{t:06d}", args))
    with progress_callback(progress, "explain on cluster") as cb:
        failures = run_tasks(
            scheduler,
            _explain_task,
            tasks,
            progress=cb,
            done=total - len(missing),
            total=total,
            want_gpu=gpu,
        )
    if failures:
        raise ExplainError(failure_report(failures, "steps"))
    return total - len(missing)


def check_timeline_size(
    scenario: ScenarioConfig,
    network: Network,
    n_layers: int,
    approximation_lambda: int | None,
    horizon: int,
    out: str | Path | None,
    allow_large: bool,
) -> None:
    """Refuse a timeline whose estimate (time, disk, memory) exceeds the limits (sized by
    the lambda-approximation's model calls when ``approximation_lambda`` is set)."""
    from .explain import complexity
    from .explain.neighbourhoods import approximation_calls, maximal_fields, receptive_fields

    n_steps = max(0, scenario.n_reports - horizon)
    if approximation_lambda:
        fields = receptive_fields(network.edge_index, network.n_nodes, n_layers)[-1]
        size = approximation_calls(maximal_fields(fields), approximation_lambda)
    else:
        size = complexity(network.edge_index, network.n_nodes, n_layers).n_interactions
    estimate = estimate_timeline(n_steps, size)
    check_size(estimate, Path(out or ".").absolute().parent, allow_large=allow_large)
