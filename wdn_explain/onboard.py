"""A utility's own network, from its EPANET .inp file to a model folder like the shipped ones.

:func:`onboard` checks that the network can be simulated (refused in one line, before
anything is written), writes a default monitoring design for it (``design.yaml``), simulates
that design, trains and calibrates the forecaster, evaluates it (``evaluation.txt``, the
verdict against the strong tree: :func:`onboard_verdict`) and explains a default scenario
whose truth changes exactly (``default_scenario.yaml``, ``default_timeline.npz``).
Each stage calls the pipeline's own function (:func:`~wdn_explain.waq.generate_waq`,
:func:`~wdn_explain.training.train`, :func:`~wdn_explain.scoring.score_model`,
:func:`~wdn_explain.pipeline.explain_scenario`); a run that was interrupted resumes where it
stopped (finished scenario files, a model trained on this design and a current timeline are
kept).
"""

from __future__ import annotations

import logging
import shutil
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from . import recipe
from .errors import ConfigError, DataError, WdnExplainError
from .files import atomic_write, check_output
from .model_folder import CARD, read_card
from .narrative import scenario_text
from .network import Network, load_network
from .progress import ProgressArg, progress_callback
from .records import ModelCard
from .scenario import ScenarioConfig, SimulationConfig, load_config
from .scoring import beats_tree, metrics_line, model_beside_tree_mae
from .servable import servable_demand_scale
from .shipped import MODEL_SCENARIO, MODEL_TIMELINE, SHIPPED_ROOT

logger = logging.getLogger(__name__)

#: The design every onboarded network starts from (its ranges, schedules, duration, steps).
MONITORING = SHIPPED_ROOT / "simulations" / "monitoring.yaml"
DESIGN, EVALUATION, DATA = "design.yaml", "evaluation.txt", "data"
WARNING = "warning: "
"""How a line of ``evaluation.txt`` that warns begins."""
STAGES = ("check", "design", "simulate", "train", "evaluate", "explain")
# the design's size, shared with the command line and the app's form (:mod:`.recipe`)
DEFAULT_SCENARIOS = recipe.ONBOARD_SCENARIOS
MIN_SCENARIOS = recipe.ONBOARD_MIN_SCENARIOS
MAX_BOOSTERS = 40
"""Booster candidates: the junctions with the largest mean flow through them (as the L-Town
design, ``simulations/ltown.yaml``)."""
EXACT_COALITIONS = 10**6
"""Three message-passing layers while an exact explanation of one step needs at most this
many coalitions (|I|) -- Hanoi needs 101 115, Net3 30 million --, else two."""
TIMELINE_VALUES = 2 * 10**6
"""A default scenario whose timeline would hold more interaction values than this (|I| per
step times the steps) lasts one hour instead of the design's three: the file grows with both
(ky3 at 2 layers, |I| = 278 697: 28 MB for 3 h; L-Town's hour is 4.3 MB)."""
INP_SECTIONS = ("[JUNCTIONS]", "[RESERVOIRS]", "[TANKS]")

Say = Callable[[str], None]
"""Receives one line per stage (what it does, then what it did)."""


@dataclass(frozen=True)
class Onboarded:
    """What :func:`onboard` made.

    Attributes:
        folder: The model folder.
        network: The network (read from the copy in the folder).
        config: The simulated design (``design.yaml``).
        metrics: The test scores in the card (MAE beside the baselines, coverage).
        timeline_status: How the default timeline was obtained (``computed``, ``cached``).
    """

    folder: Path
    network: Network
    config: SimulationConfig
    metrics: dict
    timeline_status: str


