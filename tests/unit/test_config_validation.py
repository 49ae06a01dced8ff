"""Parse-time config checks (bayesirt.config and the studies' ``settings.check``): each bad
value is refused with a one-line message that names its key; the shipped configs pass."""

from pathlib import Path

import pytest
import yaml

from bayesirt import config as config_schema
from bayesirt.config import ConfigError
from bayesirt.studies import check_config as study_checks
from bayesirt.studies.design_conditions import max_hidden_cells, parse_missing

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def test_missingness_names():
    assert parse_missing("mcar0") == ("mcar", 0.0)
    assert parse_missing("mar99.5") == ("mar", 0.995)
    with pytest.raises(ValueError, match=r"'mcar150' — the rate 150% is outside \[0, 100\)"):
        parse_missing("mcar150")
    with pytest.raises(ValueError, match="'mcar100' — the rate 100%"):
        parse_missing("mcar100")
    with pytest.raises(ValueError, match="'mar0' — a rate of 0% hides nothing, so the kind 'mar' has no effect"):
        parse_missing("mar0")
    with pytest.raises(ValueError, match="'mnar0.0' — a rate of 0%"):
        parse_missing("mnar0.0")
    with pytest.raises(ValueError, match="'mcar-5' is not"):
        parse_missing("mcar-5")


def test_bound_on_hidden_cells():
    # a 3 x 2 matrix keeps one response per person (3 cells), which also covers both items
    assert max_hidden_cells(3, 2) == 3
    assert max_hidden_cells(1, 10) == 0


def shipped(name):
    """A shipped config with the schema's defaults filled in, as the workflow sees it."""
    from snakemake.utils import validate

    cfg = yaml.safe_load((ROOT / "config" / name).read_text())
    validate(cfg, str(SCHEMA), set_default=True)
    return cfg


@pytest.mark.parametrize("name", ["config.yaml", "test.yaml", "paper.yaml"])
def test_shipped_configs_pass(name):
    cfg = shipped(name)
    config_schema.check(cfg, SCHEMA)
    study_checks(cfg)


def refused(cfg) -> str:
    with pytest.raises(ConfigError) as e:
        study_checks(cfg)
    message = str(e.value)
    assert "\n" not in message
    return message


def test_bad_missingness_names_the_key():
    cfg = shipped("test.yaml")
    cfg["studies"]["rb_imputation"]["missing"] = "mcar150"
    assert refused(cfg) == ("config key 'studies.rb_imputation.missing': 'mcar150' — the rate 150% is outside [0, 100)")
    cfg = shipped("test.yaml")
    cfg["studies"]["vibo"]["designs"]["tiny"]["missing"] = ["mcar20", "mar0"]
    assert refused(cfg).startswith("config key 'studies.vibo.designs.tiny.missing.1': 'mar0' — a rate of 0%")
    cfg = shipped("test.yaml")
    cfg["studies"]["gibbs_2pno"]["designs"]["tiny"]["missing"] = ["mnar120"]
    assert refused(cfg).startswith("config key 'studies.gibbs_2pno.designs.tiny.missing.0': 'mnar120'")


def test_missingness_a_design_cannot_hold():
    cfg = shipped("test.yaml")
    # 150 persons x 10 items keep 150 cells: at most 1350 of 1500 (90%) can be hidden
    cfg["studies"]["gibbs_2pno"]["designs"]["tiny"]["missing"] = ["mcar90", "mcar95"]
    message = refused(cfg)
    assert message.startswith("config key 'studies.gibbs_2pno.designs.tiny.missing.1': 'mcar95' — hiding 1425")
    assert "at most 1350 (90%)" in message
    cfg = shipped("test.yaml")
    # vibo hides score_fraction of the other cells on top: 89% + 15% of the other 11% > 90% of 10 items
    design = cfg["studies"]["vibo"]["designs"]["tiny"]
    design.update(n_items=10, missing=["mcar89"])
    assert "score_fraction" in refused(cfg)


def test_every_study_spells_missingness_by_one_name_and_one_limit():
    # dcm_bbvi names its conditions as the other studies do (mcar20), checked by the same rule
    cfg = shipped("test.yaml")
    cfg["studies"]["dcm_bbvi"]["designs"]["seed"]["missing"] = ["mcar0", "mcar150"]
    config_schema.check(cfg, SCHEMA)  # the schema leaves the limit to the one check
    dcm = refused(cfg)
    cfg = shipped("test.yaml")
    cfg["studies"]["rb_imputation"]["missing"] = "mcar150"
    rb = refused(cfg)
    assert dcm == "config key 'studies.dcm_bbvi.designs.seed.missing.1': 'mcar150' — the rate 150% is outside [0, 100)"
    assert dcm.split(" — ")[1] == rb.split(" — ")[1]


