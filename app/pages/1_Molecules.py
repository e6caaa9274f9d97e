"""Molecules: exact SI-Graphs of a molecule classifier (MUTAG, Benzene, ...).

A page of the multipage app (``streamlit run app/main.py``, then "Molecules" in the
sidebar). It only parses input and shows results; the chemistry module does the work.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import streamlit as st

from wdn_explain.chem.datasets import (
    DATASETS,
    PAPER_DATASETS,
    default_root,
    load_dataset,
    smiles_graph_for,
)
from wdn_explain.chem.explain import draw_si_graph, explain_molecule, top_interactions
from wdn_explain.chem.training import check_features, load_classifier
from wdn_explain.errors import WdnExplainError
from wdn_explain.narrative import index_name

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "models" / "chem"
OFFLINE = REPO.parent / "shared" / "datasets" / "chem"
INDICES = ["SV", "k-SII", "STII", "FSII", "Moebius"]
# The page opens on this model: MUTAG's 188 molecules load in a moment, Benzene's 12 000
# only when that model or dataset is chosen.
FIRST_MODEL = "mutag-gin3"
#: (dataset, data version) choices: the CSV/TU version of every set, the paper's of two
CHOICES = [(name, "csv") for name in DATASETS] + [(name, "paper") for name in PAPER_DATASETS]
OUTPUTS = {None: "log-odds of class 1", 1: "logit of class 1", 0: "logit of class 0"}
HOW_TO_READ = """
**What you see.** The molecule as drawn by RDKit (bonds thin and grey). Each atom's **halo**
is its contribution to the explained output, by default the log-odds of class 1 (red raises
it, blue lowers it), against the molecule with every atom masked: a masked atom has all its
features 0 (no atom type at all, not an average atom). **Red and blue lines** between atoms
are pairwise interactions (their joint effect beyond the separate ones; width by magnitude
against the strongest pair), also along bonds; **shaded shapes** join three or more atoms
(e.g. the six atoms of a benzene ring). Values are exact (GraphSHAP-IQ): the model sees L bonds far,
so only interactions inside such neighbourhoods can be non-zero.

**A task "A AND B"** (AlkaneCarbonyl, paper version: a fluoride AND a carbonyl) need not show
as a line between A and B: the model adds up one term per atom neighbourhood before its
threshold, so a model that has learnt both groups gives **both** red halos (each alone does
not lift the log-odds above 0), and the pair's own interaction is about zero when they sit
far apart. A model that leans on one group alone shows that group only: in this data every
molecule with a fluorine and a carbonyl is positive and only about one negative in twelve has
a fluorine without one, so "has F" alone already scores about 94.5 %.
"""


@st.cache_resource(max_entries=4)
def dataset(name: str, root: str, version: str = "csv"):
    return load_dataset(name, root, version=version)


def choice_label(choice: tuple[str, str]) -> str:
    name, version = choice
    return f"{name} (paper version)" if version == "paper" else name


@st.cache_resource(max_entries=4)
def classifier(path: str):
    return load_classifier(path)


@st.cache_resource(max_entries=64, show_spinner="computing exact interactions")
def explanation(model_path: str, choice, root: str, index: int, smiles: str, output):
    model, _ = classifier(model_path)
    graph, symbols = molecule(model_path, choice, root, index, smiles)
    return explain_molecule(model, graph, output_index=output)


def molecule(model_path: str, choice: tuple[str, str], root: str, index: int, smiles: str):
    """The graph and atom symbols of a pasted SMILES or of a dataset molecule."""
    _, card = classifier(model_path)
    if smiles:
        return smiles_graph_for(smiles, card.feature_names)
    data = dataset(choice[0], root, choice[1])
    check_features(card, data)
    return data.graphs[index], data.symbols[index] if data.symbols else None


def main() -> None:
    st.subheader("Molecules: exact Shapley interactions of a GNN classifier")
    models = sorted(p.parent for p in MODELS.glob("*/card.json"))
    names = [p.name for p in models]
    root = os.environ.get("WDN_EXPLAIN_CHEM_DATA") or (
        str(OFFLINE) if OFFLINE.is_dir() else str(default_root())
    )
    with st.sidebar:
        if not models:
            st.error(f"no molecule models in {MODELS} (train one with 'wdn-explain chem train')")
            return
        model_path = st.selectbox(
            "model",
            models,
            index=names.index(FIRST_MODEL) if FIRST_MODEL in names else 0,
            format_func=lambda p: p.name,
        )
        try:
            _, card = classifier(str(model_path))
        except WdnExplainError as exc:
            st.error(str(exc))
            return
        st.caption(
            f"{card.model.architecture}, L = {card.model.num_layers}, trained on "
            f"{choice_label((card.dataset, card.data_version))}: "
            f"test accuracy {card.accuracy['test']:.1%}"
        )
        root = st.text_input("dataset folder", root)
        own = (card.dataset, card.data_version)
        choice = st.selectbox(
            "dataset",
            CHOICES,
            index=CHOICES.index(own) if own in CHOICES else 0,
            format_func=choice_label,
        )
        smiles = st.text_input("or paste a SMILES", "").strip()
        chosen_index = st.selectbox("index", INDICES, index=1, format_func=index_name)
        order = 1 if chosen_index == "SV" else st.slider("order", 1, 3, 2)
        top_k = st.slider("interactions drawn", 5, 60, 20)
        output = st.radio("explained output", list(OUTPUTS), format_func=OUTPUTS.get)
    drawing, numbers = st.columns([3, 2])  # the molecule in the first screen, numbers beside
    try:
        index = 0
        if not smiles:
            data = dataset(choice[0], root, choice[1])
            index = numbers.number_input("molecule", 0, len(data) - 1, 0)
            label = int(data.graphs[index].y)
            ident = data.smiles[index] if data.smiles else data.ids[index]
            numbers.write(f"**{data.name} #{index}** ({ident}), label {label}")
            if data.description:
                numbers.caption(f"Label 1 means: {data.description}")
        result = explanation(str(model_path), choice, root, int(index), smiles, output)
        graph, symbols = molecule(str(model_path), choice, root, int(index), smiles)
        values = result.interaction_values(chosen_index, order)
    except WdnExplainError as exc:
        st.error(str(exc))
        return
    fig = draw_si_graph(values, graph, symbols, n_interactions=top_k)  # first: it shows first
    fig.set_size_inches(6, 5)
    drawing.pyplot(fig)
    plt.close(fig)
    numbers.metric(OUTPUTS[output], f"{result.prediction:.3f}")
    numbers.metric("all atoms masked (features 0)", f"{result.empty_prediction:.3f}")
    numbers.metric("model calls (|I|)", f"{result.n_interactions}")
    numbers.caption(
        f"brute force would need 2^{graph.num_nodes} = {2**graph.num_nodes} model calls"
    )
    numbers.dataframe(
        [
            {"atoms": a, index_name(chosen_index): v}
            for a, v in top_interactions(values, symbols, top_k)
        ],
        hide_index=True,
    )
    st.markdown(HOW_TO_READ)


main()
