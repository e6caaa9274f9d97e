"""Speed of the explain engine (issue: GraphSHAP-IQ engine). One figure per line.

Usage: python benchmarks/speed/bench_engine.py [--reference-layers 3] [--skip-reference]

Compares, on one Hanoi time step with the shipped 3-layer model:
* wdn-explain exact (state graph), MIs + SV, k-SII(2), STII(2), FSII(2), BV, BII(2), FBII(2);
* the same step on one thread, MIs + SV, k-SII(2), STII(2), FSII(2), warm (wall and CPU);
* wdn-explain exact by masked graphs (the paper's Algorithm 1, batched);
* the straightforward Algorithm 1 in benchmarks/speed/reference_graphshapiq.py (per-coalition
  calls, subset-sum Möbius), checked to agree;
then a 33-step timeline, Hanoi with a 4-layer model, and time vs |I| on random geometric
graphs (2-layer GCN). Each measurement runs in its own process to report its peak memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
INDICES = [("SV", 1), ("k-SII", 2), ("STII", 2), ("FSII", 2), ("BV", 1), ("BII", 2), ("FBII", 2)]


def warm_imports() -> None:
    """Import what explaining uses once, outside the timed regions (shapiq alone takes ~1 s)."""
    import shapiq  # noqa: F401
    import torch_geometric  # noqa: F401


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hanoi_step(layers: int = 3):
    """The shipped model (or a random one with ``layers`` layers) and step 12 of the
    app's default scenario."""
    import torch
    from torch_geometric.data import Data

    from wdn_explain.model_folder import load_model
    from wdn_explain.network import load_network
    from wdn_explain.pipeline import scenario_graphs
    from wdn_explain.scenario import load_config
    from wdn_explain.shipped import DEFAULT_MODEL, DEFAULT_SCENARIO
    from wdn_explain.simulation import simulate

    model, card = load_model(DEFAULT_MODEL)
    net = load_network()
    result = simulate(load_config(DEFAULT_SCENARIO).scenario_config(0), net)
    data = scenario_graphs(result, net, card.input_spec)[12]
    if layers != model.num_layers:
        from wdn_explain.model import ChlorineGNN, ModelConfig

        torch.manual_seed(0)
        model = ChlorineGNN(ModelConfig(**{**card.model, "num_layers": layers})).eval()
    return model, Data(x=data.x, edge_index=net.edge_index, edge_attr=data.edge_attr)


def run_exact(method: str, layers: int) -> dict:
    import torch

    from wdn_explain.explain import GraphSHAPIQ

    torch.set_num_threads(2)
    model, data = hanoi_step(layers)
    explainer = GraphSHAPIQ(model, method=method)
    before = peak_mb()
    start = time.perf_counter()
    e = explainer.explain(data)
    mid = time.perf_counter()
    for index, order in INDICES:
        e.interaction_values(index, order)
    end = time.perf_counter()
    warm = time.perf_counter()
    e2 = explainer.explain(data)
    for index, order in INDICES:
        e2.interaction_values(index, order)
    warm = time.perf_counter() - warm
    sv = e.interaction_values("SV", 1)
    return {
        "seconds_total": end - start,
        "seconds_mi": mid - start,
        "seconds_indices": end - mid,
        "seconds_warm": warm,
        "n_interactions": e.n_interactions,
        "graph_evaluations": e.n_graph_evaluations,
        "node_states": e.n_node_states,
        "peak_mb": peak_mb(),
        "added_mb": peak_mb() - before,
        "sv": [sv[(i,)] for i in range(data.num_nodes)],
    }


def run_step() -> dict:
    """Best warm wall and CPU seconds of one Hanoi step on one thread: explain + SV,
    k-SII(2), STII(2), FSII(2) (issue 19's goal: <= 0.05 s)."""
    import torch

    from wdn_explain.explain import GraphSHAPIQ

    torch.set_num_threads(1)
    model, data = hanoi_step(3)
    explainer = GraphSHAPIQ(model)
    wall, cpu = [], []
    for _ in range(11):
        start, start_cpu = time.perf_counter(), time.process_time()
        e = explainer.explain(data)
        for index, order in INDICES[:4]:
            e.interaction_values(index, order)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"wall_s": min(wall[1:]), "cpu_s": min(cpu[1:]), "median_wall_s": sorted(wall)[5]}


