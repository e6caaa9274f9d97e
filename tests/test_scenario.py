import pytest

from wdn_explain.errors import ConfigError
from wdn_explain.scenario import ScenarioConfig, SimulationConfig, load_config, parse_config


def test_yaml_round_trip(tmp_path):
    cfg = parse_config({"n_scenarios": 3, "seed": 5, "scenario": {"injection_node": "12"}})
    path = tmp_path / "c.yaml"
    cfg.to_yaml(path)
    again = load_config(path)
    assert again == cfg
    assert again.config_hash() == cfg.config_hash()


def test_scenario_seeds_are_stable_and_distinct():
    cfg = SimulationConfig(n_scenarios=4, seed=9)
    seeds = [cfg.scenario_config(i).seed for i in range(4)]
    assert len(set(seeds)) == 4
    assert seeds == [SimulationConfig(n_scenarios=4, seed=9).scenario_seed(i) for i in range(4)]


def test_shipped_configs_load():
    from conftest import ROOT

    for path in sorted((ROOT / "simulations").glob("*.yaml")):
        assert load_config(path).n_scenarios >= 1


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"scenario": {"duration_s": 0}}, "scenario.duration_s: Input should be greater than 0"),
        ({"scenario": {"reporting_step_s": -5}}, "reporting_step_s"),
        ({"scenario": {"quality_step_s": 600}}, "quality_step_s must not exceed hydraulic_step_s"),
        ({"colour": "blue"}, "unknown key 'colour'"),
        ({"scenario": {"injection_nod": "3"}}, "unknown key 'scenario.injection_nod'"),
        ({"n_scenarios": 0}, "n_scenarios"),
    ],
)
def test_bad_configs_name_the_key(data, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(data)


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenario: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_configs_are_frozen():
    cfg = ScenarioConfig()
    with pytest.raises(Exception, match="frozen"):
        cfg.duration_s = 5


def test_plain_scenario_names():
    assert ScenarioConfig(seed=3).describe() == "reservoir, 1 mg/L, 3 h, seed 3"
    spec = ScenarioConfig(
        injection_node="20", injection_strength_mg_l=1.5, injection_mode="failure", duration_s=5400
    )
    assert spec.describe() == "booster at 20, 1.5 mg/L, failure, 1.5 h, seed 0"


def test_numeric_node_ids_are_accepted(tmp_path):
    """`injection_node: 12` unquoted in YAML is node "12", in scenarios and designs alike."""
    path = tmp_path / "s.yaml"
    path.write_text(
        "scenario: {injection_node: 12, duration_s: 3600}\n"
        "design: {injection_nodes: [12, 13], reservoir_share: 0}\nn_scenarios: 2\n"
    )
    cfg = load_config(path)
    assert cfg.scenario.injection_node == "12"
    assert cfg.design.injection_nodes == ("12", "13")
    assert ScenarioConfig.model_validate({"injection_node": 12}) == ScenarioConfig(
        injection_node="12"
    )


def test_relative_network_path_is_read_beside_the_config(tmp_path, monkeypatch):
    """A relative .inp path in a config means the file beside the config, stored absolute so
    that datasets and timelines made from it work from any directory; names stay names."""
    from wdn_explain.network import builtin_network_path

    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "mine.inp").write_bytes(builtin_network_path("net1").read_bytes())
    (folder / "s.yaml").write_text("scenario: {network: mine.inp}\n")
    (folder / "named.yaml").write_text("scenario: {network: net1}\n")
    monkeypatch.chdir(tmp_path)  # not the config's folder
    assert load_config("configs/s.yaml").scenario.network == str(folder / "mine.inp")
    assert load_config("configs/named.yaml").scenario.network == "net1"


def test_a_python_tag_in_yaml_is_refused_in_one_line(tmp_path):
    from wdn_explain.errors import ConfigError
    from wdn_explain.scenario import load_config

    path = tmp_path / "c.yaml"
    path.write_text("n_scenarios: !!python/object/apply:os.system ['echo planted']\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(f"config file '{path}' is not valid YAML: could not determine")
    assert str(err.value).endswith("(line 1, column 14)")


def test_an_injection_strength_beyond_float32_is_refused():
    from wdn_explain.errors import ConfigError
    from wdn_explain.scenario import parse_config

    with pytest.raises(ConfigError, match=r"injection_strength_mg_l.*1000"):
        parse_config({"scenario": {"injection_strength_mg_l": 1e39}})


def test_yaml_nested_too_deeply_is_one_line(tmp_path):
    from wdn_explain.errors import ConfigError
    from wdn_explain.scenario import load_config

    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="is not valid YAML: nested too deeply"):
        load_config(path)
