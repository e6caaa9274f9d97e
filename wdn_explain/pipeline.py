"""The run that makes a timeline: simulate a scenario, forecast and explain every step
(locally or as Dask tasks), cache the result (:mod:`.timeline` holds what it makes)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .conformal import intervals, mondrian_bins, uncertainty_notice
from .design import card_envelope
from .errors import ConfigError, DataError, ExplainError
from .explain.explanation import ENGINE_VERSION, Explanation
from .features import InputSpec, check_plan, source_plan
from .model_folder import model_hash
from .progress import ProgressArg, progress_callback
from .scenario import ScenarioConfig
from .simulation import SimulationResult, injection_node, simulate
from .sizes import check_size, estimate_timeline
from .stepstore import StepStore
from .timeline import REFERENCES, Timeline

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from .explain import GraphSHAPIQ
    from .network import Network

logger = logging.getLogger(__name__)


def scenario_graphs(result: SimulationResult, network: Network, inputs: InputSpec) -> list[Data]:
    """Model inputs at every report of a simulated scenario, built as in training."""
    import torch
    from torch_geometric.data import Data

    strength = np.full(result.n_steps, result.config.injection_strength_mg_l, dtype=np.float32)
    plan = None
    if inputs.uses_plan:
        source = network.node_index(injection_node(result.config, network))
        plan = source_plan(result.config, result.times_s, source, network.n_nodes, inputs.horizon)
        check_plan(plan, result.node_source_mg_l, network.node_ids)
    x = inputs.node_inputs(result.node_chlorine_mg_l, result.node_source_mg_l, strength, plan)
    edge_attr = inputs.edge_inputs(result.link_flow_lps)
    return [
        Data(
            x=torch.from_numpy(x[t]),
            edge_index=network.edge_index,
            edge_attr=torch.from_numpy(edge_attr[t]),
        )
        for t in range(result.n_steps)
    ]


def out_of_design(
    scenario: ScenarioConfig, card: dict[str, Any], network: Network
) -> list[str] | None:
    """What of ``scenario`` lies outside the model's training design (see
    :mod:`wdn_explain.design`); None when the card records no design."""
    envelope = card_envelope(card)
    if envelope is None:
        return None
    return envelope.outside(scenario, injection_node(scenario, network))


def explain_scenario(
    scenario: ScenarioConfig,
    model_dir: str | Path,
    *,
    out: str | Path | None = None,
    progress: ProgressArg = False,
    explainer_options: dict[str, Any] | None = None,
    allow_large: bool = False,
    scheduler: str | None = None,
    gpu: bool = False,
    budget: int | None = None,
    memory_gb: float | None = None,
) -> tuple[Timeline, str]:
    """Simulate a scenario, forecast and explain every step exactly, relative to every
    reference in :data:`REFERENCES` (the network average and no chlorine); cache to ``out``.

    With ``budget`` (lambda) every step is explained by the lambda-approximation instead,
    recorded in ``meta["budget"]`` (a cached file is reused only for the same budget);
    ``memory_gb`` is the engine's memory budget (see ``GraphSHAPIQ(memory_budget_gb=...)``).

    Explained steps are streamed to a folder beside ``out`` (see :mod:`.stepstore`), so an
    interrupted run resumes; a scenario whose estimate exceeds :data:`~.sizes.LIMITS` is
    refused before any work unless ``allow_large``.

    Returns (timeline, status) where status is ``cached`` (a matching file was reused),
    ``computed``, or ``recomputed: <reason>`` (the file was corrupt or stale), followed by
    `` (resumed: k of n steps ...)`` when steps of an interrupted run were reused.

    With ``scheduler`` (a Dask scheduler address, needs ``out``), the steps are explained
    by :func:`_explain_task` tasks on that cluster (on workers with a ``GPU`` resource when
    ``gpu`` and one has it, running the model there on CUDA) into the step store, then
    assembled here: the file's bytes are those of a local run (on CPU workers; a GPU's
    values agree to about 1e-7).
    """
    from .explain import GraphSHAPIQ
    from .network import load_network
    from .training import load_model

    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        raise ConfigError(f"budget (lambda) must be an integer >= 1 (got {budget!r})")
    if memory_gb is not None and not memory_gb > 0:
        raise ConfigError(f"memory budget must be over 0 GB (got {memory_gb!r})")
    model, card = load_model(model_dir)
    network = load_network(scenario.network)
    if card["data"]["network"]["sha256"] != network.file_sha256:
        raise DataError(
            f"model '{model_dir}' was trained on network '{card['data']['network']['name']}', "
            f"the scenario runs on '{network.name}'"
        )
    inputs = InputSpec.from_card(card)
    options = dict(explainer_options or {})
    meta = {
        "scenario": scenario.model_dump(mode="json"),
        "scenario_hash": scenario.config_hash(),
        "model_hash": model_hash(model_dir),
        "engine_version": ENGINE_VERSION,
        "horizon": inputs.horizon,
        "threshold": inputs.threshold,
        "threshold_unit": inputs.threshold_unit,
        "explainer": options,
        "budget": budget,
        "references": list(REFERENCES),
        "out_of_design": out_of_design(scenario, card, network),
    }
    status = "computed"
    if out is not None and Path(out).exists():
        try:
            cached = Timeline.load(out)
            stale = [
                k
                for k in (
                    "scenario_hash",
                    "model_hash",
                    "engine_version",
                    "explainer",
                    "budget",
                    "references",
                )
                if cached.meta.get(k) != meta[k]
            ]
            if not stale:
                return cached, "cached"
            status = f"recomputed: cache made with another {', '.join(stale)}"
        except DataError as exc:
            status = f"recomputed: {exc}"
        logger.warning("timeline cache %s %s", out, status)
    _check_size(
        scenario, network, options.get("n_layers", model.num_layers), meta, out, allow_large
    )
    result = simulate(scenario, network)
    horizon = meta["horizon"]
    if result.n_steps <= horizon:
        raise DataError(
            f"scenario has {result.n_steps} reported steps, not more than the horizon {horizon}"
        )
    graphs = scenario_graphs(result, network, inputs)
    steps = np.arange(result.n_steps - horizon)
    labels = inputs.labels(
        result.node_chlorine_mg_l, np.full(result.n_steps, scenario.injection_strength_mg_l)
    )
    series: dict[str, list[Explanation]] = {}
    store = StepStore.beside(out, meta) if out is not None else None
    kept = 0
    if scheduler is not None:
        if store is None:
            raise ConfigError("explaining on a cluster needs an output file (out)")
        kept = _explain_on_cluster(
            scheduler, model_dir, options, meta, graphs, steps, store, gpu, progress
        )
    with progress_callback(progress, "explain timeline") as cb:
        for r, reference in enumerate(meta["references"]):
            explainer = GraphSHAPIQ(
                model,
                progress=False,
                memory_budget_gb=memory_gb,
                **(options | {"baseline": REFERENCES[reference][0]}),
            )
            series[reference] = []
            for i, t in enumerate(steps):
                key = r * len(steps) + i  # one store for every reference
                explanation = store.get(key) if store is not None else None
                kept += explanation is not None and scheduler is None
                if explanation is None:
                    explanation = explainer.explain(graphs[t], budget=budget)
                    if store is not None:
                        store.put(key, explanation)
                series[reference].append(explanation)
                if cb:
                    cb(key + 1, len(steps) * len(meta["references"]))
    explanations = series.pop("mean")
    if kept:
        total = len(steps) * len(meta["references"])
        status += f" (resumed: {kept} of {total} steps kept from an interrupted run)"
    forecast = np.array([e.prediction for e in explanations])
    lower = upper = None
    if "conformal" in card:
        bins = mondrian_bins(scenario, result.times_s, horizon, network.reservoirs)[steps]
        lower, upper = intervals(card["conformal"], forecast, bins)
        meta["interval"] = {k: card["conformal"][k] for k in ("confidence", "method", "groups")}
        meta["uncertainty"] = uncertainty_notice(
            card["conformal"], lower, upper, result.times_s[steps]
        )
    timeline = Timeline(
        steps=steps,
        times_s=result.times_s[steps],
        node_ids=np.asarray(network.node_ids),
        chlorine=result.node_chlorine_mg_l[steps].astype(np.float32),
        forecast=forecast,
        truth=labels[steps + horizon],
        explanations=explanations,
        meta={
            **meta,
            "baseline": "mean",
            "reference": "mean",
            "model_dir": str(model_dir),
            "exact": all(e.exact for series_ in (explanations, *series.values()) for e in series_),
        },
        alternatives=series,
        lower=lower,
        upper=upper,
    )
    if out is not None:
        timeline.save(out)
        store.remove()
    return timeline, status


_TASK_EXPLAINERS: dict[tuple, GraphSHAPIQ] = {}


def _explain_task(
    model: tuple[str, str, bool],
    options_json: str,
    reference: str,
    graph: Data,
    folder: str,
    key: int,
) -> int:
    """Explain one step relative to ``reference`` into the step store ``folder`` (a cluster
    task): skipped when the step is already stored, written atomically otherwise.
    ``model`` is the model folder, its hash (workers keep the model while it matches) and
    whether to run it on the worker's GPU when it has one."""
    import torch

    from .explain import GraphSHAPIQ
    from .training import load_model

    store = StepStore(Path(folder))
    if store.has(key):
        return key
    options = json.loads(options_json)
    budget = options.pop("budget", None)  # an explain() argument, not an explainer option
    cache_key = (model, options_json, reference)
    if cache_key not in _TASK_EXPLAINERS:  # workers keep the model across tasks
        options |= {"baseline": REFERENCES[reference][0]}
        device = "cuda" if model[2] and torch.cuda.is_available() else "cpu"
        _TASK_EXPLAINERS[cache_key] = GraphSHAPIQ(
            load_model(model[0])[0].to(device), progress=False, **options
        )
    store.save(key, _TASK_EXPLAINERS[cache_key].explain(graph, budget=budget))
    return key


