"""GraphSHAP-IQ: exact any-order Shapley interactions of graph-level GNN predictions.

Muschalik, Fumagalli, Frazzetto, Strotherm, Hermes, Sperduti, Hüllermeier, Hammer:
"Exact Computation of Any-Order Shapley Interactions for Graph Neural Networks", ICLR 2025.

Methods (a registry by name, chosen with ``method=``):

* ``local`` -- node games on the state graph (:mod:`.local`), for models implementing
  :class:`.local.LocalMessagePassing`, or built from standard PyG layers that
  :mod:`.standard` proves local on each graph; no masked graph is run (but a check).
* ``masked`` -- the paper's Algorithm 1: nu(T) for every T in I (|I| masked graphs, batched),
  then a fast Möbius transform on each maximal receptive field. Works for any PyG model.
* ``approximate`` -- Algorithm 3 with budget lambda: all MIs up to size lambda, plus one gap
  term per incomplete receptive field; exact when lambda >= max|N_i| - 1.
* ``bruteforce`` -- all 2^n coalitions (the oracle; n <= 20).

``auto`` picks ``local`` when the model supports it (for standard layers: when the
numerical check on the graph passes; else the reason is logged), else ``masked``.
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch

from ..errors import ExplainError
from ..progress import ProgressArg, progress_callback
from .blocks import MoebiusBlocks, NodeGameSum, preload_shapiq
from .explanation import ENGINE_VERSION, Explanation
from .game import Baseline, GraphGame, inference, model_device_dtype, resolve_baseline
from .hypercube import (
    global_keys,
    keys_to_members,
    moebius_transform,
    popcounts,
    set_key,
    subset_sum,
    unique_keys,
)
from .inputs import plan_call, validate_graph
from .local import POOLINGS, LocalMessagePassing, StateGraph, node_games
from .memory import default_memory_budget_gb, device_free_bytes
from .neighbourhoods import (
    approximation_calls,
    group_by_size,
    interaction_count,
    maximal_fields,
    receptive_fields,
)
from .standard import standard_games, structural_reason
from .threads import check_num_threads, in_engine_threads

if TYPE_CHECKING:
    from torch_geometric.data import Data

logger = logging.getLogger(__name__)

Method = Literal["auto", "local", "masked", "approximate", "bruteforce"]
METHODS = ("auto", "local", "masked", "approximate", "bruteforce")
ReadoutCheck = Literal["error", "warn", "off"]
MAX_BRUTEFORCE_PLAYERS = 20
RANDOM_CHECKS = 8  # random coalitions of the readout check, beside N, ∅ and the fields
MAX_FIELD_CHECKS = 8  # receptive fields checked by their own coalition (the largest first)
READOUT_TOLERANCE_EPS = 64  # readout tolerance: float epsilons of the model's dtype x (1 + max|nu|)
MAX_MASKED_INTERACTIONS = 10_000_000  # default limit on |I| for the masked method (model calls)


class GraphSHAPIQ:
    """Explain graph-level predictions of a PyG model exactly (see the module docstring).

    Args:
        model: A graph-level model called as ``model(x, edge_index, **inputs, batch=batch)``
            (see :mod:`.inputs`; ``DataModel(model)`` for ``forward(data)``) returning
            (n_graphs,) or (n_graphs, C); its global pooling and output layer must be linear.
        n_layers: Message-passing layers L (default: ``model.num_layers``; never below it).
        baseline: ``mean`` node feature of the graph (default), ``zeros`` or a vector.
        method: One of ``auto``, ``local``, ``masked``, ``approximate``, ``bruteforce``.
        max_interactions: Refuse exact work above this |I| (the error suggests a budget);
            default: 10 million for ``masked``, no limit for ``local`` (bounded by memory).
        max_batch_nodes: Nodes per evaluated batch of masked graphs (memory bound).
        memory_budget_gb: Host memory (GB) the ``local`` method may use for the state
            graph and the result; chunks of node states are sized to fit it (and the free
            memory of a GPU). Default: half the memory available when explaining. An
            explanation whose result alone needs over half of it is refused. Held to within
            a few percent from about 0.05 GB up (below that, ~20 MB of fixed overhead).
        readout_check: After an exact explanation, test MI recovery on the grand and empty
            coalitions, the 8 largest receptive fields and 8 random coalitions,
            within 64 float epsilons of the model's dtype x (1 + max|nu|); ``error`` raises,
            ``warn`` warns, ``off`` skips.
        progress: False (default) for none, True for a tqdm bar shown when the work takes
            over a second, or a callback ``(done, total)``.
        num_threads: torch intra-op threads while explaining (restored afterwards).
            Default: the user's own setting (``OMP_NUM_THREADS``, ``torch.set_num_threads``)
            when there is one, else 1 (see :mod:`.threads`).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        n_layers: int | None = None,
        *,
        baseline: Baseline = "mean",
        method: Method = "auto",
        max_interactions: int | None = None,
        max_batch_nodes: int = 400_000,
        memory_budget_gb: float | None = None,
        readout_check: ReadoutCheck = "error",
        progress: ProgressArg = False,
        num_threads: int | None = None,
    ) -> None:
        if method not in METHODS:
            raise ExplainError(f"unknown method '{method}' (choose from {', '.join(METHODS)})")
        if readout_check not in ("error", "warn", "off"):
            raise ExplainError(f"readout_check must be error, warn or off (got '{readout_check}')")
        depth = getattr(model, "num_layers", None)
        n_layers = n_layers if n_layers is not None else depth
        if n_layers is None:
            raise ExplainError("n_layers is required: the model has no num_layers attribute")
        if isinstance(n_layers, bool) or not isinstance(n_layers, int | np.integer):
            raise ExplainError(f"n_layers must be an integer >= 1 (got {n_layers!r})")
        if n_layers < 1:
            raise ExplainError(f"n_layers must be >= 1 (got {n_layers})")
        if isinstance(depth, int) and n_layers < depth:
            raise ExplainError(
                f"n_layers={n_layers} is below the model's num_layers={depth}: the receptive "
                "fields would miss nodes the model sees (leave n_layers out)"
            )
        if memory_budget_gb is not None and (
            isinstance(memory_budget_gb, bool)
            or not isinstance(memory_budget_gb, int | float)
            or not memory_budget_gb > 0
        ):
            raise ExplainError(f"memory_budget_gb must be a number > 0 (got {memory_budget_gb!r})")
        if method == "local":
            _check_local(model, int(n_layers))
        self.model = model
        self.n_layers = int(n_layers)
        self.baseline = baseline
        self.method = method
        self.max_interactions = max_interactions
        self.max_batch_nodes = max_batch_nodes
        self.memory_budget_gb = memory_budget_gb
        self.readout_check = readout_check
        self.progress = progress
        self.num_threads = check_num_threads(num_threads)
        self._state_graphs: dict[tuple, StateGraph] = {}
        self._standard_graphs: dict = {}
        preload_shapiq()  # the results' conversion to shapiq, loaded while this explains

    # -- public --------------------------------------------------------------------------
    def game(self, data: Data, output_index: int | None = None) -> GraphGame:
        """The graph game nu of ``data`` (validated, on the model's device)."""
        device, dtype = model_device_dtype(self.model)
        x, edge_index = validate_graph(data, device, dtype)
        call = plan_call(self.model, data, device, dtype)
        game = GraphGame(
            self.model,
            x,
            edge_index,
            call,
            resolve_baseline(self.baseline, x),
            0,
            self.max_batch_nodes,
        )
        with inference(self.model):
            try:
                y = call(self.model, x, edge_index, 1)
            except TypeError as exc:
                raise ExplainError(
                    f"calling the model as {call.describe()} failed ({exc}); a model that "
                    "takes a PyG Data object works through DataModel(model)"
                ) from None
        if y.ndim == 1:
            y = y[:, None]
        if y.ndim != 2 or y.shape[0] != 1:
            raise ExplainError(
                f"the model must return shape (1,) or (1, C) for one graph (got {tuple(y.shape)})"
            )
        if output_index is None:
            output_index = int(y[0].argmax()) if y.shape[1] > 1 else 0
        valid = isinstance(output_index, int | np.integer) and not isinstance(output_index, bool)
        if not valid or not 0 <= output_index < y.shape[1]:
            raise ExplainError(
                f"output_index must be an integer in 0..{y.shape[1] - 1} (got {output_index!r})"
            )
        game.output_index = int(output_index)
        return game

    @in_engine_threads
    def explain(
        self, data: Data, *, output_index: int | None = None, budget: int | None = None
    ) -> Explanation:
        """Explain one graph.

        Args:
            data: A PyG ``Data`` with ``x`` (n, F), ``edge_index`` (2, E) and optional
                ``edge_attr`` (E, D).
            output_index: Model output to explain (default: predicted class, or 0).
            budget: lambda for ``approximate`` (largest MI size evaluated).

        Raises:
            ExplainError: invalid graph, baseline, output, index, or |I| over the limit.
        """
        game = self.game(data, output_index)
        method = self.method
        if budget is not None and method in ("auto", "approximate"):
            method = "approximate"
        elif method == "approximate":
            raise ExplainError("method 'approximate' needs a budget (lambda >= 1)")
        elif budget is not None:
            raise ExplainError(
                f"a budget applies to method 'approximate' only (method is '{method}')"
            )
        local_inputs = set(game.call.inputs) <= {"edge_attr"}
        fields = receptive_fields(game.edge_index, game.n_players, self.n_layers)
        standard = None  # standard PyG layers on the state graph (explain/standard.py)
        if method in ("auto", "local") and not isinstance(self.model, LocalMessagePassing):
            standard = standard_games(
                self.model, game, fields, self.memory_budget_bytes(), self._standard_graphs
            )
            if isinstance(standard, str):
                if method == "local":
                    raise ExplainError(
                        f"method 'local' cannot run {type(self.model).__name__} on the state "
                        f"graph: {standard} (use 'masked')"
                    )
                logger.info("masked graphs for %s: %s", type(self.model).__name__, standard)
            method = "masked" if isinstance(standard, str) else "local"
        if method == "auto":
            local = isinstance(self.model, LocalMessagePassing) and local_inputs
            method = "local" if local and self.model.num_layers == self.n_layers else "masked"
        if method == "local" and standard is None:
            _check_local(self.model, self.n_layers)
            if not local_inputs:
                raise ExplainError(
                    "method 'local' passes only x and edge_attr to the model's layers, but the "
                    f"model is called as {game.call.describe()} (use 'masked')"
                )
        with progress_callback(self.progress, f"GraphSHAP-IQ ({method})") as cb:
            if method == "bruteforce":
                blocks, n_evals, n_states, exact = self._bruteforce(game, cb)
            elif method == "approximate":
                if (
                    isinstance(budget, bool)
                    or not isinstance(budget, int | np.integer)
                    or budget < 1
                ):
                    raise ExplainError(f"budget (lambda) must be an integer >= 1 (got {budget})")
                blocks, n_evals, n_states, exact = self._approximate(
                    game, fields[-1], int(budget), cb
                )
            elif method == "local":
                if self.max_interactions is not None:
                    self._check_size(fields[-1], game.n_players, self.max_interactions)
                blocks, n_evals, n_states, exact = self._local(game, fields, cb, standard)
            else:
                limit = self.max_interactions or MAX_MASKED_INTERACTIONS
                self._check_size(fields[-1], game.n_players, limit)
                blocks, n_evals, n_states, exact = self._masked(game, fields[-1], cb)
        check = exact and self.readout_check != "off" and method != "bruteforce"
        coalitions, predicted = _check_coalitions(game, blocks, fields[-1], check)
        values = game.evaluate(coalitions)
        nu_full, nu_empty = float(values[0]), float(values[1])
        explanation = Explanation(
            blocks=blocks,
            prediction=nu_full,
            empty_prediction=nu_empty,
            output_index=game.output_index,
            n_layers=self.n_layers,
            method=method,
            n_graph_evaluations=n_evals,
            n_node_states=n_states,
            exact=exact,
            baseline=game.baseline.detach().cpu().numpy(),
            meta={"engine_version": ENGINE_VERSION},
            budget=int(budget) if method == "approximate" else None,
        )
        if check:
            self._check_readout(values, predicted, game.x.dtype)
        return explanation

    def _check_readout(self, actual: np.ndarray, predicted: np.ndarray, dtype) -> None:
        """Raise or warn when MI recovery misses by more than the model's float rounding."""
        violation = np.abs(actual - predicted)
        scale = 1.0 + np.abs(actual).max()
        tolerance = READOUT_TOLERANCE_EPS * torch.finfo(dtype).eps * scale
        worst = int(violation.argmax())
        if violation[worst] <= tolerance:
            return
        n_fields = len(actual) - 2 - RANDOM_CHECKS
        where = ["the whole graph (efficiency gap)", "the empty coalition"]
        where += [f"receptive field {i + 1} (largest first)" for i in range(n_fields)]
        where = (where + ["a random coalition"] * RANDOM_CHECKS)[worst]
        msg = (
            f"the model's output is not a linear readout of {self.n_layers}-hop node "
            f"embeddings: Möbius recovery misses by {violation[worst]:.3g} on {where} "
            f"(tolerance {tolerance:.2g} for {dtype}), so the explanation would not be exact "
            "(check n_layers and that pooling and output layer are linear; "
            "readout_check='off' skips this test)"
        )
        if self.readout_check == "error":
            raise ExplainError(msg)
        warnings.warn(msg, stacklevel=3)

    # -- methods -------------------------------------------------------------------------
    def memory_budget_bytes(self) -> int:
        """The host memory budget in bytes (the default is taken from the memory available now)."""
        budget = self.memory_budget_gb or default_memory_budget_gb()
        return int(budget * 2**30)

    def _check_size(self, fields: list[np.ndarray], n_players: int, limit: int) -> None:
        if sum(2 ** len(f) for f in maximal_fields(fields)) <= limit:
            return  # the Thm. 3.7 bound is within the limit: no need to count
        count, exact = interaction_count(
            fields, n_players, max_count_bytes=min(2**30, self.memory_budget_bytes() // 4)
        )
        if count <= limit:
            return
        what = f"|I| = {count}" if exact else f"|I| <= {count} (Thm. 3.7 bound)"
        largest = max(len(f) for f in fields)
        raise ExplainError(
            f"exact explanation needs {what} model calls, over max_interactions={limit} "
            f"(largest receptive field {largest} nodes){_budget_hint(fields, limit)}"
        )

    def state_graph(self, edge_index: torch.Tensor, fields: list[list[np.ndarray]]) -> StateGraph:
        """The state graph of a structure, built once and cached (time steps share it)."""
        key = (len(fields[0]), edge_index.detach().cpu().numpy().tobytes())
        if key not in self._state_graphs:
            self._state_graphs.clear()
            self._state_graphs[key] = StateGraph.build(edge_index, fields)
        return self._state_graphs[key]

    def _local(self, game: GraphGame, fields, cb, standard=None):
        budget = self.memory_budget_bytes()
        result = NodeGameSum.result_bytes(fields[-1])
        if 2 * result > budget:
            limit = self.max_interactions or MAX_MASKED_INTERACTIONS
            raise ExplainError(
                f"exact explanation holds {result / 8:.3g} node-game values ({result / 2**30:.3g} "
                f"GB), over half the memory budget of {budget / 2**30:.3g} GB (memory_budget_gb, "
                f"--memory-gb){_budget_hint(fields[-1], limit)}"
            )
        if standard is not None:  # proven standard layers (explain/standard.py)
            total = NodeGameSum(game.n_players, fields[-1])
            constant = standard.node_games(total.add)
            return total.blocks(constant), 0, standard.graph.n_states, True
        state_graph = self.state_graph(game.edge_index, fields)
        work = (budget - result) * 3 // 4  # a quarter for the rest (readout check, tables)
        if game.x.device.type == "cuda":
            work = min(work, int(0.8 * device_free_bytes(game.x.device)))
        total = NodeGameSum(game.n_players, fields[-1])
        constant = node_games(
            self.model,
            game.x,
            game.edge_attr,
            game.baseline,
            game.output_index,
            state_graph,
            total.add,
            work_bytes=work,
            progress=cb,
        )
        return total.blocks(constant), 0, state_graph.n_states, True

    def _masked(self, game: GraphGame, fields: list[np.ndarray], cb):
        groups = group_by_size(maximal_fields(fields))
        keys = [global_keys(nodes, game.n_players) for nodes in groups.values()]
        uniq, first, inverse = unique_keys(np.concatenate(keys))
        values = _evaluate_keys(game, uniq, cb)
        out, start = {}, 0
        for k, nodes in groups.items():
            stop = start + len(nodes) * 2**k
            inv = inverse[start:stop]
            mi = moebius_transform(values[inv].reshape(len(nodes), 2**k))
            owned = (first[inv] == np.arange(start, stop)).reshape(mi.shape)
            out[k] = (nodes, np.where(owned, mi, 0.0))
            start = stop
        return MoebiusBlocks(game.n_players, out), len(uniq), 0, True

    def _approximate(self, game: GraphGame, fields: list[np.ndarray], lam: int, cb):
        maximal = maximal_fields(fields)
        largest = max(len(f) for f in maximal)
        if lam >= largest:
            blocks, calls, _, _ = self._masked(game, fields, cb)
            return blocks, calls, 0, True
        groups = group_by_size(maximal)
        incomplete = sorted({tuple(f.tolist()) for f in fields if len(f) > lam}, key=len)
        small_keys, low_masks = [], {}
        for k, nodes in groups.items():
            low_masks[k] = np.flatnonzero(popcounts(k) <= lam)
            small_keys.append(
                global_keys(nodes, game.n_players)
                .reshape(len(nodes), 2**k, -1)[:, low_masks[k]]
                .reshape(-1, _words(game.n_players))
            )
        big_keys = [set_key(f, game.n_players) for f in incomplete]
        uniq, first, inverse = unique_keys(np.concatenate(small_keys + big_keys))
        coalitions = _coalition_matrix(uniq, game.n_players)
        if not coalitions.all(axis=1).any():  # nu(N) is needed for efficiency
            coalitions = np.concatenate([coalitions, np.ones((1, game.n_players), bool)])
        values = game.evaluate(coalitions, progress=cb)
        nu_full = values[np.flatnonzero(coalitions.all(axis=1))[0]]
        # exact MIs up to size lambda, each owned by one maximal block
        out, start = {}, 0
        for k, nodes in groups.items():
            n_low = len(low_masks[k])
            stop = start + len(nodes) * n_low
            inv = inverse[start:stop]
            table = np.zeros((len(nodes), 2**k))
            table[:, low_masks[k]] = values[inv].reshape(len(nodes), n_low)
            mi = moebius_transform(table)
            owned = np.zeros_like(mi, dtype=bool)
            owned[:, low_masks[k]] = (first[inv] == np.arange(start, stop)).reshape(
                len(nodes), n_low
            )
            out[k] = (nodes, np.where(owned, mi, 0.0))
            start = stop
        # one gap term per incomplete field, smallest first (Algorithm 3)
        gaps: list[tuple[frozenset[int], float]] = []
        blocks = MoebiusBlocks(game.n_players, out)
        low_total = _sum_below(blocks, incomplete, lam)
        for i, f in enumerate(incomplete):
            members = frozenset(f)
            nu_f = values[inverse[start + i]]
            gap = nu_f - low_total[i] - sum(g for s, g in gaps if s < members)
            gaps.append((members, gap))
        # efficiency: spread the remaining gap to nu(N) over the maximal incomplete fields
        top = [i for i, (s, _) in enumerate(gaps) if not any(s < t for t, _ in gaps)]
        residual = nu_full - blocks.total() - sum(g for _, g in gaps)
        for i in top:
            gaps[i] = (gaps[i][0], gaps[i][1] + residual / len(top))
        for members, gap in gaps:
            k = len(members)
            nodes = np.array([sorted(members)], dtype=np.int64)
            mi = np.zeros((1, 2**k))
            mi[0, -1] = gap
            old_nodes, old_mi = out.get(k, (np.zeros((0, k), np.int64), np.zeros((0, 2**k))))
            out[k] = (np.concatenate([old_nodes, nodes]), np.concatenate([old_mi, mi]))
        exact = lam >= largest - 1
        return MoebiusBlocks(game.n_players, dict(sorted(out.items()))), len(coalitions), 0, exact

    def _bruteforce(self, game: GraphGame, cb):
        n = game.n_players
        if n > MAX_BRUTEFORCE_PLAYERS:
            raise ExplainError(
                f"brute force needs 2^n model calls; n = {n} is over {MAX_BRUTEFORCE_PLAYERS}"
            )
        masks = np.arange(2**n)
        coalitions = ((masks[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
        values = game.evaluate(coalitions, progress=cb)
        mi = moebius_transform(values[None, :].copy())
        return MoebiusBlocks(n, {n: (np.arange(n)[None, :], mi)}), 2**n, 0, True


def _budget_hint(fields: list[np.ndarray], max_calls: int) -> str:
    """The largest lambda whose approximation stays within ``max_calls`` model calls, as
    advice for the CLI and the API; empty when none does."""
    maximal = maximal_fields(fields)
    for lam in range(max(len(f) for f in maximal) - 1, 0, -1):
        calls = approximation_calls(maximal, lam)
        if calls <= max_calls:
            return (
                f"; try the lambda-approximation with --budget {lam} (budget={lam} in Python, "
                f"about {calls} model calls)"
            )
    return ""


def _words(n_players: int) -> int:
    return max(1, -(-n_players // 64))


def _evaluate_keys(game: GraphGame, keys: np.ndarray, progress) -> np.ndarray:
    """nu of every keyed coalition, building the boolean masks chunk by chunk (memory)."""
    chunk = max(1, game.max_batch_nodes // max(game.n_players, 1)) * 2
    values = np.empty(len(keys))
    for start in range(0, len(keys), chunk):
        stop = min(start + chunk, len(keys))
        values[start:stop] = game.evaluate(_coalition_matrix(keys[start:stop], game.n_players))
        if progress:
            progress(stop, len(keys))
    return values


def _coalition_matrix(keys: np.ndarray, n_players: int) -> np.ndarray:
    """Boolean (m, n) membership matrix of keyed sets."""
    rows, cols = keys_to_members(keys)
    out = np.zeros((len(keys), n_players), dtype=bool)
    out[rows, cols] = True
    return out


def _sum_below(blocks: MoebiusBlocks, sets: list[tuple[int, ...]], lam: int) -> np.ndarray:
    """For each set F: the sum of the held MIs of all S ⊆ F with |S| <= lam."""
    keys, values = blocks.moebius()
    rows, cols = keys_to_members(keys)
    sizes = np.bincount(rows, minlength=len(keys))
    member = np.zeros((len(keys), blocks.n_players), dtype=bool)
    member[rows, cols] = True
    out = np.zeros(len(sets))
    for i, f in enumerate(sets):
        outside = np.ones(blocks.n_players, dtype=bool)
        outside[list(f)] = False
        inside = ~member[:, outside].any(axis=1) & (sizes <= lam)
        out[i] = values[inside].sum()
    return out


def _check_coalitions(
    game: GraphGame, blocks: MoebiusBlocks, fields: list[np.ndarray], check: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Coalitions to evaluate after explaining: N and ∅ first, then (when ``check``) the
    largest receptive fields and random coalitions; and their MI-recovered values."""
    n = game.n_players
    rows = [np.ones(n, bool), np.zeros(n, bool)]
    if check:
        largest = sorted({tuple(f.tolist()) for f in fields}, key=len, reverse=True)
        for f in largest[:MAX_FIELD_CHECKS]:
            row = np.zeros(n, bool)
            row[list(f)] = True
            rows.append(row)
        rng = np.random.default_rng(0)
        rows.extend(rng.random((RANDOM_CHECKS, n)) < rng.uniform(0.2, 0.8, (RANDOM_CHECKS, 1)))
    coalitions = np.stack(rows)
    return coalitions, recovered_values(blocks, coalitions) if check else np.zeros(len(rows))


def recovered_values(blocks: MoebiusBlocks, coalitions: np.ndarray) -> np.ndarray:
    """sum_{S ⊆ T} m(S) for every row T of a boolean (m, n) coalition matrix."""
    predicted = np.full(len(coalitions), blocks.constant)
    for k, (nodes, mi) in blocks.groups.items():
        values = subset_sum(mi.copy())  # block game values v_b(M) = sum_{S ⊆ M} m_b(S)
        local = (coalitions[:, nodes] * (1 << np.arange(k))[None, None, :]).sum(axis=2)
        predicted += values[np.arange(len(nodes))[None, :], local].sum(axis=1)
    return predicted


def recovery_error(
    game: GraphGame, blocks: MoebiusBlocks, *, n_samples: int = 8, seed: int = 0
) -> float:
    """Largest |nu(T) - sum_{S ⊆ T} m(S)| over random coalitions T (MI recovery test)."""
    rng = np.random.default_rng(seed)
    n = game.n_players
    coalitions = rng.random((n_samples, n)) < rng.uniform(0.2, 0.8, size=(n_samples, 1))
    return float(np.abs(game.evaluate(coalitions) - recovered_values(blocks, coalitions)).max())


def check_linear_readout(
    model: torch.nn.Module,
    data: Data,
    n_layers: int | None = None,
    *,
    n_samples: int = 16,
    seed: int = 0,
    baseline: Baseline = "mean",
) -> float:
    """Empirical test of GraphSHAP-IQ's assumption: the game has no MI outside I.

    Computes the MIs on I by masked evaluation and returns the largest MI-recovery error
    |nu(T) - sum_{S ⊆ T, S in I} m(S)| over random coalitions T. Near zero (float rounding)
    for linear pooling and readout with ``n_layers`` layers; clearly positive otherwise
    (e.g. a non-linear MLP after the pooling).
    """
    explainer = GraphSHAPIQ(
        model, n_layers, baseline=baseline, method="masked", readout_check="off"
    )
    game = explainer.game(data)
    fields = receptive_fields(game.edge_index, game.n_players, explainer.n_layers)[-1]
    explainer._check_size(fields, game.n_players, MAX_MASKED_INTERACTIONS)
    blocks, *_ = explainer._masked(game, fields, None)
    return recovery_error(game, blocks, n_samples=n_samples, seed=seed)


def _check_local(model: torch.nn.Module, n_layers: int) -> None:
    """Refuse method 'local' for a model it would explain wrongly."""
    if not isinstance(model, LocalMessagePassing):
        reason = structural_reason(model)
        if reason is None:
            return  # standard layers: proven on each graph when explaining
        raise ExplainError(
            f"method 'local' needs a model implementing LocalMessagePassing or built from "
            f"layers the engine can prove local ({type(model).__name__}: {reason}); use 'masked'"
        )
    if model.num_layers != n_layers:
        raise ExplainError(
            f"method 'local' runs the model's own {model.num_layers} layers, so n_layers must "
            f"equal num_layers={model.num_layers} (got n_layers={n_layers})"
        )
    if model.pooling not in POOLINGS:
        raise ExplainError(
            f"method 'local' needs pooling 'mean' or 'add' (got {model.pooling!r} from "
            f"{type(model).__name__}.pooling); use 'masked'"
        )