def run_reference(layers: int) -> dict:
    import torch

    import reference_graphshapiq as ref

    torch.set_num_threads(2)
    model, data = hanoi_step(layers)
    start = time.perf_counter()
    fields = ref.neighbourhoods(data.edge_index, data.num_nodes, layers)
    family = ref.interactions(fields)
    values = ref.game_values(model, data.x, data.edge_index, data.edge_attr, data.x.mean(0), family)
    mid = time.perf_counter()
    mi = ref.moebius(values)
    end = time.perf_counter()
    sv = ref.shapley_values(mi, data.num_nodes)
    return {
        "seconds_total": time.perf_counter() - start,
        "seconds_eval": mid - start,
        "seconds_moebius": end - mid,
        "n_interactions": len(family),
        "peak_mb": peak_mb(),
        "sv": sv.tolist(),
    }


def run_timeline() -> dict:
    import torch

    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.scenario import load_config
    from wdn_explain.shipped import DEFAULT_MODEL, DEFAULT_SCENARIO

    torch.set_num_threads(2)
    spec = load_config(DEFAULT_SCENARIO).scenario_config(0)
    start = time.perf_counter()
    tl, _ = explain_scenario(spec, DEFAULT_MODEL)
    return {"seconds_total": time.perf_counter() - start, "steps": len(tl), "peak_mb": peak_mb()}


def rgg(n: int):
    """A random geometric graph with mean degree about 2, both edge directions."""
    import networkx as nx
    import numpy as np
    import torch

    graph = nx.random_geometric_graph(n, radius=(2.0 / (np.pi * n)) ** 0.5, seed=n)
    edges = torch.tensor(list(graph.edges()), dtype=torch.long).T.reshape(2, -1)
    return torch.cat([edges, edges.flip(0)], dim=1)


def time_sv_ksii(explainer, data) -> dict:
    """Seconds for exact MIs plus SV and k-SII (order 2) of one graph."""
    start = time.perf_counter()
    e = explainer.explain(data)
    e.interaction_values("SV", 1)
    e.interaction_values("k-SII", 2)
    seconds = time.perf_counter() - start
    return {"seconds_total": seconds, "n_interactions": e.n_interactions, "peak_mb": peak_mb()}


def run_rgg_local(n: int) -> dict:
    import torch
    from torch_geometric.data import Data

    from wdn_explain.explain import GraphSHAPIQ
    from wdn_explain.model import ChlorineGNN

    torch.set_num_threads(2)
    torch.manual_seed(0)
    edge_index = rgg(n)
    data = Data(
        x=torch.rand(n, 1), edge_index=edge_index, edge_attr=torch.randn(edge_index.shape[1], 1)
    )
    return time_sv_ksii(GraphSHAPIQ(ChlorineGNN(num_layers=2, hidden_channels=32).eval()), data)


def run_rgg(n: int) -> dict:
    import torch
    from torch_geometric.data import Data
    from torch_geometric.nn import GCNConv, global_mean_pool

    from wdn_explain.explain import GraphSHAPIQ

    torch.set_num_threads(2)

    class GCN(torch.nn.Module):
        num_layers = 2

        def __init__(self):
            super().__init__()
            self.c1, self.c2, self.head = GCNConv(4, 16), GCNConv(16, 16), torch.nn.Linear(16, 2)

        def forward(self, x, edge_index, batch=None):
            x = torch.relu(self.c2(torch.relu(self.c1(x, edge_index)), edge_index))
            return self.head(global_mean_pool(x, batch))

    torch.manual_seed(0)
    edge_index = rgg(n)
    data = Data(x=torch.randn(n, 4), edge_index=edge_index)
    return time_sv_ksii(GraphSHAPIQ(GCN().eval(), method="masked"), data)


