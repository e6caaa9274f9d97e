import numpy as np
import pytest

from wdn_explain.errors import DataError
from wdn_explain.network import load_network
from wdn_explain.pipeline import explain_scenario
from wdn_explain.scenario import ScenarioConfig
from wdn_explain.timeline import Timeline, cache_path

SPEC = ScenarioConfig(duration_s=3000, reporting_step_s=300, seed=5)


@pytest.fixture(scope="module")
def computed(tmp_path_factory, tiny_model_dir):
    out = tmp_path_factory.mktemp("tl") / "t.npz"
    timeline, status = explain_scenario(SPEC, tiny_model_dir, out=out)
    return out, timeline, status


def test_every_step_explained_exactly(computed):
    _, tl, status = computed
    assert status == "computed"
    assert len(tl) == 11 - 4 and tl.chlorine.shape == (7, 32)
    for t, e in enumerate(tl.explanations):
        assert e.exact and e.method == "local"
        assert e.prediction == pytest.approx(tl.forecast[t])
        assert e.efficiency_gap() == pytest.approx(0, abs=1e-5)
    assert 0 <= tl.truth.min() and tl.truth.max() <= 1


def test_cache_round_trip_and_reuse(computed, tiny_model_dir):
    out, tl, _ = computed
    again, status = explain_scenario(SPEC, tiny_model_dir, out=out)
    assert status == "cached"
    np.testing.assert_allclose(again.forecast, tl.forecast)
    a, b = tl.interaction_values(3, "FSII", 2), again.interaction_values(3, "FSII", 2)
    assert max(abs(a[k] - b[k]) for k in a.dict_values) < 1e-5  # MIs are stored as float32
    np.testing.assert_allclose(again.node_values("SV"), tl.node_values("SV"), atol=1e-6)


def _same_timeline(a: Timeline, b: Timeline) -> None:
    """Every array, the metadata and every explanation's MIs of a and b are equal, bit for bit."""
    assert a.meta == b.meta and a.references == b.references
    for name in ("steps", "times_s", "node_ids", "chlorine", "forecast", "truth", "lower"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.link_flow_lps, b.link_flow_lps)
    for reference in a.references:
        for x, y in zip(
            a.relative_to(reference).explanations, b.relative_to(reference).explanations
        ):
            assert x.prediction == y.prediction and sorted(x.blocks.groups) == sorted(
                y.blocks.groups
            )
            for k, (nodes, mi) in x.blocks.groups.items():
                np.testing.assert_array_equal(nodes, y.blocks.groups[k][0])
                np.testing.assert_array_equal(mi, y.blocks.groups[k][1])
                assert mi.dtype == y.blocks.groups[k][1].dtype == np.float64


def test_a_computed_timeline_equals_its_file(computed, tiny_model_dir):
    """With ``out`` the returned timeline is what reading the file returns (MIs rounded to
    float32 as stored), so a viewer may show it without reading the file back."""
    out, tl, _ = computed
    _same_timeline(tl, Timeline.load(out))
    cached, status = explain_scenario(SPEC, tiny_model_dir, out=out)
    assert status == "cached"
    _same_timeline(tl, cached)
    fresh, _ = explain_scenario(SPEC, tiny_model_dir)  # no file: the engine's float64 values
    mi = fresh.explanations[3].blocks.groups
    stored = tl.explanations[3].blocks.groups
    for k, (_, values) in mi.items():
        np.testing.assert_array_equal(stored[k][1], values.astype(np.float32))


def test_references_explained_side_by_side_equal_one_at_a_time(
    computed, tiny_model_dir, tmp_path, monkeypatch
):
    """Two references on two threads give the file of a one-thread run, bit for bit; both
    threads work, and progress is reported by the calling thread, in order."""
    import threading

    from wdn_explain.explain import GraphSHAPIQ

    out, serial, _ = computed  # the module's run, on this machine's cores
    threads: dict[str, set[int]] = {}
    explain = GraphSHAPIQ.explain

    def spy(self, data, **kwargs):
        threads.setdefault(self.baseline, set()).add(threading.get_ident())
        return explain(self, data, **kwargs)

    seen = []
    monkeypatch.setattr(GraphSHAPIQ, "explain", spy)
    monkeypatch.setattr("wdn_explain.pipeline.usable_cores", lambda: 2)
    progress = lambda d, t: seen.append((d, t, threading.get_ident()))  # noqa: E731
    two, _ = explain_scenario(SPEC, tiny_model_dir, out=tmp_path / "two.npz", progress=progress)
    assert len(threads) == 2 and len(set.union(*threads.values())) == 2
    assert threading.get_ident() not in set.union(*threads.values())
    total = 2 * len(two)
    assert seen == [(d, total, threading.get_ident()) for d in range(1, total + 1)]
    monkeypatch.setattr("wdn_explain.pipeline.usable_cores", lambda: 1)
    one, _ = explain_scenario(SPEC, tiny_model_dir, out=tmp_path / "one.npz")
    _same_timeline(two, one)
    _same_timeline(one, serial)
    assert Timeline.load(tmp_path / "one.npz").meta == Timeline.load(out).meta


