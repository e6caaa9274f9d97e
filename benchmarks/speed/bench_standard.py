"""Standard PyG layers on the state graph (issue 19): one figure per line.

Usage: python benchmarks/speed/bench_standard.py [--n 1000] [--skip-masked] [--threads 1]

On the random geometric graph of ``bench_engine.py`` (n nodes, mean degree about 2):
exact MIs + SV + k-SII(2) of a 2-layer GCN, GIN and GAT (4 -> 16 -> 16, mean pooling,
linear head) by ``method="auto"`` (the standard-layer state graph) and by masked graphs,
against the 2-layer ChlorineGNN (hidden 32) on the protocol state graph, plain
(``propagate_layer``, as before issue 19) and factored -- the same |I| in one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch_geometric.data import Data
from torch_geometric.nn import GATConv, GCNConv, GINConv, global_mean_pool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import rgg


class Standard(torch.nn.Module):
    """Two standard layers with ReLU, mean pooling and a linear head."""

    num_layers = 2

    def __init__(self, kind: str) -> None:
        super().__init__()
        make = {
            "GCN": lambda i, o: GCNConv(i, o),
            "GIN": lambda i, o: GINConv(
                torch.nn.Sequential(torch.nn.Linear(i, o), torch.nn.ReLU(), torch.nn.Linear(o, o))
            ),
            "GAT": lambda i, o: GATConv(i, o, heads=2, concat=False),
        }[kind]
        self.convs = torch.nn.ModuleList([make(4, 16), make(16, 16)])
        self.head = torch.nn.Linear(16, 2)

    def forward(self, x, edge_index, batch=None):
        for conv in self.convs:
            x = torch.relu(conv(x, edge_index))
        return self.head(global_mean_pool(x, batch))


class PlainProtocol(torch.nn.Module):
    """A ChlorineGNN seen through the plain LocalMessagePassing protocol only."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model
        self.num_layers, self.pooling = model.num_layers, model.pooling

    def encode(self, x, edge_attr):
        return self.model.encode(x, edge_attr)

    def propagate_layer(self, layer, x, edge_index, edge_feat):
        return self.model.propagate_layer(layer, x, edge_index, edge_feat)

    def readout_parameters(self):
        return self.model.readout_parameters()

    def forward(self, x, edge_index, edge_attr, batch=None):
        return self.model(x, edge_index, edge_attr, batch)


def seconds(explainer, data, repeats: int = 2) -> tuple[list[float], object]:
    """Seconds of ``repeats`` runs of exact MIs + SV + k-SII(2): the first one builds the
    state graph, later ones reuse it (as the time steps of a timeline do)."""
    times, e = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        e = explainer.explain(data)
        e.interaction_values("SV", 1)
        e.interaction_values("k-SII", 2)
        times.append(time.perf_counter() - start)
    return times, e


def main() -> None:
    from wdn_explain.explain import GraphSHAPIQ
    from wdn_explain.model import ChlorineGNN

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--skip-masked", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(args.threads)
    edge_index = rgg(args.n)
    torch.manual_seed(0)
    wdn = Data(
        x=torch.rand(args.n, 1),
        edge_index=edge_index,
        edge_attr=torch.randn(edge_index.shape[1], 1),
    )
    chlorine = ChlorineGNN(num_layers=2, hidden_channels=32).eval()
    small = rgg(50)  # warm the process (imports, PyG's templates) outside the timings
    warm = Data(x=torch.rand(50, 1), edge_index=small, edge_attr=torch.randn(small.shape[1], 1))
    seconds(GraphSHAPIQ(PlainProtocol(chlorine), method="local"), warm, repeats=1)
    for kind in ("GCN", "GIN", "GAT"):
        seconds(GraphSHAPIQ(Standard(kind).eval()), Data(x=torch.randn(50, 4), edge_index=small), 1)
    ref, e = seconds(GraphSHAPIQ(PlainProtocol(chlorine), method="local"), wdn)
    print(f"n={args.n} |I| = {e.n_interactions}, {args.threads} thread(s); first / warm run")
    print(f"ChlorineGNN plain protocol state graph: {ref[0]:.3f} / {ref[1]:.3f} s")
    fast, _ = seconds(GraphSHAPIQ(chlorine), wdn)
    print(f"ChlorineGNN factored state graph: {fast[0]:.3f} / {fast[1]:.3f} s")
    data = Data(x=torch.randn(args.n, 4), edge_index=edge_index)
    for kind in ("GCN", "GIN", "GAT"):
        torch.manual_seed(0)
        model = Standard(kind).eval()
        local, e = seconds(GraphSHAPIQ(model), data)
        line = (
            f"{kind} standard state graph ({e.method}, {e.n_node_states} states): "
            f"{local[0]:.3f} / {local[1]:.3f} s = {local[0] / ref[0]:.2f}x / "
            f"{local[1] / ref[1]:.2f}x the plain protocol state graph"
        )
        if not args.skip_masked:
            masked, m = seconds(GraphSHAPIQ(model, method="masked"), data, repeats=1)
            diff = abs(m.node_values("SV") - e.node_values("SV")).max()
            line += (
                f"; masked {masked[0]:.1f} s = {masked[0] / local[0]:.0f}x slower than the "
                f"first run, SV max |diff| {diff:.1e}"
            )
        print(line)


if __name__ == "__main__":
    main()
