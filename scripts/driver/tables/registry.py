"""The registry of the study's tables: one entry per table, and everything that reads tables asks it:
the rules (their outputs), aggregation (which builder makes each table), allocation (which tables
it chases), the workbook (sheets, frozen key columns, the `about` sheet), the report (links,
titles, what `+` means, how a comparison is laid out) and the tests.

A comparison table pairs cells that differ in `factor`: the first-named side (`left`) against the
other (`right`). Its `%` is the source study's `(1 - longer/shorter) * 100` in magnitude, `+` when
the left side is faster. Summary tables (`factor` None) are not comparisons.

Adding a table is one entry here and one builder function:

    Table("my_table", "My table", "mode", "graph", "eager", "+ when graph is faster",
          "What a row is, for the workbook's about sheet and docs/reference/tables.md.",
          build="driver.tables.mymodule:my_table", chased=True)

    def my_table(cells, comparer, envs) -> pd.DataFrame: ...

`build` names the builder as "module:function"; it is imported when the tables are built
(driver/tables/comparisons.py: build_tables), so a builder may import this module. The builder's
parameters are filled by name from the study being tabulated:
    cells         the pooled cells (twin cells left out), a DataFrame (driver/tables/pooling.py)
    all_cells     the same with the twin cells
    comparer      verdicts for pairs of cells (comparisons.Comparer)
    envs          env names in version order
    logs          each cell's processes' log medians (pooling.py)
    reference_env, level, q, min_effect, alpha_equivalence    the study's settings
    factor, left, right    this entry's own fields
    tables        the tables built before it (only for after_verdicts builders)
A comparison's builder returns the columns of comparisons._frame (the verdict columns are added
for every comparison at once); `after_verdicts=True` builds a table once every comparison has its
verdict (twins_rate). `build=None`: the table is made elsewhere (processes, from the cell files
in driver/tables/aggregate.py). `register(table)` adds an entry at run time (tests use it).

The other fields, with their defaults:
    chased        allocation spends extra processes on this comparison's open rows
    shown_apart   the report shows it in a section of its own, not among the comparisons
    glance        the report's at-a-glance grid: the columns its values are spread over
    key_columns   columns frozen at the left of its workbook sheet
"""
import importlib
from typing import NamedTuple


class Table(NamedTuple):
    name: str
    title: str
    factor: str | None  # the axis whose two values the rows compare; None: not a comparison
    left: str | None  # the first-named side's value (None: a rule of its own, see description)
    right: str | None
    sign: str  # what `+` means
    description: str
    build: str | None = None  # "module:function", see above
    after_verdicts: bool = False
    chased: bool = False
    shown_apart: bool = False
    glance: tuple = ("env",)
    key_columns: int = 0

    def builder(self):
        """The builder function (imported now)."""
        module, _, function = self.build.partition(":")
        return getattr(importlib.import_module(module), function)