@pytest.mark.parametrize("memory_gb", [3.0, None])
def test_explainers_side_by_side_share_the_memory_budget(memory_gb):
    """Each of n explainers running at once gets 1/n of the budget (the given one, else the
    engine's default); one explainer alone gets the setting as it is (None: the engine's)."""
    from wdn_explain.explain.memory import default_memory_budget_gb
    from wdn_explain.timeline import ExplainSettings

    settings = ExplainSettings(memory_budget_gb=memory_gb)
    whole = memory_gb if memory_gb is not None else default_memory_budget_gb()
    assert settings.explainer_options("mean")["memory_budget_gb"] == memory_gb
    for n in (2, 3):
        share = settings.explainer_options("mean", n)["memory_budget_gb"]
        assert share == pytest.approx(whole / n)


def test_as_saved_equals_a_file_round_trip(computed, tmp_path):
    """MIs off the float32 grid (float64 noise added here) come out of as_saved exactly as
    a file written and read back holds them: rounded, not as they went in."""
    _, tl, _ = computed
    rng = np.random.default_rng(0)
    noisy = {
        k: v.astype(np.float64) + 1e-9 * rng.standard_normal(v.shape) if "_mi_" in k else v
        for k, v in tl.arrays().items()
    }
    mi = [v for k, v in noisy.items() if "_mi_" in k]
    assert mi and any((v != v.astype(np.float32)).any() for v in mi)  # off the float32 grid
    unrounded = Timeline.from_arrays(noisy, "x")
    read = Timeline.load(unrounded.save(tmp_path / "r.npz"))
    _same_timeline(
        unrounded.as_saved(), read
    )  # bit for bit: as_saved returning the noisy MIs fails here


def test_timeline_file_is_a_plain_compressed_npz(computed, tmp_path):
    """The file numpy writes with savez_compressed, at a faster zlib level: np.load reads
    every array back unchanged, every member is deflated, and nothing needs pickles."""
    import zipfile

    _, tl, _ = computed
    path = tl.save(tmp_path / "plain.npz")
    arrays = tl.arrays()
    with np.load(path, allow_pickle=False) as data:
        assert sorted(data.files) == sorted(arrays)
        for key, value in arrays.items():
            np.testing.assert_array_equal(data[key], value)
            assert data[key].dtype == np.asarray(value).dtype
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        assert {i.compress_type for i in infos} == {zipfile.ZIP_DEFLATED}
        assert sum(i.compress_size for i in infos) < sum(i.file_size for i in infos) / 2


def test_cache_invalidation(computed, tiny_model_dir, tmp_path):
    out, _, _ = computed
    other = SPEC.model_copy(update={"seed": 6})
    _, status = explain_scenario(other, tiny_model_dir, out=out)
    assert status == "recomputed: cache made with another scenario_hash"
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    _, status = explain_scenario(SPEC, tiny_model_dir, out=bad)
    assert status.startswith("recomputed: timeline file") and "corrupt" in status
    assert Timeline.load(bad).meta["scenario_hash"] == SPEC.config_hash()


