"""Sensor placement from the exact global importance of each node's chlorine reading.

**The game.** For every forecast of a full-state node-level model (one scenario, one step,
one target node v), the players are the nodes' chlorine *readings* -- the chlorine columns of
:mod:`.features` (chlorine now and its history) -- and the value of a coalition T is the
forecast at v when only the nodes of T are read: every other node's chlorine is 0, which is
exactly how a model on chlorine sensors sees an unmeasured node
(``InputSpec.quality_node_sensors``). The source and the dosing plan stay known to the
operator: nodes whose known columns are non-zero (the injection node while it doses or is
planned to) are held at their observed features, never masked. Masking with the zero
baseline therefore removes a node's reading and nothing else.

**The index.** Exact Shapley values of that game (GraphSHAP-IQ's ``local`` method over every
node, then :meth:`~.explain.blocks.MoebiusBlocks.held` folds the held nodes out). The
Shapley value is the one first-order index that splits each forecast exactly among the
readings (efficiency), so "how much of the forecasts a reading carries" adds up over targets,
steps and scenarios. ``per_target[v, j]`` is the mean over every forecast of the design of
|Shapley value| of j's reading for the forecast at v (mg/L); j's **share** of target v is
``per_target[v, j]`` over the row's sum, and a node's **global importance** is its share
summed over the targets: every node's forecast counts once, as in the node MAE a placement
is judged by, not mostly the forecasts near the sources where chlorine, and so every
|Shapley value|, is large. (Summing the raw mg/L instead picked 3, 2, 20, 5 for Hanoi at
k = 4: a ridge on those sensors scored 0.0868 mg/L on the design's validation scenarios,
2 % better than 20 random placements' 0.0886; the shares picked 2, 3, 20, 23: 0.0679.)

**Dask.** The design is cut into chunks of :data:`CHUNK_SCENARIOS` scenarios; each chunk's
float64 sums are one task (:func:`importance_task`) writing one file, skipped when it exists,
so Ctrl-C keeps what finished and a rerun resumes. The chunks are added in chunk order, so
the values are byte for byte those of one process, whichever worker ran a chunk.

**The proposal** (:func:`propose`): the k most important nodes, or (the default) a greedy
cover of the targets' forecasts that passes over redundant readings.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from .errors import ConfigError, DataError
from .features import InputSpec
from .progress import ProgressArg, progress_callback

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from .explain import GraphSHAPIQ
    from .records import ModelCard

CHUNK_SCENARIOS = 10
"""Scenarios per task: a few seconds to a minute of work, small files, fine progress."""
READING_FEATURES = ("chlorine_mg_l", "chlorine_fraction", "chlorine_history_mg_l")
"""The node features a chlorine analyser provides; the others (source, plan) are known."""
RUN_FILE = "run.json"
IMPORTANCE_FILE = "importance.csv"
PLACEMENT_FILE = "placement.json"


@dataclass(frozen=True)
class Importance:
    """Global importance of every node's chlorine reading (see the module docstring).

    Attributes:
        node_ids: The network's node ids, shape (n,).
        per_target: ``per_target[v, j]``: mean over forecasts of |Shapley value| of node j's
            reading for the forecast at node v, mg/L, shape (n, n) float64.
        n_forecasts: Forecasts (scenario x step) averaged over.
    """

    node_ids: tuple[str, ...]
    per_target: np.ndarray
    n_forecasts: int

    def shares(self) -> np.ndarray:
        """``per_target`` with every row divided by its sum (a row of zeros stays zero): the
        share of each target's forecast that each reading carries, shape (n, n)."""
        rows = self.per_target.sum(axis=1, keepdims=True)
        return np.divide(self.per_target, rows, out=np.zeros_like(self.per_target), where=rows > 0)

    @property
    def values(self) -> np.ndarray:
        """Each node's global importance: its :meth:`shares` summed over the targets, shape
        (n,) (the sum over nodes is the number of targets with any importance)."""
        return self.shares().sum(axis=0)

    def ranking(self) -> np.ndarray:
        """Node indices from the most to the least important (ties: network order)."""
        return np.argsort(-self.values, kind="stable")


