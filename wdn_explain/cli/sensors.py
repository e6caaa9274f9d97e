"""``sensors place``: propose chlorine sensor locations from the exact global importance of
every node's reading, and compare them with random and chama placements."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import WdnExplainError
from .common import MARKUP, _fail, _resumable, app

sensors_app = typer.Typer(
    help="Chlorine sensors: where to put them.", rich_markup_mode=MARKUP, no_args_is_help=True
)
app.add_typer(sensors_app, name="sensors")


@sensors_app.command("place")
def place(
    model: Path = typer.Option(..., help="a full-state node-level model folder"),
    data: Path = typer.Option(..., help="the WAQ folder of the simulated design"),
    k: int = typer.Option(..., "--k", help="sensors to place (1..nodes)"),
    rule: str = typer.Option(
        "coverage",
        help="coverage (greedy: each target's forecast credited to its best reading, so "
        "redundant neighbours are passed over) or top (the k most important nodes)",
    ),
    out: Path = typer.Option(Path("placement"), help="output folder (chunks, tables)"),
    scenarios: int = typer.Option(None, help="the first N scenarios of the design (default all)"),
    chunk: int = typer.Option(10, help="scenarios per task"),
    workers: int = typer.Option(1, help="local worker processes (a Dask LocalCluster when > 1)"),
    scheduler: str = typer.Option(None, help="Dask scheduler address to run the chunks on"),
    compare: Path = typer.Option(
        None,
        help="a WAQ folder to score the placement on against random and chama placements of "
        "the same k (writes comparison.md)",
    ),
    n_random: int = typer.Option(20, "--random", help="random placements in the comparison"),
    chama: bool = typer.Option(True, help="include chama's placement (the [placement] extra)"),
) -> None:
    """Global importance of every node's chlorine reading (exact Shapley values over every
    forecast of the design, on Dask), the k most important nodes, and with --compare their
    node MAE, drop detection and time to detect beside random and chama placements.
    Ctrl-C keeps the finished chunks: run again to resume."""
    from ..placement import place as run_place
    from ..placement_scores import check_comparison

    with _resumable(f"finished chunks are kept in '{out}'; run again to resume"):
        if compare is not None:  # refused before the placement's work
            check_comparison(model, compare, n_random)
        importance, sensors = run_place(
            model,
            data,
            out,
            k,
            rule,
            n_scenarios=scenarios,
            chunk_scenarios=chunk,
            workers=workers,
            scheduler=scheduler,
            progress=True,
        )
    typer.echo(f"global importance of {importance.n_forecasts} forecasts: {out / 'importance.csv'}")
    typer.echo(f"proposed sensors (k={k}): {', '.join(sensors)}")
    if compare is None:
        return
    from ..files import atomic_write
    from ..placement_scores import compare as run_compare
    from ..placement_scores import comparison_table

    try:
        named, random_scores = run_compare(
            sensors,
            str(model),
            str(data),
            str(compare),
            scenarios,
            n_random=n_random,
            with_chama=chama,
        )
    except WdnExplainError as exc:
        _fail(exc)
    table = comparison_table(named, random_scores)
    with atomic_write(out / "comparison.md") as tmp:
        tmp.write_text(table)
    typer.echo(table, nl=False)
