"""The result of explaining one graph or one node's output: exact MIs plus what produced them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataError
from ..files import atomic_write, load_npz
from .blocks import MoebiusBlocks

# Bumped when the engine's numbers change: cached explanations of another version are stale.
ENGINE_VERSION = "1"

if TYPE_CHECKING:
    from shapiq import InteractionValues


@dataclass
class Explanation:
    """Möbius interactions of one game and every index derived from them.

    The game is the graph's output, or the output at node ``node`` of a node-level model.
    Players are the graph's n nodes (global indices), so values of a node's explanation draw
    on the graph unchanged: nodes outside its receptive field are dummies. An explanation
    over a chosen player set holds |P| players; player k is node ``players[k]``
    (:meth:`player_nodes`, the one place the mapping lives).

    Attributes:
        blocks: The MIs (see :class:`.blocks.MoebiusBlocks`).
        prediction: nu(N), the model output on the unmasked graph.
        empty_prediction: nu(∅), the output with every node at the baseline.
        output_index: Which model output was explained.
        n_layers: Message-passing layers L used for the receptive fields.
        method: ``local``, ``masked``, ``approximate`` or ``bruteforce``.
        n_graph_evaluations: Masked graphs the model was run on (for target nodes explained
            together, by the whole batch).
        n_node_states: Node embeddings computed on the state graph (``local`` only; for
            target nodes explained together, by the whole batch).
        exact: False for a budget-limited approximation (its values leave the engine as
            shapiq ``InteractionValues`` with ``estimated=True`` and ``estimation_budget`` =
            the model calls made).
        baseline: The masking vector, shape (F,).
        budget: lambda of an ``approximate`` explanation (largest MI size evaluated), else None.
        meta: Free-form metadata (config and model hashes, engine version...).
        node: The explained target node of a node-level model, or None for the graph.
        players: The node of each player, sorted, shape (n_players,); None when every node
            plays (player i is node i).
    """

    blocks: MoebiusBlocks = field(repr=False)
    prediction: float
    empty_prediction: float
    output_index: int
    n_layers: int
    method: str
    n_graph_evaluations: int
    n_node_states: int
    exact: bool
    baseline: np.ndarray = field(repr=False)
    meta: dict[str, Any] = field(default_factory=dict)
    budget: int | None = None
    node: int | None = None
    players: np.ndarray | None = None

    @property
    def n_players(self) -> int:
        return self.blocks.n_players

    def player_nodes(self) -> np.ndarray:
        """The node index of every player, shape (n_players,)."""
        if self.players is None:
            return np.arange(self.n_players)
        return np.asarray(self.players, dtype=np.int64)

    @property
    def n_interactions(self) -> int:
        """Number of distinct Möbius interactions held (|I| when exact)."""
        return len(self.blocks.moebius()[0])

    @property
    def moebius(self) -> InteractionValues:
        """All MIs as shapiq ``InteractionValues`` (index ``Moebius``)."""
        return self.interaction_values("Moebius")

    def interaction_values(
        self, index: str = "k-SII", order: int | None = None
    ) -> InteractionValues:
        """Index values derived from the MIs without new model calls (the caller's own copy).

        SV and BV need no order; the other indices default to order 2. Values of an
        approximation are marked ``estimated=True`` with ``estimation_budget`` = model calls.
        """
        budget = None if self.exact else max(self.n_graph_evaluations, 1)
        return self.blocks.interaction_values(index, order, estimation_budget=budget)

    def index_values(
        self, index: str, order: int | None = None, size: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """(members (m, size), values (m,)) of ``index`` for every explained set of ``size``."""
        return self.blocks.index_values(index, order, size)

    def node_values(self, index: str = "SV", order: int | None = None) -> np.ndarray:
        """First-order values of ``index`` for every player, shape (n_players,) (every node
        when every node plays; see :meth:`player_nodes`)."""
        members, values = self.index_values(index, order, 1)
        out = np.zeros(self.n_players)
        out[members[:, 0]] = values
        return out

    def efficiency_gap(self) -> float:
        """sum of all MIs minus nu(N): zero (up to rounding) for exact explanations."""
        return self.blocks.total() - self.prediction

    # -- persistence ---------------------------------------------------------------------
    def to_arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """Plain arrays (pickle-free) that :meth:`from_arrays` reads back."""
        header = {
            "n_players": self.n_players,
            "constant": self.blocks.constant,
            "prediction": self.prediction,
            "empty_prediction": self.empty_prediction,
            "output_index": self.output_index,
            "n_layers": self.n_layers,
            "method": self.method,
            "n_graph_evaluations": self.n_graph_evaluations,
            "n_node_states": self.n_node_states,
            "exact": self.exact,
            "budget": self.budget,
            "node": self.node,
            "players": None if self.players is None else self.player_nodes().tolist(),
            "sizes": sorted(self.blocks.groups),
            "meta": self.meta,
        }
        out = {f"{prefix}header": np.array(json.dumps(header)), f"{prefix}baseline": self.baseline}
        for k, (nodes, mi) in self.blocks.groups.items():
            out[f"{prefix}nodes_{k}"] = nodes
            out[f"{prefix}mi_{k}"] = mi
        return out

    @classmethod
    def from_arrays(cls, arrays: Any, prefix: str = "") -> Explanation:
        header = json.loads(str(arrays[f"{prefix}header"]))
        groups = {
            k: (arrays[f"{prefix}nodes_{k}"], arrays[f"{prefix}mi_{k}"]) for k in header["sizes"]
        }
        return cls(
            blocks=MoebiusBlocks(header["n_players"], groups, header["constant"]),
            prediction=header["prediction"],
            empty_prediction=header["empty_prediction"],
            output_index=header["output_index"],
            n_layers=header["n_layers"],
            method=header["method"],
            n_graph_evaluations=header["n_graph_evaluations"],
            n_node_states=header["n_node_states"],
            exact=header["exact"],
            baseline=np.asarray(arrays[f"{prefix}baseline"]),
            meta=header["meta"],
            budget=header.get("budget"),
            node=header.get("node"),
            players=None if header.get("players") is None else np.array(header["players"]),
        )

    def save(self, path: str | Path) -> Path:
        """Write a pickle-free ``.npz`` atomically."""
        path = Path(path)
        with atomic_write(path) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, **self.to_arrays())
        return path

    @classmethod
    def load(cls, path: str | Path) -> Explanation:
        try:
            with load_npz(path) as data:
                return cls.from_arrays({k: data[k] for k in data.files})
        except FileNotFoundError:
            raise DataError(f"explanation file '{path}' does not exist") from None
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
            raise DataError(f"explanation file '{path}' is truncated or corrupt ({exc})") from None
