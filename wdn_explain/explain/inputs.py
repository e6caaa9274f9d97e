"""What the model is given: a validated graph and the calling convention of its ``forward``.

The engine calls ``model(x, edge_index, **inputs, batch=batch)``. ``inputs`` are read off the
model's ``forward`` signature: every further argument the graph holds by name (``edge_attr``,
``edge_weight``, per-node, per-edge or graph-level tensors), or every tensor the graph holds
when ``forward`` takes ``**kwargs``. Only ``x`` is masked; the other inputs are repeated for
each masked copy the way PyG batches them (``Data.__cat_dim__`` / ``Data.__inc__``). A model
without a ``batch`` argument is called one graph at a time; a model called as
``model(data)`` works through :class:`DataModel`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..errors import ExplainError

if TYPE_CHECKING:
    from torch_geometric.data import Data

_NOT_INPUTS = frozenset({"x", "edge_index", "batch", "ptr", "y"})
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


class DataModel(torch.nn.Module):
    """Adapter for a model whose ``forward`` takes one PyG ``Data`` object.

    ``GraphSHAPIQ(DataModel(model))`` calls ``model(Data(x=..., edge_index=..., batch=...,
    **inputs))`` with every tensor attribute of the explained graph (``x`` masked); the
    model must pool per graph by ``data.batch``. ``num_layers`` is taken from the model.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        if hasattr(model, "num_layers"):
            self.num_layers = model.num_layers

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor | None = None, **inputs
    ) -> torch.Tensor:
        from torch_geometric.data import Data

        return self.model(Data(x=x, edge_index=edge_index, batch=batch, **inputs))


@dataclass(frozen=True)
class ModelCall:
    """How one graph is fed to a model.

    Attributes:
        name: The model's class name (for messages).
        inputs: Keyword inputs besides ``x`` and ``edge_index``, on the model's device.
        cat_dims: Per input, the dimension along which copies are stacked (PyG's rule).
        increments: Per input, the offset added per copy (n for index tensors, else 0).
        takes_batch: Whether ``forward`` takes ``batch`` (else one graph per call).
    """

    name: str
    inputs: dict[str, torch.Tensor]
    cat_dims: dict[str, int | None]
    increments: dict[str, int]
    takes_batch: bool

    def describe(self) -> str:
        """The call as written, e.g. ``GCN(x, edge_index, edge_weight=..., batch=...)``."""
        names = [*self.inputs, *(["batch"] if self.takes_batch else [])]
        return f"{self.name}(x, edge_index" + "".join(f", {k}=..." for k in names) + ")"

    def __call__(
        self, model: torch.nn.Module, x: torch.Tensor, edge_index: torch.Tensor, n_graphs: int
    ) -> torch.Tensor:
        """Run the model on ``n_graphs`` stacked copies (``x`` holds all their nodes)."""
        n = x.shape[0] // n_graphs
        kwargs = {
            key: repeat(value, n_graphs, self.cat_dims[key], self.increments[key])
            for key, value in self.inputs.items()
        }
        if self.takes_batch:
            kwargs["batch"] = torch.arange(n_graphs, device=x.device).repeat_interleave(n)
        return model(x, repeat(edge_index, n_graphs, -1, n), **kwargs)


def repeat(value: torch.Tensor, n_copies: int, dim: int | None, increment: int) -> torch.Tensor:
    """``n_copies`` copies of a tensor collated as PyG does (copy c offset by c * increment)."""
    if n_copies == 1:
        return value
    if dim is None:
        return value.unsqueeze(0).expand(n_copies, *value.shape)
    dim = dim % value.ndim
    reps = [1] * value.ndim
    reps[dim] = n_copies
    out = value.repeat(*reps)
    if increment:
        shape = [1] * value.ndim
        shape[dim] = -1
        offsets = torch.arange(n_copies, device=value.device) * increment
        out = out + offsets.repeat_interleave(value.shape[dim]).view(shape)
    return out


