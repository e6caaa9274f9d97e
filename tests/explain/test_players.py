"""Explanations over a chosen player set against an independent oracle: the game over the
players is evaluated in the test itself (one unbatched model call per coalition of the
players, every other node at its observed features or at the baseline) and fed to shapiq's
ExactComputer; the model calls are counted by enumerating the restricted receptive fields'
subsets with networkx and Python sets."""

from __future__ import annotations

from itertools import chain, combinations

import networkx as nx
import numpy as np
import pytest
from shapiq import ExactComputer
from torch_geometric.utils import to_networkx

from wdn_explain.errors import ExplainError
from wdn_explain.explain import Explanation, GraphSHAPIQ

from conftest import path_graph
from models import node_chlorine
from oracle import max_error, outputs

PLAYERS = [8, 1, 4, 7]  # unsorted on purpose: player k is the k-th smallest node
INDICES = [("Moebius", None), ("SV", None), ("k-SII", 2), ("STII", 2), ("FSII", 2), ("BV", None)]


def subset_oracle(call, x, players, hold: str, output: int) -> ExactComputer:
    """shapiq's brute force over the 2^|P| coalitions of the sorted ``players``; the other
    nodes keep their features (``observed``) or take the mean feature (``baseline``)."""
    players = sorted(players)

    def game(coalitions: np.ndarray) -> np.ndarray:
        values = []
        for coalition in np.atleast_2d(coalitions):
            row = np.full(len(x), hold == "observed")
            row[players] = coalition
            values.append(outputs(call, x, row)[output])
        return np.array(values)

    return ExactComputer(n_players=len(players), game=game)


def restricted_states(data, centres, hops: int, players) -> int:
    """Distinct coalitions of players inside some centre's ``hops``-hop field: the masked
    states the exact explanation must evaluate (plain enumeration)."""
    graph = to_networkx(data, to_undirected=True)
    states = set()
    for centre in centres:
        inside = set(nx.single_source_shortest_path_length(graph, centre, cutoff=hops))
        mine = sorted(inside & set(players))
        subsets = chain.from_iterable(combinations(mine, k) for k in range(len(mine) + 1))
        states.update(frozenset(s) for s in subsets)
    return len(states)


@pytest.mark.parametrize("hold", ["observed", "baseline"])
def test_graph_game_over_players_matches_brute_force(small_graph, wdn_model, hold):
    call = lambda x: wdn_model(x, small_graph.edge_index, small_graph.edge_attr)  # noqa: E731
    explanation = GraphSHAPIQ(wdn_model).explain(small_graph, players=PLAYERS, hold=hold)
    computer = subset_oracle(call, small_graph.x, PLAYERS, hold, 0)
    for index, order in INDICES:
        expected = computer(index, order or (len(PLAYERS) if index == "Moebius" else 1))
        assert max_error(expected, explanation.interaction_values(index, order)) < 1e-9, index
    assert explanation.player_nodes().tolist() == sorted(PLAYERS)
    assert explanation.n_graph_evaluations == restricted_states(small_graph, range(10), 2, PLAYERS)
    # efficiency, and the two ends of the game are the model's own outputs
    others = [n for n in range(10) if n not in PLAYERS]
    everything, nothing = np.ones(10, bool), np.zeros(10, bool)
    (nothing if hold == "observed" else everything)[others] = hold == "observed"
    assert explanation.prediction == pytest.approx(outputs(call, small_graph.x, everything)[0])
    assert explanation.empty_prediction == pytest.approx(outputs(call, small_graph.x, nothing)[0])
    sv = explanation.node_values("SV")
    assert sv.sum() == pytest.approx(explanation.prediction - explanation.empty_prediction)


