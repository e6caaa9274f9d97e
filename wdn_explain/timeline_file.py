"""A timeline file's format and metadata: :data:`FORMAT`, the metadata record
(:class:`TimelineMeta`), reading it alone (:func:`read_meta`), whether a file may be reused
(:func:`timeline_is_current`), the check of an output path, and the explanations stored
under one name prefix (:func:`load_series`). The :class:`~.timeline.Timeline` itself reads
and writes the file."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from .errors import DataError
from .explain.explanation import Explanation
from .explain_settings import ExplainSettings, cache_identity, cache_mismatch
from .files import check_output, load_npz, load_npz_member
from .records import Record
from .scenario import ScenarioConfig

FORMAT = "wdn-explain-timeline/2"  # 2: chlorine in mg/L, out_of_design in meta


def load_series(data: Mapping[str, np.ndarray], head: str, n_steps: int) -> list[Explanation]:
    """The explanations stored under ``{head}{t}_`` for t < n_steps (MIs back to float64)."""
    by_step: dict[str, dict[str, np.ndarray]] = {f"{head}{t}_": {} for t in range(n_steps)}
    for key in data:  # one pass over the names, not one per step
        prefix = f"{head}{key[len(head) :].split('_', 1)[0]}_"
        if key.startswith(head) and prefix in by_step:
            by_step[prefix][key] = data[key]
    out = []
    for prefix, part in by_step.items():
        part = {
            k: v.astype(np.float64) if k.startswith(f"{prefix}mi_") else v for k, v in part.items()
        }
        out.append(Explanation.from_arrays(part, prefix))
    return out


class TimelineMeta(Record):
    """A timeline file's metadata entry (see :class:`Timeline`); legacy keys of files written
    before settings were recorded (``explainer``, ``budget``, ``references``) are accepted."""

    KIND: ClassVar[str] = "timeline file"

    format: str
    scenario: ScenarioConfig
    scenario_hash: str
    model_hash: str
    engine_version: str
    simulation_version: str | None = None  # None: simulated before versions were recorded
    horizon: int = Field(ge=1)
    threshold: float
    threshold_unit: str = "mg/L"
    target: str = "share"
    target_nodes: list[str] | None = None  # node-level: the explained nodes, by id
    node: str | None = None  # node-level: the target shown as forecast / explanations
    min_residual_mg_l: float | None = None  # node-level: the compliance share's minimum
    settings: ExplainSettings | None = None
    out_of_design: list[str] | None = None
    pressure_warning: str | None = None
    delivery_warning: str | None = None
    forecast_warning: str | None = None
    interval: dict[str, Any] | None = None  # the forecast intervals' confidence, method, groups
    uncertainty: str | None = None  # the plain-language notice of a hard scenario
    risk: dict[str, Any] | None = None  # node-level: the risk's minimum residual and method
    compliance_estimator: str | None = None  # node-level: compliance_forecast's ("forecast"/"risk")
    default_target_rule: int | None = None  # node-level, no node asked: the rule that chose it
    baseline: str = "mean"
    reference: str = "mean"
    model_dir: str | None = None
    exact: bool | None = None
    alternatives: list[str] = []
    explainer: dict[str, Any] | None = None
    budget: int | None = None
    references: list[str] | None = None


def checked_meta(meta: Any, path: str | Path) -> dict[str, Any]:
    """The timeline metadata (checked against :class:`TimelineMeta`), or DataError naming
    the file and the problem."""
    if isinstance(meta, dict) and meta.get("format") != FORMAT:
        raise DataError(f"timeline file '{path}' has format {meta.get('format')!r}")
    TimelineMeta.parse(meta, path)
    return meta


UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, RecursionError)
"""What reading a damaged timeline file raises (RecursionError: metadata nested too deeply)."""


def read_meta(path: str | Path) -> dict[str, Any] | None:
    """The metadata entry of a timeline file (read alone: :func:`load_npz_member`), or None
    when it is unreadable."""
    try:
        meta = json.loads(str(load_npz_member(path, "meta")))
    except UNREADABLE:
        return None
    return meta if isinstance(meta, dict) else None


def timeline_is_current(
    path: str | Path,
    model_dir: str | Path,
    scenario: ScenarioConfig | None = None,
    settings: ExplainSettings | None = None,
    *,
    meta: dict[str, Any] | None = None,
) -> bool:
    """Whether a timeline file exists and may be reused (:func:`cache_mismatch`) for this
    model and ``settings`` (default settings when None), and for ``scenario`` (any scenario
    when None: the file's own). Reads only the file's metadata entry (not at all when the
    caller passes ``meta``, already read from it)."""
    meta = read_meta(path) if meta is None else meta
    if meta is None:
        return False
    if scenario is None:
        scenario = ScenarioConfig.from_record(meta.get("scenario", {}))
    identity = cache_identity(scenario, model_dir, settings or ExplainSettings())
    return not cache_mismatch(meta, identity)


def _is_timeline_file(path: Path) -> bool:
    """An ``.npz`` that is a timeline or too damaged to tell (a cache to recompute), not
    another program's archive."""
    if path.suffix != ".npz":
        return False
    try:
        with load_npz(path) as data:
            return {"meta", "steps"} <= set(data.files)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return True


def check_timeline_output(
    out: str | Path, scenario: ScenarioConfig, *, overwrite: bool = False
) -> Path:
    """Refuse, before any work, an output that is not a timeline file (a directory, a text
    file, another archive), cannot be written, or holds another scenario's timeline (unless
    ``overwrite``). A corrupt or stale timeline of this scenario is a cache: recomputed."""
    out = check_output(out, what="timeline file", is_output=_is_timeline_file)
    meta = read_meta(out) if out.is_file() else None
    if meta is not None and meta.get("scenario_hash") != scenario.config_hash() and not overwrite:
        raise DataError(
            f"timeline file '{out}' holds another scenario (hash {meta.get('scenario_hash')}, "
            f"this one {scenario.config_hash()}); use --overwrite to replace it"
        )
    return out
