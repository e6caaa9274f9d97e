"""The forecasting GNN: edge-feature message passing, mean pooling, one linear output layer;
and its node-level variant (:class:`NodeChlorineGNN`, the same layers with the head on every
node: chlorine at each node).

Nothing non-linear follows the pooling, so the prediction is the linear readout of the mean
node embedding -- the property GraphSHAP-IQ's receptive-field theorem needs for exact
explanations. The model implements the engine's
:class:`~wdn_explain.explain.local.LocalMessagePassing` protocol for the fast exact path, and
its :class:`~wdn_explain.explain.local.FactoredLayers` refinement: a layer's 32x32 maps run
once per (source state, pipe) and once per own state, not once per state-graph message.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing, global_mean_pool

from . import recipe
from .errors import ConfigError


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of :class:`ChlorineGNN` (stored in the model card)."""

    in_channels: int = 1
    edge_channels: int = 1
    hidden_channels: int = recipe.HIDDEN_CHANNELS
    num_layers: int = recipe.NUM_LAYERS
    out_channels: int = 1

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1 (got {value!r})")
        from .sizes import check_parameters

        check_parameters(
            self.n_parameters,
            f"hidden_channels {self.hidden_channels} and num_layers {self.num_layers}",
        )

    @property
    def n_parameters(self) -> int:
        """Weights and biases of :class:`ChlorineGNN`: two encoders, four linear maps per
        :class:`FlowConv` (two with biases) and the readout."""
        h = self.hidden_channels
        encoders = (self.in_channels + 1) * h + self.edge_channels * h + h
        return encoders + self.num_layers * (4 * h * h + 2 * h) + (h + 1) * self.out_channels

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class FlowConv(MessagePassing):
    """Message ReLU(W [h_j || e_ji]) from neighbour j, mean aggregation, residual update
    h_i + ReLU(U [h_i || mean_j msg_j]). Accepts a bipartite ``(x_src, x_dst)`` input.


    The linear maps on concatenations are split (W [a || b] = W_a a + W_b b): the source
    projection is computed once per source node instead of once per edge.
    """

    def __init__(self, channels: int) -> None:
        super().__init__(aggr="mean")
        self.message_src = nn.Linear(channels, channels)
        self.message_edge = nn.Linear(channels, channels, bias=False)
        self.update_self = nn.Linear(channels, channels)
        self.update_aggr = nn.Linear(channels, channels, bias=False)

    def forward(
        self, x: Tensor | tuple[Tensor, Tensor], edge_index: Tensor, edge_feat: Tensor
    ) -> Tensor:
        if isinstance(x, Tensor):
            x = (x, x)
        x_src, x_dst = x
        aggr = self.propagate(
            edge_index,
            x=self.message_src(x_src),
            edge_feat=self.message_edge(edge_feat),
            size=(x_src.size(0), x_dst.size(0)),
        )
        return x_dst + torch.relu(self.update_self(x_dst) + self.update_aggr(aggr))

    def message(self, x_j: Tensor, edge_feat: Tensor) -> Tensor:
        return torch.relu(x_j + edge_feat)

    # The same layer factored for the engine's state graph (FactoredLayers): the update's
    # map of the aggregate commutes with the mean, so it is applied to each message.
    def own_part(self, h: Tensor) -> Tensor:
        """[h || U_self h + b] of each own state."""
        return torch.cat([h, self.update_self(h)], dim=1)

    def projected_messages(self, h_src: Tensor, edge_feat: Tensor) -> Tensor:
        """U_aggr ReLU(W [h_j || e_ji]) of each (source state, edge) row."""
        return self.update_aggr(self.message(self.message_src(h_src), self.message_edge(edge_feat)))

    def residual_update(self, own: Tensor, aggr: Tensor) -> Tensor:
        """The residual update from :meth:`own_part` and the mean of projected messages
        (computed in ``aggr``'s memory)."""
        h, z = own.split(own.shape[1] // 2, dim=1)
        return aggr.add_(z).relu_().add_(h)


class ChlorineGNN(nn.Module):
    """Forecasts the fraction of chlorinated nodes ``horizon`` steps ahead.

    Input: node features ``x`` (n, in_channels), ``edge_index`` (2, E), edge features
    ``edge_attr`` (E, edge_channels), optional ``batch`` (n,). Output: (n_graphs,) when
    ``out_channels == 1``, else (n_graphs, out_channels).
    """

    pooling = "mean"
    aggregation = "mean"

    def __init__(self, config: ModelConfig | None = None, **kwargs: int) -> None:
        super().__init__()
        self.config = config or ModelConfig(**kwargs)
        c = self.config
        self.node_encoder = nn.Linear(c.in_channels, c.hidden_channels)
        self.edge_encoder = nn.Linear(c.edge_channels, c.hidden_channels)
        self.convs = nn.ModuleList(FlowConv(c.hidden_channels) for _ in range(c.num_layers))
        self.readout = nn.Linear(c.hidden_channels, c.out_channels)

    @property
    def num_layers(self) -> int:
        return self.config.num_layers

    def encode(self, x: Tensor, edge_attr: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """Pointwise node and edge encoders."""
        edge = None if edge_attr is None else torch.relu(self.edge_encoder(edge_attr))
        return torch.relu(self.node_encoder(x)), edge

    def propagate_layer(
        self,
        layer: int,
        x: Tensor | tuple[Tensor, Tensor],
        edge_index: Tensor,
        edge_feat: Tensor | None,
    ) -> Tensor:
        """Message-passing layer ``layer`` (0-based), also on bipartite state graphs."""
        return self.convs[layer](x, edge_index, edge_feat)

    def layer_self(self, layer: int, h: Tensor) -> Tensor:
        return self.convs[layer].own_part(h)

    def layer_messages(self, layer: int, h_src: Tensor, edge_feat: Tensor | None) -> Tensor:
        return self.convs[layer].projected_messages(h_src, edge_feat)

    def layer_update(self, layer: int, own: Tensor, aggr: Tensor) -> Tensor:
        return self.convs[layer].residual_update(own, aggr)

    def node_embeddings(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor) -> Tensor:
        """Node embeddings after the last layer, shape (n, hidden_channels)."""
        h, e = self.encode(x, edge_attr)
        for layer in range(self.num_layers):
            h = self.propagate_layer(layer, h, edge_index, e)
        return h

    def readout_parameters(self) -> tuple[Tensor, Tensor]:
        """Weight (out_channels, hidden) and bias (out_channels,) of the linear head."""
        return self.readout.weight, self.readout.bias

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, batch: Tensor | None = None
    ) -> Tensor:
        h = self.node_embeddings(x, edge_index, edge_attr)
        out = self.readout(global_mean_pool(h, batch))
        return out.squeeze(-1) if self.config.out_channels == 1 else out


class NodeChlorineGNN(ChlorineGNN):
    """:class:`ChlorineGNN` with its linear head on every node instead of after the pooling:
    forecasts chlorine (mg/L) at each node ``horizon`` steps ahead. Output (n,) -- (b n,) for
    a batch -- or (n, out_channels). ``pooling = None`` marks it node-level for the explain
    engine (:meth:`~wdn_explain.explain.GraphSHAPIQ.explain_nodes`): a node's output depends
    on its own L-hop field only.
    """

    pooling = None

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, batch: Tensor | None = None
    ) -> Tensor:
        out = self.readout(self.node_embeddings(x, edge_index, edge_attr))
        return out.squeeze(-1) if self.config.out_channels == 1 else out


