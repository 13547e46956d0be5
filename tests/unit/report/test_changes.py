"""The report's "What changed" section (driver/report/sections/changes.py, releases.py,
release_claims.py): releases with their changes, a new env first, change points marked on the
history panels, and the source study's release claims judged on known rows."""
import json

import pandas as pd
import pytest
from cellfiles import run, write_processes
from duetfiles import duet_records
from helpers import REPO

from driver.report import release_claims, releases
from driver.report import render as report
from driver.stats import verdicts
from driver.tables.registry import NAMES

TEMPLATE = REPO / "report" / "template.html.j2"
TF = {"tf1.14": "1.14.0", "tf1.15": "1.15.5", "tf2.0": "2.0.4", "tf2.1": "2.1.4", "tf2.2": "2.2.3",
      "tf2.3": "2.3.4"}
# eager train_on_batch: 2x slower from 2.0 on; graph flat
STEPS = {"tf1.14": 0.010, "tf1.15": 0.010, "tf2.0": 0.020, "tf2.1": 0.020, "tf2.2": 0.020}


def cells(root, env, median, started, **axes):
    files = write_processes(root, env, median, k=4, spread=0.01, **axes)
    for path in files:
        doc = json.loads(path.read_text())
        doc["framework_version"] = doc["provenance"]["env"]["framework_version"] = TF[env]
        doc["started_utc"] = started
        path.write_text(json.dumps(doc))
    return files


def duet_files(tmp_path):
    """The headline's duets for TF 2.0-2.3 in both modes: eager 2.0 and 2.1 twice TF 1.14's time,
    2.2 as 2.1, 2.3 1.5x faster than 2.2; graph flat."""
    truths = {"tf2.0": 0.69, "tf2.1": 0.69, "tf2.2": 0.69, "tf2.3": 0.69 - 0.405}
    rows = [(e, TF[e], "eager", "tf.keras", t) for e, t in truths.items()]
    rows += [(e, TF[e], "graph", "tf.keras", 0.0) for e in truths]
    out = []
    for i, rec in enumerate(duet_records(rows, sd=0.02, n=4, seed=2)):
        path = tmp_path / "duets" / f"d{i}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec))
        out.append(path)
    return out


def study(tmp_path, new_env: bool):
    """TF 1.14 .. 2.2 measured on one morning; TF 2.3 (1.5x faster in eager than 2.2) on the same
    morning, or, with new_env, in the afternoon: an env added to a finished study."""
    root, files = tmp_path / "cells", []
    for env, median in STEPS.items():
        files += cells(root, env, median, "2026-11-22T09:00:00+00:00")
        files += cells(root, env, 0.005, "2026-11-22T09:00:00+00:00", mode="graph")
    later = "2026-11-22T15:00:00+00:00" if new_env else "2026-11-22T09:05:00+00:00"
    files += cells(root, "tf2.3", 0.020 / 1.5, later)
    files += cells(root, "tf2.3", 0.005, later, mode="graph")
    _, out, tables = run(tmp_path, files, duet_files=duet_files(tmp_path))
    html = tmp_path / "report.html"
    report.render(out / "tables" / "cells.csv", [tables[n] for n in NAMES],
                  out / "tables" / "processes.json", out / "tables" / "facts.json", TEMPLATE,
                  html, "xeon-2c", {"reference_env": "tf1.14"})
    return html.read_text(encoding="utf-8"), out / "tables"


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    return {flag: study(tmp_path_factory.mktemp(f"new{flag}"), flag) for flag in (False, True)}


@pytest.fixture(scope="module")
def pages(studies):
    return {flag: page for flag, (page, _) in studies.items()}


def test_section_lists_releases_newest_first_with_their_changes(pages):
    page = pages[False]
    section = page[page.index('<section id="changes">'):]
    section = section[:section.index("</section>")]
    assert "New in this study" not in section
    order = [section.index(f'id="rel-{e}"') for e in ("tf2.3", "tf2.2", "tf2.1", "tf2.0")]
    assert order == sorted(order)
    rel20 = section[section.index('id="rel-tf2.0"'):section.index('id="rel-tf1.15"')]
    assert "slower in 1" in rel20 and "2.00x the time" in rel20
    assert "1.50x as fast" in section
    # the section comes right after the answer
    assert page.index('<section id="verdict"') < page.index('<section id="changes"') \
        < min(page.index(f'<section id="{s}"') for s in ("tables", "history"))


def test_a_new_env_comes_first(pages):
    page = pages[True]
    section = page[page.index('<section id="changes">'):]
    assert section.index("New in this study") < section.index('id="rel-tf2.3"') \
        < section.index('id="rel-tf2.2"')
    assert 'id="rel-tf2.3" open' in section


