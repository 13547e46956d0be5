"""What a fresh clone is told: the licence, how to cite, the project's metadata, the changelog in
versions, the workflow catalog's files, and the README's list of interpreters, which must be the
pins of the default study's env files (as `make doctor` reads them)."""
import re
from pathlib import Path

import doctor
import tomllib
import yaml

REPO = Path(__file__).resolve().parents[3]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_licence_is_mit_and_the_readme_says_so():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 the tfspeed authors" in text
    readme = (REPO / "README.md").read_text()
    assert "MIT licence ([LICENSE](LICENSE))" in readme


def test_project_table_beside_the_tool_settings():
    assert PROJECT["name"] == "tfspeed" and PROJECT["version"] == "0.9.0"
    assert PROJECT["requires-python"] == ">=3.11" and PROJECT["license"] == "MIT"
    assert PROJECT["readme"] == "README.md" and PROJECT["description"]
    tools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]
    assert {"ruff", "pytest"} <= set(tools)


def test_citation_names_the_project_and_the_source_question():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and "tfspeed" in cff["title"]
    assert str(cff["version"]) == PROJECT["version"] and cff["license"] == "MIT"
    assert cff["authors"] and cff["message"]
    source = [r for r in cff["references"]
              if r["title"] == "Why is TensorFlow 2 much slower than TensorFlow 1?"]
    assert source and source[0]["year"] == 2019 and "stackoverflow.com" in source[0]["url"]
    assert source[0]["publisher"]["name"] == "Stack Overflow"


def test_changelog_has_versions_and_no_heading_twice_in_one():
    text = (REPO / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert versions[0] == "Unreleased" and PROJECT["version"] in versions
    assert re.search(r"^## \[%s\] - \d{4}-\d\d-\d\d$" % re.escape(PROJECT["version"]), text, re.M)
    assert not re.search(r"^## (?!\[)", text, re.M), "every ## section is a version"
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        headings = re.findall(r"^### (.+)$", section, re.M)
        assert len(headings) == len(set(headings)), (section.splitlines()[0], headings)


def test_workflow_catalog_files():
    catalog = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())
    usage = catalog["usage"]
    assert usage["mandatory-flags"]["desc"] and "flags" in usage["mandatory-flags"]
    assert usage["software-stack-deployment"]["conda"] is True
    assert usage["report"] is True  # the catalog reads it beside software-stack-deployment
    config_readme = (REPO / "config" / "README.md").read_text()
    assert "../config.yaml" in config_readme and "../docs/reference/config.md" in config_readme
    for target in re.findall(r"\]\((\.\./[^)#]+)\)", config_readme):
        assert (REPO / "config" / target).resolve().exists(), target


def test_readme_lists_the_interpreters_the_default_study_pins():
    pins = {s["python"] for s in doctor.planned_envs(doctor.load_config()).values()}
    readme = (REPO / "README.md").read_text()
    match = re.search(r"\((\d+)\.(\d+) to (\d+)\.(\d+) for the default\s+study\)", readme)
    assert match, "the README names the default study's interpreters"
    low, high = (int(match.group(1)), int(match.group(2))), (int(match.group(3)),
                                                             int(match.group(4)))
    have = sorted(tuple(int(x) for x in p.split(".")) for p in pins)
    assert (have[0], have[-1]) == (low, high), "README names %s to %s; the env files pin %s" % (
        low, high, sorted(pins))
    # a range: every minor between its ends is pinned by some env file
    assert len(have) == high[1] - low[1] + 1 and low[0] == high[0] == 3
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "make doctor" in quick_start and "Linux on x86_64" in quick_start
