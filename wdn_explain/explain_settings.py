"""How a scenario's forecasts are explained (:class:`ExplainSettings`) and the cache rule
that follows from it: which settings change the values (:data:`CACHE_FIELDS`), the identity
a cached timeline must match (:func:`cache_identity`, :func:`cache_mismatch`) and where it
is kept (:func:`cache_path`). The timeline and its file are :mod:`.timeline`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError, DataError
from .explain.explanation import ENGINE_VERSION
from .model_folder import model_hash, read_card
from .scenario import ScenarioConfig
from .simulation import SIMULATION_VERSION

# What a masked node is replaced by (the reference the values are relative to): the
# engine's baseline and the plain name the app and reports show. "none" zeroes every node
# feature: chlorine 0 mg/L and no source (the source feature is 0 wherever nothing enters).
REFERENCES: dict[str, tuple[str, str]] = {
    "mean": ("mean", "the network average (every node at the mean of the inputs, the paper's)"),
    "none": ("zeros", "no chlorine (every node without chlorine and without a source)"),
}

#: The reference shown unless one is asked for: "no chlorine", so that the values say which
#: chlorinated nodes make the forecast (relative to the network average, which is itself
#: chlorinated once chlorine has spread, every dry node gets a large negative value).
DEFAULT_REFERENCE = "none"


class ExplainSettings(BaseModel):
    """How a scenario's forecasts are explained: one frozen record that the CLI and the app
    build, that :func:`~wdn_explain.pipeline.explain_scenario` and its Dask workers use
    unchanged, and whose fields that change the values (:data:`CACHE_FIELDS`) are the
    timeline's cache key.

    Attributes:
        method: The engine method (``GraphSHAPIQ(method=...)``: auto, local, masked, ...).
        n_layers: Message-passing layers of the receptive fields (default: the model's).
        approximation_lambda: With a value, every step is explained by the
            lambda-approximation with this lambda (``GraphSHAPIQ.explain(budget=...)``)
            instead of exactly.
        memory_budget_gb: Host memory the engine may use (``GraphSHAPIQ(memory_budget_gb=...)``;
            default: half the available); changes the chunking, not the values.
        num_threads: torch intra-op threads of the engine (``GraphSHAPIQ(num_threads=...)``;
            default: the user's own setting, else one); changes the speed, not the values.
        references: The references (:data:`REFERENCES`) explained, each a series.
        target_nodes: For a node-level model, the ids of the nodes whose forecasts are
            explained (default: :func:`~wdn_explain.node_targets.default_target`); refused for a
            share model.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    method: str = "auto"
    n_layers: int | None = Field(None, ge=1)
    approximation_lambda: int | None = Field(None, ge=1, le=64)  # above: a field beyond enumeration
    memory_budget_gb: float | None = Field(None, gt=0)
    num_threads: int | None = Field(None, ge=1)
    references: tuple[str, ...] = tuple(REFERENCES)
    target_nodes: tuple[str, ...] | None = None

    @field_validator("references")
    @classmethod
    def _known_references(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [r for r in value if r not in REFERENCES]
        if unknown or not value or "mean" not in value:
            raise ValueError(
                f"references must include 'mean' and be among {', '.join(REFERENCES)} "
                f"(got {', '.join(value) or 'none'})"
            )
        return value

    @field_validator("target_nodes")
    @classmethod
    def _distinct_targets(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and (not value or len(set(value)) != len(value)):
            raise ValueError(f"target nodes must be distinct node ids (got {list(value)})")
        return value

    @classmethod
    def of(cls, **fields: Any) -> ExplainSettings:
        """Settings from keyword fields; ConfigError naming the bad field and value."""
        try:
            return cls(**fields)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "settings"
            raise ConfigError(
                f"explain setting {where}: {error['msg']} (got {error.get('input')!r})"
            ) from None

    def cache_key(self) -> dict[str, Any]:
        """The fields that change the stored values (not memory or threads: they change only
        chunking and speed); ``target_nodes`` only when set, so the keys of share timelines
        are those they had before target nodes existed."""
        key = self.model_dump(mode="json", include=set(CACHE_FIELDS))
        if key["target_nodes"] is None:
            del key["target_nodes"]
        return key

    def explainer_options(self, reference: str, side_by_side: int = 1) -> dict[str, Any]:
        """Keyword arguments of ``GraphSHAPIQ`` explaining relative to ``reference``, as one
        of ``side_by_side`` explainers running at once (each gets that share of the memory
        budget: it changes the chunking, not the values)."""
        memory = self.memory_budget_gb
        if side_by_side > 1:
            from .explain.memory import default_memory_budget_gb

            memory = (memory or default_memory_budget_gb()) / side_by_side
        options = {
            "method": self.method,
            "memory_budget_gb": memory,
            "num_threads": self.num_threads,
        }
        if self.n_layers is not None:
            options["n_layers"] = self.n_layers
        return options | {"baseline": REFERENCES[reference][0]}


CACHE_FIELDS = ("method", "n_layers", "approximation_lambda", "references", "target_nodes")


DEFAULT_TARGET_RULE = 2
"""Version of the rule that picks the node a node-level timeline explains when none is asked
for (:func:`~wdn_explain.node_targets.default_target`; 1: the reached node with the lowest
mean forecast, 2: the node falling back below the minimum most often). Part of such a
timeline's cache identity: a cache made under another rule explains another node."""


def cache_identity(
    scenario: ScenarioConfig, model_dir: str | Path, settings: ExplainSettings
) -> dict[str, Any]:
    """What a cached timeline (and an interrupted run's stored steps) must have been made
    with to be reused: scenario, model, engine and simulator versions, the settings' cache
    key, and for a node-level model explaining its default node the rule that picks it."""
    identity = {
        "scenario_hash": scenario.config_hash(),
        "model_hash": model_hash(model_dir),
        "engine_version": ENGINE_VERSION,
        "simulation_version": SIMULATION_VERSION,
        "settings": settings.cache_key(),
    }
    if settings.target_nodes is None and _node_level(model_dir):
        identity["default_target_rule"] = DEFAULT_TARGET_RULE
    return identity


def _node_level(model_dir: str | Path) -> bool:
    """Whether the folder's card is a node-level model's; False for a card that does not
    read (such a model explains nothing: loading it says why)."""
    try:
        return read_card(model_dir).input_spec.node_level
    except DataError:
        return False


def cache_mismatch(meta: dict[str, Any] | None, identity: dict[str, Any]) -> list[str]:
    """THE cache rule: the parts of :func:`cache_identity` in which a timeline's metadata
    differs, settings by field name ([] when the file may be reused; ``["file"]`` when it
    has no readable metadata)."""
    if meta is None:
        return ["file"]
    try:
        made_with = settings_of(meta).cache_key()
    except (ValidationError, TypeError):
        made_with = None
    stale = [k for k, wanted in identity.items() if k != "settings" and meta.get(k) != wanted]
    wanted = identity["settings"]
    if made_with is None:
        return [*stale, "settings"]
    fields = [k for k in CACHE_FIELDS if k in wanted or k in made_with]
    return stale + [k for k in fields if made_with.get(k) != wanted.get(k)]


def settings_of(meta: dict[str, Any]) -> ExplainSettings:
    """The settings a timeline was made with (files written before settings were recorded
    hold the lambda as ``budget`` and the references beside)."""
    if "settings" in meta:
        return ExplainSettings.model_validate(meta["settings"])
    return ExplainSettings(
        approximation_lambda=meta.get("budget"),
        references=tuple(meta.get("references", ("mean",))),
    )


def cache_path(
    scenario: ScenarioConfig,
    model_dir: str | Path,
    cache_dir: str | Path,
    settings: ExplainSettings | None = None,
) -> Path:
    """Where the timeline of ``scenario`` explained with ``model_dir`` and ``settings`` is
    cached: one file per cache identity (:func:`cache_identity`), so an approximation never
    replaces the exact timeline. Nothing reads the name back: the file's metadata says what
    it holds."""
    identity = cache_identity(scenario, model_dir, settings or ExplainSettings())
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return Path(cache_dir) / f"timeline_{digest}.npz"
