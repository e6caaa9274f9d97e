"""What one of the engine's methods computed (:class:`Outcome`), as
:data:`~.graphshapiq.METHOD_TABLE`'s methods return it."""

from __future__ import annotations

from dataclasses import dataclass

from .blocks import MoebiusBlocks


@dataclass(frozen=True)
class Outcome:
    """What a method computed: the MIs of every target (in ``game.nodes`` order; one for
    the graph), the masked graphs and node states evaluated, and whether it is exact."""

    blocks: list[MoebiusBlocks]
    n_graph_evaluations: int
    n_node_states: int
    exact: bool
