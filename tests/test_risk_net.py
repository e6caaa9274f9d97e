"""The risk model's added inputs (:mod:`wdn_explain.risk_net`) against oracles built in the
test: the source's setpoint now and over the horizon written out by hand at every node, the
travel time from the source by networkx's Dijkstra over links oriented by their flow, the
setpoint arriving at the horizon read off each graph's schedule, the
zero-weight start equal to the GNN without the columns, and the exact Shapley values of the
risk's logit at a node by enumeration of all 2^7 coalitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from wdn_explain.errors import ConfigError
from wdn_explain.features import RISK_INPUTS, TRAVEL_CAP, InputSpec
from wdn_explain.model import ModelConfig, NodeChlorineGNN, deepened, side_by_side
from wdn_explain.risk_net import RiskScorer, addable, added_channels

from conftest import brute_force_shapley, path_graph

SPEC = InputSpec(
    node_features=("chlorine_mg_l", "source_mg_l", "source_plan_mg_l"),
    horizon=3,
    target="node_chlorine_mg_l",
)


def graph_inputs(n: int, source: int, now: float, plan: list[float], seed: int) -> np.ndarray:
    """Node inputs of one graph built by SPEC: random chlorine, the source at ``source``."""
    rng = np.random.default_rng(seed)
    source_mg_l = np.zeros(n)
    source_mg_l[source] = now
    plan_mg_l = np.zeros((n, 3))
    plan_mg_l[source] = plan
    return SPEC.node_inputs(rng.uniform(0, 1, n), source_mg_l, np.float32(2.0), plan_mg_l)


def test_the_setpoint_now_and_planned_is_read_at_every_node_of_each_graph():
    first = graph_inputs(5, source=3, now=0.0, plan=[1.5, 1.5, 0.0], seed=0)
    second = graph_inputs(5, source=0, now=0.7, plan=[0.0, 0.0, 0.7], seed=1)
    x = torch.from_numpy(np.concatenate([first, second]))
    gnn = NodeChlorineGNN(in_channels=SPEC.in_channels + added_channels(SPEC))
    scorer = RiskScorer(gnn, SPEC)
    added = scorer.risk_inputs(x, None, None, n_graphs=2)[:, SPEC.in_channels :]
    want = np.array([[0.0, 1.5, 1.5, 0.0]] * 5 + [[0.7, 0.0, 0.0, 0.7]] * 5)
    assert np.array_equal(added.numpy(), want.astype(np.float32))
    assert SPEC.columns("source_plan_mg_l") == slice(2, 5)
    assert scorer.added == ("network_setpoint_mg_l",)  # no flows or volumes: no travel time


TRAVEL = InputSpec(
    node_features=SPEC.node_features,
    horizon=3,
    target="node_chlorine_mg_l",
    edge_features=("flow", "pipe_flushes"),
    flow_scale_lps=2.0,
    link_volume_l=(600.0, 300.0, 0.0, 900.0, 1200.0, 100.0),
    report_step_s=100.0,
)
LINKS = [(0, 1), (1, 2), (2, 3), (1, 4), (4, 5), (5, 3)]


def travel_oracle(flow_lps: list[float], source: int, dosed: bool) -> np.ndarray:
    """Seconds along links in their flow direction (volume / |flow|), shortest by networkx,
    in horizons of 300 s, capped at 2 (and everywhere while nothing is dosed)."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(6))
    for (a, b), q, v in zip(LINKS, flow_lps, TRAVEL.link_volume_l):
        if q != 0:
            graph.add_edge(*((a, b) if q > 0 else (b, a)), seconds=v / abs(q))
    reached = nx.single_source_dijkstra_path_length(graph, source, weight="seconds")
    horizons = np.array([min(reached.get(i, np.inf) / 300.0, 2.0) for i in range(6)])
    return horizons if dosed else np.full(6, 2.0)


