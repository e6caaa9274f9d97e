"""The tree baselines a forecaster must beat, fitted on a WAQ folder's training scenarios.

* The **tree** (the strong baseline): scikit-learn's ``HistGradientBoostingRegressor``
  (squared loss, seeded) given :func:`tree_features` -- the model's own inputs flattened, the
  dosing plan over the horizon and summaries of the state now -- with its number of boosting
  iterations chosen on the validation scenarios by MAE, as the GNN's epoch is (early stopping
  on validation). A node-level model is compared with one such tree per node, on a large
  network at a sample of its nodes (:func:`tree_nodes`: every k-th node, the model scored on
  the same nodes beside them). Squared loss:
  ``absolute_error`` fits the zero-inflated node target badly (most nodes hold no chlorine
  most of the time, and the median of those leaves is 0).
* The **flat tree** (a second line, share target only): the same regressor with absolute-error
  loss and sklearn's default 100 iterations on the model's inputs flattened alone. A claim that
  a model beats "the tree" is made against the strong one.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from .errors import DataError
from .features import LABEL_RANGE

if TYPE_CHECKING:
    from .dataset import WaqDataset
    from .progress import ProgressCallback

TREE_ITERATIONS = 200
"""Most boosting iterations of the tree; the validation MAE picks how many are used."""
TREE_LEARNING_RATE = 0.1
TREE_NODE_INPUTS = 4096
"""Most trees times nodes: a node-level model's trees are fitted at no more than this many
divided by the network's nodes (one tree's inputs hold every node's features, so its cost
grows with the network): every node of Hanoi (32), 5 of L-Town's 785, where one tree takes
minutes of one core."""
SUMMARIES = ("mean", "max", "chlorinated", "source_reading", "setpoint")
"""The state summaries of :func:`tree_features`, after the plan's ``horizon`` columns."""


