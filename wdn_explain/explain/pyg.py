"""GraphSHAP-IQ as a ``torch_geometric.explain`` algorithm.

``Explainer(model, algorithm=GraphSHAPIQAlgorithm(), explanation_type="model",
node_mask_type="object", model_config=dict(mode=..., task_level="graph",
return_type="raw"))`` returns a PyG ``Explanation`` whose ``node_mask`` (n, 1) holds the exact
Shapley values of the explained output, ``interactions`` the exact interactions (shapiq
``InteractionValues`` of the chosen index) and ``graphshapiq`` the full
:class:`~wdn_explain.explain.Explanation` (Möbius interactions, any index, no new model calls).

With ``task_level="node"`` the explained outputs are those of the nodes PyG passes as
``index`` (an int, a tensor of node indices, or None for every node), explained together
(:meth:`~wdn_explain.explain.GraphSHAPIQ.explain_nodes`). Shapley values and interactions
are linear in the game, so for several nodes ``node_mask`` and ``interactions`` explain the
sum of their outputs; ``graphshapiq`` is the list of per-node explanations (in ``index``
order). ``node_mask`` is zero outside the nodes' receptive fields.
"""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data
from torch_geometric.explain import Explanation as PyGExplanation
from torch_geometric.explain.algorithm import ExplainerAlgorithm
from torch_geometric.explain.config import (
    ExplanationType,
    MaskType,
    ModelMode,
    ModelReturnType,
    ModelTaskLevel,
)

from ..errors import ExplainError
from .graphshapiq import GraphSHAPIQ, check_nodes
from .indices import check_index


class GraphSHAPIQAlgorithm(ExplainerAlgorithm):
    """Exact Shapley values and interactions of a PyG model's raw output, graph- or node-level.

    Args:
        n_layers: Message-passing layers L (default: ``model.num_layers``).
        index: Index stored as ``interactions`` (any of :data:`.indices.INDICES`).
        order: Its order (SV and BV need none; default 2).
        output_index: Output explained for regression (multi-output models); classification
            explains the target class.
        **options: Further :class:`~wdn_explain.explain.GraphSHAPIQ` options (``baseline``,
            ``method``, ``max_interactions``, ``readout_check``...).

    ``supports()`` raises :class:`~wdn_explain.errors.ExplainError` with the reason for
    settings that would not be exact: edge-level tasks, probabilities or log
    probabilities (a softmax after the linear readout), feature-wise or edge masks, and
    phenomenon explanations of a regression (a loss). A non-linear readout is found at
    explanation time by the readout check.
    """

    def __init__(
        self,
        n_layers: int | None = None,
        *,
        index: str = "k-SII",
        order: int | None = None,
        output_index: int = 0,
        **options: Any,
    ) -> None:
        super().__init__()
        check_index(index, order, max(order or 1, 1))
        self.n_layers = n_layers
        self.index = index
        self.order = order
        self.output_index = output_index
        self.options = options

    def supports(self) -> bool:
        """True for settings GraphSHAP-IQ explains exactly; otherwise raise with the reason."""
        model, expl = self.model_config, self.explainer_config
        reasons = []
        if model.task_level not in (ModelTaskLevel.graph, ModelTaskLevel.node):
            reasons.append(f"task_level must be 'graph' or 'node' (got '{model.task_level.value}')")
        if model.return_type != ModelReturnType.raw:
            reasons.append(
                f"return_type must be 'raw': '{model.return_type.value}' applies a softmax "
                "after the linear readout, so the game is not a sum of node games"
            )
        if expl.node_mask_type != MaskType.object:
            got = None if expl.node_mask_type is None else expl.node_mask_type.value
            reasons.append(f"node_mask_type must be 'object', one value per node (got {got!r})")
        if expl.edge_mask_type is not None:
            reasons.append(f"edge_mask_type must be None (got '{expl.edge_mask_type.value}')")
        if (
            expl.explanation_type == ExplanationType.phenomenon
            and model.mode == ModelMode.regression
        ):
            reasons.append(
                "explanation_type 'phenomenon' of a regression explains a loss, which is not "
                "linear in the output; use 'model'"
            )
        if reasons:
            raise ExplainError("GraphSHAPIQAlgorithm cannot explain exactly: " + "; ".join(reasons))
        return True

    def forward(
        self,
        model: torch.nn.Module,
        x: torch.Tensor,
        edge_index: torch.Tensor,
        *,
        target: torch.Tensor,
        index: int | torch.Tensor | None = None,
        **kwargs: Any,
    ) -> PyGExplanation:
        """Explain one graph, or the nodes ``index`` of a node-level task; ``kwargs`` are the
        model's further inputs (``batch``...)."""
        data = Data(x=x, edge_index=edge_index, **kwargs)
        explainer = GraphSHAPIQ(model, self.n_layers, **self.options)
        classes = self.model_config.mode == ModelMode.multiclass_classification
        if self.model_config.task_level == ModelTaskLevel.graph:
            if index is not None:
                raise ExplainError(f"index selects nodes of node-level tasks (got {index!r})")
            output_index = int(target.reshape(-1)[0]) if classes else self.output_index
            result = explainer.explain(data, output_index=output_index)  # a batch is refused
            results = [result]
        else:
            nodes = range(x.shape[0]) if index is None else torch.as_tensor(index).reshape(-1)
            nodes = check_nodes(nodes, x.shape[0])
            output_index = [int(target[v]) for v in nodes] if classes else self.output_index
            result = results = explainer.explain_nodes(data, nodes, output_index=output_index)
        sv = sum(torch.as_tensor(r.node_values("SV"), dtype=x.dtype) for r in results)
        interactions = [r.interaction_values(self.index, self.order) for r in results]
        return PyGExplanation(
            node_mask=sv.to(x.device)[:, None],
            interactions=sum(interactions[1:], interactions[0]),
            graphshapiq=result,
        )