def check_network(inp_path: str | Path) -> Network:
    """Read a utility's .inp and check that it can be simulated.

    Raises:
        ConfigError: in one line naming the file: missing, not an .inp, not an EPANET
            network, unreadable by EPANET (or crashing it) or WNTR, no reservoir or tank,
            nodes that no reservoir or tank can supply, or no junction with a base demand.
    """
    path = Path(inp_path)
    if path.suffix.lower() != ".inp":
        raise ConfigError(f"network file '{path}' is not an EPANET .inp file (name ends in .inp)")
    if not path.is_file():
        raise ConfigError(f"network file '{path}' does not exist")
    text = path.read_bytes().decode("utf-8", errors="replace").upper()
    if not any(section in text for section in INP_SECTIONS):
        raise ConfigError(
            f"network file '{path}' is not an EPANET network: it has no "
            f"{', '.join(INP_SECTIONS)} section"
        )
    network = load_network(path)
    if not network.n_nodes:
        raise ConfigError(f"network file '{path}' has no nodes")
    if all(role == "junction" for role in network.node_roles):
        raise ConfigError(
            f"network file '{path}' has no reservoir or tank: nothing supplies its "
            f"{network.n_nodes} nodes with water"
        )
    network.check_connected()
    if not (network.properties.node_base_demand_lps > 0).any():  # WNTR's read fails here
        raise ConfigError(
            f"network file '{path}' has no junction with a base demand: nothing draws water "
            "through it, so there is no demand to vary and chlorine moves only where tanks "
            "fill (give its junctions demands in [JUNCTIONS] or [DEMANDS])"
        )
    return network


def initial_chlorine_nodes(network: Network) -> int:
    """How many nodes the .inp's ``[QUALITY]`` section starts above zero (every scenario
    starts from that state: a network already chlorinated everywhere leaves the forecast
    little to do)."""
    return int((network.properties.node_initial_quality_mg_l > 0).sum())