def _explain_on_cluster(
    scheduler: str,
    model_dir: str | Path,
    options: dict[str, Any],
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

    references = meta["references"]
    total = len(steps) * len(references)
    missing = [k for k in range(total) if not store.has(k)]
    folder = str(store.folder.absolute())
    model = (str(Path(model_dir).absolute()), meta["model_hash"], gpu)
    run = hashlib.sha256(json.dumps(meta, sort_keys=True).encode() + folder.encode())
    tasks = []
    for key in missing:
        reference, t = references[key // len(steps)], int(steps[key % len(steps)])
        task_options = options | {"budget": meta["budget"]}
        args = (model, json.dumps(task_options), reference, graphs[t], folder, key)
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


def _check_size(
    scenario: ScenarioConfig,
    network: Network,
    n_layers: int,
    meta: dict[str, Any],
    out: str | Path | None,
    allow_large: bool,
) -> None:
    """Refuse a timeline whose estimate (time, disk, memory) exceeds the limits (sized by
    the lambda-approximation's model calls when ``meta["budget"]`` is set)."""
    from .explain import complexity
    from .explain.neighbourhoods import approximation_calls, maximal_fields, receptive_fields

    n_steps = max(0, scenario.n_reports - meta["horizon"])
    if meta["budget"]:
        fields = receptive_fields(network.edge_index, network.n_nodes, n_layers)[-1]
        size = approximation_calls(maximal_fields(fields), meta["budget"])
    else:
        size = complexity(network.edge_index, network.n_nodes, n_layers).n_interactions
    estimate = estimate_timeline(n_steps, size)
    check_size(estimate, Path(out or ".").absolute().parent, allow_large=allow_large)