def test_travel_time_from_the_source_along_the_flows_of_each_batched_graph():
    """Three graphs batched as in training: a booster at node 0 with flows down both
    branches, one at node 3 with the flows reversed and a closed link, and one dosing
    nothing (the cap everywhere); a pump (volume 0) passes at once."""
    flows = [[2.0, 1.0, 4.0, 3.0, 3.0, 1.0], [-2.0, -1.0, -4.0, 0.0, 3.0, -1.0], [1.0] * 6]
    sources, plans = [(0, 1.0), (3, 0.0), (2, 0.0)], [[0, 0, 0], [0, 0.8, 0.8], [0, 0, 0]]
    x, edges = [], []
    for (source, now), plan, flow in zip(sources, plans, flows):
        source_mg_l, plan_mg_l = np.zeros(6), np.zeros((6, 3))
        source_mg_l[source], plan_mg_l[source] = now, plan
        x.append(TRAVEL.node_inputs(np.full(6, 0.5), source_mg_l, np.float32(1.0), plan_mg_l))
        edges.append(TRAVEL.edge_inputs(np.array(flow)))
    x, edge_attr = torch.from_numpy(np.concatenate(x)), torch.from_numpy(np.concatenate(edges))
    pairs = np.array(LINKS).T
    one = np.concatenate([pairs, pairs[::-1]], axis=1)
    edge_index = torch.from_numpy(np.concatenate([one + 6 * k for k in range(3)], axis=1))
    assert addable(TRAVEL) == RISK_INPUTS
    gnn = NodeChlorineGNN(in_channels=TRAVEL.in_channels + added_channels(TRAVEL), edge_channels=2)
    scorer = RiskScorer(gnn, TRAVEL)
    added = scorer.risk_inputs(x, edge_index, edge_attr, n_graphs=3)[:, TRAVEL.in_channels :]
    travel, arrival = added[:, -2].numpy(), added[:, -1].numpy()
    want = [travel_oracle(f, s, d) for f, (s, _), d in zip(flows, sources, [1, 1, 0])]
    assert np.allclose(travel, np.concatenate(want), atol=1e-6)
    assert abs(travel[8]) < 1e-6 and travel[10] == TRAVEL_CAP  # #2: past the pump; 4 unreached
    assert np.isclose(travel[1], 600 / 2 / 300)  # #1: 600 L at 2 L/s, in horizons of 300 s
    assert (travel[12:] == TRAVEL_CAP).all()
    # the setpoint at the report the water reaching each node at the horizon left the source
    # (reports t, t + 1, ..., t + 3 in each graph's own schedule; now where it left earlier)
    for node, (k, tau_reports) in enumerate(zip(np.repeat(range(3), 6), travel * 3)):
        schedule = [sources[k][1], *plans[k]]
        left = 3 - int(np.ceil(tau_reports - 1e-6))  # 0 .. 3, or before now
        assert arrival[node] == np.float32(schedule[max(left, 0)]), node
    assert arrival[1] == 1.0 and arrival[6] == 0.0  # #1 doses now only; #2 from t + 2 on
    with torch.no_grad():  # a forward pass builds the same inputs
        assert torch.equal(
            scorer(x, edge_index, edge_attr, torch.arange(3).repeat_interleave(6)),
            gnn(scorer.risk_inputs(x, edge_index, edge_attr, 3), edge_index, edge_attr),
        )


def test_zero_weights_on_the_added_columns_leave_the_forecasters_output():
    data = path_graph(6, seed=3, features=SPEC.in_channels)
    torch.manual_seed(0)
    plain = NodeChlorineGNN(in_channels=SPEC.in_channels, hidden_channels=8).double().eval()
    wide = NodeChlorineGNN(
        in_channels=SPEC.in_channels + added_channels(SPEC), hidden_channels=8
    ).double()
    state = plain.state_dict()
    encoder = state["node_encoder.weight"]
    state["node_encoder.weight"] = torch.cat([encoder, torch.zeros(8, 4, dtype=encoder.dtype)], 1)
    wide.load_state_dict(state)
    scorer = RiskScorer(wide, SPEC).eval()
    with torch.no_grad():
        assert torch.allclose(
            scorer(data.x, data.edge_index, data.edge_attr),
            plain(data.x, data.edge_index, data.edge_attr),
        )


