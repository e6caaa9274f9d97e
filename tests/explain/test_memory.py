"""Bounded memory of the exact state-graph path: chunked wiring equals whole wiring, a small
budget gives the same values as an unbudgeted run, and the measured peak stays under it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from wdn_explain.errors import ExplainError
from wdn_explain.explain import GraphSHAPIQ, StateGraph, receptive_fields

from conftest import ROOT, path_graph
from oracle import Oracle, max_error


def test_chunks_cover_every_state_once_within_the_limit(small_graph):
    fields = receptive_fields(small_graph.edge_index, 10, 3)
    graph = StateGraph.build(small_graph.edge_index, fields)
    for layer in range(3):
        seen = []
        for pieces, wiring in graph.chunks(layer, 16):
            assert wiring.n_states == sum(hi - lo for _, lo, hi in pieces) <= 16
            seen += [(j, m) for j, lo, hi in pieces for m in range(lo, hi)]
        expected = [(j, m) for j, f in enumerate(fields[layer + 1]) for m in range(2 ** len(f))]
        assert seen == expected


def test_chunked_wiring_is_the_whole_wiring_cut_into_pieces(small_graph):
    fields = receptive_fields(small_graph.edge_index, 10, 3)
    graph = StateGraph.build(small_graph.edge_index, fields)
    for layer in range(3):
        (_, whole), *rest = graph.chunks(layer, 1 << 20)
        assert not rest
        parts = list(graph.chunks(layer, 8))
        assert len(parts) > 1
        start, src, dst, ids, own = 0, [], [], [], []
        for _, w in parts:
            own.append(w.self_state)
            src.append(w.edge_src)
            dst.append(w.edge_dst + start)
            ids.append(w.edge_id)
            start += w.n_states
        # same messages, grouped by chunk: compare as sorted (dst, src, id) triples
        chunked = torch.stack([torch.cat(dst), torch.cat(src), torch.cat(ids)]).T.tolist()
        plain = torch.stack([whole.edge_dst, whole.edge_src, whole.edge_id]).T.tolist()
        assert sorted(chunked) == sorted(plain)
        assert torch.equal(torch.cat(own), whole.self_state)


def test_small_budget_matches_the_oracle_and_the_unbudgeted_run():
    from wdn_explain.model import ChlorineGNN

    data = path_graph(10, seed=3, extra=[(0, 4), (5, 9)])
    torch.manual_seed(0)
    model = ChlorineGNN(num_layers=3, hidden_channels=8).double().eval()
    ours = GraphSHAPIQ(model, memory_budget_gb=2e-4).explain(data)  # 64-state chunks
    plain = GraphSHAPIQ(model, memory_budget_gb=4).explain(data)
    oracle = Oracle(lambda x: model(x, data.edge_index, data.edge_attr), data.x)
    for index, order in (("Moebius", 10), ("SV", None), ("k-SII", 2)):
        assert max_error(oracle(0)(index, order or 1), ours.interaction_values(index, order)) < 1e-9
        a, b = ours.interaction_values(index, order), plain.interaction_values(index, order)
        assert a.interaction_lookup == b.interaction_lookup
        np.testing.assert_allclose(a.values, b.values, rtol=0, atol=1e-12)


def test_budget_too_small_for_the_result_is_refused_with_advice(small_graph, wdn_model):
    with pytest.raises(ExplainError, match=r"over half the memory budget.*budget=\d"):
        GraphSHAPIQ(wdn_model, memory_budget_gb=1e-6).explain(small_graph)
    with pytest.raises(ExplainError, match=r"memory_budget_gb must be a number > 0 \(got 0\)"):
        GraphSHAPIQ(wdn_model, memory_budget_gb=0)


PEAK_SCRIPT = """
import json, sys
import torch
from torch_geometric.data import Data
from wdn_explain.explain import GraphSHAPIQ
from wdn_explain.model import ChlorineGNN
from wdn_explain.network import load_network

torch.set_num_threads(1)
layers, budget = int(sys.argv[1]), float(sys.argv[2])
net = load_network("hanoi")
torch.manual_seed(0)
model = ChlorineGNN(num_layers=layers, hidden_channels=32).eval()
data = Data(x=torch.rand(32, 1), edge_index=net.edge_index, edge_attr=torch.randn(68, 1))
tiny = Data(x=data.x[:2], edge_index=torch.tensor([[0], [1]]), edge_attr=data.edge_attr[:1])
GraphSHAPIQ(model, readout_check="off").explain(tiny)  # lazy imports and allocator warm-up
def status(key):  # VmHWM: peak since the reset below (ru_maxrss keeps the parent's peak)
    with open("/proc/self/status") as handle:
        return next(int(x.split()[1]) * 1024 for x in handle if x.startswith(key))
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # reset VmHWM to the current resident size
before = status("VmRSS:")
ours = GraphSHAPIQ(model, memory_budget_gb=budget).explain(data)
added = status("VmHWM:") - before
plain = GraphSHAPIQ(model, memory_budget_gb=64).explain(data)
print(json.dumps({
    "added": added,
    "sv": ours.node_values("SV").tolist(),
    "sv_plain": plain.node_values("SV").tolist(),
    "total": ours.blocks.total(),
    "total_plain": plain.blocks.total(),
}))
"""


def peak_run(layers: int, budget_gb: float) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, str(layers), str(budget_gb)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
@pytest.mark.parametrize(
    ("layers", "budget_gb"),
    [(3, 0.1), pytest.param(4, 0.4, marks=pytest.mark.slow)],
)
def test_measured_peak_stays_under_the_budget(layers, budget_gb):
    """Hanoi, 3-layer model with 32 channels (L = 4: 3.6 M node states, which took 3.2 GB
    before the budget): the process's peak grows by less than the budget, and the values
    equal those of an unbudgeted run."""
    r = peak_run(layers, budget_gb)
    assert r["added"] <= budget_gb * 2**30, r["added"] / 2**30
    np.testing.assert_allclose(r["sv"], r["sv_plain"], rtol=1e-6, atol=1e-9)
    assert r["total"] == pytest.approx(r["total_plain"], abs=1e-9)
