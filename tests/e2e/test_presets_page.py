"""docs/reference/presets.md is what Snakemake plans for each study today (a dry run per study,
about ten seconds each): regenerate it with `make reference` after changing a preset or the
default."""
import pytest
import reference_docs

pytestmark = pytest.mark.e2e


def test_presets_page_is_current():
    assert reference_docs.main(["--check", "--presets"]) == 0, "run `make reference`"


def test_planned_jobs_reads_the_dry_run():
    jobs = reference_docs.planned_jobs("presets/fidelity_check.yaml")
    # three cells (tf1.14, tf2.0, tf2.21) in six processes each, no twins: see the preset
    assert jobs["run_cell"] == 18 and jobs["build_env"] == 3
