"""config `package_sources.packages` naming a package that no env file pins is refused, naming it,
before any job (a typo there used to pass silently, and the pin it meant installed from PyPI)."""
import copy

import yaml
from helpers import REPO, quick_config, snakemake, write_config

from driver.study import envspec

SPECS = {"tf": {"pins": {"tensorflow": "2.21.0", "tf-keras": "2.21.0"}},
         "torch": {"pins": {"torch": "2.8.0"}}, "broken": {"invalid": "bad file"}}


def test_names_no_env_pins_are_returned_in_order():
    assert envspec.unpinned_packages(["torch", "troch", "TF_Keras", "jaxlib"], SPECS) == [
        "troch", "jaxlib"]
    assert envspec.unpinned_packages([], SPECS) == []
    assert envspec.unpinned_packages(None, SPECS) == []


def test_a_typo_in_package_sources_stops_the_study_naming_it(tmp_path):
    config = copy.deepcopy(quick_config())
    config["package_sources"]["packages"] = ["torch", "troch"]
    cfg = write_config(tmp_path / "bad.yaml", config)
    proc = snakemake(tmp_path / "work", cfg, "--cores", "1", "--dry-run")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "package_sources.packages" in out and "'troch'" in out, out[-2000:]
    assert "torch'" not in out.replace("'troch'", "")
    assert not (tmp_path / "work" / "results").exists()


def test_the_repositorys_config_names_only_pinned_packages():
    specs = {}
    for path in sorted((REPO / "envs").glob("*.yaml")):
        try:
            specs[path.stem] = envspec.parse_spec(path.stem, yaml.safe_load(path.read_text()))
        except envspec.SpecError:
            continue
    packages = yaml.safe_load((REPO / "config.yaml").read_text())["package_sources"]["packages"]
    assert packages and envspec.unpinned_packages(packages, specs) == []