def reading_columns(inputs: InputSpec) -> np.ndarray:
    """Which input columns are chlorine readings, shape (in_channels,) bool."""
    columns = []
    for name, width in zip(inputs.node_features, inputs.widths):
        columns += [name in READING_FEATURES] * width
    if inputs.quality_node_sensors is not None:
        columns.append(False)  # the ``measured`` flag
    return np.array(columns, dtype=bool)


def check_placement_model(card: ModelCard, model_dir: str | Path) -> None:
    """ConfigError unless the model forecasts every node from chlorine read at every node."""
    inputs = card.input_spec
    if not inputs.node_level:
        raise ConfigError(
            f"model '{model_dir}' forecasts the {inputs.target}, not chlorine at every node: "
            "placement needs a node-level model (target node_chlorine_mg_l)"
        )
    if inputs.quality_node_sensors is not None:
        raise ConfigError(
            f"model '{model_dir}' reads chlorine at sensors {list(inputs.quality_node_sensors)} "
            "only: placement needs a full-state model that reads every node"
        )


def step_importance(explainer: GraphSHAPIQ, data: Data, known: np.ndarray) -> np.ndarray:
    """|Shapley value| of each node's reading (column) for the forecast at each target node
    (row) of one step, shape (n, n) float64. ``explainer`` masks with the zero baseline; nodes with a
    non-zero ``known`` column (bool, (F,)) are held at their features (module docstring).
    Where no player reads anything but 0 (before chlorine arrives) every player is a dummy
    and no model call is made."""
    x = data.x.detach().cpu().numpy()
    held = (x[:, known] != 0).any(axis=1)
    total = np.zeros((len(x), len(x)))
    if not (x[~held] != 0).any():  # every player reads 0, its baseline: all dummies
        return total
    held = np.flatnonzero(held)
    for v, explanation in enumerate(explainer.explain_nodes(data, output_index=0)):
        members, values = explanation.blocks.held(held).index_values("SV")
        total[v, members[:, 0]] = np.abs(values)
    return total


def chunk_importance(model_dir: str, data_dir: str, scenarios: Sequence[int]) -> np.ndarray:
    """:func:`summed_importance` over every forecast of ``scenarios``, reading only those
    scenarios' files, shape (n, n)."""
    from .dataset import WaqDataset, load_waq_arrays

    explainer, card = _loaded(str(model_dir))
    arrays = load_waq_arrays(data_dir, scenarios)
    dataset = WaqDataset.for_card(card, data_dir, "all", arrays=arrays)
    return summed_importance(explainer, dataset, ~reading_columns(card.input_spec))


def summed_importance(explainer: GraphSHAPIQ, dataset: Any, known: np.ndarray) -> np.ndarray:
    """:func:`step_importance` summed over every forecast of a ``WaqDataset``'s scenarios,
    shape (n, n). The first step with a non-zero importance checks the model's readout (the
    engine's readout check: values that add back up to the model's output), the others
    skip it."""
    n = dataset.arrays.chlorine_mg_l.shape[2]
    total = np.zeros((n, n))
    for s in dataset.scenarios:
        for t in range(dataset.n_times):
            explainer.readout_check = "off" if total.any() else "error"
            total += step_importance(explainer, dataset.graph(int(s), t), known)
    return total


@lru_cache(maxsize=2)
def _loaded(model_dir: str) -> tuple[GraphSHAPIQ, ModelCard]:
    """The explainer and the model's card, once per process (workers keep them across
    tasks). The readout check re-evaluates the model on ~20 coalitions per step, more than
    half of a step's time over a design: :func:`chunk_importance` runs it once a chunk."""
    from .explain import GraphSHAPIQ
    from .model_folder import load_model

    model, card = load_model(model_dir)
    check_placement_model(card, model_dir)
    explainer = GraphSHAPIQ(model, baseline="zeros", readout_check="off", num_threads=1)
    return explainer, card


def importance_task(model_dir: str, data_dir: str, scenarios: Sequence[int], path: str) -> str:
    """Write the chunk's sums to ``path`` (a .npy, atomically) unless it exists; the path."""
    from .files import atomic_write

    if not Path(path).exists():
        sums = chunk_importance(model_dir, data_dir, scenarios)
        with atomic_write(path, suffix=".npy") as tmp:
            np.save(tmp, sums, allow_pickle=False)
    return path