def child(kind: str, arg: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, arg], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-layers", type=int, default=3)
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--skip-four-layers", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        warm_imports()
        kind, arg = args.child
        result = {
            "exact": lambda: run_exact(*arg.split(",")[:1], int(arg.split(",")[1])),
            "reference": lambda: run_reference(int(arg)),
            "step": run_step,
            "timeline": run_timeline,
            "rgg": lambda: run_rgg(int(arg)),
            "rgg_local": lambda: run_rgg_local(int(arg)),
        }[kind]()
        print(json.dumps(result))
        return
    import numpy as np

    sys.stdout.reconfigure(line_buffering=True)
    fast = child("exact", "local,3")
    print(f"hanoi L=3 exact state-graph, MIs + 7 indices (cold): {fast['seconds_total']:.3f} s")
    print(f"hanoi L=3 exact state-graph, MIs + 7 indices (warm): {fast['seconds_warm']:.3f} s")
    print(
        f"hanoi L=3 |I|: {fast['n_interactions']}; node states evaluated: {fast['node_states']}; masked graphs: 0"
    )
    print(
        f"hanoi L=3 state-graph peak memory: {fast['peak_mb']:.0f} MB process, {fast['added_mb']:.0f} MB added by explaining"
    )
    step = child("step", "0")
    print(
        f"hanoi L=3 step on 1 thread, explain + SV, k-SII, STII, FSII (warm, best of 10): "
        f"{step['wall_s']:.3f} s wall, {step['cpu_s']:.3f} s CPU (median {step['median_wall_s']:.3f} s)"
    )
    masked = child("exact", "masked,3")
    print(
        f"hanoi L=3 exact masked graphs (batched Algorithm 1): {masked['seconds_total']:.3f} s, {masked['graph_evaluations']} model calls, peak {masked['peak_mb']:.0f} MB"
    )
    print(
        f"hanoi L=3 state-graph vs masked SV max |diff|: {np.abs(np.subtract(fast['sv'], masked['sv'])).max():.2e}"
    )
    if not args.skip_reference:
        lay = args.reference_layers
        ref = child("reference", str(lay))
        ours = fast if lay == 3 else child("exact", f"local,{lay}")
        print(
            f"hanoi L={lay} reference Algorithm 1: {ref['seconds_total']:.1f} s ({ref['seconds_eval']:.1f} s model calls, {ref['seconds_moebius']:.1f} s Möbius), |I| {ref['n_interactions']}, peak {ref['peak_mb']:.0f} MB"
        )
        print(
            f"hanoi L={lay} reference vs wdn-explain SV max |diff|: {np.abs(np.subtract(ref['sv'], ours['sv'])).max():.2e}"
        )
        print(
            f"hanoi L={lay} speed-up over reference (cold, incl. 7 indices): {ref['seconds_total'] / ours['seconds_total']:.0f}x"
        )
        print(
            f"hanoi L={lay} memory ratio reference / wdn-explain: {ref['peak_mb'] / ours['peak_mb']:.1f}x"
        )
    tl = child("timeline", "0")
    print(
        f"default timeline ({tl['steps']} steps, simulate + forecast + explain exactly): {tl['seconds_total']:.2f} s"
    )
    if not args.skip_four_layers:
        four = child("exact", "local,4")
        print(
            f"hanoi L=4 exact state-graph (|I| = {four['n_interactions']}), MIs + 7 indices: {four['seconds_total']:.1f} s, peak {four['peak_mb']:.0f} MB"
        )
    for n in (50, 100, 200, 500, 1000):
        r = child("rgg_local", str(n))
        print(
            f"random geometric graph n={n} 2-layer ChlorineGNN: |I| = {r['n_interactions']} (2^n = 2^{n}), {r['seconds_total']:.2f} s (state graph, SV + k-SII), peak {r['peak_mb']:.0f} MB"
        )
    for n in (50, 100, 200, 500, 1000):
        r = child("rgg", str(n))
        print(
            f"random geometric graph n={n} 2-layer GCN: |I| = {r['n_interactions']} (2^n = 2^{n}), {r['seconds_total']:.2f} s (masked, SV + k-SII), peak {r['peak_mb']:.0f} MB"
        )


if __name__ == "__main__":
    main()
