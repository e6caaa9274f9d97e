"""GraphSHAP-IQ: exact any-order Shapley interactions of GNN predictions, graph- or node-level.

Muschalik, Fumagalli, Frazzetto, Strotherm, Hermes, Sperduti, Hüllermeier, Hammer:
"Exact Computation of Any-Order Shapley Interactions for Graph Neural Networks", ICLR 2025.

**Targets.** ``explain(data)`` explains the graph's output. ``explain(data, node=v)`` and
``explain_nodes(data, nodes)`` explain the output at target nodes of a model that returns
one row per node: the node game nu_v(T) (output at v, nodes outside T masked) depends only
on v's L-hop receptive field N_v, so its MIs live on the power set of N_v. Players keep the
graph's global node indices (n players; every node outside N_v is a dummy with value 0), so
every index draws on the graph unchanged. Targets explained together share the work: one
state graph (``local``) or one set of masked graphs (``masked``).

**Players.** ``players=`` (node indices) explains the game of a chosen player set P: every
other node is held at its observed features (``hold="observed"``, the default) or at the
baseline (``hold="baseline"``). Its MIs live on the power sets of the receptive fields
restricted to P (the paper's Thm. 3.7 with P for N), so ``masked`` evaluates exactly those
coalitions, at most 2^|P|; results are over |P| players, player k being node
``explanation.players[k]``. ``local`` runs every node as a player and refuses a player set.

**Methods** are registered in :data:`METHOD_TABLE` (name -> :class:`MethodSpec`), which
``explain`` consults; ``method=`` names one of them or ``auto``:

* ``local`` -- node games on the state graph (:mod:`.local`), for models implementing
  :class:`.local.LocalMessagePassing`, or built from standard PyG layers that
  :mod:`.standard` proves local on each graph; no masked graph is run (but a check).
* ``masked`` -- the paper's Algorithm 1: nu(T) for every T in I (|I| masked graphs, batched),
  then a fast Möbius transform on each maximal receptive field. Works for any PyG model.
* ``approximate`` -- Algorithm 3 with budget lambda: all MIs up to size lambda, plus one gap
  term per incomplete receptive field; exact when lambda >= max|N_i| - 1.
* ``bruteforce`` -- all 2^n coalitions (the oracle; n <= 20).

``auto`` takes the first method of the table that ``auto`` may pick and that accepts the
model, depth and inputs: ``local`` when the model supports it (a ``LocalMessagePassing``
model, or standard PyG layers proven on the graph by a numerical check, see
:mod:`.standard`; else the reason is logged), else ``masked``. A ``budget`` selects
``approximate``.

The methods' work lives beside this module: :mod:`.local` and :mod:`.standard` (state graph),
:mod:`.masked` (masked graphs and the approximation), :mod:`.readout` (the readout check),
:mod:`.targets` (node targets and output rows), :mod:`.outcome` (what a method returns).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch

from ..errors import ExplainError
from ..progress import ProgressArg, progress_callback
from .blocks import MoebiusBlocks, NodeGameSum, TargetGames, preload_shapiq
from .explanation import ENGINE_VERSION, Explanation
from .game import (
    Baseline,
    GraphGame,
    Hold,
    check_players,
    inference,
    model_device_dtype,
    player_fields,
    resolve_baseline,
)
from .hypercube import moebius_transform
from .inputs import plan_call, validate_graph
from .local import LocalMessagePassing, StateGraph, check_pooling, local_model_refusal, node_games
from .masked import (
    MAX_MASKED_INTERACTIONS,
    approximate_blocks,
    budget_hint,
    masked_blocks,
    target_fields,
    union_fields,
)
from .memory import default_memory_budget_gb, device_free_bytes
from .neighbourhoods import interaction_count, maximal_fields, receptive_fields
from .outcome import Outcome
from .readout import check_coalitions, check_readout, recovery_error
from .standard import standard_games
from .targets import check_nodes, output_rows
from .threads import check_num_threads, in_engine_threads

if TYPE_CHECKING:
    from torch_geometric.data import Data

logger = logging.getLogger(__name__)

Method = Literal["auto", "local", "masked", "approximate", "bruteforce"]
ReadoutCheck = Literal["error", "warn", "off"]
MAX_BRUTEFORCE_PLAYERS = 20
Fields = list[list[np.ndarray]]  # receptive fields per layer, from receptive_fields()


@dataclass(frozen=True)
class MethodSpec:
    """One way of computing the MIs, as :data:`METHOD_TABLE` registers it.

    Attributes:
        run: ``run(explainer, game, fields, budget, progress) -> Outcome`` for a validated
            game (``budget`` is lambda or None, ``progress`` a callback or None).
        refusal: ``refusal(explainer, game)``: why the method cannot explain this game
            exactly, phrased to follow "method '<name>' " (None: it can). A model that
            no method may explain as declared raises :class:`ExplainError` here.
        auto: Whether ``method="auto"`` may pick it (the table's order is the preference).
        checked: Whether its exact results get the readout check.
    """

    run: Callable[..., Outcome]
    refusal: Callable[[GraphSHAPIQ, GraphGame], str | None]
    auto: bool = True
    checked: bool = True


class GraphSHAPIQ:
    """Explain graph- or node-level predictions of a PyG model exactly (module docstring).

    Args:
        model: A PyG model called as ``model(x, edge_index, **inputs, batch=batch)``
            (see :mod:`.inputs`; ``DataModel(model)`` for ``forward(data)``) returning
            (n_graphs,) or (n_graphs, C), with a linear global pooling and output layer; or,
            for node targets, (n,) or (n, C): one row per node, a linear head per node.
        n_layers: Message-passing layers L (default: ``model.num_layers``; never below it).
        baseline: ``mean`` node feature of the graph (default), ``zeros`` or a vector.
        method: ``auto`` or a name of :data:`METHOD_TABLE` (``local``, ``masked``,
            ``approximate``, ``bruteforce``).
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
        if method != "auto" and method not in METHOD_TABLE:
            names = ", ".join(["auto", *METHOD_TABLE])
            raise ExplainError(f"unknown method '{method}' (choose from {names})")
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
            reason = local_model_refusal(model, int(n_layers))
            if reason is not None:
                raise ExplainError(f"method 'local' {reason}")
            if isinstance(model, LocalMessagePassing) and model.pooling is not None:
                check_pooling(model, node_level=False)
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
        self._standard_graphs: dict = {}  # the standard-layer state graph of the last structure
        self._proven: dict = {}  # the standard-layer node games proven for the game explained
        preload_shapiq()  # the results' conversion to shapiq, loaded while this explains

    # -- public --------------------------------------------------------------------------
    def game(
        self,
        data: Data,
        output_index: int | None = None,
        nodes: Sequence[int] | None = None,
        players: Sequence[int] | None = None,
        hold: Hold = "observed",
    ) -> GraphGame:
        """The game of ``data`` (validated, on the model's device): the graph's output, or
        the outputs at target ``nodes`` of a node-level model (one game each), played by
        every node or by ``players`` (the others at ``hold``). The default ``output_index``
        is the predicted class (of the graph, or of the first target)."""
        return self._game_and_output(data, output_index, nodes, players, hold)[0]

    def _game_and_output(
        self,
        data: Data,
        output_index: int | None,
        nodes: Sequence[int] | None,
        players: Sequence[int] | None = None,
        hold: Hold = "observed",
    ) -> tuple[GraphGame, torch.Tensor]:
        """:meth:`game` and the model's output on the unmasked graph, (rows, C)."""
        device, dtype = model_device_dtype(self.model)
        x, edge_index = validate_graph(data, device, dtype)
        targets = None if nodes is None else check_nodes(nodes, x.shape[0])
        chosen = check_players(players, hold, x.shape[0])
        call = plan_call(self.model, data, device, dtype)
        game = GraphGame(
            self.model,
            x,
            edge_index,
            call,
            resolve_baseline(self.baseline, x),
            0,
            self.max_batch_nodes,
            targets,
            chosen,
            hold,
        )
        with inference(self.model):
            try:
                y = call(self.model, x, edge_index, 1)
            except TypeError as exc:
                raise ExplainError(
                    f"calling the model as {call.describe()} failed ({exc}); a model that "
                    "takes a PyG Data object works through DataModel(model)"
                ) from None
        y = output_rows(y, x.shape[0], targets is not None, call.name)
        if output_index is None:
            rows = y[0] if targets is None else y[targets[0]]
            output_index = int(rows.argmax()) if y.shape[1] > 1 else 0
        valid = isinstance(output_index, int | np.integer) and not isinstance(output_index, bool)
        if not valid or not 0 <= output_index < y.shape[1]:
            raise ExplainError(
                f"output_index must be an integer in 0..{y.shape[1] - 1} (got {output_index!r})"
            )
        game.output_index = int(output_index)
        return game, y

    @in_engine_threads
    def explain(
        self,
        data: Data,
        *,
        node: int | None = None,
        output_index: int | None = None,
        budget: int | None = None,
        players: Sequence[int] | None = None,
        hold: Hold = "observed",
    ) -> Explanation:
        """Explain one graph's output, or the output at node ``node`` of a node-level model.

        Args:
            data: A PyG ``Data`` with ``x`` (n, F), ``edge_index`` (2, E) and optional
                ``edge_attr`` (E, D).
            node: Target node (0..n-1) of a model returning one row per node; players stay
                the graph's n nodes, those outside the node's receptive field are dummies.
                Several targets: :meth:`explain_nodes`.
            output_index: Model output to explain (default: predicted class, or 0).
            budget: lambda for ``approximate`` (largest MI size evaluated).
            players: The nodes that play (default: every node); see the module docstring.
            hold: Where the other nodes stay: ``observed`` (their own features) or
                ``baseline``.

        Raises:
            ExplainError: invalid graph, target node, player, hold, baseline, output, index,
                model output shape, or |I| over the limit.
        """
        if node is None:
            game = self.game(data, output_index, players=players, hold=hold)
            return self._explain(game, budget)[0]
        if isinstance(node, bool) or not isinstance(node, int | np.integer):
            raise ExplainError(
                f"node must be an integer node index (got {node!r}); explain_nodes(data, "
                "nodes) explains several target nodes"
            )
        return self.explain_nodes(
            data, [node], output_index=output_index, budget=budget, players=players, hold=hold
        )[0]

    @in_engine_threads
    def explain_nodes(
        self,
        data: Data,
        nodes: Sequence[int] | None = None,
        *,
        output_index: int | Sequence[int] | None = None,
        budget: int | None = None,
        players: Sequence[int] | None = None,
        hold: Hold = "observed",
    ) -> list[Explanation]:
        """Explain the outputs at several target nodes of a node-level model, sharing work.

        Args:
            data: As for :meth:`explain`.
            nodes: Target nodes (default: every node), each in 0..n-1.
            output_index: Output explained at every target, or one per target (default:
                each target's predicted class, or 0).
            budget: lambda for ``approximate``.
            players: The nodes that play (default: every node), as for :meth:`explain`.
            hold: Where the other nodes stay, as for :meth:`explain`.

        Returns:
            One :class:`Explanation` per target, in the order of ``nodes``.

        Raises:
            ExplainError: as :meth:`explain`; nothing is computed for a bad target.
        """
        n = len(validate_graph(data, *model_device_dtype(self.model))[0])
        targets = tuple(range(n)) if nodes is None else check_nodes(nodes, n)
        if output_index is None or isinstance(output_index, int | np.integer):
            outputs = [output_index] * len(targets)
        else:
            outputs = list(output_index)
            if len(outputs) != len(targets):
                raise ExplainError(
                    f"output_index must be one integer or one per target node ({len(targets)}) "
                    f"(got {len(outputs)})"
                )
        if output_index is None:  # each target's predicted class
            y = self._game_and_output(data, None, targets, players, hold)[1]
            outputs = [int(y[v].argmax()) if y.shape[1] > 1 else 0 for v in targets]
        found: dict[tuple[int, int], Explanation] = {}
        for out in dict.fromkeys(outputs):  # one shared game per explained output
            group = tuple(dict.fromkeys(v for v, o in zip(targets, outputs) if o == out))
            explained = self._explain(self.game(data, out, group, players, hold), budget)
            found.update(((v, out), e) for v, e in zip(group, explained))
        return [found[v, out] for v, out in zip(targets, outputs)]

    # -- dispatch ------------------------------------------------------------------------
    def pick_method(self, game: GraphGame, budget: int | None = None) -> str:
        """The method that explains ``game`` (see the module docstring).

        Raises:
            ExplainError: the chosen method refuses the game, or a budget does not fit it.
        """
        name = self.method
        if budget is not None and name in ("auto", "approximate"):
            return "approximate"
        if name == "approximate":
            raise ExplainError("method 'approximate' needs a budget (lambda >= 1)")
        if budget is not None:
            raise ExplainError(
                f"a budget applies to method 'approximate' only (method is '{name}')"
            )
        if name == "auto":
            return next(
                key
                for key, spec in METHOD_TABLE.items()
                if spec.auto and spec.refusal(self, game) is None
            )
        reason = METHOD_TABLE[name].refusal(self, game)
        if reason is not None:
            raise ExplainError(f"method '{name}' {reason}")
        return name

    def _explain(self, game: GraphGame, budget: int | None) -> list[Explanation]:
        """Explain every target of a validated game with the method the table picks."""
        method = self.pick_method(game, budget)
        spec = METHOD_TABLE[method]
        fields = receptive_fields(game.edge_index, game.n_nodes, self.n_layers)
        fields = [player_fields(layer, game.players) for layer in fields]
        with progress_callback(self.progress, f"GraphSHAP-IQ ({method})") as cb:
            outcome = spec.run(self, game, fields, budget, cb)
        check = outcome.exact and self.readout_check != "off" and spec.checked
        coalitions, predicted, magnitude = check_coalitions(
            game, outcome.blocks, union_fields(game, fields[-1]), check
        )
        values = game.evaluate_targets(coalitions)
        if check:
            check_readout(
                values,
                predicted,
                magnitude,
                game.x.dtype,
                game.nodes,
                game.n_players,
                n_layers=self.n_layers,
                mode=self.readout_check,
            )
        return [
            Explanation(
                blocks=blocks,
                prediction=float(values[0, t]),
                empty_prediction=float(values[1, t]),
                output_index=game.output_index,
                n_layers=self.n_layers,
                method=method,
                n_graph_evaluations=outcome.n_graph_evaluations,
                n_node_states=outcome.n_node_states,
                exact=outcome.exact,
                baseline=game.baseline.detach().cpu().numpy(),
                meta={"engine_version": ENGINE_VERSION},
                budget=int(budget) if method == "approximate" else None,
                node=None if game.nodes is None else game.nodes[t],
                players=game.players,
            )
            for t, blocks in enumerate(outcome.blocks)
        ]

    # -- methods (registered in METHOD_TABLE) --------------------------------------------
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
            f"(largest receptive field {largest} nodes){budget_hint(fields, limit)}"
        )

    def state_graph(
        self, edge_index: torch.Tensor, fields: Fields, nodes: tuple[int, ...] | None = None
    ) -> StateGraph:
        """The state graph of a structure, built once and cached (time steps share it); with
        target ``nodes``, only the states their final states need (:func:`needed_fields`)."""
        key = (len(fields), len(fields[0]), edge_index.detach().cpu().numpy().tobytes(), nodes)
        if key not in self._state_graphs:
            self._state_graphs.clear()
            needed = fields if nodes is None else needed_fields(fields, nodes)
            self._state_graphs[key] = StateGraph.build(edge_index, needed)
        return self._state_graphs[key]

    def _local(self, game: GraphGame, fields: Fields, budget: int | None, cb) -> Outcome:
        """Node games on the state graph: summed (graph) or one per target node."""
        if self.max_interactions is not None:
            self._check_size(union_fields(game, fields[-1]), game.n_players, self.max_interactions)
        memory = self.memory_budget_bytes()
        if game.nodes is None:
            games = NodeGameSum(game.n_players, fields[-1])
            result = NodeGameSum.result_bytes(fields[-1])
        else:
            games = TargetGames(game.n_players, game.nodes, fields[-1])
            result = TargetGames.result_bytes(game.nodes, fields[-1])
        if 2 * result > memory:
            limit = self.max_interactions or MAX_MASKED_INTERACTIONS
            hint = budget_hint(union_fields(game, fields[-1]), limit)
            raise ExplainError(
                f"exact explanation holds {result / 8:.3g} node-game values ({result / 2**30:.3g} "
                f"GB), over half the memory budget of {memory / 2**30:.3g} GB "
                f"(memory_budget_gb={memory / 2**30:.3g}){hint}"
            )
        if not isinstance(self.model, LocalMessagePassing):  # proven standard layers
            proven = self._proven.pop(id(game))
            constant = proven.node_games(games.add)
            return Outcome([games.blocks(constant)], 0, proven.graph.n_states, True)
        state_graph = self.state_graph(game.edge_index, fields, game.nodes)
        work = (memory - result) * 3 // 4  # a quarter for the rest (readout check, tables)
        if game.x.device.type == "cuda":
            work = min(work, int(0.8 * device_free_bytes(game.x.device)))
        constant = node_games(
            self.model,
            game.x,
            game.edge_attr,
            game.baseline,
            game.output_index,
            state_graph,
            games.add,
            work_bytes=work,
            progress=cb,
        )
        blocks = games.blocks(constant)
        blocks = [blocks] if game.nodes is None else [blocks[v] for v in game.nodes]
        return Outcome(blocks, 0, state_graph.n_states, True)

    def _masked(self, game: GraphGame, fields: Fields, budget: int | None, cb) -> Outcome:
        """Algorithm 1: every T in I of every target, deduplicated, as masked graphs."""
        limit = self.max_interactions or MAX_MASKED_INTERACTIONS
        self._check_size(union_fields(game, fields[-1]), game.n_players, limit)
        return masked_blocks(game, target_fields(game, fields[-1]), cb)

    def _approximate(self, game: GraphGame, fields: Fields, budget: int | None, cb) -> Outcome:
        """Algorithm 3 with budget lambda, target by target."""
        if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 1:
            raise ExplainError(f"budget (lambda) must be an integer >= 1 (got {budget})")
        found = [
            approximate_blocks(game.target(t), target_fields, int(budget), cb)
            for t, target_fields in enumerate(target_fields(game, fields[-1]))
        ]
        return Outcome(
            [o.blocks[0] for o in found],
            sum(o.n_graph_evaluations for o in found),
            0,
            all(o.exact for o in found),
        )

    def _bruteforce(self, game: GraphGame, fields: Fields, budget: int | None, cb) -> Outcome:
        """All 2^n coalitions, one block over all players per target (the oracle)."""
        n = game.n_players
        masks = np.arange(2**n)
        coalitions = ((masks[:, None] >> np.arange(n)[None, :]) & 1).astype(bool)
        values = game.evaluate_targets(coalitions, progress=cb)
        mi = moebius_transform(values.T.copy())
        nodes = np.arange(n)[None, :]
        blocks = [MoebiusBlocks(n, {n: (nodes, mi[t : t + 1])}) for t in range(len(mi))]
        return Outcome(blocks, 2**n, 0, True)