def check_k(k: int, n_nodes: int) -> int:
    """``k`` when it is an integer in 1..``n_nodes``, else ConfigError."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= n_nodes:
        raise ConfigError(
            f"k must be an integer between 1 and {n_nodes}, the network's nodes (got {k})"
        )
    return int(k)


Rule = Literal["coverage", "top"]
RULES: tuple[str, ...] = get_args(Rule)


def check_rule(rule: str) -> Rule:
    """``rule`` when it is one of :data:`RULES`, else ConfigError."""
    if rule not in RULES:
        raise ConfigError(f"rule must be one of {', '.join(RULES)} (got '{rule}')")
    return rule  # type: ignore[return-value]


def propose(importance: Importance, k: int, rule: Rule = "coverage") -> tuple[str, ...]:
    """``k`` sensor nodes from the global importance, in the order picked.

    * ``top``: the k most important nodes.
    * ``coverage`` (redundancy-aware): greedily the node that adds most to
      sum over targets v of max over chosen j of ``shares()[v, j]`` -- each target
      credited with its best reading only, so a second sensor that carries the same
      targets' forecasts as a chosen one (a neighbour on the same main) gains little. The
      objective is monotone submodular (facility location), so greedy reaches at least
      1 - 1/e of the best k-set's value. Ties go to the node listed first.

    Raises:
        ConfigError: ``k`` outside 1..n, an unknown rule.
    """
    check_k(k, len(importance.node_ids))
    check_rule(rule)
    if rule == "top":
        chosen = importance.ranking()[:k].tolist()
    else:
        a, chosen = importance.shares(), []
        covered = np.zeros(len(a))
        for _ in range(k):
            gain = np.maximum(a, covered[:, None]).sum(axis=0)
            gain[chosen] = -np.inf
            best = int(np.argmax(gain))
            chosen.append(best)
            covered = np.maximum(covered, a[:, best])
    return tuple(importance.node_ids[i] for i in chosen)


def place(
    model_dir: str | Path,
    data_dir: str | Path,
    out: str | Path,
    k: int,
    rule: Rule = "coverage",
    **options: Any,
) -> tuple[Importance, tuple[str, ...]]:
    """:func:`global_importance` (``options`` passed on) and the ``k`` sensors it proposes by
    ``rule`` (:func:`propose`), also written to ``placement.json`` under ``out``; bad input
    is refused before anything is written."""
    from .files import atomic_write
    from .waq import read_manifest

    check_k(k, read_manifest(data_dir).network.n_nodes)
    check_rule(rule)
    importance = global_importance(model_dir, data_dir, out, **options)
    sensors = propose(importance, k, rule)
    record = {
        "k": k,
        "rule": rule,
        "quality_node_sensors": list(sensors),
        "model": str(model_dir),
        "data": str(data_dir),
        "n_forecasts": importance.n_forecasts,
        **json.loads((Path(out) / RUN_FILE).read_text()),
    }
    with atomic_write(Path(out) / PLACEMENT_FILE) as tmp:
        tmp.write_text(json.dumps(record, indent=1) + "\n")
    return importance, sensors


def global_importance(
    model_dir: str | Path,
    data_dir: str | Path,
    out: str | Path,
    *,
    n_scenarios: int | None = None,
    chunk_scenarios: int = CHUNK_SCENARIOS,
    workers: int = 1,
    scheduler: str | None = None,
    progress: ProgressArg = False,
) -> Importance:
    """Global importance of every node's reading over the first ``n_scenarios`` scenarios
    (default: all) of a WAQ folder, for a full-state node-level model; chunks and the table
    (``importance.csv``) are written under ``out``.

    Args:
        workers: Local worker processes (a Dask ``LocalCluster``) when over 1.
        scheduler: A Dask scheduler address to run the chunks on instead.

    Raises:
        ConfigError: a model that is not full-state node-level, bad counts, an unreachable
            scheduler. DataError: data of another network than the model's; a folder
            holding another run; failed chunks.
    """
    from .evaluation import check_data_matches
    from .files import atomic_write, check_output, claimed
    from .model_folder import model_hash, read_card
    from .waq import read_manifest

    card = read_card(model_dir)
    check_placement_model(card, model_dir)
    manifest = read_manifest(data_dir)
    check_data_matches(card, manifest, data_dir)
    total = manifest.n_scenarios if n_scenarios is None else n_scenarios
    if not 1 <= total <= manifest.n_scenarios:
        raise ConfigError(
            f"scenarios must be between 1 and {manifest.n_scenarios}, the scenarios of "
            f"'{data_dir}' (got {total})"
        )
    if chunk_scenarios < 1 or workers < 1:
        raise ConfigError(f"chunk and workers must be >= 1 (got {chunk_scenarios}, {workers})")
    if scheduler is not None:
        from .cluster import check_reachable

        check_reachable(scheduler)
    identity = {
        "model_sha": model_hash(model_dir),
        "data_config_hash": manifest.config_hash,
        "n_scenarios": total,
        "chunk_scenarios": chunk_scenarios,
        "chunk_sums": "per target and node, float64 (n, n)",
    }
    out = check_output(out, kind="dir", what="placement folder")
    with claimed(out, "placement folder"):
        _check_identity(out / RUN_FILE, identity)
        chunks = [
            range(i, min(i + chunk_scenarios, total)) for i in range(0, total, chunk_scenarios)
        ]
        paths = [out / "chunks" / f"chunk_{i:05d}.npy" for i in range(len(chunks))]
        todo = [i for i, p in enumerate(paths) if not p.exists()]
        model_abs, data_abs = str(Path(model_dir).resolve()), str(Path(data_dir).resolve())
        args = {  # absolute: Dask workers run in their own scratch folders
            i: (model_abs, data_abs, list(chunks[i]), str(paths[i].resolve())) for i in todo
        }
        with progress_callback(progress, "importance") as report:
            _run_chunks(args, identity["model_sha"], report, len(chunks), scheduler, workers)
        n = manifest.network.n_nodes
        sums = np.zeros((n, n))
        for path in paths:  # fixed order: the same bytes wherever a chunk ran
            sums += np.load(path, allow_pickle=False)
        n_forecasts = total * (len(manifest_times(data_dir)) - card.input_spec.horizon)
        importance = Importance(tuple(manifest.network.node_ids), sums / n_forecasts, n_forecasts)
        with atomic_write(out / IMPORTANCE_FILE) as tmp:
            tmp.write_text(importance_table(importance))
    return importance


def manifest_times(data_dir: str | Path) -> np.ndarray:
    """The report times of a WAQ folder's first scenario (s)."""
    from .files import load_npz
    from .waq import scenario_path

    with load_npz(scenario_path(Path(data_dir), 0)) as arrays:
        return np.asarray(arrays["times_s"])