def _base_flows(network: Network, template: ScenarioConfig) -> np.ndarray:
    """Link flows (L/s) of the design's template without demand noise, shape (T, n_links);
    ConfigError naming the file when EPANET cannot simulate the network."""
    from .simulation import simulate

    source = None if network.reservoirs else network.node_ids[network.node_roles.index("tank")]
    scenario = template.model_copy(
        update={"network": str(network.inp_path), "demand_variation": 0.0, "injection_node": source}
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flows = simulate(scenario, network).link_flow_lps
    except WdnExplainError:
        raise
    except Exception as exc:  # EPANET reports failures in many ways
        raise ConfigError(
            f"network file '{network.inp_path}' cannot be simulated by EPANET "
            f"({type(exc).__name__}: {exc})"
        ) from None
    if not np.isfinite(flows).all():
        raise ConfigError(
            f"network file '{network.inp_path}' cannot be simulated by EPANET "
            "(its hydraulics give non-finite flows)"
        )
    return flows


def booster_candidates(network: Network, flows_lps: np.ndarray) -> tuple[str, ...]:
    """Up to :data:`MAX_BOOSTERS` junctions with the largest mean flow through them (half
    the summed absolute flow of their links), largest first; junctions without flow (dead
    ends without demand) are never candidates.

    Args:
        flows_lps: Link flows over time, shape (T, n_links).
    """
    link_mean = np.abs(flows_lps).mean(axis=0)
    through = np.zeros(network.n_nodes)
    np.add.at(through, network.link_nodes[:, 0], link_mean)
    np.add.at(through, network.link_nodes[:, 1], link_mean)
    junctions = [i for i, role in enumerate(network.node_roles) if role == "junction"]
    ranked = sorted((i for i in junctions if through[i] > 0), key=lambda i: -through[i])
    return tuple(network.node_ids[i] for i in ranked[:MAX_BOOSTERS])


def default_design(
    network: Network, folder: str | Path, *, n_scenarios: int = DEFAULT_SCENARIOS, seed: int = 0
) -> SimulationConfig:
    """The monitoring design (:data:`MONITORING`: its strengths, schedules, demand noise and
    swing, decay, duration, steps and pressure-driven hydraulics) on ``network``, read from
    its copy ``folder/<name>.inp``: chlorine enters at the first reservoir in 30 % of the
    scenarios (none without a reservoir), otherwise at a booster at one of the
    :func:`booster_candidates`; its demand levels are the network's own
    (:func:`~.servable.servable_demand_scale`: at the diurnal peak at most what it serves
    at the required pressure, at most its base demand), so the required pressure holds over
    most of the design.

    Raises:
        ConfigError: too few scenarios, EPANET cannot simulate the network, or it keeps no
            junction at the required pressure.
    """
    if n_scenarios < MIN_SCENARIOS:
        raise ConfigError(
            f"scenarios must be at least {MIN_SCENARIOS} (got {n_scenarios}): training, "
            "calibration, validation and test need one each"
        )
    monitoring = load_config(MONITORING)
    boosters = booster_candidates(network, _base_flows(network, monitoring.scenario))
    if not boosters and not network.reservoirs:
        raise ConfigError(
            f"network file '{network.inp_path}' has no reservoir and no junction with flow: "
            "chlorine can enter nowhere"
        )
    copy = Path(folder).absolute() / f"{network.name}.inp"
    design = monitoring.design.model_dump()
    low, high = monitoring.design.demand_scale
    design |= {
        "injection_nodes": list(boosters),
        "reservoir_share": (0.3 if boosters else 1.0) if network.reservoirs else 0.0,
        "demand_scale": servable_demand_scale(
            network,
            monitoring.scenario,
            diurnal_high=monitoring.design.diurnal_amplitude[1],
            low_fraction=low / high,
        ),
    }
    return SimulationConfig.model_validate(
        {
            "n_scenarios": n_scenarios,
            "seed": seed,
            "scenario": monitoring.scenario.model_dump() | {"network": str(copy)},
            "design": design,
        }
    )


def n_layers_for(network: Network) -> int:
    """Message-passing layers of an onboarded model: 3 while one exact step needs at most
    :data:`EXACT_COALITIONS` coalitions, else 2 (explained exactly on a CPU in about a
    second per step up to L-Town's size)."""
    from .explain import complexity

    cost = complexity(network.edge_index, network.n_nodes, 3)
    return 3 if cost.exact and cost.n_interactions <= EXACT_COALITIONS else 2


def _design_text(config: SimulationConfig, network: Network) -> str:
    """``design.yaml``: a comment saying how it was made, then the config (the network as
    the copy beside it, so that the folder can move)."""
    data = config.model_dump(mode="json")
    data["scenario"]["network"] = f"{network.name}.inp"
    n_boosters = len(config.design.booster_nodes(network.junctions))
    head = (
        f"# The default monitoring design of network '{network.name}' ({network.n_nodes} nodes, "
        f"{network.n_links} links),\n# written by `wdn-explain network onboard`: the ranges, "
        "schedules, duration and steps of simulations/monitoring.yaml;\n"
        f"# chlorine enters at the first reservoir in {config.design.reservoir_share:.0%} of the "
        f"scenarios, otherwise at one of the {n_boosters} junctions\n# with the largest mean "
        "flow through them. Edit it and run the command again with --overwrite to retrain.\n"
    )
    return head + yaml.safe_dump(data, sort_keys=False)


def _check_folder(folder: Path, network: Network, config: SimulationConfig, overwrite: bool):
    """Refuse, before anything is written, a folder that holds another network or design."""
    check_output(folder, kind="dir", what="model folder")
    copy = folder / f"{network.name}.inp"
    if overwrite:
        return
    if copy.is_file() and copy.read_bytes() != network.inp_path.read_bytes():
        raise DataError(
            f"model folder '{folder}' holds another version of network '{network.name}' "
            f"({copy}); use --overwrite to start afresh"
        )
    design = folder / DESIGN
    if design.is_file() and load_config(design).config_hash() != config.config_hash():
        raise DataError(
            f"model folder '{folder}' holds another design ({design}: other scenarios, seed or "
            "network); use --overwrite to start afresh"
        )
    if (folder / CARD).is_file() and _card_hash(folder) != config.config_hash():
        raise DataError(
            f"model folder '{folder}' holds a model trained on other data; use --overwrite "
            "to replace it"
        )


def _card_hash(folder: Path) -> str | None:
    """The config hash of the data a folder's model was trained on (None: unreadable)."""
    try:
        return read_card(folder).data.config_hash
    except DataError:
        return None


def _trained_on(folder: Path, config: SimulationConfig) -> bool:
    """Whether the folder holds a model whose training finished on this design's data."""
    if _card_hash(folder) != config.config_hash():
        return False
    return not read_card(folder).interrupted


def onboard(
    inp_path: str | Path,
    folder: str | Path,
    *,
    n_scenarios: int = DEFAULT_SCENARIOS,
    seed: int = 0,
    epochs: int = recipe.ONBOARD_EPOCHS,
    layers: int | None = None,
    n_workers: int | None = None,
    device: str = "auto",
    overwrite: bool = False,
    say: Say | None = None,
    progress: ProgressArg = False,
) -> Onboarded:
    """Take a utility's .inp file to a model folder that the app lists (see the module
    docstring); resumable.

    Args:
        inp_path: The network's EPANET file; copied into the folder as ``<name>.inp``.
        folder: The model folder (created).
        n_scenarios: Scenarios of the default design (at least :data:`MIN_SCENARIOS`).
        seed: Master seed of the design (and of training).
        epochs: Maximum training epochs (early stopping on validation).
        layers: Message-passing layers (default: :func:`n_layers_for`).
        n_workers: Simulation worker processes (default: all usable cores).
        overwrite: Start afresh in a folder that holds another design or model.
        say: Receives a line per stage.
        progress: True shows a tqdm bar per stage; a callable gets ``(done, total)`` within
            each stage.

    Raises:
        ConfigError: a network that cannot be simulated (nothing is written) or bad settings.
        DataError: a folder of another network or design (without ``overwrite``).
    """
    from .explain.threads import numeric_threads
    from .model import ModelConfig
    from .model_folder import resolve_device
    from .pipeline import check_timeline_size, explain_scenario
    from .sizes import check_size, estimate_waq
    from .timeline import check_timeline_output
    from .training import TrainConfig, calibrate_model, train
    from .waq import generate_waq
    from .workers import worker_count

    tell = say or (lambda line: logger.info("%s", line))
    folder, started = Path(folder), time.monotonic()
    stages = iter(enumerate(STAGES, 1))

    def stage(what: str) -> None:
        k, name = next(stages)
        tell(f"[{k}/{len(STAGES)}] {name} (at {time.monotonic() - started:.0f} s): {what}")

    stage(f"reading {inp_path}")
    train_config = TrainConfig(epochs=epochs, seed=seed)  # bad settings: before any file
    resolve_device(device)
    network = check_network(inp_path)
    layers = n_layers_for(network) if layers is None else layers
    model_config = ModelConfig(hidden_channels=recipe.ONBOARD_HIDDEN_CHANNELS, num_layers=layers)
    config = default_design(network, folder, n_scenarios=n_scenarios, seed=seed)
    check_size(estimate_waq(config, network, worker_count(n_workers)[0]), folder)
    check_timeline_size(
        config.scenario, network, layers, None, train_config.horizon, folder / MODEL_TIMELINE, False
    )
    _check_folder(folder, network, config, overwrite)
    tell(
        f"  {network.name}: {network.n_nodes} nodes, {network.n_links} links, "
        f"{len(network.reservoirs)} reservoir(s); EPANET simulates it; {layers} layers"
    )
    if chlorinated := initial_chlorine_nodes(network):
        tell(
            f"  note: its [QUALITY] section starts {chlorinated} of {network.n_nodes} nodes "
            "with chlorine; every scenario starts from that state"
        )

    stage(str(folder / DESIGN))
    network = _write_design(folder, network, config, overwrite)
    boosters = config.design.booster_nodes(network.junctions)
    tell(
        f"  {n_scenarios} scenarios; boosters at {', '.join(boosters[:8])}"
        + " ..." * (len(boosters) > 8)
    )

    data = folder / DATA
    stage(f"{n_scenarios} scenarios into {data}")
    with progress_callback(progress, "simulate") as cb:
        generate_waq(
            config, data, n_workers=n_workers, overwrite=overwrite, progress=cb, notice=tell
        )

    # torch, the trees and BLAS on one thread unless the user chose (:mod:`.explain.threads`):
    # their default, a thread per core, spins against other work on a busy machine; a server
    # started without OMP_NUM_THREADS=1 (the app's) trained 5-6 times slower than the CLI
    with numeric_threads():
        if _trained_on(folder, config) and not overwrite:
            stage(f"kept the model in {folder} (trained on this design)")
            if read_card(folder).unscored:  # Ctrl-C cut its calibration and scoring short
                calibrate_model(folder, data)
        else:
            stage(f"{layers} layers, up to {epochs} epochs")
            card = train(
                data,
                folder,
                model_config=model_config,
                train_config=train_config,
                device=device,
                overwrite=True,  # the folder was checked: this design's model, or afresh
                progress=progress,
            )
            if card["interrupted"]:  # Ctrl-C: train kept the best epoch, the folder is not ready
                raise KeyboardInterrupt

        stage(f"test split -> {folder / EVALUATION}")
        for line in _write_evaluation(folder, data, device):
            tell(f"  {line}")

        spec = _default_scenario(folder, network, overwrite)
        out = folder / MODEL_TIMELINE
        stage(f"{scenario_text(spec)} -> {out}")
        check_timeline_output(out, spec, overwrite=True)
        with progress_callback(progress, "explain") as cb:
            _, status = explain_scenario(spec, folder, out=out, progress=cb)
        tell(
            f"  {status}; the model folder {folder} was built in {time.monotonic() - started:.0f} s"
        )
    card = read_card(folder)
    return Onboarded(folder, network, config, card.metrics, status)


def _write_design(
    folder: Path, network: Network, config: SimulationConfig, overwrite: bool
) -> Network:
    """Copy the network into the folder (kept when there) and write ``design.yaml``; return
    the network read from the copy."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{network.name}.inp"
    if overwrite or not copy.is_file():
        with atomic_write(copy) as tmp:
            shutil.copyfile(network.inp_path, tmp)
    with atomic_write(folder / DESIGN) as tmp:
        tmp.write_text(_design_text(config, network))
    return load_network(copy)


def _write_evaluation(folder: Path, data: Path, device: str) -> list[str]:
    """Score the folder's model on the test split into ``evaluation.txt``; return a summary
    line and the warnings (:func:`~wdn_explain.scoring.score_warnings`), if any."""
    from .scoring import score_lines, score_model, score_warnings

    scores = score_model(folder, data, "test", device)
    lines, res = score_lines(scores), scores.results
    warning = [f"{WARNING}{w}" for w in score_warnings(scores)]
    with atomic_write(folder / EVALUATION) as tmp:
        tmp.write_text("\n".join(warning + lines) + "\n")
    return [f"{lines[0]}: {metrics_line(res)}", *warning]


REMEDY_FACTOR = 2
"""How much larger the remedy for a model no better than the tree makes its design (and its
training, where it ran all its epochs)."""


@dataclass(frozen=True)
class Remedy:
    """The design and training that :func:`remedy` proposes."""

    n_scenarios: int
    epochs: int
    more_epochs: bool
    """Whether the epochs grow (not where early stopping ended the last training)."""

    @property
    def options(self) -> str:
        """The ``network onboard`` options that build it."""
        return f"--scenarios {self.n_scenarios} --epochs {self.epochs} --overwrite"

    @property
    def text(self) -> str:
        """What it does, in words."""
        return "simulate more scenarios" + " and train more epochs" * self.more_epochs


def remedy(card: ModelCard) -> Remedy | None:
    """For a model no better than the strong tree on its test scenarios: :data:`REMEDY_FACTOR`
    times its scenarios, and as many times its epochs where its training ran them all
    (more epochs cannot help a training that stopped early); None when it beats the tree or
    no tree was scored."""
    if beats_tree(card.metrics) is not False:
        return None
    epochs = card.train["epochs"]
    more_epochs = len(card.history) >= epochs
    return Remedy(
        n_scenarios=REMEDY_FACTOR * card.data.n_scenarios,
        epochs=REMEDY_FACTOR * epochs if more_epochs else epochs,
        more_epochs=more_epochs,
    )


def onboard_verdict(card: ModelCard) -> str:
    """What an onboarded model is worth, from its card's test metrics: better than the
    strong tree (:func:`~wdn_explain.tree.tree_forecast`) or not, with the remedy
    (:func:`remedy`)."""
    metrics = card.metrics
    better = beats_tree(metrics)
    if better is None:
        return "no test scenarios to compare its model with the tree"
    figures = f"MAE {model_beside_tree_mae(metrics):.4f} against {metrics['tree_mae']:.4f}"
    if better:
        return f"its model beats the tree on the test scenarios ({figures})"
    fix = remedy(card)
    return (
        f"its model is NO BETTER THAN THE TREE on the test scenarios ({figures}): "
        f"{fix.text} (run again with {fix.options})"
    )


def onboarded_network(folder: str | Path) -> Path | None:
    """The network copy of a folder that onboarding made (its ``design.yaml`` names it), from
    which it can be built again; None for any other model folder."""
    design = Path(folder) / DESIGN
    if not design.is_file():
        return None
    copy = Path(load_config(design).scenario.network)
    return copy if copy.is_file() else None


def evaluation_warnings(folder: str | Path) -> list[str]:
    """The warnings a model folder's ``evaluation.txt`` records, then those of its card's
    test metrics not among them (no better than the tree or persistence; none without
    either): the app shows them beside the model's name."""
    path = Path(folder) / EVALUATION
    lines = path.read_text().splitlines() if path.is_file() else []
    found = [line.removeprefix(WARNING) for line in lines if line.startswith(WARNING)]
    try:
        card_warnings = read_card(folder).metrics.get("warnings", [])
    except DataError:
        card_warnings = []
    return found + [w for w in card_warnings if w not in found]


def varied_scenario(folder: Path, n_steps: int) -> ScenarioConfig:
    """The simulated scenario an onboarded folder explains first: the one of its model's
    test split whose label (the forecast's truth) spreads most over the first ``n_steps``
    forecasts (the largest range over time, at any node for a node-level target), else,
    when the truth of every test scenario stays put, the one of any split; a scenario
    whose truth never changes leaves nothing to forecast or explain."""
    from .dataset import WaqDataset, load_waq_arrays

    arrays = load_waq_arrays(folder / DATA)
    everything = WaqDataset.for_card(read_card(folder), folder / DATA, "all", arrays)
    test = everything.split_of("test")
    labels = everything.targets(np.arange(arrays.n_scenarios))
    labels = labels.reshape(arrays.n_scenarios, everything.n_times, -1)[:, :n_steps]
    spread = np.ptp(labels, axis=1).max(axis=-1)
    candidates = test if len(test) and spread[test].max() > 0 else np.arange(arrays.n_scenarios)
    return arrays.configs[candidates[np.argmax(spread[candidates])]]


def _default_scenario(folder: Path, network: Network, overwrite: bool) -> ScenarioConfig:
    """Scenario 0 of the folder's ``default_scenario.yaml``, written first when missing (or
    with ``overwrite``): the simulated scenario whose truth changes most
    (:func:`varied_scenario`), its first hour only where its timeline would hold over
    :data:`TIMELINE_VALUES` values, on the folder's copy of the network."""
    from .explain import complexity

    own = folder / MODEL_SCENARIO
    if overwrite or not own.is_file():
        card = read_card(folder)
        template = load_config(folder / DESIGN).scenario
        per_step = complexity(network.edge_index, network.n_nodes, card.model["num_layers"])
        if per_step.n_interactions * template.n_reports > TIMELINE_VALUES:
            template = template.model_copy(update={"duration_s": min(template.duration_s, 3600)})
        spec = varied_scenario(folder, template.n_reports - card.train["horizon"])
        scenario = spec.model_dump(mode="json") | {
            "duration_s": template.duration_s,
            "network": network.inp_path.name,
        }
        with atomic_write(own) as tmp:
            tmp.write_text(yaml.safe_dump({"scenario": scenario}, sort_keys=False))
    return load_config(own).scenario_config(0)
