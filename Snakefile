# tfspeed: is TensorFlow 2 slower than TensorFlow 1, and which way of training should I use?
# The study as a pipeline: one env per TF version, one fresh process per cell, tables and a report.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "schemas/config.schema.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/envs.smk"
include: "rules/bench.smk"
include: "rules/aggregate.smk"
include: "rules/report.smk"


# Light rules run where Snakemake runs (on a cluster: the submit host, whose machine key planned
# the study); timing jobs and env builds go to the executor.
localrules:
    finish_round,
    plan_round,
    tabulate_cells,
    render_report,


rule all:
    default_target: True
    input:
        final_outputs(),
