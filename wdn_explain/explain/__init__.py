"""The explain engine: GraphSHAP-IQ for any PyG graph-level model with linear readout.

It knows nothing about water: it takes a graph, a model, the number of message-passing
layers and a masking baseline, and returns exact Möbius interactions and every index.
``GraphSHAPIQAlgorithm`` (a ``torch_geometric.explain`` algorithm) loads on first use.
"""

from __future__ import annotations

from typing import Any

from .blocks import MoebiusBlocks
from .explanation import Explanation
from .game import GraphGame
from .graphshapiq import METHODS, GraphSHAPIQ, check_linear_readout
from .indices import INDICES, check_index
from .inputs import DataModel
from .local import LocalMessagePassing, StateGraph
from .neighbourhoods import Complexity, complexity, receptive_fields

__all__ = [
    "GraphSHAPIQ",
    "GraphSHAPIQAlgorithm",
    "Explanation",
    "MoebiusBlocks",
    "GraphGame",
    "DataModel",
    "LocalMessagePassing",
    "StateGraph",
    "Complexity",
    "complexity",
    "receptive_fields",
    "check_linear_readout",
    "check_index",
    "METHODS",
    "INDICES",
]


def __getattr__(name: str) -> Any:
    if name == "GraphSHAPIQAlgorithm":  # imports torch_geometric.explain
        from .pyg import GraphSHAPIQAlgorithm

        return GraphSHAPIQAlgorithm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