def _local_refusal(explainer: GraphSHAPIQ, game: GraphGame) -> str | None:
    """Why ``local`` cannot explain ``game`` (None: it can); raises for a model whose
    declared pooling does not fit the target. A model of standard PyG layers is proven on
    this graph here (:func:`.standard.standard_games`), and the proof kept for ``_local``."""
    model = explainer.model
    if game.players is not None:
        return "runs every node as a player, not a chosen player set (use 'masked')"
    reason = local_model_refusal(model, explainer.n_layers)
    if reason is not None:
        return reason
    if not isinstance(model, LocalMessagePassing):
        if game.nodes is not None:
            return "runs node targets of LocalMessagePassing models only (use 'masked')"
        proven = standard_games(
            model,
            game,
            receptive_fields(game.edge_index, game.n_players, explainer.n_layers),
            explainer.memory_budget_bytes(),
            explainer._standard_graphs,
        )
        if isinstance(proven, str):
            logger.info("masked graphs for %s: %s", type(model).__name__, proven)
            return f"cannot run {type(model).__name__} on the state graph: {proven} (use 'masked')"
        explainer._proven = {id(game): proven}
        return None
    check_pooling(model, game.nodes is not None)
    if not set(game.call.inputs) <= {"edge_attr"}:
        return (
            "passes only x and edge_attr to the model's layers, but the model is called as "
            f"{game.call.describe()} (use 'masked')"
        )
    return None


