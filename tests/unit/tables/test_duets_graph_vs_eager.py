"""The duets_graph_vs_eager table (driver/tables/duets_graph_vs_eager.py): graph vs eager per
version from the headline's duets and one more row, the reference's graph against its eager cell.

- each derived row is x_g - x_e + y of three independent rows, its interval the hand-computed t
  interval (se from the three rows' se, df the smallest row's, p two-sided t, BH over the table
  as scipy's false_discovery_control);
- the reference's own row is its duets row, a one-sample t (scipy.stats.ttest_1samp);
- verdicts as the study's: a planted difference is called, planted equality is equivalent at a
  large n;
- versions only where all three rows exist; without the reference row, no rows, and the log
  says why; the file plumbing: the reference's row has its own family and key, never the
  headline's nor the A/A row's.
"""
import logging
import math

import numpy as np
import pytest
from duetfiles import duet_records
from scipy import stats as sps

from driver.stats import verdicts
from driver.study.duetplan import PAIR_SEP
from driver.tables import duets_graph_vs_eager as gve
from driver.tables.duets import duets_table, family

ROWS = [("tf2.2", "2.2.3", "graph", "tf.keras", 0.10), ("tf2.2", "2.2.3", "eager", "tf.keras", 0.90),
        ("tf2.10", "2.10.1", "graph", "tf.keras", 0.20), ("tf2.10", "2.10.1", "eager", "tf.keras", 0.25),
        # only in graph mode: no row; Keras 3 has no graph row: no row
        ("tf2.3", "2.3.4", "graph", "tf.keras", 0.1),
        ("tf2.16", "2.16.2", "graph", "tf_keras", 0.3), ("tf2.16", "2.16.2", "eager", "tf_keras", 0.7),
        ("tf2.16", "2.16.2", "eager", "keras3", 1.1)]


def reference_records(y, sd=0.01, n=8, seed=1, machine="m"):
    """The reference's graph cell against its eager cell (duetplan: duets.graph_vs_eager)."""
    recs = duet_records([("tf1.14", "1.14.0", "graph", "tf.keras", y)], sd=sd, n=n, seed=seed,
                        machine=machine)
    for r in recs:
        r["reference_cell"] = dict(r["reference_cell"], mode="eager")
    return recs


def table(recs, **kw):
    return gve.duets_graph_vs_eager_table(duets_table(recs), duets_table(recs, kind="duets_modes"),
                                          **kw)


def logs(recs, env, mode, keras="tf.keras"):
    return np.array([r["log_ratio"] for r in recs if r["env"] == env
                     and r["cell"]["mode"] == mode and r["cell"]["keras"] == keras])


def test_a_derived_row_is_the_hand_computed_t_interval_of_three_rows():
    recs = duet_records(ROWS, sd=0.03, n=5, seed=3) + reference_records(-0.5, sd=0.02, n=10)
    out = table(recs)
    assert list(out.columns) == gve.COLUMNS
    assert [(r["env"], r["keras"], r["source"]) for _, r in out.iterrows()] == [
        ("tf1.14", "tf.keras", "duet"), ("tf2.2", "tf.keras", "derived"),
        ("tf2.10", "tf.keras", "derived"), ("tf2.16", "tf_keras", "derived")]
    y = logs(recs, "tf1.14", "graph")
    p_raw = []
    for _, r in out.iterrows():
        if r["source"] == "duet":
            parts = [y]
            ref = sps.ttest_1samp(y, 0.0)
            assert r["p"] == pytest.approx(ref.pvalue, rel=1e-9)
        else:
            parts = [logs(recs, r["env"], "graph", r["keras"]),
                     logs(recs, r["env"], "eager", r["keras"]), y]
        signs = [1, -1, 1][:len(parts)]
        diff = sum(s * x.mean() for s, x in zip(signs, parts))
        var = [x.var(ddof=1) / x.size for x in parts]
        se, df = math.sqrt(sum(var)), min(x.size - 1 for x in parts)
        welch = sum(var) ** 2 / sum(v ** 2 / (x.size - 1) for v, x in zip(var, parts))
        assert r["log_ratio"] == pytest.approx(diff)
        assert r["se_log"] == pytest.approx(se)
        assert r["df"] == df and r["df_welch"] == pytest.approx(welch) and welch >= df
        p = 2 * sps.t.sf(abs(diff) / se, df)
        assert r["p"] == pytest.approx(p, rel=1e-9)  # one look: the p is the t test's
        p_raw.append(p)
        half = sps.t.ppf(1 - (1 - r["ci_level"]) / 2, df) * se
        assert (r["ratio_ci_low"], r["ratio_ci_high"]) == pytest.approx(
            (math.exp(diff - half), math.exp(diff + half)))
        eq = sps.t.ppf(0.95, df) * se
        assert (r["tost_ci_low"], r["tost_ci_high"]) == pytest.approx(
            (math.exp(diff - eq), math.exp(diff + eq)))
    assert out["p_adjusted"].to_numpy() == pytest.approx(sps.false_discovery_control(p_raw))
    assert out.loc[out["env"] == "tf2.2", "reference_n"].item() == 10