def tree_nodes(n_nodes: int) -> np.ndarray:
    """The node indices a node-level model is compared with its trees at: every node where
    they fit in :data:`TREE_NODE_INPUTS`, else every k-th node from the first, k the smallest
    step that keeps at most ``TREE_NODE_INPUTS // n_nodes`` of them (at least one; the same
    nodes for every model and run)."""
    most = max(1, TREE_NODE_INPUTS // n_nodes)
    return np.arange(0, n_nodes, -(-n_nodes // most))


def tree_features(dataset: WaqDataset, scenarios: np.ndarray | None = None) -> np.ndarray:
    """The strong tree's inputs for every forecast of ``scenarios`` (default: ``dataset``'s
    split), shape (N, n F + E C + horizon + 5), float32, in the order of
    :meth:`~.dataset.WaqDataset.steps`:

    * the model's node and edge inputs flattened (:meth:`~.dataset.WaqDataset.flat_inputs`);
    * the dosing plan over the horizon (mg/L at the injection node, ``horizon`` columns; built
      from each scenario's schedule whether or not the model takes it);
    * :data:`SUMMARIES`: mean and max chlorine over the measured nodes now (every node, or
      the model's chlorine sensors) and the number of them at or above the threshold (in the
      label's unit), the injection node's own chlorine reading (0 where it has no sensor) and
      the source's setpoint now (mg/L).
    """
    from .dataset import injection_indices, scenario_plans

    a, inputs = dataset.arrays, dataset.inputs
    s, t = dataset.steps(scenarios)
    measured = dataset.measured
    level = inputs.chlorine_level(a.chlorine_mg_l, a.strength_mg_l[:, None])[s, t][:, measured]
    source = injection_indices(a)[s]
    plan = scenario_plans(a, dataset.horizon)[s, t, source]
    summaries = np.stack(
        [
            level.mean(axis=1),
            level.max(axis=1),
            (level >= inputs.threshold).sum(axis=1),
            a.chlorine_mg_l[s, t, source] * measured[source],
            a.source_mg_l[s, t].max(axis=1),
        ],
        axis=1,
    )
    return np.concatenate([dataset.flat_inputs(scenarios), plan, summaries], axis=1).astype(
        np.float32
    )


def _tuned_forecast(
    x: np.ndarray, y: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, x_out: np.ndarray, seed: int
) -> np.ndarray:
    """The forecast of ``x_out`` by one tree fitted on (x, y), after the number of iterations
    with the lowest MAE on the validation rows (all of them without validation rows).
    Columns constant over ``x`` are left out first: no split uses them, and the histograms
    of a sensor model's inputs on L-Town are two thirds such columns (unmeasured nodes)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    varies = (x != x[:1]).any(axis=0)
    varies[0] |= not varies.any()  # scikit-learn needs a column
    x, x_val, x_out = x[:, varies], x_val[:, varies], x_out[:, varies]
    tree = HistGradientBoostingRegressor(
        max_iter=TREE_ITERATIONS,
        learning_rate=TREE_LEARNING_RATE,
        early_stopping=False,
        random_state=seed,
    ).fit(x, y)
    n_iter = tree.n_iter_
    if len(y_val):
        n_iter = int(np.argmin([np.abs(p - y_val).mean() for p in tree.staged_predict(x_val)])) + 1
    return next(islice(tree.staged_predict(x_out), n_iter - 1, None))


def tree_forecast(
    dataset: WaqDataset,
    fit_on: WaqDataset | None = None,
    seed: int = 0,
    nodes: np.ndarray | None = None,
    progress: ProgressCallback | None = None,
) -> np.ndarray:
    """The strong tree's forecast of every sample of ``dataset`` (its targets' shape): fitted
    on every step of the training scenarios of ``fit_on`` (default: ``dataset``'s folder), its
    iterations chosen on that folder's validation scenarios (see the module docstring); for
    the node target one tree per node (only at the node indices ``nodes`` when given: the
    columns of those nodes, for a cheaper comparison), ``progress(done, total)`` called after
    each (minutes each on a full design). Clipped to the label's range.

    Raises:
        DataError: ``fit_on`` has no training scenarios.
    """
    fit_on = fit_on or dataset
    train = fit_on.train_scenarios
    if not len(train):
        raise DataError(f"'{fit_on.folder}' has no training scenarios to fit the tree baseline")
    val = fit_on.split_of("val")
    x, x_val, x_out = (
        tree_features(d, s) for d, s in ((fit_on, train), (fit_on, val), (dataset, None))
    )
    y, y_val = fit_on.targets(train), fit_on.targets(val)
    if dataset.inputs.node_level:
        fitted = list(range(y.shape[1]) if nodes is None else nodes)
        columns = []
        for i in fitted:
            columns.append(_tuned_forecast(x, y[:, i], x_val, y_val[:, i], x_out, seed))
            if progress is not None:
                progress(len(columns), len(fitted))
        forecast = np.stack(columns, axis=1)
    else:
        forecast = _tuned_forecast(x, y, x_val, y_val, x_out, seed)
    low, high = LABEL_RANGE[dataset.inputs.target]
    return np.clip(forecast, low, high).astype(np.float32)


def flat_tree_forecast(
    dataset: WaqDataset, fit_on: WaqDataset | None = None, seed: int = 0
) -> np.ndarray:
    """The flat tree's forecast of every sample of a share model's ``dataset`` (see the module
    docstring), fitted on every step of the training scenarios of ``fit_on`` (default:
    ``dataset``'s folder).

    Raises:
        DataError: ``fit_on`` has no training scenarios.
    """
    from sklearn.ensemble import HistGradientBoostingRegressor

    fit_on = fit_on or dataset
    train = fit_on.train_scenarios
    if not len(train):
        raise DataError(f"'{fit_on.folder}' has no training scenarios to fit the tree baseline")
    tree = HistGradientBoostingRegressor(loss="absolute_error", random_state=seed)
    tree.fit(fit_on.flat_inputs(train), fit_on.targets(train))
    return np.clip(tree.predict(dataset.flat_inputs()), 0.0, 1.0).astype(np.float32)