_COMPARISONS = "driver.tables.comparisons:"
REGISTRY = [
    Table("tf2_vs_tf1", "TF2 vs TF1", "env", None, None,
          "+ when the TF 2.x env (left) is faster than the TF 1.x reference env (right)",
          "Each TF 2.x env vs the reference TF 1.x env ({ref}), same machine, model, data, mode, "
          "API, input and device; same Keras flavour, except that in envs where tf.keras is "
          "Keras 3 (TF >= 2.16) both keras3 and tf_keras stand for tf.keras. Standalone keras "
          "pairs only with standalone keras. Left = TF2.",
          build=_COMPARISONS + "tf2_vs_tf1_table", chased=True, glance=("mode",)),
    Table("duets", "TF2 vs TF1 in duets (the headline)", None, None, None,
          "ratio < 1 when the TF 2.x env is faster than the TF 1.x reference env",
          "The headline from duets (docs/design.md): each TF 2.x env's train_on_batch (small "
          "model, numpy, the Keras its users get: tf.keras, from TF 2.16 tf_keras in graph mode "
          "and Keras 3 or tf_keras in eager mode) against the reference env ({ref}) tf.keras in "
          "the same mode, both timed in two live workers taking turns window by window. One "
          "row per configuration: n duets (fresh workers each), the ratio TF2 / TF1 with its "
          "interval at ci_level (the tested interval: it excludes 1 exactly when the row is "
          "called faster or slower), the equivalence test, the verdict, and bounds that hold "
          "for every version of a mode at once (simultaneous_low/high). See driver/tables/"
          "duets.py."),
    Table("duets_aa", "A/A duets (the reference against itself)", None, None, None,
          "ratio < 1 when the side timed second in each window pair is faster",
          "The duets' own check (docs/design.md): the reference env's ({ref}) headline cell "
          "against itself, planned and analysed exactly as a headline row but in a family of "
          "its own. Both sides are the same code, so a row called faster or slower is a false "
          "positive of the duet procedure, and its ratio is the order bias (the reference side "
          "always starts first). Columns as in duets."),
    Table("pairs", "Same-env comparisons, a pair in one process", None, None, None,
          "ratio < 1 when the left cell is faster",
          "Comparisons whose two cells live in one env and one mode (config `pairs`: "
          "fit vs train_on_batch, numpy vs tf.data), each timed by one fresh worker that builds "
          "both cells and interleaves them call by call, so the process's own state is the "
          "same on both sides (docs/design.md, \"Pairs in one process\"). One row per pair "
          "(cell_id joins both cells' ids; `table` is the comparison table the row belongs "
          "to): n pairs (a fresh worker each), the ratio left / right, its tested interval, the "
          "equivalence test and the verdict, analysed as the duets table is, in a family of its "
          "own. See driver/tables/duets.py."),
    Table("pairs_aa", "A/A pairs (a cell against itself in one process)", None, None, None,
          "ratio < 1 when the cell built second is faster",
          "The pairs' own check: per env and mode, a cell against itself in one worker, "
          "planned and analysed exactly as a pair, in a family of its own. A row called faster "
          "or slower is a false positive of the pair procedure. Columns as in pairs."),
    Table("duets_own", "Your model across envs and modes, in duets", None, None, None,
          "ratio < 1 when the left side is faster",
          "A user's model (config duets.models, docs/own-model.md) across envs and modes: each "
          "TF 2.x env's cell of duets.api in each mode against the reference env's ({ref}) "
          "tf.keras cell in the same mode, and the reference's graph cell against its eager cell "
          "(cell_id joins both), timed and analysed as the headline's duets are, in a family of "
          "its own. With the pairs inside each env and mode they decide the report's answer for "
          "the model. See driver/tables/duets.py."),
    Table("duets_frameworks", "Other frameworks against TensorFlow, in duets", None, None, None,
          "ratio < 1 when the other framework's way (left) is faster",
          "Other frameworks' ways to train the headline's small model (config duets.frameworks: "
          "PyTorch's own loop, Keras 3 on JAX or torch) each against one TensorFlow way, timed "
          "and analysed as the headline's duets are, in a family of its own (cell_id joins both "
          "cells' ids; right_env and right_cell_id name the TensorFlow side). Where the config "
          "names each framework's fastest way, this is best against best decided by paired "
          "rows; the frameworks_best table (from the cells) stays descriptive beside it. See "
          "driver/tables/duets.py."),
    Table("not_decided", "Rows not decided: what more time would decide", None, None, None,
          "ratio < 1 when the row's left side is faster",
          "Per machine, every paired row (duets, pairs and their A/A rows) the run left "
          "undecided: `not reached` (open after the first look, its second look beyond the time "
          "budget: replicates and minutes of that look at this run's duet time, and the command "
          "that continues the run) or `open after the second look` (about how many more "
          "replicates would decide it at its measured mean and spread, and their minutes). See "
          "driver/tables/not_decided.py."),
    Table("duet_rounds", "Duets' health check: rounds that moved every row", None, None, None,
          "shift > 0 when the round's duets had higher log ratios than their rows' means",
          "Per machine, mode and replicate round of the duets: the mean deviation of the "
          "round's log ratios from their rows' means (shift, with its t interval over rows), "
          "and the two-way analysis of variance (row + round) that tests whether rounds differ "
          "at all (F, p, for the whole mode); moved: the round's shift interval excludes 0 "
          "while the F test rejects at fdr_q. A round that moved every row together is a "
          "state of the machine the duets did not cancel. See driver/tables/duet_rounds.py."),
    Table("duets_releases", "What each release changed, in duets", None, None, None,
          "ratio < 1 when the later release (left) is faster than the one before it (right)",
          "Each TF 2.x env of the headline's duets against the env before it in version order, "
          "per machine, mode and API: the ratio of their two duets rows' ratios to the reference "
          "env ({ref}), so the reference cancels (later / earlier step time). Welch t on the two "
          "rows' duets (independent workers), judged under the duets' two-look design, "
          "Benjamini-Hochberg over this table's rows, the tested interval at ci_level, the "
          "equivalence test and the verdict, as in duets; left_keras and right_keras are each "
          "side's Keras (the one its users get). On a noisy machine it decides what "
          "adjacent_releases' cells of few processes leave open, for the headline's "
          "configuration only. See driver/tables/duets_releases.py."),
    Table("duets_graph_vs_eager", "Graph vs eager in every version, from the duets", None, None,
          None, "ratio < 1 when graph mode (left) is faster than eager (right)",
          "Graph (TF 1-style) against eager per machine and version, with no duet of its own: "
          "the version's graph-mode and eager-mode duets rows against the reference env ({ref}) "
          "and one more duets row, {ref}'s graph cell against its eager cell (config "
          "duets.graph_vs_eager, its replicates multiplied), give graph / eager = (g/g_ref) / "
          "(e/e_ref) x (g_ref/e_ref), the reference cancelling (source derived); {ref}'s own "
          "row is that last duets row (source duet). Only versions with all three rows; from "
          "TF 2.16 tf_keras (Keras 3 has no graph mode). se from the three rows' (independent "
          "duets), df the smallest row's (conservative; df_welch beside it), judged under the "
          "duets' two-look design, Benjamini-Hochberg over this table's rows, the tested "
          "interval at ci_level, the equivalence test and the verdict, as in duets. The "
          "reference row enters every derived row, so their errors are positively correlated. "
          "See driver/tables/duets_graph_vs_eager.py."),
    Table("machines_compared", "The headline on two machines", None, None, None,
          "interaction < 1 when the TF2 / TF1 ratio is lower on the left machine",
          "The duets table (the headline) on two machines side by side, one row per "
          "configuration and pair of machine keys (left = the first key in alphabetical order): "
          "each machine's own n, ratio, interval, sd and verdict, as in `duets` (nothing pooled "
          "between machines); the interaction (left ratio / right ratio) with its interval "
          "(Welch t, the tested interval after BH over the table), its equivalence test, "
          "machine_effect (differs, same, undecided) and agreement of the two verdicts. No "
          "combined ratio over machines (fixed_effect_weight_left says why: a precision-weighted "
          "mean speaks for the quieter machine). See driver/tables/machines_compared.py."),
    Table("adjacent_releases", "Adjacent releases", "env", None, None,
          "+ when the later release (left) is faster than the one before it (right)",
          "Each configuration in two consecutive versions of one line (TensorFlow, PyTorch, "
          "Keras 3 on JAX / torch) where it was measured: the later version (left) vs the one "
          "before it (right), same machine and axes. From TF 2.16 the tf.keras series goes on "
          "in tf_keras (the Keras 2 that tf.keras was); releases_skipped counts the line's "
          "versions between the two without this configuration (0: adjacent releases). "
          "See docs/releases.md.",
          build="driver.tables.releases:adjacent_table", chased=True),
    Table("graph_vs_eager", "Graph vs Eager (GvE)", "mode", "graph", "eager",
          "+ when graph mode is faster than eager",
          "Graph (v1 graph mode) vs Eager, everything else equal. Left = Graph.",
          build=_COMPARISONS + "factor_table", chased=True),
    Table("keras_vs_tfkeras", "keras vs tf.keras", "keras", None, None,
          "+ when the first-named Keras is faster",
          "Standalone keras vs tf.keras; Keras 3 vs tf_keras; the private "
          "tensorflow.python.keras vs tf.keras; in one env. Left = the first-named.",
          build=_COMPARISONS + "keras_table", chased=True),
    Table("numpy_vs_tfdata", "NumPy vs tf.data", "input", "numpy", "tfdata",
          "+ when NumPy input is faster than tf.data",
          "numpy arrays vs a tf.data.Dataset as input. Left = numpy.",
          build=_COMPARISONS + "factor_table", chased=True),
    Table("fit_vs_train_on_batch", "fit (1 step/call) vs train_on_batch", "api", "fit",
          "train_on_batch", "+ when the one-step fit() is faster",
          "fit() with one training step per call (a whole fit() call per step, its set-up "
          "included: the seed's numpy timing) vs train_on_batch(). Left = fit.",
          build=_COMPARISONS + "factor_table", chased=True),
    Table("fit_epoch_vs_train_on_batch", "fit (epoch/call) vs train_on_batch", "api",
          "fit_epoch", "train_on_batch", "+ when fit() over an epoch is faster",
          "fit() over an epoch (one call of `steps_per_call` steps, its time over the steps: "
          "the seed's tf.data timing, how a user who calls fit once per epoch trains) vs "
          "train_on_batch(). Left = fit over an epoch.",
          build=_COMPARISONS + "factor_table", chased=True),
    Table("call_vs_predict", "model(x) vs predict", "api", None, None,
          "+ when the first-named call style is faster",
          "Inference call styles, everything else equal (env, model, data, Keras, mode, input, "
          "device): model(x) (call) vs predict(); model(x) vs predict_on_batch(); "
          "predict_on_batch() vs predict(); PyTorch's torch.inference_mode() vs torch.no_grad() "
          "(call). Left = the first-named.",
          build=_COMPARISONS + "call_table", chased=True),
    Table("compiled_vs_eager", "tf.function and XLA vs eager", "mode", None, None,
          "+ when the first-named mode is faster",
          "The ways a step is compiled, everything else equal (env, model, data, Keras, API, "
          "input, device): tf.function vs plain eager and XLA (jit_compile) vs tf.function for "
          "custom loops and model(x); XLA vs Keras' default and Keras' default vs "
          "run_eagerly=True for fit and train_on_batch (Keras' default, mode `eager`, runs its "
          "step in a tf.function); torch.compile and TorchScript vs eager PyTorch. Left = the "
          "first-named.",
          build=_COMPARISONS + "compiled_table", chased=True),
    Table("gpu_vs_cpu", "GPU vs CPU", "device", "gpu", "cpu", "+ when the GPU is faster",
          "GPU vs CPU, same env and configuration. Left = GPU.",
          build=_COMPARISONS + "factor_table", chased=True),
    Table("frameworks", "Frameworks", "framework", None, None,
          "+ when the first-named framework is faster",
          "Per model, data, device and task (training or inference): the fastest cell of each "
          "env and mode (left) vs TensorFlow's fastest cell of the same model, data, device and "
          "task (right: any TF env, Keras, mode, API and input; never NumPy-only matmul), so a "
          "row says how far that way of running is from the best TF gives. The reference is "
          "the same on every row of a model, data and task; it has no row of its own. Both "
          "sides are picked by the processes that test them, so each row's CI, p-values and "
          "verdict are simultaneous over every pair it could have picked (Bonferroni): no "
          "winner's curse in TensorFlow's favour.",
          build=_COMPARISONS + "frameworks_table"),
    Table("frameworks_best", "Frameworks: best vs best", "framework", None, None,
          "+ when the other framework's best is faster than TensorFlow's best",
          "Per model, data, device and task (training or inference): each other framework's "
          "fastest cell (any env, mode, API and input; PyTorch, Keras 3 on JAX, Keras 3 on "
          "torch) (left) vs TensorFlow's fastest cell (right), both picked by their cell "
          "estimates: who wins, by how much, with the verdict, simultaneous over every pair "
          "that could have been picked (no winner's curse).",
          build=_COMPARISONS + "frameworks_best_table", shown_apart=True),
    Table("machines", "Machines", "machine", None, None,
          "+ when the first machine (alphabetical) is faster",
          "The same cell (env and every axis) on two machines, when results of several "
          "machines are combined. Left = the first machine key in alphabetical order.",
          build=_COMPARISONS + "machines_table"),
    Table("twins", "A/A twins", "twin", None, None, "+ when the twin is faster",
          "Calibration: each twin cell (the same configuration run as an independent cell, "
          "machine key <machine>.twin) vs its original. Every pair is the same cell twice, so "
          "a faster or slower verdict here is a false positive of the study's own method.",
          build=_COMPARISONS + "twins_table", chased=True),
    Table("twins_rate", "A/A rate of the twins", None, None, None, "",
          "The twins' A/A rate: of the twin pairs, the share whose p-value is at or below the "
          "study's per-test threshold (threshold: the largest p-value Benjamini-Hochberg rejects "
          "over the whole study), with its Clopper-Pearson CI at the study's level. A calibrated "
          "method calls about `threshold` of them different; nominal_inside_ci says whether "
          "that value lies inside the CI. See docs/design.md.",
          build=_COMPARISONS + "twins_rate_table", after_verdicts=True),
    Table("versions", "Performance history", None, None, None, "",
          "Median time per step of each configuration in every env, envs in version order: the "
          "performance history across TF versions. fastest_env names the fastest.",
          build="driver.tables.summaries:versions_table", key_columns=8),
    Table("changepoints", "Change points", None, None, None, "",
          "Along each configuration's version series (as in adjacent_releases): the versions "
          "where its step time stepped up (slower) or down (faster), found by binary "
          "segmentation on the processes' log medians with a penalty that gives a flat series "
          "a false change point with probability alpha (the study's q); ratio = the level "
          "after / before with its CI, simultaneous over every step the segmentation could "
          "have reported (not the selection's own, so it can hold 1 where a step is found but "
          "cannot be sized apart from none). A series without change points has one row, direction "
          "none. See docs/releases.md.",
          build="driver.tables.releases:changepoints_table"),
    Table("guidance", "DO and DON'T", None, None, None, "",
          "DO / DON'T per machine, model, data and task (train, infer or micro: training and "
          "inference are never ranked together), every ok cell one row: DO = the interval of "
          "its ratio to the fastest (the two medians' CIs combined) reaches 1; DONT = the "
          "whole interval lies at 2x or more; neither = the rest.",
          build="driver.tables.summaries:guidance_table", key_columns=5),
    Table("processes", "Processes", None, None, None, "",
          "Every process (cell file): machine, env, cell, twin or not, round, planned position "
          "in its round and the round's order seed (results/rounds/, see docs/design.md), start "
          "time and its rank in the round (equal to the position where the plan was executed), "
          "status, the process's median and its own CI, foreign CPU over its timed window, "
          "warm-up calls and seconds, first call, wall time, and how the process was made "
          "(fresh: a new interpreter of the env)."),
]
BY_NAME = {t.name: t for t in REGISTRY}
NAMES = [t.name for t in REGISTRY]
COMPARISONS = [t.name for t in REGISTRY if t.factor is not None]
# The comparisons with one factor and two fixed values (the others pair by rules of their own).
FACTOR_TABLES = {t.name: (t.factor, t.left, t.right) for t in REGISTRY
                 if t.factor is not None and t.left is not None}


