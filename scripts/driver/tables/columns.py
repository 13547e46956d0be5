"""The columns of the tables aggregation writes, each with one owner: its type, unit, Excel number
format and description. Read by the typed loader (bundle.py: a column's type), the workbook
(workbook.py: its number format) and the reference docs (scripts/reference_docs.py).

A side's column (`left_env`, `right_median_s`) is its base column; a table's other columns that
no entry names are the versions table's env columns (one per env, seconds). Adding a statistic
to a table is its builder's code plus one line here (tests/unit/tables/test_columns.py checks
that every column written has its line).
"""
from typing import NamedTuple


class Column(NamedTuple):
    name: str
    type: str  # "text", "number" or "bool"
    unit: str  # "s", "%", "FLOP", ...; "" for none
    excel: str | None  # the workbook's number format (None: Excel's General)
    description: str


RATIO, P, PCT, SHARE = "0.000_)", "0.0000_)", '+0.0"%"_);-0.0"%"_);0.0"%"_)', "0.0%_)"
FLOPS = "0.00E+00_)"


def _cols(kind, unit, excel, rows):
    return [Column(name, kind, unit, excel, doc) for name, doc in rows]


COLUMNS = {c.name: c for c in [
    *_cols("text", "", None, [
        ("machine", "The machine key: the folder of its cell files under results/cells/."),
        ("env", "The env file's name (envs/<env>.yaml)."),
        ("framework", "The framework the env provides (tfspeed/frameworks.py)."),
        ("framework_version", "The framework's pinned version."),
        ("python", "The env's Python version."),
        ("keras", "The Keras flavour (axis)."), ("keras_version", "Keras' version in the env."),
        ("mode", "The execution mode (axis)."), ("api", "The training or inference API (axis)."),
        ("input", "The input pipeline (axis)."), ("device", "The device (axis)."),
        ("table", "pairs: the comparison table the pair's row belongs to (its two cells differ "
         "in that table's axis only); empty in duets and in A/A rows."),
        ("model", "The model (axis)."), ("data", "The data size (axis)."),
        ("status", "ok, failed or skipped."), ("reason", "Why a cell failed or was skipped."),
        ("source", "duets_graph_vs_eager: duet (the reference's own row, timed across modes) or "
         "derived (a version's graph and eager rows against the reference, and the reference's "
         "row)."),
        ("numpy_version", "NumPy's version in the env."),
        ("paired_table", "not_decided: the table of the undecided paired row (duets, pairs, "
         "duets_aa, pairs_aa, duets_modes, duets_own, duets_frameworks), or cells (a round of "
         "the cells)."),
        ("state", "not_decided: `not reached` (its second look beyond the time budget) or "
         "`open after the second look`."),
        ("command", "not_decided: the command that continues the run with the minutes the "
         "not-reached rows need (finished duets and cells are kept)."),
        ("optimizer", "The optimizer's class."), ("cpu_model", "The machine's CPU."),
        ("gpu", "The machine's GPUs."), ("started_utc", "When the process started (ISO 8601)."),
        ("cell_id", "The cell's id (tfspeed/cells.py: cell_id)."),
        ("stopped_by", "What ended the sampling: count, precision, budget or max_samples; "
         "`duet sides` for a cell pooled from a duet row's sides, one fresh "
         "worker per replicate (config duets.sides_as_cells)."),
        ("threads", "The threads the framework was given (auto or pinned)."),
        ("verdict", "left_faster or right_faster (the CI at ci_level excludes 1), equivalent "
         "(the equivalence interval tost_ci_low/high lies inside 1 +- min_effect; decided "
         "first) or undecided (neither); tables written before said inconclusive for "
         "undecided (docs/METHOD.md)."),
        ("list", "DO, DONT or neither (guidance)."),
        ("configuration", "The configuration in the source study's words."),
        ("fastest_env", "The env with the lowest median of the row."),
        ("allocation", "Why allocation stopped adding processes to the cell (settled, too_wide, "
         "max_repeats, budget, off, no_round_left; duet_row: its processes are a duet "
         "row's replicates)."),
        ("task", "train, infer or micro (tfspeed/cells.py: task)."),
        ("family", "What a user picks: TensorFlow, PyTorch, Keras 3 on JAX / torch."),
        ("line", "The release line a version series belongs to."),
        ("direction", "slower, faster or none: where a change point steps."),
        ("before_env", "The env before a change point."), ("after_env", "The env after it."),
        ("before_version", "The version before a change point."),
        ("after_version", "The version after it."),
        ("after_keras", "The Keras flavour after the change point."),
        ("process_origin", "fresh (a new interpreter of the env) or fork."),
        ("same_function", "A user's model only: match, mismatch or error: the seeded weights' "
         "outputs against the NumPy pass (tfspeed/samefunction.py); empty: not checked."),
        ("reference_env", "The TF 1 env the duets' ratio is taken against."),
        ("machine_effect", "machines_compared: same (the interaction's equivalence test puts "
         "it inside 1 +- min_effect; decided first), differs (its interval at "
         "interaction_ci_level excludes 1) or undecided."),
        ("agreement", "machines_compared: same (one verdict on both machines), opposite "
         "(slower on one, faster on the other), differ (any other mix), one machine."),
    ]),
    *_cols("bool", "", None, [
        ("moved", "duet_rounds: the round moved every row together (its shift interval excludes "
         "0 and the rounds' F test rejects at fdr_q)."),
        ("significant", "left_faster or right_faster."),
        ("noisy", "The processes' log medians spread beyond noisy_threshold."),
        ("drift", "A significant trend in some process's block medians."),
        ("warmup_capped", "Warm-up ended at warmup_max_s, not by a stable block."),
        ("too_few_samples", "Fewer samples than min_samples."),
        ("foreign_cpu_flag", "Other work on the machine beyond its share while the cell timed."),
        ("twin", "A twin cell (the same configuration run as an independent cell)."),
        ("nominal_inside_ci", "The nominal A/A rate lies inside the twins' CI."),
    ]),
    *_cols("number", "s", None, [
        ("median_s", "The cell's median step time (per process, pooled over processes)."),
        ("ci_low_s", "The lower end of its CI."), ("ci_high_s", "The upper end of its CI."),
        ("mean_s", "The mean step time."), ("min_s", "The fastest step."),
        ("max_s", "The slowest step."), ("sd_s", "The steps' standard deviation."),
        ("iqr_s", "The steps' interquartile range."),
        ("first_call_s", "The first call (build, trace, compile)."),
        ("fastest_median_s", "The fastest configuration's median (guidance)."),
        ("best_process_median_s", "The fastest process's median."),
        ("warmup_s", "Seconds spent warming up."), ("process_wall_s", "The process's wall time."),
        ("wall_s", "A duet's wall time (both workers, from start to close)."),
        ("before_level_s", "The step time before a change point."),
        ("after_level_s", "The step time after it."),
    ]),
    *_cols("number", "", RATIO, [
        ("ratio", "left / right cell estimate (< 1: left faster)."),
        ("ratio_ci_low", "The ratio's CI at ci_level, lower end: the tested interval (a "
         "comparison is called faster or slower exactly when it excludes 1)."),
        ("ratio_ci_high", "Its upper end."),
        ("ratio_to_fastest", "The configuration's median / the fastest one's."),
        ("drift_ratio", "Last- over first-quarter median of the samples."),
        ("interaction", "machines_compared: the left machine's ratio / the right machine's "
         "(exp of the difference of their mean log ratios); 1: the machine does not change the "
         "ratio."),
        ("interaction_ci_low", "Its interval at interaction_ci_level, lower end: the tested "
         "interval (Welch t, BH over the table, Benjamini-Yekutieli FCR level)."),
        ("interaction_ci_high", "Its upper end."),
        ("interaction_tost_ci_low", "The interaction's equivalence interval (1 - 2 "
         "equivalence_alpha), lower end: machine_effect is same exactly when it lies inside "
         "1 +- min_effect."),
        ("interaction_tost_ci_high", "Its upper end."),
    ]),
    *_cols("number", "", P, [
        ("p_look", "The t test's p at the row's last look; p is its sequential p-value where "
         "the design has two looks (driver/stats/sequential.py), else the same."),
        ("p_round", "duet_rounds: the F test's p of the round effect (row + round)."),
        ("p", "The comparison's p-value."), ("p_adjusted", "Benjamini-Hochberg adjusted p."),
        ("drift_p", "The drift test's p-value."),
        ("between_sd", "The spread of the processes' log medians."),
        ("interaction_p", "The interaction's p-value (Welch t on the two machines' log "
         "ratios: scipy.stats.ttest_ind(equal_var=False))."),
        ("interaction_p_adjusted", "Benjamini-Hochberg adjusted over machines_compared's rows."),
        ("interaction_p_equivalent", "The interaction's equivalence test (TOST, 1 +- "
         "min_effect)."),
    ]),
    *_cols("number", "", SHARE, [
        ("ci_rel_halfwidth", "The CI's half-width relative to the median."),
        ("within_ci_rel", "A process's own CI half-width relative to its median."),
        ("efficiency", "Achieved FLOP/s over the machine's fastest matmul."),
    ]),
    Column("pct", "number", "%", PCT, "The source study's % ((1 - longer/shorter) * 100, + when "
           "the left side is faster)."),
    Column("flops_per_step", "number", "FLOP", FLOPS, "FLOPs of one step by formula."),
    Column("achieved_flops", "number", "FLOP/s", FLOPS, "flops_per_step / median_s."),
    Column("peak_flops", "number", "FLOP/s", FLOPS, "The machine's fastest matmul cell."),
    Column("peak_rss_mb", "number", "MB", "#,##0_)", "The process's peak resident memory."),
    *_cols("number", "min", "0.0_)", [
        ("minutes", "not_decided: minutes of duets (at this run's measured duet time) that the "
         "row's replicates would take."),
    ]),
    *_cols("number", "", None, [
        ("replicates", "not_decided: replicates a row's second look would add (not reached), "
         "or about how many more would decide it at its measured mean and spread (open after "
         "the second look; empty when that cannot be said)."),
        ("chance", "not_decided: the chance, at its look-1 mean and spread, that the row's "
         "second look decides it (driver/tables/second_look.py: decide_chance)."),
        ("n_left", "Processes of the left cell."), ("n_right", "Processes of the right cell."),
        ("n_repeats", "Processes of the cell."), ("n_failed_repeats", "Processes that failed."),
        ("n_samples", "Timed calls, over all processes (each a sample of the step time)."),
        ("steps_per_call", "Training steps per timed call: 1, or fit_epoch's epoch (its "
         "samples are the call's time over these steps)."), ("df", "Degrees of freedom."),
        ("n_versions", "Versions in the series."), ("pairs", "Twin pairs."),
        ("called_different", "Twin pairs called different."), ("rate", "The A/A rate."),
        ("threshold", "The study's per-test p threshold."), ("alpha", "The false rate asked."),
        ("penalty", "The change-point penalty."), ("z2", "The change point's statistic."),
        ("releases_skipped", "Versions of the line between the two without the configuration."),
        ("retraces", "Graph traces during timing."), ("round", "The round of the process."),
        ("position", "Its planned position in the round."), ("order_seed", "The round's seed."),
        ("start_rank", "Its start's rank in the round."),
        ("warmup_calls", "Calls spent warming up."),
        ("foreign_cpu_share", "Other processes' CPU share while the cell timed."),
        ("spikes", "Samples over spike_factor x the process median."),
        ("spike_factor", "The factor that makes a spike."),
        ("max_over_median", "The slowest step / the median."),
        ("p95_over_median", "The 95th percentile / the median."),
        ("p99_over_median", "The 99th percentile / the median."),
        ("ci_low", "A rate's CI, lower end."), ("ci_high", "Its upper end."),
        ("bound_pct", "How far apart the two sides can be, as the run measured them: they "
         "differ by at most this % (the farther end of the equivalence interval, "
         "tost_ci_low/high, from 1)."),
        ("p_threshold", "The study's per-test threshold Benjamini-Hochberg implies."),
        ("p_equivalent", "The equivalence test's p-value (TOST)."),
        ("se_log", "The standard error of the log ratio."),
        ("ci_df", "Degrees of freedom of a cell's CI."),
        ("interaction_ci_level", "The level of the interaction's interval (1 - R q / m after "
         "BH over the table's m rows, R called different)."),
        ("interaction_se_log", "The interaction's standard error in log: sqrt(se_left^2 + "
         "se_right^2)."),
        ("interaction_df", "Its Welch-Satterthwaite degrees of freedom."),
        ("fixed_effect_weight_left", "The weight a fixed-effect (inverse-variance) mean of "
         "the two machines would give the left machine: se_right^2 / (se_left^2 + "
         "se_right^2); why no combined ratio is given."),
        ("n", "Duets of the configuration that ran (each with fresh workers)."),
        ("n_failed", "Duets that failed."),
        ("n_flagged", "Ok duets during whose timed windows other processes used more CPU than "
                      "foreign_cpu_max_share (kept, counted here); empty where the duets were not metered."),
        ("ci_level", "The confidence level of the row's interval. Comparisons and duets: "
         "1 - R q / (m k), Benjamini and Yekutieli's false-coverage-rate level after "
         "Benjamini-Hochberg called R of the family's m rows different (k: candidates), the "
         "level that makes the drawn interval the tested one. Cells: the level asked (stop."
         "level)."),
        ("candidates", "The pairs a comparison's two cells were picked from (the fastest of "
         "a group against the fastest of another); its intervals and p-values are "
         "simultaneous over them. 1: a plain comparison."),
        ("log_ratio", "The mean log ratio left / right."),
        ("sd_log", "The spread of the duets' log ratios."),
        ("look1_log_ratio", "The mean log ratio of the first look's duets alone (the first "
         "n_look1 replicates): the health check sets the second look against it."),
        ("look1_sd_log", "The spread of the first look's log ratios."),
        ("graph_n", "duets_graph_vs_eager: duets behind the version's graph-mode row."),
        ("eager_n", "duets_graph_vs_eager: duets behind the version's eager-mode row."),
        ("reference_n", "duets_graph_vs_eager: duets behind the reference's graph-vs-eager "
         "row."),
        ("graph_ratio", "duets_graph_vs_eager: the version's graph-mode duet ratio to the "
         "reference."),
        ("eager_ratio", "duets_graph_vs_eager: the version's eager-mode duet ratio to the "
         "reference."),
        ("reference_ratio", "duets_graph_vs_eager: the reference's graph over its eager time, "
         "from its own duets."),
        ("df_welch", "duets_graph_vs_eager: Welch-Satterthwaite's degrees of freedom, beside "
         "the smallest row's (df) that the row uses."),
        ("tost_ci_low", "The equivalence test's interval, lower end (at tost_level): the row "
         "is equivalent exactly when this interval lies inside 1 +- min_effect."),
        ("tost_ci_high", "Its upper end."),
        ("tost_level", "The level of the equivalence test's interval: 1 - 2 alpha (alpha: "
         "equivalence_alpha, divided by candidates where a row was picked)."),
        ("simultaneous_low", "A lower bound that holds for every row of the mode at once."),
        ("simultaneous_high", "An upper bound that holds for every row of the mode at once."),
        ("window_sd", "The spread of one window pair's log ratio inside a duet."),
        ("n_look1", "Duets per row at the first look (config duets.replicates)."),
        ("n_max", "Duets per row at most: rows still open after the first look get up to this "
         "many (duets.max_replicates)."),
        ("rows", "duet_rounds: the rows with an ok duet in the round."),
        ("shift", "duet_rounds: the round's mean log ratio minus its rows' means (0: the round "
         "moved nothing)."),
        ("shift_ci_low", "Its interval at the study's level, lower end (t over the round's rows)."),
        ("shift_ci_high", "Its upper end."),
        ("f", "duet_rounds: the F statistic of the round effect."),
        ("df_round", "Its numerator degrees of freedom."),
        ("df_resid", "Its denominator degrees of freedom."),
        ("sd_round", "duet_rounds: the sd (log) of the rounds' common effect by the method of "
         "moments: a state the rows of a round share (the machine over that stretch of the run, "
         "or a fork helper renewed every round, duets.renew_helpers); 0 where none shows."),
        ("fails_if_1_5x_narrow", "The chance this A/A figure fails when intervals are 1.5x too "
         "narrow (its power, for this run's pairs and threshold)."),
        ("fails_if_2x_narrow", "The same when they are 2x too narrow."),
        ("same_function_max_diff", "The largest output difference from the NumPy pass, over "
         "the cell's processes."),
        ("same_function_tolerance", "The difference same_function allows (ATOL + RTOL x the "
         "largest output)."),
    ]),
]}


def column(name: str) -> Column | None:
    """The entry of a column, a side's column (left_*, right_*) by its base column's."""
    base = name.removeprefix("left_").removeprefix("right_")
    return COLUMNS.get(name) or COLUMNS.get(base)

