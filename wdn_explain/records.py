"""Typed records of the files the water pipeline writes and reads back: the model card
(``card.json``) and the WAQ manifest (``manifest.json``); the timeline's metadata is
:class:`~wdn_explain.timeline.TimelineMeta` on the same base. Each record has a ``version``;
every reader goes through :meth:`Record.parse`, so a missing, extra or mistyped field, or a
record of another version, is one line naming the file, the field and the value.
"""

from __future__ import annotations

import importlib
import math
import warnings
from pathlib import Path
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from typing_extensions import Self

from .design import DesignEnvelope
from .errors import ConfigError, DataError
from .features import (
    COMPLIANCE_ESTIMATORS,
    WAQ_PAPER_NODE_FEATURES,
    InputSpec,
    check_min_residual,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Record(_Strict):
    """A versioned record read from a file (``KIND`` names it in errors)."""

    KIND: ClassVar[str] = "record"
    VERSION: ClassVar[int] = 1

    version: int = 1

    @classmethod
    def parse(cls, data: Any, where: str | Any) -> Self:
        """The record held by ``data`` (a mapping read from ``where``); DataError in one line
        naming the file, the first bad field and its value, or the version."""
        if not isinstance(data, dict):
            raise DataError(
                f"{cls.KIND} '{where}' is corrupt: a {type(data).__name__}, not a mapping"
            )
        version = data.get("version", 1)
        if version != cls.VERSION:
            raise DataError(
                f"{cls.KIND} '{where}' is version {version!r}; this wdn-explain reads version "
                f"{cls.VERSION} (a newer wdn-explain wrote it: upgrade, or recreate the file)"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise DataError(f"{cls.KIND} '{where}' is corrupt: {first_problem(exc)}") from None

    def to_json(self) -> dict[str, Any]:
        """The record as written to its file (JSON types)."""
        return self.model_dump(mode="json", exclude_none=True)


def first_problem(exc: ValidationError) -> str:
    """Every missing field, else the first bad one with its value, in a few words."""
    errors = exc.errors()
    missing = [".".join(map(str, e["loc"])) for e in errors if e["type"] == "missing"]
    if missing:
        return f"it lacks {', '.join(missing)}"
    first = errors[0]
    message = first["msg"].removeprefix("Value error, ")
    if not first["loc"]:
        return message
    got = repr(first.get("input"))
    got = got if len(got) <= 60 else got[:57] + "..."
    field = ".".join(map(str, first["loc"]))
    if first["type"] == "extra_forbidden":
        return f"{field} is not a known field (got {got})"
    return f"{field}: {message} (got {got})"


class NetworkInfo(_Strict):
    """The network a model was trained on or a WAQ folder was simulated on."""

    name: str
    sha256: str
    n_nodes: int | None = None
    n_links: int | None = None


class CardData(_Strict):
    """The WAQ folder a model was trained on."""

    folder: str
    config_hash: str
    network: NetworkInfo
    n_scenarios: int = Field(ge=1)
    flow_scale_lps: float | None = None  # cards older than ``inputs`` (the WAQ-paper model)


class ModelCard(Record):
    """A water model folder's ``card.json``: what the model is, was trained on and takes.

    Attributes:
        model: The architecture (:class:`~wdn_explain.model.ModelConfig` fields).
        train: The training config used (:class:`~wdn_explain.training.TrainConfig`,
            resolved for the device).
        inputs: How inputs and labels are built (:class:`~wdn_explain.features.InputSpec`);
            None only in cards older than it (the WAQ-paper model: ``data.flow_scale_lps``).
        design: The training scenarios' envelope (None in cards older than designs).
        conformal: The calibration of the forecast intervals
            (:func:`~wdn_explain.conformal.calibrate`; None: no intervals).
        notice: The uncertainty notice's error model
            (:func:`~wdn_explain.notice.design_notice`; None: too few held-out scenarios).
        risk: A node model's risk of non-compliance (:func:`~wdn_explain.risk.fit_risk`;
            None: a share model, or calibrated before the risk).
        weights_sha256: SHA-256 of ``model.pt``, checked when the model is loaded.
        unscored: Saved by ``train`` before its intervals, notice, risk and test scores,
            which an interruption cut short (``calibrate`` adds them).
    """

    KIND: ClassVar[str] = "model card"

    model: dict[str, int]
    train: dict[str, Any]
    inputs: InputSpec | None = None
    design: DesignEnvelope | None = None
    conformal: dict[str, Any] | None = None
    notice: dict[str, Any] | None = None
    risk: dict[str, Any] | None = None
    data: CardData
    metrics: dict[str, Any] = Field(default_factory=dict)
    history: list[dict[str, float]] = Field(default_factory=list)
    interrupted: bool = False
    device: str = "cpu"
    epoch_seconds: float | None = None
    code_version: str | None = None
    torch_version: str | None = None
    date: str | None = None
    weights_sha256: str | None = None
    unscored: bool = False

    @field_validator("conformal")
    @classmethod
    def _half_widths(cls, conformal: dict[str, Any] | None) -> dict[str, Any] | None:
        """Interval half-widths are finite and >= 0 (a negative one puts the lower end of an
        interval above its upper end)."""
        if conformal is None:
            return None
        table = conformal.get("half_width", {})
        widths = {**(table if isinstance(table, dict) else {"half_width": table})}
        widths["pooled_half_width"] = conformal.get("pooled_half_width", 0.0)
        for name, value in widths.items():
            if not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(
                    f"conformal half-width of group '{name}' must be a finite number >= 0 "
                    f"(got {value!r})"
                )
        return conformal

    @field_validator("risk")
    @classmethod
    def _risk_heads(cls, risk: dict[str, Any] | None) -> dict[str, Any] | None:
        """Every risk head (``heads``, ``any`` among them) holds as many finite intercepts as
        slopes (:mod:`~wdn_explain.risk`), and the minimum residual it is about is one
        (:func:`~wdn_explain.features.check_min_residual`)."""
        if risk is None:
            return None
        try:  # the timeline and the risk CSV say what the risk is about from it
            check_min_residual(risk.get("min_residual_mg_l"))
        except ConfigError as exc:
            raise ValueError(f"risk {exc}") from None
        heads = risk.get("heads")
        if not isinstance(heads, dict) or "any" not in heads:
            raise ValueError("risk must hold heads, 'any' among them")
        chosen = risk.get("compliance")
        if chosen is not None:
            estimator = chosen.get("estimator") if isinstance(chosen, dict) else None
            if not isinstance(estimator, dict) or "any" not in estimator:
                raise ValueError(
                    "risk compliance must name an estimator per kind, 'any' among them"
                )
            for kind, name in estimator.items():
                if name not in COMPLIANCE_ESTIMATORS:
                    raise ValueError(
                        f"risk compliance estimator of '{kind}' must be one of "
                        f"{', '.join(COMPLIANCE_ESTIMATORS)} (got {name!r})"
                    )
        for kind, head in heads.items():
            coef = [head.get(k) if isinstance(head, dict) else None for k in ("intercept", "slope")]
            if not all(isinstance(c, list) for c in coef) or len(coef[0]) != len(coef[1]):
                raise ValueError(f"risk head '{kind}' must hold as many intercepts as slopes")
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for c in coef for v in c):
                raise ValueError(
                    f"risk head '{kind}' holds a coefficient that is not a finite number"
                )
        return risk

    @field_validator("metrics")
    @classmethod
    def _scores(cls, metrics: dict[str, Any]) -> dict[str, Any]:
        """Every score (``*mae``, ``*rmse``, ``*r2``) is a number: the onboarding verdict and
        the app compare them."""
        for name, value in metrics.items():
            if name.endswith(("mae", "rmse", "r2")) and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise ValueError(f"score {name} must be a number (got {value!r})")
        return metrics

    @field_validator("notice")
    @classmethod
    def _notice(cls, notice: dict[str, Any] | None) -> dict[str, Any] | None:
        """The numbers the uncertainty notice reads (:func:`~wdn_explain.notice.
        hard_scenario_notice`) are there and finite: a malformed notice is a corrupt card, not
        a KeyError when a timeline is explained."""
        if notice is None:
            return None
        coefficients = notice.get("coefficients")
        if not isinstance(coefficients, dict):
            raise ValueError("coefficients must be a mapping of features to numbers")
        numbers = {f"coefficients.{k}": v for k, v in coefficients.items()}
        numbers |= {k: notice.get(k) for k in ("intercept", "threshold_mae", "typical_mae")}
        for name, value in numbers.items():
            if not isinstance(value, (int, float)) or not abs(value) < float("inf"):
                raise ValueError(f"{name} must be a finite number, not {value!r}")
        if notice["typical_mae"] <= 0:
            raise ValueError(f"typical_mae must be > 0, not {notice['typical_mae']!r}")
        return notice

    @property
    def compliance(self) -> dict[str, Any] | None:
        """How this node model serves its compliance share per kind of injection (the
        ``risk`` record's ``compliance``, :func:`~wdn_explain.compliance.fit_compliance`);
        None: from the node forecasts."""
        return (self.risk or {}).get("compliance")

    @property
    def input_spec(self) -> InputSpec:
        """How this model's inputs and labels are built; cards older than ``inputs`` describe
        the WAQ-paper model (chlorine / injection strength only)."""
        if self.inputs is not None:
            return self.inputs
        return InputSpec(
            node_features=WAQ_PAPER_NODE_FEATURES,
            flow_scale_lps=self.data.flow_scale_lps,
            horizon=self.train["horizon"],
            threshold=self.train["threshold"],
        )

    def dataset(self, folder: str | Path, split: str, arrays: Any = None) -> Any:
        """Deprecated: ``WaqDataset.for_card(card, folder, split, arrays)`` (a record does not
        build a dataset). Reaches :mod:`.dataset` at call time, as :func:`.lazy.moved_getattr`
        does, so that records import nothing downstream of them."""
        warnings.warn(
            "ModelCard.dataset() is deprecated; use "
            "wdn_explain.dataset.WaqDataset.for_card(card, folder, split, arrays)",
            DeprecationWarning,
            stacklevel=2,
        )
        dataset = importlib.import_module("wdn_explain.dataset")
        return dataset.WaqDataset.for_card(self, folder, split, arrays)

    @model_validator(mode="after")
    def _inputs_known(self) -> ModelCard:
        if self.inputs is None and self.data.flow_scale_lps is None:
            raise ValueError("the card has neither inputs nor data.flow_scale_lps")
        missing = [k for k in ("horizon", "threshold", "split_seed") if k not in self.train]
        if missing:
            raise ValueError(f"train lacks {', '.join(missing)}")
        spec = self.input_spec
        for key, made, kind, features in (
            ("in_channels", spec.in_channels, "input", spec.node_features),
            ("edge_channels", spec.edge_channels, "edge", spec.edge_features),
        ):
            width = self.model.get(key)
            if width is not None and made != width:
                raise ValueError(
                    f"inputs make {made} {kind} channels ({', '.join(features)}), the model "
                    f"takes {key}={width}"
                )
        return self


class ManifestNetwork(NetworkInfo):
    """The network section of a WAQ manifest."""

    n_nodes: int
    n_links: int
    node_ids: list[str]
    reservoirs: list[str] = Field(default_factory=list)
    link_nodes: list[list[int]]


class WaqManifest(Record):
    """A WAQ folder's ``manifest.json``: the config its scenarios were simulated from."""

    KIND: ClassVar[str] = "manifest"

    format: str
    config: dict[str, Any]
    config_hash: str
    seed: int
    n_scenarios: int = Field(ge=1)
    network: ManifestNetwork
    versions: dict[str, str] = Field(default_factory=dict)
    created: str | None = None