def test_missing_timeline_file(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        Timeline.load(tmp_path / "none.npz")


def test_scenario_shorter_than_horizon(tiny_model_dir):
    with pytest.raises(DataError, match="not more than the horizon 4"):
        explain_scenario(ScenarioConfig(duration_s=900, reporting_step_s=300), tiny_model_dir)


def test_model_of_another_network_is_refused(tiny_model_dir, tmp_path):
    import json
    import shutil

    other = tmp_path / "other_model"
    shutil.copytree(tiny_model_dir, other)
    card = json.loads((other / "card.json").read_text())
    card["data"]["network"].update(name="net3", sha256="0" * 64)
    (other / "card.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match="trained on network 'net3', the scenario runs on 'hanoi'"):
        explain_scenario(SPEC, other)


def test_shipped_default_timelines_are_current():
    """Every committed model's timeline was made by the committed model (weights and card)
    and this engine version: a stale one is recomputed on the first switch to its model
    (L-Town: its card changed after its timeline was made, and a switch took 4.3 s)."""
    from wdn_explain.shipped import SHIPPED_ROOT, water_models
    from wdn_explain.timeline import timeline_is_current

    folders = [f for f in water_models().values() if f.parent == SHIPPED_ROOT / "models"]
    assert {f.name for f in folders} >= {"default", "l-town", "waq-paper", "hanoi-nodes"}
    stale = [f.name for f in folders if not timeline_is_current(f / "default_timeline.npz", f)]
    assert stale == []


def test_no_chlorine_reference(computed, tiny_model_dir, tmp_path):
    """The 'none' reference: the same forecasts explained against a network without chlorine
    and without a source (every node feature 0), kept through save and load."""
    import torch

    from wdn_explain.model_folder import load_model
    from wdn_explain.network import load_network
    from wdn_explain.pipeline import scenario_graphs
    from wdn_explain.simulation import simulate

    _, tl, _ = computed
    assert tl.references == ["mean", "none"]
    none = Timeline.load(tl.save(tmp_path / "again.npz")).relative_to("none")
    assert none.reference == "none" and none.references == ["none", "mean"]
    np.testing.assert_allclose(none.forecast, tl.forecast)
    model, card = load_model(tiny_model_dir)
    net = load_network("hanoi")
    graphs = scenario_graphs(simulate(SPEC, net), net, card.input_spec)
    for t, e in enumerate(none.explanations):
        np.testing.assert_array_equal(e.baseline, 0.0)
        dry = graphs[t].clone()
        dry.x = torch.zeros_like(dry.x)
        with torch.no_grad():
            expected = float(model(dry.x, dry.edge_index, edge_attr=dry.edge_attr).reshape(-1)[0])
        assert none.reference_forecast[t] == pytest.approx(expected, abs=1e-5)
        assert e.node_values("SV").sum() == pytest.approx(tl.forecast[t] - expected, abs=1e-4)
    assert none.relative_to("mean").reference == "mean"
    with pytest.raises(DataError, match="no explanations relative to 'zero'"):
        tl.relative_to("zero")


@pytest.mark.parametrize(
    ("name", "home"), [("explain_scenario", "pipeline"), ("shipped", "shipped")]
)
def test_moved_names_still_import_with_a_deprecation(name, home):
    import importlib

    import wdn_explain.timeline as timeline_module

    with pytest.warns(DeprecationWarning, match=f"moved to wdn_explain.{home}.{name}"):
        old = getattr(timeline_module, name)
    assert old is getattr(importlib.import_module(f"wdn_explain.{home}"), name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        timeline_module.nothing  # noqa: B018


def test_the_cache_rule_over_every_setting_that_changes_the_values(tmp_path, tiny_model_dir):
    """One rule decides whether a cached timeline may be reused: it names exactly what
    differs (scenario, model, engine version, or a value-changing setting), ignores the
    memory budget (chunking only), and each identity gets its own cache file."""
    import json
    import shutil

    from wdn_explain.explain.explanation import ENGINE_VERSION
    from wdn_explain.model_folder import model_hash
    from wdn_explain.simulation import SIMULATION_VERSION
    from wdn_explain.timeline import ExplainSettings, cache_identity, cache_mismatch

    base = ExplainSettings()
    meta = {
        "scenario_hash": SPEC.config_hash(),
        "model_hash": model_hash(tiny_model_dir),
        "engine_version": ENGINE_VERSION,
        "simulation_version": SIMULATION_VERSION,
        "settings": base.model_dump(mode="json"),
    }
    assert cache_mismatch(meta, cache_identity(SPEC, tiny_model_dir, base)) == []
    assert cache_mismatch(None, cache_identity(SPEC, tiny_model_dir, base)) == ["file"]
    changed = {
        "method": base.model_copy(update={"method": "masked"}),
        "n_layers": base.model_copy(update={"n_layers": 5}),
        "approximation_lambda": base.model_copy(update={"approximation_lambda": 2}),
        "references": base.model_copy(update={"references": ("mean",)}),
    }
    paths = {cache_path(SPEC, tiny_model_dir, tmp_path, base)}
    for name, settings in changed.items():
        assert cache_mismatch(meta, cache_identity(SPEC, tiny_model_dir, settings)) == [name]
        paths.add(cache_path(SPEC, tiny_model_dir, tmp_path, settings))
    for speed_only in ({"memory_budget_gb": 0.5}, {"num_threads": 2}):
        same = base.model_copy(update=speed_only)
        assert cache_mismatch(meta, cache_identity(SPEC, tiny_model_dir, same)) == []
    other = SPEC.model_copy(update={"seed": 6})
    assert cache_mismatch(meta, cache_identity(other, tiny_model_dir, base)) == ["scenario_hash"]
    paths.add(cache_path(other, tiny_model_dir, tmp_path, base))
    retrained = tmp_path / "retrained"
    shutil.copytree(tiny_model_dir, retrained)
    card = json.loads((retrained / "card.json").read_text())
    (retrained / "card.json").write_text(json.dumps({**card, "date": "another day"}))
    assert cache_mismatch(meta, cache_identity(SPEC, retrained, base)) == ["model_hash"]
    paths.add(cache_path(SPEC, retrained, tmp_path, base))
    old_engine = {**meta, "engine_version": "0"}
    assert cache_mismatch(old_engine, cache_identity(SPEC, tiny_model_dir, base)) == [
        "engine_version"
    ]
    # simulated before the simulator's last fix (or before its version was recorded)
    unrecorded = {key: value for key, value in meta.items() if key != "simulation_version"}
    for older in ({**meta, "simulation_version": "1"}, unrecorded):
        assert cache_mismatch(older, cache_identity(SPEC, tiny_model_dir, base)) == [
            "simulation_version"
        ]
    assert len(paths) == 7  # one file per identity


def test_bad_settings_are_one_line():
    from wdn_explain.errors import ConfigError
    from wdn_explain.timeline import ExplainSettings

    with pytest.raises(ConfigError, match=r"memory_budget_gb: .*greater than 0 \(got -1\)"):
        ExplainSettings.of(memory_budget_gb=-1)
    with pytest.raises(ConfigError, match=r"approximation_lambda: .*less than or equal to 64"):
        ExplainSettings.of(approximation_lambda=10**12)  # allocated 7 TiB before
    with pytest.raises(ConfigError, match="references must include 'mean'"):
        ExplainSettings.of(references=("none", "median"))
    with pytest.raises(ConfigError, match="Extra inputs are not permitted"):
        ExplainSettings.of(budget=2)


def test_hydraulics_are_the_simulation_s_and_round_trip(computed, hanoi, tmp_path):
    """The timeline holds the simulated flows and pressures of its explained steps (checked
    against a simulation run here); the file keeps them; a file without them (written before
    they were stored) loads, and with_hydraulics simulates them again."""
    from dataclasses import replace

    from wdn_explain.pipeline import with_hydraulics
    from wdn_explain.simulation import simulate

    _, tl, _ = computed
    out = tl.save(tmp_path / "new.npz")  # the module's file may hold another scenario by now
    result = simulate(SPEC, hanoi)
    np.testing.assert_allclose(tl.link_flow_lps, result.link_flow_lps[tl.steps], rtol=1e-6)
    np.testing.assert_allclose(tl.node_pressure_m, result.node_pressure_m[tl.steps], rtol=1e-6)
    assert tl.link_flow_lps.shape == (len(tl), hanoi.n_links)
    again = Timeline.load(out)
    np.testing.assert_array_equal(again.link_flow_lps, tl.link_flow_lps)
    np.testing.assert_array_equal(again.node_pressure_m, tl.node_pressure_m)
    old = replace(tl, link_flow_lps=None, node_pressure_m=None).save(tmp_path / "old.npz")
    with np.load(old) as data:
        assert "link_flow_lps" not in data.files
    loaded = Timeline.load(old)
    assert loaded.link_flow_lps is None and loaded.node_pressure_m is None
    filled = with_hydraulics(loaded)
    np.testing.assert_array_equal(filled.link_flow_lps, tl.link_flow_lps)
    np.testing.assert_array_equal(filled.node_pressure_m, tl.node_pressure_m)
    other = replace(loaded, chlorine=loaded.chlorine + 1)  # not what its scenario simulates
    assert with_hydraulics(other, hanoi).link_flow_lps is None
    scenario = {**loaded.meta["scenario"], "network": str(tmp_path / "gone.inp")}
    lost = replace(loaded, meta={**loaded.meta, "scenario": scenario})  # network not found
    assert with_hydraulics(lost).link_flow_lps is None


def test_a_cached_file_without_hydraulics_gets_them_once(computed, tiny_model_dir, tmp_path):
    """A current timeline file written before flows were stored is reused (not recomputed)
    and completed in place with the flows a simulation run here gives."""
    from dataclasses import replace

    from wdn_explain.simulation import simulate

    _, tl, _ = computed
    old = replace(tl, link_flow_lps=None, node_pressure_m=None).save(tmp_path / "old.npz")
    again, status = explain_scenario(SPEC, tiny_model_dir, out=old)
    assert status == "cached; flows and pressures added"
    flows = simulate(SPEC, load_network(SPEC.network)).link_flow_lps[tl.steps]
    np.testing.assert_allclose(again.link_flow_lps, flows, rtol=1e-6)
    np.testing.assert_allclose(Timeline.load(old).link_flow_lps, flows, rtol=1e-6)
    np.testing.assert_array_equal(again.forecast, tl.forecast)
    assert explain_scenario(SPEC, tiny_model_dir, out=old)[1] == "cached"


def test_hydraulics_of_the_wrong_shape_are_refused(computed, tmp_path):
    from dataclasses import replace

    _, tl, _ = computed
    bad = replace(tl, node_pressure_m=tl.node_pressure_m[:, :3]).save(tmp_path / "bad.npz")
    with pytest.raises(DataError, match=r"node_pressure_m has shape \(7, 3\), expected \(7, 32\)"):
        Timeline.load(bad)
