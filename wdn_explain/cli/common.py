"""The command's apps and what its commands share: one-line errors and exit codes, resumable steps,
option parsing."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from ..allocator import keep_freed_memory
from ..chem.cli import app as chem_app
from ..errors import ConfigError, WdnExplainError, WdnExplainWarning

# Help texts read as Markdown: a docstring's lines are joined into paragraphs that fill the
# terminal (Rich markup kept each line break, and took "[default: ...]" for a style tag).
MARKUP = "markdown"
app = typer.Typer(
    help="Exact Shapley-interaction explanations of GNNs on water distribution networks.",
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(chem_app, name="chem")


@app.callback()
def _every_command() -> None:
    """Every command prints each :class:`WdnExplainWarning` as one ``warning:`` line and
    keeps the engine's freed buffers for its next step (:mod:`wdn_explain.allocator`)."""
    warnings.showwarning = _show_warning
    keep_freed_memory()


_PYTHON_SHOWWARNING = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A project warning as ``warning: MESSAGE`` on stderr; any other as Python shows it."""
    if issubclass(category, WdnExplainWarning):
        typer.echo(f"warning: {message}", err=True)
    else:
        _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


network_app = typer.Typer(
    help="Your own network: from its EPANET .inp file to a model the app lists.",
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
)
app.add_typer(network_app, name="network")


# Engine arguments named in messages, and the options of `explain` that set them.
_OPTIONS = {"memory_budget_gb": "--memory-gb", "budget": "--budget"}


def _fail(exc: WdnExplainError) -> None:
    """Print the error (engine arguments named as this CLI's options) and exit 1."""
    message = re.sub(r"\b(memory_budget_gb|budget)=", lambda m: _OPTIONS[m[1]] + " ", str(exc))
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


@contextmanager
def _resumable(hint: str | Callable[[], str]) -> Iterator[None]:
    """Run a long, resumable step: a project error exits 1 (:func:`_fail`); Ctrl-C exits 130
    with ``hint``, how to resume (a callable: said as it stands when interrupted)."""
    try:
        yield
    except WdnExplainError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: {hint() if callable(hint) else hint}")
        raise typer.Exit(130) from None


def _auto(value: str, name: str, kind: type[int] | type[float]) -> int | float | None:
    """None for ``auto``, else ``value`` as ``kind``; ConfigError names the bad value."""
    if value.strip().lower() == "auto":
        return None
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(
            f"{name} must be 'auto' or {'an integer' if kind is int else 'a number'} "
            f"(got '{value}')"
        ) from None


def _optional(value: str, name: str) -> float | None:
    """None for ``none``, else ``value`` as a number; ConfigError names the bad value."""
    if value.strip().lower() == "none":
        return None
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"{name} must be 'none' or a number (got '{value}')") from None


def _count(value: int) -> str:
    """A count as digits while short, else in scientific notation (2^785 has 237 digits)."""
    return (
        str(value)
        if value < 10**15
        else f"{float(value):.3e}"
        if value < 2**1023
        else (f"~10^{len(str(value)) - 1}")
    )


def _csv_count(value: int) -> int | str:
    """A count for the CSV: the integer while below 10^15, else scientific notation with
    four significant digits (exact for any size: 2^785 is 2.035e+236)."""
    from decimal import Decimal

    return value if value < 10**15 else f"{Decimal(value):.3e}"


def _suffix(*suffixes: str) -> Callable[[Path], bool]:
    """Whether an existing file looks like an output of this kind (by its suffix)."""
    return lambda path: path.suffix.lower() in suffixes


def _scenario_from(spec: str, index: int):
    """A scenario from a YAML file (scenario ``index`` of it) or an inline YAML mapping."""
    import yaml

    from ..errors import ConfigError
    from ..scenario import load_config, parse_config
    from ..shipped import shipped

    path = shipped(spec)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return load_config(path).scenario_config(index)
    try:
        data = yaml.safe_load(spec)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        raise ConfigError(
            f"scenario '{spec}' is neither a YAML file nor an inline mapping like "
            "\"{injection_node: '12', duration_s: 7200}\""
        )
    if index != 0:
        raise ConfigError(
            f"--index picks a scenario of a YAML file; an inline mapping is one scenario "
            f"(got --index {index})"
        )
    return parse_config({"scenario": data}, source="--scenario").scenario


def _config_scheduler(spec: str) -> str | None:
    """The ``scheduler`` key of a scenario YAML file (None for an inline mapping)."""
    from ..scenario import load_config
    from ..shipped import shipped

    path = shipped(spec)
    return load_config(path).scheduler if path.is_file() else None


REFERENCE_HELP = (
    "values relative to: none (no chlorine; the default) or mean (the network average, the paper's)"
)
