"""``wdn-explain chem``: train molecule classifiers, explain one molecule, measure complexity.

Imports stay inside the commands so that ``wdn-explain --help`` does not load RDKit or PyG.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import typer

from ..errors import DataError, WdnExplainError

app = typer.Typer(
    help="Molecule classifiers (MUTAG, Benzene, ...) and their exact SI-Graphs.",
    rich_markup_mode="markdown",  # as the water commands' (wdn_explain.cli.MARKUP)
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ROOT_HELP = (
    "folder holding the dataset folders (e.g. ../shared/datasets/chem); default "
    "$WDN_EXPLAIN_CHEM_DATA or ~/.cache/wdn_explain/chem, where missing files are downloaded"
)


VERSION_HELP = (
    "csv (the CSV label column) or paper (AlkaneCarbonyl, FluorideCarbonyl: the paper's "
    "GraphXAI data in NAME/paper_version.npz, atom-type features; its AlkaneCarbonyl labels "
    "are fluoride AND carbonyl, its FluorideCarbonyl labels unbranched alkane AND carbonyl)"
)


def _fractions(text: str) -> tuple[float, float, float]:
    """``train,val,test`` fractions from the command line."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3:
        raise DataError(f"--split must be three fractions train,val,test (got '{text}')")
    return values


def _fail(exc: WdnExplainError) -> None:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(1)