def importance_table(importance: Importance) -> str:
    """``rank,node,importance`` rows, most important first (CSV text)."""
    rows = ["rank,node,importance"]
    for rank, i in enumerate(importance.ranking(), start=1):
        rows.append(f"{rank},{importance.node_ids[i]},{importance.values[i]:.9g}")
    return "\n".join(rows) + "\n"


def _check_identity(path: Path, identity: dict[str, Any]) -> None:
    """Write the run's identity, or DataError when the folder holds another run's chunks."""
    if path.exists():
        found = json.loads(path.read_text())
        if found != identity:
            changed = ", ".join(k for k in identity if found.get(k) != identity[k])
            raise DataError(
                f"placement folder '{path.parent}' holds another run (differs in {changed}); "
                "choose another folder or remove it"
            )
        return
    from .files import atomic_write

    with atomic_write(path) as tmp:
        tmp.write_text(json.dumps(identity, indent=1) + "\n")


def _run_chunks(
    args: dict[int, tuple],
    model_sha: str,
    report: Any,
    n_chunks: int,
    scheduler: str | None,
    workers: int,
) -> None:
    """Run the missing chunks here, on a local cluster of ``workers`` processes or on the
    scheduler's cluster; DataError listing the chunks that failed."""
    done = n_chunks - len(args)
    if report:
        report(done, n_chunks)
    if scheduler is None and workers == 1:
        for task in args.values():
            importance_task(*task)
            done += 1
            if report:
                report(done, n_chunks)
        return
    from .cluster import failure_report, local_cluster, run_tasks

    with nullcontext(scheduler) if scheduler else local_cluster(workers) as address:
        tasks = [(f"importance-{model_sha[:12]}-{i:05d}", task) for i, task in args.items()]
        failures = run_tasks(
            address, importance_task, tasks, progress=report, done=done, total=n_chunks
        )
    if failures:
        raise DataError(failure_report(failures, "importance chunks"))
