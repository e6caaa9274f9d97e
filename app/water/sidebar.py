"""The water page's sidebar: the model picker, the upload that builds a model of the
user's own network, the new-scenario form and the picker of a node-level model's target."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import streamlit as st
from pydantic import ValidationError

from water.cache import JUST_MADE, card_of, network, scenario_name
from water.config import BUILT, DURATION_HELP, MAX_DURATION_S, VERDICT, cache_dir, keyed
from wdn_explain import recipe
from wdn_explain.design import UNKNOWN_DESIGN, DesignEnvelope, trained_on
from wdn_explain.errors import WdnExplainError
from wdn_explain.features import describe_sensors
from wdn_explain.model_folder import model_hash, read_card
from wdn_explain.narrative import scenario_text
from wdn_explain.onboard import (
    DEFAULT_SCENARIOS,
    MIN_SCENARIOS,
    evaluation_warnings,
    onboard,
    onboard_verdict,
    onboarded_network,
    remedy,
)
from wdn_explain.pipeline import explain_scenario
from wdn_explain.scenario import ScenarioConfig
from wdn_explain.scoring import metrics_line
from wdn_explain.shipped import (
    default_scenario,
    model_name_for,
    user_model_folder,
    user_models_dir,
    water_models,
)
from wdn_explain.simulation import injection_node
from wdn_explain.timeline import (
    ExplainSettings,
    Timeline,
    cache_path,
)


def _factor_input(
    label: str,
    bounds: tuple[float, float],
    step: float,
    *,
    low: bool = False,
    start: float | None = None,
    fixed: str = "the only value this model saw",
) -> float:
    """A slider over a factor's range starting at ``start`` (else mid-range, or at its low
    end); a fixed value is shown with the reason it is fixed (``fixed``), not asked."""
    lo, hi = float(bounds[0]), float(bounds[1])
    key = keyed("new_" + label.split(" (")[0].replace(" ", "_"))
    if hi - lo < 1e-9:
        st.caption(f"{label}: {lo:g} ({fixed})")
        return lo
    value = start if start is not None else lo if low else round((lo + hi) / 2 / step) * step
    return st.slider(label, lo, hi, min(max(value, lo), hi), step, key=key)


def new_scenario_form(net, envelope: DesignEnvelope | None, model_dir: Path) -> None:
    """A sidebar form offering what the model's training design covers (its injection nodes,
    modes and ranges). A model without a recorded design gets the whole network, and the
    form says what it was trained on and starts from its default scenario (the one scenario
    known to suit it), whose values it keeps fixed where the design would have drawn them."""
    template = default_scenario(model_dir, net)
    nodes = list(envelope.injection_nodes) if envelope else list(net.node_ids)
    modes = list(envelope.injection_modes) if envelope else [template.injection_mode]
    roles = dict(zip(net.node_ids, net.node_roles))
    proposed = injection_node(template, net)
    kept = "its default scenario's value; no design recorded"

    def bounds(name: str, default: tuple[float, float]) -> tuple[float, float]:
        fixed = (float(getattr(template, name)),) * 2
        return envelope.ranges[name] if envelope else default if default else fixed

    with st.sidebar.form("new_scenario"):
        if envelope:
            st.markdown("**New scenario** (within what the model learned)")
        else:
            st.markdown(
                "**New scenario** -- this model's card records no training design: it was "
                f"trained on {trained_on(card_of(model_dir))}. The form proposes its default "
                f"scenario ({scenario_text(template)}); other values are extrapolations."
            )
        node = st.selectbox(
            "injection node",
            nodes,
            index=nodes.index(proposed) if proposed in nodes else 0,
            key=keyed("new_node"),
            format_func=lambda n: f"{n} ({roles.get(n, 'node')})",
            help="where chlorine enters: the reservoir or a booster at a junction",
        )
        strength = _factor_input(
            "strength (mg/L)",
            bounds("injection_strength_mg_l", (0.1, 10.0)),
            0.1,
            start=None if envelope else template.injection_strength_mg_l,
        )
        mode = st.selectbox("booster schedule", modes, key=keyed("new_mode"))
        fixed = {} if envelope else {"fixed": kept}
        lo, hi = bounds("injection_start_s", ())
        start_min = _factor_input(
            "booster starts at (min)", (lo / 60, hi / 60), 5.0, low=True, **fixed
        )
        demand = _factor_input(
            "demand level (x base demand)", bounds("demand_scale", ()), 0.05, **fixed
        )
        decay = _factor_input(
            "bulk decay (/day)", bounds("bulk_decay_per_day", ()), 0.1, low=True, **fixed
        )
        duration_min = st.number_input(
            "duration (min)", value=180, step=30, key=keyed("new_duration"), help=DURATION_HELP
        )
        seed = st.number_input("seed", min_value=0, value=1, step=1, key=keyed("new_seed"))
        budget = st.number_input(
            "approximation lambda (0: exact)",
            min_value=0,
            value=0,
            step=1,
            key=keyed("new_budget"),
            help="0 explains exactly; lambda >= 1 runs the lambda-approximation (interactions up "
            "to lambda nodes evaluated), for networks too large for exact values",
        )
        targets = []
        if card_of(model_dir).input_spec.node_level:
            targets = st.multiselect(
                "nodes to explain",
                list(net.node_ids),
                key=keyed("new_targets"),
                placeholder="a node chlorine reaches and leaves",
                help="this model forecasts chlorine at every node; its forecasts at these "
                "nodes are explained (none picked: the node whose forecast falls back below "
                "the minimum residual most often after reaching it)",
            )
        submitted = st.form_submit_button("simulate, forecast, explain")
    if DONE in st.session_state:
        st.sidebar.progress(1.0, text=f"done ({st.session_state.pop(DONE)})")
    if not submitted:
        return
    horizon = card_of(model_dir).input_spec.horizon
    shortest = (horizon + 2) * template.reporting_step_s
    if not shortest <= duration_min * 60 <= MAX_DURATION_S:
        st.sidebar.error(
            f"duration must be between {shortest // 60} and {MAX_DURATION_S // 60} min "
            f"(got {duration_min:g} min): the model forecasts {horizon} reports "
            f"({horizon * template.reporting_step_s // 60} min) ahead"
        )
        return
    try:
        spec = ScenarioConfig.model_validate(
            template.model_dump()
            | physical_hydraulics(template)
            | dict(
                injection_node=None if roles.get(node) == "reservoir" else node,
                injection_strength_mg_l=float(strength),
                injection_mode=mode,
                injection_start_s=int(round(start_min * 60)),
                demand_scale=float(demand),
                bulk_decay_per_day=float(decay),
                duration_s=int(duration_min) * 60,
                seed=int(seed),
            )
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "scenario"
        st.sidebar.error(f"invalid scenario: {field}: {err['msg']} (got {err.get('input')!r})")
        return
    bar = st.sidebar.progress(0.0, text="simulating and explaining...")
    try:
        settings = ExplainSettings.of(
            approximation_lambda=int(budget) or None, target_nodes=tuple(targets) or None
        )
        out = cache_path(spec, model_dir, cache_dir(), settings)
        made, status = explain_scenario(
            spec,
            model_dir,
            settings=settings,
            out=out,
            progress=lambda d, t: bar.progress(d / t, text=f"explained {d}/{t} steps"),
        )
    except WdnExplainError as exc:
        st.sidebar.error(str(exc))
        return
    JUST_MADE[str(out)] = made
    # the form runs after the page (so the first chart is sent first): the scenario box is
    # already drawn, so the new scenario is picked at the top of the next run
    st.session_state[NEW_SCENARIO] = (scenario_name(out), status)
    st.rerun()


# The scenario the form just made and how (computed or read), picked in the scenario box at
# the start of the next run; the form then shows its finished bar once more.
NEW_SCENARIO = "new_scenario_made"
DONE = "new_scenario_done"


def pick_new_scenario() -> None:
    """Select the scenario the form made in the last run (before the scenario box is drawn,
    the only moment its value can be set)."""
    made = st.session_state.pop(NEW_SCENARIO, None)
    if made is not None:
        st.session_state[keyed("scenario")], st.session_state[DONE] = made


# The time and play state, forgotten when another model is chosen (the model's widgets
# have keys of their own, see keyed()).
PER_MODEL_KEYS = ("time_min", "playing")


def _forget_model_state() -> None:
    for key in PER_MODEL_KEYS:
        st.session_state.pop(key, None)


def _model_label(name: str, model_dir: Path) -> str:
    """``name (network)`` from the card, or the bare name when the card is unreadable."""
    try:
        return f"{name} ({card_of(model_dir).data.network.name})"
    except WdnExplainError:
        return name


def pick_model():
    """The model chooser (top of the sidebar): returns the model folder and its network,
    with a caption naming the network, the warnings its evaluation recorded and a note when
    its card records no training design (here, not above the map: the SI-Graph keeps its
    place in the first screen); below it, the upload that builds a model of the user's own
    network."""
    models = water_models()
    built = st.session_state.pop(BUILT, None)  # a model the upload just made: chosen
    if built in models:
        st.session_state["model"] = built
        _forget_model_state()
    name = st.sidebar.selectbox(
        "model",
        list(models),
        format_func=lambda m: _model_label(m, models[m]),
        key="model",
        on_change=_forget_model_state,
        help="the trained models in models/, your own (built below, or by `wdn-explain "
        "network onboard`) and $WDN_EXPLAIN_MODEL; each is shown on the network it was "
        "trained on",
    )
    model_dir = models[name]
    net = network(str(model_dir), model_hash(model_dir))
    st.sidebar.caption(f"network {net.name}: {net.n_nodes} nodes, {net.n_links} links")
    st.sidebar.caption(describe_sensors(card_of(model_dir).input_spec.quality_node_sensors))
    if "mae" in (metrics := card_of(model_dir).metrics):  # its test scores beside the tree
        st.sidebar.caption(f"test {metrics_line(metrics)}")
    if verdict := st.session_state.pop(VERDICT, None):  # the build's last line, once
        st.sidebar.info(f"**{name}** was built: {verdict}.")
    for warning in evaluation_warnings(model_dir):  # recorded when the model was built
        st.sidebar.warning(f"**Check the model** (its evaluation when built) -- {warning}.")
    remedy_button(model_dir)
    if card_of(model_dir).design is None:
        st.sidebar.info(f"Note: {UNKNOWN_DESIGN}.")
    own_network_form()
    return model_dir, net


def own_network_form() -> None:
    """The sidebar's upload: a utility's .inp becomes a model of its own, as `wdn-explain
    network onboard` makes it, in the user models folder."""
    with st.sidebar.expander("your own network (.inp)"):
        upload = st.file_uploader("EPANET network file", type=["inp"], key="own_inp")
        stem = model_name_for(upload.name) if upload is not None else ""
        name = st.text_input("model name", value=stem, key=f"own_name@{stem}")
        n_scenarios = st.number_input(
            "scenarios",
            min_value=MIN_SCENARIOS,
            max_value=2000,
            value=DEFAULT_SCENARIOS,
            key="own_scenarios",
            help="simulated, then split into training, calibration, validation and test; "
            f"{DEFAULT_SCENARIOS} train in minutes on 2 cores",
        )
        epochs = st.number_input(
            "epochs",
            min_value=1,
            max_value=1000,
            value=recipe.ONBOARD_EPOCHS,
            key="own_epochs",
            help="the most training epochs (training stops early when validation stops improving)",
        )
        st.caption(f"models are kept in {user_models_dir()}")
        if st.button("build the model", disabled=upload is None, key="own_build"):
            try:
                folder = user_model_folder(name.strip())
            except WdnExplainError as exc:
                st.error(str(exc))
                return
            build_model(folder, upload.name, upload.getvalue(), int(n_scenarios), int(epochs))


def remedy_button(model_dir: Path) -> None:
    """Below the warnings of a model that onboarding built (the app or `network onboard`)
    and that is no better than the tree: a button that builds it again with the remedy's
    scenarios and epochs (:func:`~wdn_explain.onboard.remedy`)."""
    inp = onboarded_network(model_dir)
    fix = remedy(card_of(model_dir)) if inp is not None else None
    if fix is None:
        return
    label = f"build again with {fix.n_scenarios} scenarios" + (
        f" and {fix.epochs} epochs" if fix.more_epochs else ""
    )
    if st.sidebar.button(
        label,
        key="own_remedy",
        help=f"{fix.text}: replaces this model (as `wdn-explain network onboard` with "
        f"{fix.options}); takes minutes",
    ):
        with st.sidebar:
            build_model(
                model_dir, inp.name, inp.read_bytes(), fix.n_scenarios, fix.epochs, overwrite=True
            )


def build_model(
    folder: Path,
    file_name: str,
    content: bytes,
    n_scenarios: int,
    epochs: int,
    *,
    overwrite: bool = False,
) -> None:
    """Onboard a network file (its name and bytes, an upload's or a model folder's copy)
    into ``folder`` with a line and a bar per stage; choose the new model (rerun) and show
    its verdict against the tree, or show one message naming the file and why it was
    refused."""
    name = folder.name
    status = st.status(f"building {name}...", expanded=True)
    bar = status.progress(0.0)

    def say(line: str) -> None:
        status.write(line)
        if line.startswith("["):  # a new stage
            status.update(label=line)
            bar.progress(0.0)

    with tempfile.TemporaryDirectory(prefix="wdn-explain-upload-") as tmp:
        inp = Path(tmp, _upload_file_name(file_name, name, tmp))
        inp.write_bytes(content)
        try:
            onboard(
                inp,
                folder,
                n_scenarios=n_scenarios,
                epochs=epochs,
                overwrite=overwrite,
                n_workers=1,  # no worker processes forked from the server
                say=say,
                progress=lambda done, total: bar.progress(min(1.0, done / max(total, 1))),
            )
        except WdnExplainError as exc:
            status.update(label=f"{name}: refused", state="error", expanded=False)
            st.error(str(exc).replace(f"{tmp}/", ""))  # the file as uploaded
            return
    status.update(label=f"{name}: built", state="complete", expanded=False)
    st.session_state[VERDICT] = onboard_verdict(read_card(folder))
    st.session_state[BUILT] = next(
        key for key, path in water_models().items() if path.resolve() == folder.resolve()
    )
    st.rerun()


def _upload_file_name(uploaded: str, model: str, folder: str) -> str:
    """The uploaded file's own name, so messages name it as uploaded; the model's name where
    the file system refuses that one (a name of 300 characters)."""
    own = Path(uploaded).name
    return own if len(own.encode()) <= os.pathconf(folder, "PC_NAME_MAX") else f"{model}.inp"


def target_picker(controls, tl: Timeline) -> str | None:
    """For a node-level model's timeline, the picker of the explained node (the timeline's
    target nodes; it opens on the file's own); None for a share model's."""
    if not tl.node_level:
        return None
    held = list(tl.targets)  # first, then every other node of the network
    nodes = held + [str(v) for v in tl.node_ids if str(v) not in held]
    return controls.selectbox(
        "explained node",
        nodes,
        index=nodes.index(tl.node),
        key=keyed(f"target@{tl.meta.get('scenario_hash', '')}"),
        format_func=lambda n: n if n in held else f"{n} (explained when picked)",
        help="this model forecasts chlorine (mg/L) at every node; the map explains the "
        "forecast at this node. Any node can be picked: one this scenario has not explained "
        "yet is explained on demand at every step (a second or two), the others kept",
    )


def physical_hydraulics(template: ScenarioConfig) -> dict:
    """A new scenario is simulated pressure-driven: the template's pressures when it is, else
    the package's defaults (a model trained demand-driven, the WAQ paper's, then says the
    scenario's hydraulics differ from its training where its card records them)."""
    return template.hydraulics if template.demand_model == "PDA" else ScenarioConfig().hydraulics