def register(table: Table) -> Table:
    """Add a table at run time (after the others; its name must be new). The lists above are
    updated in place, so modules that imported them see it."""
    if table.name in BY_NAME:
        raise ValueError(f"a table named {table.name!r} is registered already")
    REGISTRY.append(table)
    BY_NAME[table.name] = table
    NAMES.append(table.name)
    if table.factor is not None:
        COMPARISONS.append(table.name)
        if table.left is not None:
            FACTOR_TABLES[table.name] = (table.factor, table.left, table.right)
    return table


def unregister(name: str) -> None:
    """Take a table registered by `register` out again (tests)."""
    table = BY_NAME.pop(name)
    REGISTRY.remove(table)
    NAMES.remove(name)
    if name in COMPARISONS:
        COMPARISONS.remove(name)
    FACTOR_TABLES.pop(name, None)


# What the report and the workbook describe besides the registry's tables.
EXTRA_SHEETS = {
    "seed_view": "The source study's BENCHMARKS layout: one block per configuration (Keras "
                 "flavour, API, input, device; a line above each), rows model x data size; "
                 "seconds per iteration (median) of the TF 1 reference ({ref}) and one TF 2 env "
                 "(named in the headers) in Graph and Eager, then the TF2 vs TF1 % per mode and "
                 "the GvE (Graph vs Eager) % per env, with the seed's sign conventions. As the "
                 "seed compared TF 1.14 with TF 2.0, the TF 2 env is the one with the most "
                 "same-flavour pairs with {ref} (ties: the oldest); every version is in "
                 "`versions`. The {ref} columns only hold cells of the row's own Keras flavour: "
                 "keras3 / tf_keras rows leave them blank (see `note`), and their % (headed "
                 "'vs TF 1 tf.keras') compares with {ref}'s tf.keras. % colours by verdict: "
                 "green / red left faster / slower, black equivalent, grey undecided. "
                 "Columns that no row fills are left out.",
    "cells": "Every cell (ok, failed, skipped), repeats pooled: axes, status and reason, median "
             "and CI of the median, first call (build/trace), spread, noise and drift flags, "
             "FLOP/s and provenance.",
}
