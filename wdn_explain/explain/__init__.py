"""The explain engine: GraphSHAP-IQ for any PyG graph-level model with linear readout.

It knows nothing about water: it takes a graph, a model, the number of message-passing
layers and a masking baseline, and returns exact Möbius interactions and every index.
"""

from .blocks import MoebiusBlocks
from .explanation import Explanation
from .game import GraphGame
from .graphshapiq import METHODS, GraphSHAPIQ, check_linear_readout
from .indices import INDICES
from .local import LocalMessagePassing, StateGraph
from .neighbourhoods import Complexity, complexity, receptive_fields

__all__ = [
    "GraphSHAPIQ",
    "Explanation",
    "MoebiusBlocks",
    "GraphGame",
    "LocalMessagePassing",
    "StateGraph",
    "Complexity",
    "complexity",
    "receptive_fields",
    "check_linear_readout",
    "METHODS",
    "INDICES",
]
