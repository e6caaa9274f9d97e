"""The engine works without the water, app and CLI stacks, and prints nothing unless asked."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import ROOT

BLOCKED = ("epyt epyt_flow wntr geopandas pydantic yaml streamlit plotly imageio typer").split()

SCRIPT = textwrap.dedent(
    f"""
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in {BLOCKED!r}:
                raise ImportError(f"blocked: {{name}}")

    sys.meta_path.insert(0, Block())
    import torch
    from torch_geometric.data import Data
    from torch_geometric.nn import GCNConv, global_mean_pool

    from wdn_explain.explain import GraphSHAPIQ, GraphSHAPIQAlgorithm

    class GCN(torch.nn.Module):
        num_layers = 1

        def __init__(self):
            super().__init__()
            self.conv, self.head = GCNConv(2, 4), torch.nn.Linear(4, 1)

        def forward(self, x, edge_index, batch=None):
            return self.head(global_mean_pool(torch.relu(self.conv(x, edge_index)), batch))

    torch.manual_seed(0)
    data = Data(x=torch.rand(4, 2), edge_index=torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]]))
    e = GraphSHAPIQ(GCN()).explain(data)
    assert e.exact and len(e.interaction_values("SV").dict_values) == 5
    assert GraphSHAPIQAlgorithm().index == "k-SII"
    assert not [m for m in sys.modules if m.split(".")[0] in {BLOCKED!r}]
    """
)


def test_engine_imports_and_runs_without_the_application_stack():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""  # quiet: no progress bar, no print


def test_progress_is_off_unless_asked(monkeypatch, capsys, wdn_model, small_graph):
    import itertools

    from wdn_explain import progress
    from wdn_explain.explain import GraphSHAPIQ

    clock = itertools.count(step=10.0)  # every step "takes" 10 s: a bar would show at once
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    GraphSHAPIQ(wdn_model).explain(small_graph)
    assert capsys.readouterr().err == ""
    GraphSHAPIQ(wdn_model, progress=True).explain(small_graph)
    assert "GraphSHAP-IQ (local)" in capsys.readouterr().err
