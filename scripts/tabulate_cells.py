"""Rule tabulate_cells: all cell files -> results/tables/*.csv, the report's bundle and
results/study.xlsx (driver/tables/aggregate.py does the work)."""
from driver.study.rulelog import to_rule_log

smk = snakemake  # noqa: F821
to_rule_log(smk)

from pathlib import Path  # noqa: E402

from driver.tables.aggregate import tabulate, write_outputs  # noqa: E402

params = smk.params
# Other machines' cell files are inputs too (rules/common.smk), so new ones rerun this rule.
result = tabulate(list(smk.input.cells) + list(smk.input.others), params.reference_env,
                  params.noisy_threshold, params.level, config=params.config, q=params.q,
                  min_effect=params.min_effect, allocation=params.allocation,
                  spike_factor=params.spike_factor, orders=list(smk.input.orders),
                  alpha_equivalence=params.alpha_equivalence,
                  duet_files=list(smk.input.duets), sides_as_cells=params.sides_as_cells)
write_outputs(result, smk.output.cells_csv, {Path(p).stem: p for p in smk.output.tables},
              smk.output.xlsx, smk.output.processes, smk.output.facts)