@pytest.mark.parametrize("num_layers", [2, 4])
def test_shapley_values_of_the_risk_on_its_inputs_match_enumeration(num_layers):
    """The engine explains the GNN on the risk's inputs (the added columns among a node's
    features): its values at a node equal all 2^7 masked evaluations enumerated here, for a
    GNN of the forecaster's depth and one deepened by two layers (:func:`deepened`: the
    target's field then spans the whole graph)."""
    from wdn_explain.explain import GraphSHAPIQ

    n, target = 7, 3
    data = path_graph(n, seed=5, features=SPEC.in_channels, extra=[(0, 5)])
    data.x[:, 1:] = 0.0
    data.x[2, 1:] = torch.tensor([1.2, 1.2, 0.0, 0.0], dtype=data.x.dtype)  # the source
    torch.manual_seed(2)
    gnn = NodeChlorineGNN(
        in_channels=SPEC.in_channels + added_channels(SPEC), hidden_channels=8, num_layers=2
    )
    gnn = deepened(gnn, num_layers)
    scorer = RiskScorer(gnn.double(), SPEC).eval()
    x = scorer.risk_inputs(data.x, data.edge_index, data.edge_attr)
    mean = x.mean(dim=0)

    def logit(coalition: frozenset[int]) -> float:
        masked = x.clone()
        masked[[i for i in range(n) if i not in coalition]] = mean
        with torch.no_grad():
            return float(gnn(masked, data.edge_index, data.edge_attr)[target])

    wide = data.clone()
    wide.x = x
    explanation = GraphSHAPIQ(gnn).explain_nodes(wide, [target])[0]
    assert np.allclose(explanation.node_values("SV"), brute_force_shapley(logit, n))


def test_shapley_values_of_risk_models_side_by_side_are_those_of_their_mean_logit():
    """Two risk GNNs of seeds apart served as one (:func:`side_by_side`, the shipped risk
    model's form): the engine's values at a node of the merged GNN equal all 2^7 masked
    evaluations of the mean of the two GNNs' logits, each run on its own here."""
    from wdn_explain.explain import GraphSHAPIQ

    n, target = 7, 3
    data = path_graph(n, seed=6, features=SPEC.in_channels, extra=[(0, 5)])
    data.x[:, 1:] = 0.0
    data.x[2, 1:] = torch.tensor([1.2, 1.2, 0.0, 0.0], dtype=data.x.dtype)  # the source
    width = SPEC.in_channels + added_channels(SPEC)
    members = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        gnn = NodeChlorineGNN(in_channels=width, hidden_channels=8, num_layers=2)
        members.append(deepened(gnn, 3, seed).double().eval())
    merged = side_by_side(members)
    x = RiskScorer(merged, SPEC).risk_inputs(data.x, data.edge_index, data.edge_attr)
    mean = x.mean(dim=0)

    def logit(coalition: frozenset[int]) -> float:
        masked = x.clone()
        masked[[i for i in range(n) if i not in coalition]] = mean
        with torch.no_grad():
            return (
                float(sum(m(masked, data.edge_index, data.edge_attr)[target] for m in members)) / 2
            )

    wide = data.clone()
    wide.x = x
    explanation = GraphSHAPIQ(merged).explain_nodes(wide, [target])[0]
    assert np.allclose(explanation.node_values("SV"), brute_force_shapley(logit, n))


def test_a_forecaster_without_the_plan_or_a_gnn_of_another_width_is_refused():
    no_plan = InputSpec(node_features=("chlorine_mg_l", "source_mg_l"), target="node_chlorine_mg_l")
    with pytest.raises(ConfigError, match="need source_mg_l and source_plan_mg_l"):
        RiskScorer(NodeChlorineGNN(ModelConfig(in_channels=7)), no_plan)
    with pytest.raises(ConfigError, match=r"added inputs \['source_travel_horizons', 'horiz"):
        RiskScorer(NodeChlorineGNN(ModelConfig(in_channels=10)), TRAVEL, RISK_INPUTS[1:])
    with pytest.raises(ConfigError, match=r"added inputs \['network_setpoint_mg_l', 'source"):
        RiskScorer(NodeChlorineGNN(ModelConfig(in_channels=10)), SPEC, RISK_INPUTS)
    with pytest.raises(ConfigError, match=r"must read 9 node features \(got 5\)"):
        RiskScorer(NodeChlorineGNN(ModelConfig(in_channels=5)), SPEC)