def test_dcm_missingness_is_mcar_and_fits_the_design():
    cfg = shipped("test.yaml")
    cfg["studies"]["dcm_bbvi"]["designs"]["seed"]["missing"] = [0.2]  # a fraction: the old spelling
    with pytest.raises(Exception, match="is not of type 'string'"):
        config_schema.check(cfg, SCHEMA)
    cfg["studies"]["dcm_bbvi"]["designs"]["seed"]["missing"] = ["mnar20"]  # the DCM data are MCAR only
    with pytest.raises(Exception, match="does not match"):
        config_schema.check(cfg, SCHEMA)
    cfg["studies"]["dcm_bbvi"]["designs"]["seed"].update(missing=["mcar90"], n_items=4)
    assert "at most" in refused(cfg)


def test_nothing_to_impute_on_complete_simulated_data():
    cfg = shipped("test.yaml")
    assert cfg["datasets"][cfg["studies"]["rb_imputation"]["dataset"]]["source"] == "simulate"
    cfg["studies"]["rb_imputation"]["missing"] = "mcar0"
    assert "nothing to impute" in refused(cfg)
    cfg["studies"]["rb_imputation"]["replications"] = 0
    study_checks(cfg)


@pytest.mark.parametrize(
    "path, value, message",
    [
        (
            ("studies", "rb_imputation", "replications"),
            -1,
            "config key 'studies.rb_imputation.replications': -1 is less than the minimum of 0",
        ),
        (
            ("studies", "vibo", "designs", "tiny", "replications"),
            0,
            "config key 'studies.vibo.designs.tiny.replications': 0 is less than the minimum of 1",
        ),
        (
            ("priors", "ability_scale"),
            0,
            "config key 'priors.ability_scale': 0 is less than or equal to the minimum of 0",
        ),
        (
            ("studies", "gibbs_2pno", "priors", "ability_var"),
            -1.0,
            "config key 'studies.gibbs_2pno.priors.ability_var'",
        ),
    ],
)
def test_schema_ranges_name_the_key(path, value, message):
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    node = cfg
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        config_schema.check(cfg, SCHEMA)


def parsed_like_the_workflow(cfg: dict) -> None:
    """The checks the workflow runs on the config before any job, in order: the one-line schema
    check, Snakemake's validation (which fills in the defaults) and every study's
    ``settings.check`` (``studies.check_config``), all in common.smk."""
    from snakemake.utils import validate

    config_schema.check(cfg, SCHEMA)
    validate(cfg, str(SCHEMA), set_default=True)
    study_checks(cfg)


@pytest.mark.parametrize(
    "text, message",
    [
        ("bogus: 1\n", "config key 'bogus': unknown key"),
        ("training: {learning_rat: 0.1}\n", "config key 'training.learning_rat': unknown key"),
        ("training: {max_steps: ten}\n", "config key 'training.max_steps': 'ten' is not of type 'integer'"),
        (
            "datasets: {rwa_sim: {source: simulate, preset: rwa, n_persons: -5}}\n",
            "config key 'datasets.rwa_sim.n_persons': -5 is less than the minimum",
        ),
        ("studies: {rb_imputation: {dataset: nowhere}}\n", "config key 'studies.rb_imputation.dataset'"),
        (
            "studies: {amortized_ifa: {designs: {x: {preset: ipip, n_persons: 50, replicas: 2}}}}\n",
            "config key 'studies.amortized_ifa.designs.x.replicas': unknown key",
        ),
        (
            "studies: {amortized_ifa: {designs: {x: {dataset: rwa_sim, analysis: exploratory}}}}\n",
            "config key 'studies.amortized_ifa.designs.x.dataset'",
        ),
        (
            "studies: {rb_imputation: {dataset: rwa_sim, missing: mcar150}}\n",
            "config key 'studies.rb_imputation.missing': 'mcar150' — the rate 150% is outside [0, 100)",
        ),
        (
            "studies: {gibbs_2pno: {designs: {x: {n_persons: 50, n_items: 5, missing: [mcar0, mar0]}}}}\n",
            "config key 'studies.gibbs_2pno.designs.x.missing.1': 'mar0' — a rate of 0% hides nothing",
        ),
        (
            "studies: {rb_imputation: {dataset: rwa_sim, replications: -1}}\n",
            "config key 'studies.rb_imputation.replications': -1 is less than the minimum of 0",
        ),
        (
            "priors: {discrimination_scale: 0}\n",
            "config key 'priors.discrimination_scale': 0 is less than or equal to the minimum of 0",
        ),
    ],
)
def test_bad_values_are_refused_at_parse_time_naming_the_key(text, message):
    # the test config with one section replaced, as a user's --configfile would
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg.update(yaml.safe_load(text))
    with pytest.raises(ConfigError) as e:
        parsed_like_the_workflow(cfg)
    assert message in str(e.value) and "\n" not in str(e.value)