def test_releases_in_duets_are_counted_from_their_rows(studies):
    page, tables = studies[False]
    part = page[page.index('id="changes-duets"'):page.index('id="changepoints"')]
    table = pd.read_csv(tables / "duets_releases.csv")
    assert len(table) == 6
    for mode in ("eager", "graph"):
        rows = table[table["mode"] == mode]
        codes = [verdicts.norm_code(v) for v in rows["verdict"]]
        words = (f"<li>{mode.capitalize()} mode, {len(rows)} pairs of consecutive versions: the later "
                 f'<span class="pos">faster</span> in {codes.count(verdicts.LEFT_FASTER)}, '
                 f'<span class="neg">slower</span> in {codes.count(verdicts.RIGHT_FASTER)}, no '
                 f"change within 1 ± 0.1 in {codes.count(verdicts.EQUIVALENT)}, undecided in "
                 f"{codes.count(verdicts.UNDECIDED)}.</li>")
        assert words in part, words
    eager = table[table["mode"] == "eager"].set_index("left_env")["verdict"]
    assert eager["tf2.3"] == verdicts.LEFT_FASTER and eager["tf2.2"] == verdicts.EQUIVALENT
    assert "tf1.14" in part and 'id="duets-releases"' in part


def test_change_points_listed_and_marked_on_history_panels(pages):
    page = pages[False]
    cps = page[page.index('id="changepoints"'):page.index('id="release-claims"')]
    assert "tf1.15 → tf2.0" in cps and "tf2.2 → tf2.3" in cps
    history = page[page.index('<section id="history"'):]
    history = history[:history.index("</section>")]
    assert "change point" in history  # the legend of a marked panel


def test_new_envs_need_a_gap():
    t = ["2026-11-22T09:00:00+00:00", "2026-11-22T09:20:00+00:00", "2026-11-22T10:00:00+00:00"]
    df = pd.DataFrame({"env": ["a", "b", "c"], "started_utc": t})
    assert releases.new_envs(df) == ["c"]  # 40 min after the last other start
    assert releases.new_envs(df.iloc[:2]) == []  # 20 min: a study run env after env


def _row(version, verdict, ratio, mode="eager", model="small", data="small", left_env=None,
         right_env="prev"):
    return {"line": "TensorFlow", "left_framework_version": version,
            "left_env": left_env or f"tf{version[:3]}", "right_env": right_env,
            "keras": "tf.keras", "left_keras": "tf.keras", "right_keras": "tf.keras",
            "mode": mode, "api": "train_on_batch", "model": model, "data": data,
            "verdict": verdict, "ratio": ratio}


F, S, E, U = verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER, verdicts.EQUIVALENT, \
    verdicts.INCONCLUSIVE


@pytest.mark.parametrize("rows,key,status", [
    ([], "2.1", "not testable here"),
    ([("2.1.4", F, 0.8), ("2.1.4", S, 1.5)], "2.1", "holds"),
    ([("2.1.4", F, 0.8), ("2.1.4", E, 1.0)], "2.1", "does not hold"),
    ([("2.1.4", F, 0.8), ("2.1.4", U, 1.1)], "2.1", "undecided"),
    ([("2.2.3", F, 0.9), ("2.2.3", E, 1.0)], "2.2", "holds"),
    ([("2.2.3", F, 0.5)], "2.2", "does not hold"),  # 2x as fast: not minor
    ([("2.2.3", E, 1.0), ("2.2.3", E, 1.0)], "2.2", "does not hold"),  # no improvement
    ([("2.2.3", F, 0.9, "graph")], "2.2", "not testable here"),  # no eager row
    ([("2.3.4", F, 0.5), ("2.3.4", E, 1.0)], "2.3", "holds"),
    ([("2.3.4", F, 0.5), ("2.3.4", S, 1.2)], "2.3", "does not hold"),
    ([("2.3.4", F, 0.5), ("2.3.4", U, 1.2)], "2.3", "undecided"),
    ([("2.1.4", S, 1.8, "graph", "large", "large")], "2.1-large", "holds"),
    ([("2.1.4", E, 1.0, "graph", "large", "large")], "2.1-large", "does not hold"),
    ([("2.1.4", S, 1.8, "graph")], "2.1-large", "not testable here"),  # small model only
])
def test_release_claims_on_known_rows(rows, key, status):
    tabs = {"adjacent_releases": pd.DataFrame([_row(*r) for r in rows])}
    words = dict(release_claims.CLAIMS)[key]
    assert release_claims.JUDGES[key](tabs, words)["status"] == status


def test_as_fast_as_any_uses_the_reference_rows_too():
    ref = {**_row("2.3.4", S, 1.3, right_env="tf1.14")}
    tabs = {"adjacent_releases": pd.DataFrame([_row("2.3.4", F, 0.5)]),
            "tf2_vs_tf1": pd.DataFrame([ref])}
    got = release_claims.judge_as_fast_as_any(tabs, "x")
    assert got["status"] == "does not hold" and "tf1.14" in got["evidence"]
