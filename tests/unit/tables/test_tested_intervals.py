"""The cells' comparison tables say one thing per word (issue 35): a row is faster or slower
exactly when its drawn interval (ratio_ci_low/high at ci_level) excludes 1, equivalent exactly
when its equivalence interval (tost_ci_low/high) lies inside 1 +- min_effect, undecided
otherwise; equivalence is decided first, so an equivalent row's interval may exclude 1.

Checked on every row of every comparison table of the newest published run (docs/data/, its
processes aggregated again by the current code), and on a synthetic study; then a wrong level is
planted (the 95 % intervals the tables drew before) and the check must fail."""
import math
import tarfile

import numpy as np
import pandas as pd
import pytest
import republish

from driver.stats import verdicts
from driver.tables import comparisons
from driver.tables.registry import COMPARISONS

DECIDED = list(verdicts.DECIDED)


def contradictions(df: pd.DataFrame, margin: float) -> list[str]:
    """Rows whose verdict and drawn intervals say different things (empty: none)."""
    lo, hi = df["ratio_ci_low"].astype(float), df["ratio_ci_high"].astype(float)
    excludes = (hi < 1.0) | (lo > 1.0)
    inside = (df["tost_ci_low"].astype(float) >= 1.0 / (1.0 + margin)) & \
        (df["tost_ci_high"].astype(float) <= 1.0 + margin)
    v = df["verdict"]
    bad = ((v.isin(DECIDED) != (excludes & ~inside))
           | ((v == verdicts.EQUIVALENT) != inside)
           | ((v == verdicts.UNDECIDED) != (~excludes & ~inside))
           | (v.eq(verdicts.LEFT_FASTER) & ~(hi < 1.0))
           | (v.eq(verdicts.RIGHT_FASTER) & ~(lo > 1.0)))
    return [f"{i}: {v[i]} with CI {lo[i]:.4g}-{hi[i]:.4g}" for i in df.index[bad]]