def test_a_planted_difference_is_decided_and_planted_equality_is_equivalent_at_large_n():
    # tf2.2: graph / eager = exp(0.1 - 0.9 - 0.5): graph much faster; tf2.10: 1.2x slower
    rows = [("tf2.2", "2.2.3", "graph", "tf.keras", 0.10), ("tf2.2", "2.2.3", "eager", "tf.keras", 0.90),
            ("tf2.10", "2.10.1", "graph", "tf.keras", 0.20 + math.log(1.2)),
            ("tf2.10", "2.10.1", "eager", "tf.keras", 0.20)]
    out = table(duet_records(rows, sd=0.03, n=6, seed=4) + reference_records(0.0, sd=0.02))
    by = dict(zip(out["env"], out["verdict"]))
    assert by["tf2.2"] == verdicts.LEFT_FASTER and by["tf2.10"] == verdicts.RIGHT_FASTER
    # equal in every version, and the reference equal across modes: equivalent at n = 40
    rows = [("tf2.2", "2.2.3", "graph", "tf.keras", 0.3), ("tf2.2", "2.2.3", "eager", "tf.keras", 0.3)]
    recs = duet_records(rows, sd=0.05, n=40, seed=5) + reference_records(0.0, sd=0.05, n=40)
    assert set(table(recs)["verdict"]) == {verdicts.EQUIVALENT}
    # ... and undecided at n = 3 with the smallest row's df (2)
    recs = duet_records(rows, sd=0.05, n=3, seed=5) + reference_records(0.0, sd=0.05, n=6)
    assert table(recs).set_index("env").loc["tf2.2", "verdict"] == verdicts.UNDECIDED


def test_without_the_reference_row_there_are_no_rows_and_the_log_says_so(caplog):
    recs = duet_records(ROWS, sd=0.03, n=5)
    with caplog.at_level(logging.WARNING, logger="tfspeed.aggregate"):
        assert table(recs).empty
    assert "no duets row of the reference's graph against its eager cell" in caplog.text
    # a second machine without its reference row: none of its rows, said; the first keeps its own
    recs += reference_records(0.0) + duet_records(ROWS, sd=0.03, n=5, machine="m2")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tfspeed.aggregate"):
        out = table(recs)
    assert set(out["machine"]) == {"m"} and "m2/" in caplog.text
    assert gve.duets_graph_vs_eager_table(duets_table([]), duets_table([])).empty


def test_the_reference_row_has_its_own_family_and_key():
    """Its file's row is neither the headline's (duets) nor the A/A row's, and its key joins both
    cells' ids, as duetplan.Duet.cell_id does (the A/A graph row keeps the graph cell's id)."""
    ref = reference_records(0.0, n=3)
    aa = duet_records([("tf1.14", "1.14.0", "graph", "tf.keras", 0.0)], n=3)
    assert {family(r) for r in ref} == {"duets_modes"} and {family(r) for r in aa} == {"duets_aa"}
    recs = ref + aa
    modes, aa_rows = duets_table(recs, kind="duets_modes"), duets_table(recs, aa=True)
    assert len(modes) == 1 and PAIR_SEP in modes["cell_id"].item()
    assert PAIR_SEP not in aa_rows["cell_id"].item() and duets_table(recs).empty


def test_two_looks_each_row_is_judged_under_its_version_rows_design():
    """The version's rows ran 4 duets at look 1 and up to 10; the reference's row (weight 2) 8
    and up to 20: a derived row takes the version rows' design (whose df it takes), the
    reference's row its own; p is the design's sequential p of the t test's."""
    from driver.stats.sequential import looks
    from driver.tables.duets import critical

    recs = duet_records(ROWS[:2], sd=0.03, n=4, seed=6) + reference_records(-0.2, n=8, seed=7)
    for r in recs:
        k = 2 if r["env"] == "tf1.14" else 1
        r["design"] = {"replicates": 4 * k, "max_replicates": 10 * k}
    out = table(recs).set_index("env")
    for env, design in (("tf2.2", looks(4, 10)), ("tf1.14", looks(8, 20))):
        r = out.loc[env]
        t_p = 2 * sps.t.sf(abs(r["log_ratio"]) / r["se_log"], r["df"])
        assert r["p"] == pytest.approx(float(design.two_sided(t_p)))
        half = critical(design, r["df"], 1 - r["ci_level"]) * r["se_log"]
        assert r["ratio_ci_high"] == pytest.approx(math.exp(r["log_ratio"] + half))
    assert out.loc["tf2.2", "df"] == 3 and out.loc["tf1.14", "df"] == 7


def test_the_table_reads_back_with_its_types(tmp_path):
    """Written and read as the report reads it (bundle's declared types): `source` stays text
    (a run's report once failed on it, read as a number)."""
    from driver.tables import bundle

    out = table(duet_records(ROWS, sd=0.03, n=5, seed=3) + reference_records(-0.5, n=10))
    bundle.write_table(out, tmp_path / "duets_graph_vs_eager.csv")
    back = bundle.read_table(tmp_path / "duets_graph_vs_eager.csv")
    assert set(back["source"]) == {"duet", "derived"}
    assert back["ratio"].dtype.kind == "f"
