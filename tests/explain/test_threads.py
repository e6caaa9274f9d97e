"""The engine's intra-op threads (explain/threads.py): one unless the user chose, and the
caller's setting restored."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import global_mean_pool

from wdn_explain.errors import ExplainError
from wdn_explain.explain import GraphSHAPIQ
from wdn_explain.explain.threads import numeric_threads

from conftest import path_graph


class ThreadsSeen(torch.nn.Module):
    """A linear model (exact for any method) that records torch's thread count per call."""

    num_layers = 1

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []
        self.head = torch.nn.Linear(1, 1).double()

    def forward(self, x, edge_index, batch=None):
        self.seen.append(torch.get_num_threads())
        return self.head(global_mean_pool(x, batch))


@pytest.fixture
def restore_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    before, default = torch.get_num_threads(), torch.get_num_interop_threads()
    torch.set_num_threads(default)  # torch's default count on this machine: no user choice
    yield default
    torch.set_num_threads(before)


def seen(num_threads=None) -> set[int]:
    model = ThreadsSeen()
    data = path_graph(4, edge_features=None)
    GraphSHAPIQ(model, method="masked", num_threads=num_threads).explain(data)
    return set(model.seen)


def test_one_thread_by_default_and_the_callers_count_restored(restore_threads):
    assert seen() == {1}
    assert torch.get_num_threads() == restore_threads


def test_an_explicit_count_wins(restore_threads):
    assert seen(num_threads=3) == {3}
    assert torch.get_num_threads() == restore_threads


def test_the_users_own_setting_is_kept(restore_threads, monkeypatch):
    other = restore_threads + 1  # differs from torch's default: the user chose it
    torch.set_num_threads(other)
    assert seen() == {other}
    torch.set_num_threads(restore_threads)
    monkeypatch.setenv("OMP_NUM_THREADS", str(restore_threads))
    assert seen() == {restore_threads}
    assert torch.get_num_threads() == restore_threads


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(
        ExplainError, match=f"num_threads must be an integer >= 1 or None \\(got {bad!r}"
    ):
        GraphSHAPIQ(ThreadsSeen(), num_threads=bad)


def test_numeric_threads_hold_torch_openmp_and_blas_to_one(restore_threads):
    """Onboarding's training and fitting: torch, scikit-learn's OpenMP and NumPy's BLAS on
    one thread unless the user chose, every count restored afterwards."""
    import sklearn.ensemble  # noqa: F401 -- loads scikit-learn's own OpenMP runtime
    from threadpoolctl import threadpool_info, threadpool_limits

    def counts() -> dict[str, int]:
        return {pool["filepath"]: pool["num_threads"] for pool in threadpool_info()}

    assert {pool["user_api"] for pool in threadpool_info()} >= {"openmp", "blas"}
    with threadpool_limits(restore_threads):  # every pool at torch's default: nobody chose
        before = counts()
        with numeric_threads() as chosen:
            assert chosen == 1 and torch.get_num_threads() == 1
            assert set(counts().values()) == {1}
        assert counts() == before and torch.get_num_threads() == restore_threads