@app.command()
def train(
    dataset: str = typer.Option(..., help="MUTAG, Benzene, FluorideCarbonyl, AlkaneCarbonyl, ..."),
    out: Path = typer.Option(..., help="model folder to write (model.pt + card.json)"),
    model: str = typer.Option("GIN", help="architecture: GCN, GIN or GAT"),
    layers: int = typer.Option(2, help="message-passing layers L (1-3)"),
    hidden: int = typer.Option(64, help="hidden channels per layer"),
    dropout: float = typer.Option(0.1, help="dropout after each layer (training only)"),
    epochs: int = typer.Option(100, help="maximum epochs"),
    patience: int = typer.Option(20, help="early stopping: epochs without a better val accuracy"),
    lr: float = typer.Option(3e-3, help="Adam learning rate"),
    max_graphs: int = typer.Option(None, help="train on a stratified subset of this size"),
    seed: int = typer.Option(
        0,
        help="seed of the sampled negatives, the split (unless --paper-split), initialisation "
        "and shuffling (unless --torch-seed)",
    ),
    data_version: str = typer.Option("csv", help=VERSION_HELP),
    negatives_per_positive: float = typer.Option(
        None,
        help="keep every positive and this many seeded negatives per positive "
        "(default: the paper's with --data-version paper: AlkaneCarbonyl 2, else all)",
    ),
    split: str = typer.Option(
        None,
        help="train,val,test fractions (default 0.8,0.1,0.1; with --data-version paper the "
        "paper's: 0.8,0.1,0.1, AlkaneCarbonyl 900/113/112)",
    ),
    paper_split: bool = typer.Option(
        False,
        help="cut the split as the paper's code did (GraphXAI's pool order, sklearn seed 1234 "
        "for every --seed: the same positives in val and test whatever negatives are drawn)",
    ),
    torch_seed: int = typer.Option(
        None,
        help="seed of the initial weights, batch order and dropout (default: --seed; "
        "the paper's code: 1234 for every run)",
    ),
    device: str = typer.Option("auto", help="auto (GPU when present), cpu or cuda"),
    root: Path = typer.Option(None, help=ROOT_HELP),
    overwrite: bool = typer.Option(False, help="replace a model already in --out"),
) -> None:
    """Train a GCN/GIN/GAT classifier on a stratified split (80/10/10) with early stopping."""
    from pydantic import ValidationError

    from ..model_folder import check_model_output
    from .datasets import load_dataset
    from .models import ChemModelConfig
    from .training import PAPER_TRAINING, ChemTrainConfig, train_classifier

    try:
        check_model_output(out, overwrite=overwrite)
        data = load_dataset(dataset, root, version=data_version)
        options = dict(PAPER_TRAINING[dataset]) if data_version == "paper" else {}
        if negatives_per_positive is not None:
            options["negatives_per_positive"] = negatives_per_positive
        if split is not None:
            options["split"] = _fractions(split)
        try:
            model_config = ChemModelConfig(
                architecture=model,
                in_channels=len(data.feature_names),
                hidden=hidden,
                num_layers=layers,
                n_classes=max(2, data.n_classes),
                dropout=dropout,
            )
            config = ChemTrainConfig(
                epochs=epochs,
                patience=patience,
                lr=lr,
                seed=seed,
                max_graphs=max_graphs,
                paper_split=paper_split,
                torch_seed=torch_seed,
                **options,
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            typer.echo(f"error: {field}: {err['msg']} (got {err.get('input')!r})", err=True)
            raise typer.Exit(1) from None
        _, card = train_classifier(
            data, model_config, config, out, device=device, overwrite=overwrite, progress=True
        )
    except WdnExplainError as exc:
        _fail(exc)
    acc = card.accuracy
    sizes = "/".join(str(card.split_sizes[k]) for k in ("train", "val", "test"))
    typer.echo(
        f"{model}-{layers} on {dataset}: test accuracy {acc['test']:.3f} (val {acc['val']:.3f}, "
        f"train {acc['train']:.3f}), best epoch {card.best_epoch} of {card.epochs_run}, "
        f"{card.seconds:.0f} s on {card.device}; {data_version} data version, split "
        f"{sizes}; wrote {out}"
    )


@app.command()
def explain(
    model: Path = typer.Option(
        ..., help="model folder from 'chem train' (shipped ones, models/chem/..., found anywhere)"
    ),
    dataset: str = typer.Option(None, help="dataset of the molecule (default: the model's)"),
    data_version: str = typer.Option(None, help="csv or paper (default: the model's data version)"),
    index: int = typer.Option(0, help="graph number in the dataset"),
    smiles: str = typer.Option(None, help="explain this SMILES instead of a dataset graph"),
    si: str = typer.Option(
        "k-SII", "--si-index", help="SV, SII, k-SII, STII, FSII, Möbius (or Moebius), ..."
    ),
    order: int = typer.Option(2, help="explanation order"),
    output: int = typer.Option(
        None, help="explain this class logit (default: log-odds of class 1)"
    ),
    baseline: str = typer.Option(
        "zeros", help="masked atoms: zeros (all features 0: no atom) or mean"
    ),
    top: int = typer.Option(10, help="interactions to list"),
    png: Path = typer.Option(None, help="write the SI-Graph drawing here"),
    json_out: Path = typer.Option(None, "--json", help="write shapiq InteractionValues JSON"),
    root: Path = typer.Option(None, help=ROOT_HELP),
) -> None:
    """Exact Shapley interactions of one molecule, listed and drawn as an SI-Graph."""
    from ..explain.indices import index_name
    from ..files import atomic_write, check_output
    from ..shipped import shipped
    from .datasets import load_dataset, smiles_graph_for
    from .explain import draw_si_graph, explain_molecule, top_interactions
    from .training import check_features, load_classifier

    try:
        if png:
            check_output(png, what="PNG file", is_output=lambda p: p.suffix.lower() == ".png")
        if json_out:
            check_output(
                json_out, what="JSON file", is_output=lambda p: p.suffix.lower() == ".json"
            )
        net, card = load_classifier(shipped(model))
        if smiles is not None:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                graph, symbols = smiles_graph_for(smiles, card.feature_names)
            for warning in caught:
                typer.echo(f"warning: {warning.message}", err=True)
            name = smiles
        else:
            data = load_dataset(
                dataset or card.dataset, root, version=data_version or card.data_version
            )
            check_features(card, data)
            if not 0 <= index < len(data):
                raise DataError(f"index {index} is outside 0..{len(data) - 1} of {data.name}")
            graph = data.graphs[index]
            symbols = data.symbols[index] if data.symbols else None
            name = f"{data.name} #{index} (label {int(graph.y)})"
        result = explain_molecule(net, graph, output_index=output, baseline=baseline, progress=True)
        values = result.interaction_values(si, order)
    except WdnExplainError as exc:
        _fail(exc)
    target = "log-odds of class 1" if output is None else f"logit[{output}]"
    typer.echo(
        f"{name}: {graph.num_nodes} atoms, {target} = {result.prediction:.4f} "
        f"(all atoms masked: {result.empty_prediction:.4f}), {result.n_interactions} model "
        f"calls (|I|) instead of 2^{graph.num_nodes}"
    )
    for atoms, value in top_interactions(values, symbols, top):
        typer.echo(f"  {index_name(si):>7} {atoms:<30} {value:+.4f}")
    try:
        if png:
            fig = draw_si_graph(
                values, graph, symbols, title=f"{name}: {index_name(si)} order {order}"
            )
            with atomic_write(png) as tmp:
                fig.savefig(tmp, dpi=120, format="png")
            typer.echo(f"wrote {png}")
        if json_out:
            with atomic_write(json_out, suffix=".json") as tmp:  # shapiq appends .json
                values.to_json_file(tmp)
            typer.echo(f"wrote {json_out}")
    except WdnExplainError as exc:
        _fail(exc)


@app.command()
def complexity(
    dataset: list[str] = typer.Option(["MUTAG"], help="dataset name (repeatable)"),
    layers: list[int] = typer.Option([1, 2, 3], help="message-passing layers L (repeatable)"),
    out: Path = typer.Option(Path("complexity"), help="folder for the CSVs and plots"),
    max_exact_field: int = typer.Option(23, help="count |I| exactly up to this field size"),
    root: Path = typer.Option(None, help=ROOT_HELP),
) -> None:
    """|I| per molecule and L (exact or Thm. 3.7 bound) as CSVs, and the log10 calls plot."""
    from ..files import check_output
    from .complexity import write_complexity
    from .datasets import load_dataset

    try:
        check_output(out, kind="dir", what="complexity folder")
        for name in dataset:
            tables = write_complexity(
                load_dataset(name, root),
                layers,
                out,
                max_exact_field=max_exact_field,
                progress=True,
            )
            for n_layers, rows in tables.items():
                bounded = sum(not r["exact"] for r in rows)
                typer.echo(
                    f"{name} L={n_layers}: {len(rows)} graphs, max |N_i| "
                    f"{max(r['max_field'] for r in rows)}, mean |I| "
                    f"{sum(r['interactions'] for r in rows) / len(rows):.0f}"
                    + (f", {bounded} bounded (Thm. 3.7)" if bounded else "")
                )
    except WdnExplainError as exc:
        _fail(exc)
    typer.echo(f"wrote {out}")