def forecaster(config: ModelConfig, node_level: bool = False) -> ChlorineGNN:
    """The forecaster of a card's architecture and target (``InputSpec.node_level``)."""
    return (NodeChlorineGNN if node_level else ChlorineGNN)(config)


ADDED_LAYER_SCALE = 0.1
"""The factor on the update maps of a layer :func:`deepened` adds: small, so the deeper copy
starts near the model's output, yet not zero -- a :class:`FlowConv` of zero update maps is the
identity but stays it (its ReLU(0) passes no gradient: two earlier 4-layer trials of the risk
model trained nothing in the added layer and matched the 3-layer figures to the digit)."""


def deepened(model: ChlorineGNN, num_layers: int, seed: int = 0) -> ChlorineGNN:
    """A copy of ``model`` with :class:`FlowConv` layers appended after its own up to
    ``num_layers`` (PyTorch's seeded initialisation, the update maps times
    :data:`ADDED_LAYER_SCALE`); ``model`` itself where it has that many.

    Raises:
        ConfigError: fewer layers than ``model``'s.
    """
    from dataclasses import replace

    own = model.config.num_layers
    if num_layers < own:
        raise ConfigError(
            f"num_layers must be at least the model's {own}: a deeper copy adds layers after "
            f"them (got {num_layers})"
        )
    if num_layers == own:
        return model
    torch.manual_seed(seed)
    deep = type(model)(replace(model.config, num_layers=num_layers))
    deep.load_state_dict(model.state_dict(), strict=False)  # all but the added layers
    with torch.no_grad():
        for layer in deep.convs[own:]:
            for linear in (layer.update_self, layer.update_aggr):
                for tensor in linear.parameters():
                    tensor.mul_(ADDED_LAYER_SCALE)
    return deep


def side_by_side(models: list[ChlorineGNN]) -> ChlorineGNN:
    """One model of the same class whose output is the mean of ``models``' outputs (of one
    architecture but their width): their hidden channels side by side, every map
    block-diagonal (the encoders stacked, each layer's maps one block per model), the readout
    their readouts over ``len(models)``. Exact, as every step keeps the blocks apart: ReLU
    and the mean over neighbours act per channel. Still one model of the family, so the
    engine explains it as it explains each -- its values the mean of theirs.

    Raises:
        ConfigError: no models, or models of different inputs, depth or outputs.
    """
    from dataclasses import replace

    configs = {replace(m.config, hidden_channels=1) for m in models}
    if len(configs) != 1 or len({type(m) for m in models}) != 1:
        raise ConfigError(
            f"side_by_side needs models of one class, inputs, depth and outputs (got {len(models)}"
            f" models, {len(configs)} architectures)"
        )
    width = sum(m.config.hidden_channels for m in models)
    dtype = next(models[0].parameters()).dtype
    merged = type(models[0])(replace(models[0].config, hidden_channels=width)).to(dtype)
    states = [m.state_dict() for m in models]
    merged_state = {}
    for name, value in merged.state_dict().items():
        parts = [s[name] for s in states]
        if name.startswith("readout."):
            merged_state[name] = (
                torch.cat(parts, dim=1) / len(models)
                if name.endswith("weight")
                else torch.stack(parts).mean(dim=0)
            )
        elif name.startswith("convs."):
            merged_state[name] = torch.block_diag(*parts) if value.dim() == 2 else torch.cat(parts)
        else:  # the encoders: their outputs stacked
            merged_state[name] = torch.cat(parts, dim=0)
    merged.load_state_dict(merged_state)
    return merged