def _bruteforce_refusal(explainer: GraphSHAPIQ, game: GraphGame) -> str | None:
    """Why ``bruteforce`` cannot explain ``game`` (None: it can)."""
    n = game.n_players
    if n > MAX_BRUTEFORCE_PLAYERS:
        return f"needs 2^n model calls; n = {n} is over {MAX_BRUTEFORCE_PLAYERS}"
    return None


def _accepts(explainer: GraphSHAPIQ, game: GraphGame) -> None:
    """The refusal of a method that explains every game."""
    return None


METHOD_TABLE: dict[str, MethodSpec] = {
    "local": MethodSpec(GraphSHAPIQ._local, _local_refusal),
    "masked": MethodSpec(GraphSHAPIQ._masked, _accepts),
    "approximate": MethodSpec(GraphSHAPIQ._approximate, _accepts, auto=False),
    "bruteforce": MethodSpec(
        GraphSHAPIQ._bruteforce, _bruteforce_refusal, auto=False, checked=False
    ),
}
"""Every method by name, in the order ``auto`` prefers them (see :class:`MethodSpec`)."""
METHODS: tuple[str, ...] = ("auto", *METHOD_TABLE)


def needed_fields(fields: Fields, nodes: tuple[int, ...]) -> Fields:
    """Receptive fields per layer reduced to what the final states of ``nodes`` need.

    A node's state after layer l reads its in-neighbours' states after layer l-1, so only
    the nodes within L - l hops of a target need states at layer l; every other node gets an
    empty field (a single state, computed but never read). Layer 0 (the inputs) is kept.
    """
    needed = np.zeros(len(fields[0]), dtype=bool)
    needed[list(nodes)] = True
    empty = np.zeros(0, dtype=np.int64)
    out = [fields[0]] + [None] * (len(fields) - 1)
    for layer in range(len(fields) - 1, 0, -1):
        out[layer] = [f if needed[j] else empty for j, f in enumerate(fields[layer])]
        needed[np.concatenate([fields[1][j] for j in np.flatnonzero(needed)])] = True
    return out


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
    fields = receptive_fields(game.edge_index, game.n_players, explainer.n_layers)
    blocks = explainer._masked(game, fields, None, None).blocks[0]
    return recovery_error(game, blocks, n_samples=n_samples, seed=seed)
