"""Commands that turn a timeline into something to share: ``report`` (HTML, GIF) and ``export``
(CSV, shapiq JSON)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import DataError, WdnExplainError
from .common import REFERENCE_HELP, _fail, _suffix, app


@app.command()
def report(
    timeline: Path = typer.Option(..., help="timeline file from `explain`"),
    out: Path = typer.Option(Path("report.html"), help="self-contained HTML file"),
    index: str = typer.Option(
        "k-SII", help="SV, SII, k-SII, STII, FSII, BV, BII, FBII or Möbius (Moebius)"
    ),
    order: int = typer.Option(None, help="interaction order (default 2; SV and BV: 1)"),
    top_k: int = typer.Option(10, help="strongest interactions drawn per order"),
    reference: str = typer.Option(None, help=REFERENCE_HELP, show_default=False),
    gif: Path = typer.Option(
        None, help="also write an animated GIF (node values; pairs as lines from order 2)"
    ),
    overwrite: bool = typer.Option(False, help="replace an existing report or GIF file"),
) -> None:
    """Write a self-contained HTML report of a timeline (title, how to read it, the animated
    SI-Graph, forecast against simulated truth) and optionally a GIF."""
    from ..files import atomic_write, check_output
    from ..network import load_network
    from ..report import report_html, write_gif
    from ..timeline import Timeline

    try:
        check_output(
            out, what="report file", is_output=_suffix(".html", ".htm"), overwrite=overwrite
        )
        if gif:
            check_output(gif, what="GIF file", is_output=_suffix(".gif"), overwrite=overwrite)
        tl = Timeline.load(timeline)
        if tl.node_level:
            raise DataError(
                f"timeline '{timeline}' is a node-level model's (chlorine at nodes "
                f"{', '.join(tl.targets)}); reports draw share timelines only: use "
                "`wdn-explain export` for its values"
            )
        tl = tl.relative_to(reference or tl.default_reference)
        net = load_network(tl.scenario.network)
        page = report_html(tl, net, index=index, order=order, top_k=top_k)
        with atomic_write(out) as tmp:
            tmp.write_text(page, encoding="utf-8")
        if gif:
            write_gif(tl, net, gif, index=index, order=order, top_k=top_k)
    except WdnExplainError as exc:
        _fail(exc)
    typer.echo(f"wrote {out}" + (f" and {gif}" if gif else ""))


@app.command()
def export(
    timeline: Path = typer.Option(..., help="timeline file from `explain`"),
    index: str = typer.Option(
        "k-SII", help="SV, SII, k-SII, STII, FSII, BV, BII, FBII or Möbius (Moebius)"
    ),
    order: int = typer.Option(None, help="interaction order (default 2; SV and BV: 1)"),
    reference: str = typer.Option(None, help=REFERENCE_HELP, show_default=False),
    csv: Path = typer.Option(None, help="one row per (step, interaction), nodes by id"),
    json_dir: Path = typer.Option(
        None, help="one shapiq InteractionValues JSON file per step (with player -> node id)"
    ),
    risk_csv: Path = typer.Option(
        None, help="node models: the risk of non-compliance, one row per (step, node)"
    ),
    overwrite: bool = typer.Option(False, help="replace an existing CSV file"),
) -> None:
    """Export a timeline's values as CSV and/or shapiq InteractionValues files, and a node
    model's risk of non-compliance as CSV."""
    from ..files import atomic_write, check_output
    from ..node_series import risk_frame
    from ..timeline import Timeline

    if csv is None and json_dir is None and risk_csv is None:
        typer.echo("error: give --csv, --json-dir and/or --risk-csv", err=True)
        raise typer.Exit(1)
    try:
        for path in (csv, risk_csv):
            if path:
                check_output(path, what="CSV file", is_output=_suffix(".csv"), overwrite=overwrite)
        if json_dir:
            check_output(json_dir, kind="dir", what="JSON folder")
        tl = Timeline.load(timeline)
        risks = risk_frame(tl) if risk_csv else None  # before writing
        tl = tl.relative_to(reference or tl.default_reference)
        if risk_csv:
            with atomic_write(risk_csv) as tmp:
                risks.to_csv(tmp, index=False)
        if csv:
            frame = tl.to_frame(index, order)
            with atomic_write(csv) as tmp:
                frame.to_csv(tmp, index=False)
        if json_dir:
            tl.write_json(json_dir, index, order)
    except WdnExplainError as exc:
        _fail(exc)
    label = index if order is None else f"{index} (order {order})"
    what = [label] if csv or json_dir else []
    what += ["the risk of non-compliance"] if risk_csv else []
    typer.echo(f"exported {' and '.join(what)} of {len(tl)} steps")