def test_node_games_over_players_match_brute_force():
    data = path_graph(10, seed=3, extra=[(0, 4), (5, 9)])
    model = node_chlorine(layers=2, outputs=2, seed=1).eval()
    call = lambda x: model(x, data.edge_index, data.edge_attr)  # noqa: E731
    targets = [2, 6, 9]
    explainer = GraphSHAPIQ(model)
    found = explainer.explain_nodes(data, targets, output_index=1, players=PLAYERS)
    for target, explanation in zip(targets, found):
        computer = subset_oracle(call, data.x, PLAYERS, "observed", target * 2 + 1)
        for index, order in INDICES:
            expected = computer(index, order or (len(PLAYERS) if index == "Moebius" else 1))
            assert max_error(expected, explanation.interaction_values(index, order)) < 1e-9
    assert found[0].n_graph_evaluations == restricted_states(data, targets, 2, PLAYERS)
    # node 2's 2-hop field (1, 3, 4 via the chord 0-4, ...) holds players 1 and 4 only
    sv = found[0].node_values("SV")
    assert sv[found[0].player_nodes() == 7] == 0 and sv[found[0].player_nodes() == 8] == 0


def test_a_target_without_players_in_its_field_has_no_values():
    data = path_graph(10, seed=3)  # a plain path: node 0 sees 0..2 in two hops
    model = node_chlorine(layers=2, outputs=1, seed=1).eval()
    explanation = GraphSHAPIQ(model).explain(data, node=0, players=[6, 9])
    assert explanation.n_graph_evaluations == 1
    assert explanation.prediction == pytest.approx(explanation.empty_prediction)
    assert np.allclose(explanation.node_values("SV"), 0.0)


def test_players_survive_a_file_round_trip(small_graph, wdn_model, tmp_path):
    explanation = GraphSHAPIQ(wdn_model).explain(small_graph, players=PLAYERS, hold="baseline")
    loaded = Explanation.load(explanation.save(tmp_path / "e.npz"))
    assert loaded.player_nodes().tolist() == [1, 4, 7, 8]
    assert np.allclose(loaded.node_values("SV"), explanation.node_values("SV"))
    every = GraphSHAPIQ(wdn_model).explain(small_graph)
    assert every.players is None and every.player_nodes().tolist() == list(range(10))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"players": [1, 10]}, r"player 10 is not a node of the graph \(0\.\.9\)"),
        ({"players": [3, 3]}, r"players must name each node once \(got \[3, 3\]\)"),
        ({"players": []}, "players must be a non-empty list of node indices"),
        ({"players": [1], "hold": "zero"}, "hold must be one of observed, baseline"),
    ],
)
def test_bad_players_are_named(small_graph, wdn_model, kwargs, message):
    with pytest.raises(ExplainError, match=message):
        GraphSHAPIQ(wdn_model).explain(small_graph, **kwargs)


def test_local_refuses_a_player_set(small_graph, wdn_model):
    with pytest.raises(ExplainError, match="method 'local' runs every node as a player"):
        GraphSHAPIQ(wdn_model, method="local").explain(small_graph, players=PLAYERS)


@pytest.mark.parametrize("target", [None, 6])
def test_holding_nodes_folds_every_nodes_mis_onto_the_players(small_graph, wdn_model, target):
    """MIs over every node (``local``) with the non-players held present are the game over
    the players with the others observed: the brute-force oracle over the players."""
    data = small_graph
    model = wdn_model if target is None else node_chlorine(layers=2, outputs=1, seed=1).eval()
    call = lambda x: model(x, data.edge_index, data.edge_attr)  # noqa: E731
    full = GraphSHAPIQ(model).explain(data, node=target)
    assert full.method == "local" and full.players is None
    others = [n for n in range(10) if n not in PLAYERS]
    folded = full.blocks.held(others)
    computer = subset_oracle(call, data.x, PLAYERS, "observed", 0 if target is None else target)
    players = sorted(PLAYERS)
    for index, order, size in [("SV", None, 1), ("k-SII", 2, 2), ("Moebius", 4, 3)]:
        expected = computer(index, order or 1)
        members, values = folded.index_values(index, order, size)
        found = dict(zip(map(tuple, members.tolist()), values))
        for subset in combinations(range(4), size):
            nodes = tuple(players[k] for k in subset)
            assert found.get(nodes, 0.0) == pytest.approx(expected[subset], abs=1e-9), nodes
        assert all(set(m) <= set(players) for m in found), "held nodes are dummies"
    assert folded.total() == pytest.approx(full.prediction)
    present = np.isin(np.arange(10), others)
    nothing = outputs(call, data.x, present)[0 if target is None else target]
    assert folded.empty_value() == pytest.approx(nothing)
