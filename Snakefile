# tfspeed: is TensorFlow 2 slower than TensorFlow 1, and which way of training should I use?
# The study as a pipeline: one env per TF version, each cell in `repeats` fresh processes (more where a
# comparison is undecided), tables and a report.
import os

from snakemake.utils import min_version, validate

min_version("9.0")


# The default config, found beside this Snakefile whatever --directory says: a --configfile is laid
# over it (mappings merge key by key, lists and values replace), so a partial config is a change to
# the default. A relative "config.yaml" would be looked for in the --directory, silently skipped
# there when --configfile is given, and leave unset keys at the schema's defaults instead.
configfile: os.path.join(workflow.basedir, "config.yaml")


validate(config, "schemas/config.schema.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/envs.smk"
include: "rules/bench.smk"
include: "rules/probe.smk"
include: "rules/aggregate.smk"
include: "rules/report.smk"


# No fork helper outlives the study (rules/common.smk).
onsuccess:
    stop_fork_helpers()


onerror:
    stop_fork_helpers()


# Light rules run where Snakemake runs (on a cluster: the submit host, whose machine key planned
# the study); timing jobs and env builds go to the executor.
localrules:
    first_look,
    finish_round,
    plan_round,
    tabulate_cells,
    plan_order,
    render_report,


rule all:
    default_target: True
    input:
        final_outputs(),
