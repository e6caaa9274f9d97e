"""The explain engine: GraphSHAP-IQ for PyG models with a linear readout, graph- or node-level.

It knows nothing about water: it takes a graph, a model, the number of message-passing
layers and a masking baseline, and returns exact Möbius interactions and every index.
Public names load on first use, so reading saved explanations needs numpy only (torch and
PyG load when something is explained).
"""

from __future__ import annotations

from ..lazy import lazy_getattr

# Public names and their modules, imported on first use: reading a saved explanation or
# timeline (blocks, explanation, indices) needs numpy only, not torch.
_LAZY = {
    "GraphSHAPIQ": "graphshapiq",
    "GraphSHAPIQAlgorithm": "pyg",  # imports torch_geometric.explain
    "Explanation": "explanation",
    "MoebiusBlocks": "blocks",
    "GraphGame": "game",
    "DataModel": "inputs",
    "LocalMessagePassing": "local",
    "FactoredLayers": "local",
    "StateGraph": "local",
    "Complexity": "neighbourhoods",
    "complexity": "neighbourhoods",
    "receptive_fields": "neighbourhoods",
    "check_linear_readout": "graphshapiq",
    "check_index": "indices",
    "METHODS": "graphshapiq",
    "METHOD_TABLE": "graphshapiq",
    "MethodSpec": "graphshapiq",
    "INDICES": "indices",
}

__all__ = [
    "GraphSHAPIQ",
    "GraphSHAPIQAlgorithm",
    "Explanation",
    "MoebiusBlocks",
    "GraphGame",
    "DataModel",
    "LocalMessagePassing",
    "FactoredLayers",
    "StateGraph",
    "Complexity",
    "complexity",
    "receptive_fields",
    "check_linear_readout",
    "check_index",
    "METHODS",
    "METHOD_TABLE",
    "MethodSpec",
    "INDICES",
]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