def validate_graph(
    data: Data, device: torch.device, dtype: torch.dtype
) -> tuple[torch.Tensor, ...]:
    """``x`` (n, F) and ``edge_index`` (2, E) of one graph, checked, on ``device``.

    Raises:
        ExplainError: a batch of several graphs, no nodes or edges, NaN/inf features,
            edges to nodes that do not exist.
    """
    batch = getattr(data, "batch", None)
    if isinstance(batch, torch.Tensor) and batch.numel() and int(batch.max()) > 0:
        raise ExplainError(
            f"the data is a batch of {int(batch.max()) + 1} graphs; GraphSHAP-IQ explains one "
            "graph at a time (explain each graph of batch.to_data_list())"
        )
    x = getattr(data, "x", None)
    edge_index = getattr(data, "edge_index", None)
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[0] == 0:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else None
        raise ExplainError(
            f"the graph needs node features x of shape (n, F) with n >= 1 (got {shape})"
        )
    if (
        not isinstance(edge_index, torch.Tensor)
        or edge_index.ndim != 2
        or edge_index.shape[0] != 2
        or edge_index.shape[1] == 0
    ):
        shape = tuple(edge_index.shape) if isinstance(edge_index, torch.Tensor) else None
        raise ExplainError(
            f"the graph needs at least one edge in edge_index of shape (2, E) (got {shape})"
        )
    if not torch.isfinite(x).all():
        raise ExplainError("node features x hold NaN or inf values")
    if int(edge_index.min()) < 0 or int(edge_index.max()) >= x.shape[0]:
        raise ExplainError(f"edge_index refers to nodes outside 0..{x.shape[0] - 1}")
    return x.to(device=device, dtype=dtype), edge_index.to(device=device, dtype=torch.long)


def plan_call(
    model: torch.nn.Module, data: Data, device: torch.device, dtype: torch.dtype
) -> ModelCall:
    """Read the calling convention off ``model.forward`` and collect the graph's inputs.

    Raises:
        ExplainError: ``forward`` cannot take (x, edge_index, ...), needs an input the graph
            does not hold, or the graph has ``edge_attr`` that ``forward`` does not take.
    """
    name = type(model).__name__
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):  # e.g. scripted modules: assume the PyG convention
        params = [inspect.Parameter(k, _POSITIONAL[1]) for k in ("x", "edge_index")]
        params += [
            inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None)
            for k in ("edge_attr", "batch")
        ]
    signature = f"{name}.forward({', '.join(str(p) for p in params)})"
    positional = [p for p in params if p.kind in _POSITIONAL]
    var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    if len(positional) < 2 and not var_positional:
        raise ExplainError(
            f"{signature} cannot be called as model(x, edge_index, ...); a model that takes "
            "a PyG Data object works through DataModel(model) (wdn_explain.explain.DataModel)"
        )
    available = _graph_tensors(data)
    named = [p for p in params if p not in positional[:2] and p.kind not in _VARIADIC]
    takes_batch = var_keyword or any(p.name == "batch" for p in named)
    wanted = [p.name for p in named if p.name != "batch"]
    missing = [
        p.name
        for p in named
        if p.name != "batch" and p.name not in available and p.default is inspect.Parameter.empty
    ]
    if missing:
        raise ExplainError(
            f"{signature} needs {', '.join(missing)}, which the graph does not hold "
            f"(graph tensors: {', '.join(['x', 'edge_index', *available])})"
        )
    keys = [k for k in available if k in wanted or var_keyword]
    if "edge_attr" in available and "edge_attr" not in keys:
        raise ExplainError(
            f"the graph has edge_attr but {signature} takes no edge_attr (drop it from the "
            "graph, or explain a model that uses it)"
        )
    n_edges = data.edge_index.shape[1]
    inputs, cat_dims, increments = {}, {}, {}
    for key in keys:
        value = available[key]
        if value.is_floating_point():
            if not torch.isfinite(value).all():
                raise ExplainError(f"graph input {key} holds NaN or inf values")
            value = value.to(dtype=dtype)
        if key == "edge_attr":
            value = value[:, None] if value.ndim == 1 else value
            if value.shape[0] != n_edges:
                raise ExplainError(
                    f"edge_attr must have one row per edge ({n_edges}) (got {tuple(value.shape)})"
                )
        inputs[key] = value.to(device=device)
        cat_dims[key] = data.__cat_dim__(key, available[key])
        increments[key] = int(data.__inc__(key, available[key]) or 0)
    return ModelCall(name, inputs, cat_dims, increments, takes_batch)


def _graph_tensors(data: Any) -> dict[str, torch.Tensor]:
    """Tensor attributes of a graph other than x, edge_index, batch, ptr and y."""
    keys = data.keys() if callable(getattr(data, "keys", None)) else list(vars(data))
    return {
        k: data[k]
        for k in sorted(keys)
        if k not in _NOT_INPUTS and isinstance(data[k], torch.Tensor)
    }