def _check_levels(tables: dict, q: float, alpha_eq: float) -> None:
    """ci_level is 1 - R q / (m k) for the study's one BH family; tost_level 1 - 2 alpha / k."""
    rows = pd.concat([tables[n] for n in COMPARISONS if n in tables and len(tables[n])])
    have = rows["p_adjusted"].notna()
    m, r = int(have.sum()), int((rows.loc[have, "p_adjusted"] <= q).sum())
    k = rows["candidates"].astype(float)
    tested = rows["se_log"].notna()
    want = 1 - max(r, 1) * q / m / k
    assert np.allclose(rows.loc[tested, "ci_level"], want[tested], rtol=0, atol=1e-12)
    assert np.allclose(rows.loc[tested, "tost_level"], (1 - 2 * alpha_eq / k)[tested],
                       rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The comparison tables of the newest published run, made again by the current code."""
    runs = republish.find_runs(republish.REPO / "docs" / "data")
    if not runs:
        pytest.skip("docs/data holds no published run")
    run = republish.newest_per_machine(runs)[-1]
    config = republish._config(run)
    results = tmp_path_factory.mktemp("published") / "results"
    with tarfile.open(f"{run['path']}/{republish.ARCHIVE}", "r:xz") as tar:
        members = [m for m in tar.getmembers() if m.isfile()
                   and m.name.startswith(("cells/", "duets/"))]
        tar.extractall(results, members=members, filter="data")
    from driver.tables import aggregate

    files = sorted(str(p) for p in results.glob("cells/*/*/*.r[0-9]*.json"))
    out = aggregate.tabulate(files, config["reference_env"], config["noisy_threshold"],
                             config["stop"]["level"], config=config, q=config["fdr_q"],
                             min_effect=config["min_effect"],
                             alpha_equivalence=config["equivalence_alpha"],
                             duet_files=sorted(str(p) for p in results.glob("duets/*/*/*.json")))
    return out, config


def test_every_published_row_says_what_its_intervals_show(published):
    tables, config = published
    names = [n for n in COMPARISONS if n in tables and len(tables[n])]
    assert len(names) >= 5, names
    counts = pd.concat([tables[n]["verdict"] for n in names]).value_counts()
    # the check has something to check: rows of each kind, intervals that exclude 1
    assert counts.get(verdicts.LEFT_FASTER, 0) + counts.get(verdicts.RIGHT_FASTER, 0) > 0
    assert counts.get(verdicts.UNDECIDED, 0) > 0
    assert "inconclusive" not in counts
    for name in names + (["duets"] if len(tables.get("duets", [])) else []):
        assert contradictions(tables[name], config["min_effect"]) == [], name
    _check_levels(tables, config["fdr_q"], config["equivalence_alpha"])
    # the picked rows (frameworks, frameworks_best) are simultaneous over their candidates
    picked = pd.concat([tables[n] for n in ("frameworks", "frameworks_best") if n in tables])
    assert (picked["candidates"] > 1).any()
    assert (picked.loc[picked["candidates"] > 1, "ci_level"]
            > tables["tf2_vs_tf1"]["ci_level"].max()).all()


def test_a_wrong_level_is_caught(published):
    """The old tables' 95 % intervals, with the verdicts decided by BH: the check must fail on a
    row whose 95 % interval excludes 1 while BH does not call it (audit 2b)."""
    tables, config = published
    planted = []
    for name in [n for n in COMPARISONS if n in tables and len(tables[n])]:
        df = tables[name].copy()
        half = [(math.nan if not (s == s and d == d) else
                 float(verdicts.sps.t.ppf(0.975, d) if not math.isinf(d)
                       else verdicts.sps.norm.ppf(0.975)) * s)
                for s, d in zip(df["se_log"].astype(float), df["df"].astype(float))]
        logr = np.log(df["ratio"].astype(float))
        df["ratio_ci_low"], df["ratio_ci_high"] = np.exp(logr - half), np.exp(logr + half)
        planted += contradictions(df, config["min_effect"])
    assert planted, "a 95 % interval beside a BH verdict went unnoticed"
    # and a wrong equivalence interval: the 95 % one where the verdict used the 90 %
    df = tables["tf2_vs_tf1"].copy()
    widen = np.log(df["tost_ci_high"] / df["ratio"]) * 3.0
    df["tost_ci_low"], df["tost_ci_high"] = df["ratio"] * np.exp(-widen), df["ratio"] * np.exp(widen)
    if (tables["tf2_vs_tf1"]["verdict"] == verdicts.EQUIVALENT).any():
        assert contradictions(df, config["min_effect"])


def test_synthetic_families_and_a_planted_level():
    """verdicts.tested on random families: the identities hold row by row; drawn at 95 % they do
    not (some BH-undecided row excludes 1)."""
    rng = np.random.default_rng(7)
    caught = 0
    for _trial in range(40):
        n = 60
        se = rng.uniform(0.01, 0.08, n)
        rows = pd.DataFrame({"ratio": np.exp(rng.normal(0, 0.06, n)), "se_log": se,
                             "df": rng.integers(3, 30, n).astype(float),
                             "candidates": rng.choice([1, 1, 1, 4, 12], n)})
        out = []
        for r in rows.to_dict("records"):
            res = comparisons.moderated.from_se(math.log(r["ratio"]), r["se_log"], r["df"], 4, 4)
            if r["candidates"] > 1:
                res = comparisons.moderated.selected(res, r["candidates"])
            out.append(res)
        frame = pd.DataFrame(out)
        frame["candidates"] = rows["candidates"]
        decided = verdicts.tested(frame, q=0.05, min_effect=0.10)
        assert contradictions(decided, 0.10) == []
        old = verdicts.decide(frame, q=0.05, min_effect=0.10)  # 95 % CIs (1 - 0.05 / k picked)
        caught += bool(contradictions(old, 0.10))
    assert caught > 0
