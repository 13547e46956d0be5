"""Publishing a study with two machine keys, as a maintainer with a home folder would: the golden
fixtures' real cell files under two keys with duets on both (the second machine's duets three
times as noisy), the results folder inside a checkout inside a planted home directory whose name
is a user's. `make publish` -> `make republish` in a temporary folder:

- no absolute path of the home directory or the checkout is left in run.json or in any member
  of the archives (paths relative to the checkout, `~` for home), versions and hashes kept;
- both machine keys are in docs/data and in every derived file; tables/machines_compared.csv
  holds every headline row of both machines with its interaction; the report's "Machines
  compared" shows them; PROVENANCE.md names each run's commit, machine and wall time;
- which run of a key the derived files show: shown.json, else the fullest study.

publish.py and republish.py share driver/study/publishing.py and republish never imports publish.
"""
import ast
import json
import shutil
import tarfile
from pathlib import Path

import pandas as pd
import publish
import pytest
import republish
from duetfiles import duet_records

from driver.report import readme_block
from driver.study import layout, publishing

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "cells" / "amd-epyc-2c"
QUIET, NOISY = "intel-quiet-2c-0000aaaa", "amd-noisy-2c-0000bbbb"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
USER = "alice-planted-user"
# (env, version, mode, keras, true log ratio): the machine changes the tf2.1 graph row only
ROWS = [("tf2.0", "2.0.4", "graph", "tf.keras", 0.10), ("tf2.1", "2.1.4", "graph", "tf.keras", 0.10),
        ("tf2.0", "2.0.4", "eager", "tf.keras", 1.40), ("tf2.1", "2.1.4", "eager", "tf.keras", 1.40)]
SHIFT = {("tf2.1", "graph"): 0.30}


def _plant(root: Path) -> dict:
    """home/<USER>/src/tfspeed/results with the fixture's cells under QUIET and NOISY (their
    paths planted under that home and checkout) and duets of both."""
    home = root / "home" / USER
    checkout = home / "src" / "tfspeed"
    results = checkout / "results"
    for key in (QUIET, NOISY):
        for path in sorted(FIXTURE.rglob("*.json")):
            text = path.read_text().replace("/work/main", str(checkout)).replace(
                "/root", str(home))
            doc = json.loads(text)
            doc["machine"] = key
            doc.setdefault("provenance", {})["log_tail"] = (
                'Traceback:\n  File "%s/scripts/run_cell.py", line 1' % checkout)
            target = results / "cells" / key / path.relative_to(FIXTURE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(doc, indent=1))
    for key, sd, seed in ((QUIET, 0.015, 1), (NOISY, 0.05, 2)):
        rows = [(e, v, m, k, t + (SHIFT.get((e, m), 0.0) if key == NOISY else 0.0))
                for e, v, m, k, t in ROWS]
        for rec in duet_records(rows, sd=sd, n=6, seed=seed, machine=key):
            from tfspeed.cells import cell_id

            rec["started_utc"], rec["wall_s"] = "2026-11-22T15:00:00Z", 7.0
            rec["worker_python"] = "%s/.envs/%s/bin/python" % (checkout, rec["env"])
            path = results / layout.duet_path(key, rec["env"], cell_id(rec["cell"]),
                                              rec["replicate"]).removeprefix("results/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(rec))
    config = checkout / "my-config.yaml"
    config.write_text("env_root: %s/.envs\nprevious_results: %s/old\n" % (checkout, home))
    return {"home": home, "checkout": checkout, "results": results, "config": config}


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    root = tmp_path_factory.mktemp("two-machines")
    planted = _plant(root)
    docs = root / "site" / "docs"
    readme = root / "site" / "README.md"  # the checkout's README, beside docs/, its block stale
    readme.parent.mkdir(parents=True)
    readme.write_text("# tfspeed\n\n%s\nstale\n%s\n\nMore.\n" % (readme_block.BEGIN,
                                                                 readme_block.END))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(planted["home"]))
        runs = publish.publish(planted["results"], docs, commit=COMMIT,
                               config_path=planted["config"])
    return dict(planted, docs=docs, runs=runs, readme=readme)


def _texts(docs: Path):
    """(name, text) of every run.json and every member of every published archive."""
    for path in sorted((docs / "data").rglob(publishing.RUN_JSON)):
        yield str(path), path.read_text(encoding="utf-8")
        with tarfile.open(path.parent / publishing.ARCHIVE, "r:xz") as tar:
            for member in tar.getmembers():
                with tar.extractfile(member) as handle:
                    yield "%s:%s" % (path.parent.name, member.name), handle.read().decode()


def test_no_home_or_checkout_path_is_published(two):
    home, checkout = str(two["home"]), str(two["checkout"])
    seen = 0
    for name, text in _texts(two["docs"]):
        seen += 1
        assert home not in text and USER not in text, name
        assert checkout not in text, name
    assert seen > 2 * len(list(FIXTURE.rglob("*.json")))
    run = json.loads(next((two["docs"] / "data" / QUIET).rglob("run.json")).read_text())
    assert run["config"]["env_root"] == ".envs" and run["config"]["previous_results"] == "~/old"
    quiet = next(r for r in two["runs"] if r["machine"] == QUIET)
    with tarfile.open(Path(quiet["path"]) / publishing.ARCHIVE) as tar:
        name = next(n for n in tar.getnames() if n.startswith("cells/") and "tf1.14" in n)
        doc = json.load(tar.extractfile(name))
    env = doc["provenance"]["env"]
    assert env["python_executable"].startswith(".envs/tf1.14-") and \
        env["base_interpreter"].startswith("~/.pyenv/versions/3.7.16/")
    assert env["framework_version"] == "1.14.0" and env["spec_hash"] == "fcba14f7b1882701"
    assert doc["provenance"]["log_tail"].endswith('File "scripts/run_cell.py", line 1')
    original = json.loads((FIXTURE / Path(name).relative_to("cells/%s" % QUIET)).read_text())
    assert doc["samples_s"] == original["samples_s"]  # every measured figure as it was


def test_roots_rewrite_only_whole_paths():
    roots = publishing.Roots(["/home/bob/tfspeed"], "/home/bob")
    assert roots.text("/home/bob/tfspeed/.envs/x/bin/python") == ".envs/x/bin/python"
    assert roots.text("/home/bob/.pyenv/v/bin/python") == "~/.pyenv/v/bin/python"
    assert roots.text("--dir=/home/bob/tfspeed") == "--dir=."
    assert roots.text("/home/bobby/x /srv/home/bob/y") == "/home/bobby/x /srv/home/bob/y"
    assert publishing.Roots([], "/home").pairs == []  # never a shared folder
    text = json.dumps({"/home/bob/k": ["a\n/home/bob/tfspeed/f.py", float("nan")]}, indent=1)
    new = roots.member("m.json", text.encode()).decode()
    assert json.loads(new)["~/k"][0] == "a\nf.py" and "NaN" in new


def test_an_already_published_run_gets_relative_paths_and_its_checksum(tmp_path):
    src = next((REPO / "tests" / "fixtures" / "cells" / "amd-epyc-2c").rglob("*.json"))
    results = tmp_path / "results"
    target = results / "cells" / "k" / src.parent.name / src.name
    target.parent.mkdir(parents=True)
    target.write_text(src.read_text())
    docs = tmp_path / "docs"
    run = publish.publish(results, docs, commit=COMMIT, regenerate=False,
                          roots=publishing.Roots([]))[0]
    folder = Path(run["path"])
    assert "/work/main/" in tarfile.open(folder / publishing.ARCHIVE).extractfile(
        "cells/k/%s/%s" % (src.parent.name, src.name)).read().decode()
    assert publish.relative_paths(folder, publishing.Roots(["/work/main"], "/root"))
    doc = json.loads((folder / publishing.RUN_JSON).read_text())
    assert doc["archive"]["sha256"] == publishing.sha256(folder / publishing.ARCHIVE)
    names = republish.unpack(dict(doc, path=str(folder)), tmp_path / "out")  # checksum holds
    text = (tmp_path / "out" / names[0]).read_text()
    assert "/work/main" not in text and "/root/" not in text
    assert ".envs/%s-" % src.parent.name in text
    assert not publish.relative_paths(folder, publishing.Roots(["/work/main"], "/root"))


def test_both_machines_and_the_interaction_in_every_output(two):
    docs = two["docs"]
    assert sorted(p.name for p in (docs / "data").iterdir() if p.is_dir()) == sorted(
        [NOISY, QUIET])
    table = pd.read_csv(docs / "tables" / "machines_compared.csv")
    duets = pd.read_csv(docs / "tables" / "duets.csv")
    assert len(table) == len(ROWS) == len(duets) // 2
    assert set(table["left_machine"]) == {NOISY} and set(table["right_machine"]) == {QUIET}
    assert table["interaction"].notna().all() and table["interaction_ci_low"].notna().all()
    changed = table[(table["env"] == "tf2.1") & (table["mode"] == "graph")]
    assert list(changed["machine_effect"]) == ["differs"]
    assert changed["interaction_ci_low"].iloc[0] > 1
    for side, key in (("left", NOISY), ("right", QUIET)):  # each machine's own row of duets
        own = duets[duets["machine"] == key].set_index(["env", "cell_id"])
        for _, r in table.iterrows():
            assert r[f"{side}_ratio_ci_low"] == pytest.approx(
                own.loc[(r["env"], r["cell_id"]), "ratio_ci_low"])
    html = (docs / "index.html").read_text()
    section = html[html.index('<section id="machines">'):]
    section = section[:section.index("</section>")]
    assert "interaction (%s / %s)" % (NOISY, QUIET) in section
    assert "No combined ratio over the machines" in section
    note = (docs / "PROVENANCE.md").read_text()
    for run in two["runs"]:
        assert "data/%s/%s/run.json" % (run["machine"], run["run_id"]) in note
        assert COMMIT[:12] in note
    assert republish.check(docs) == []


def test_publish_writes_the_readme_block_its_tests_check(two):
    """`make publish` leaves a checkout whose tests pass: the README's answer block is what the
    published tables give (scripts/readme_answer.py --check), every figure of it true of those
    tables (tests/support/answer_check.py), both machines named in plain words, no key."""
    import json

    import readme_answer
    from answer_check import check, compact_entries, plain_names

    docs, readme = two["docs"], two["readme"]
    text = readme.read_text(encoding="utf-8")
    assert "stale" not in text and text.startswith("# tfspeed\n") and text.endswith("More.\n")
    assert readme_answer.main(["--docs", str(docs), "--readme", str(readme), "--check"]) == 0
    tables = docs / "tables"
    duets = pd.read_csv(tables / "duets.csv")
    cvp = pd.read_csv(tables / "call_vs_predict.csv") \
        if (tables / "call_vs_predict.csv").is_file() else None
    tf2 = pd.read_csv(tables / "tf2_vs_tf1.csv")
    facts = json.loads((tables / "facts.json").read_text())
    names = plain_names(facts.get("machines") or {}, [QUIET, NOISY])
    block = readme_block.current(text).splitlines()
    entries = compact_entries(block, names)
    assert entries and {e["who"].partition(" (")[0] for e in entries if e["who"]} \
        >= set(names.values())
    assert check(entries, duets, cvp, 0.10, names, tf2=tf2) == []
    assert QUIET not in "\n".join(block) and NOISY not in "\n".join(block)
    assert publish.write_readme(docs, readme) is False  # published again: nothing to write
    # the report's title and header name each machine in plain words, not one key and commit
    import re

    html = (docs / "index.html").read_text(encoding="utf-8")
    title = re.search(r"<title>(.*?)</title>", html).group(1)
    stamp = re.search(r'<span class="stamp">(.*?)</span>', html).group(1)
    for name in names.values():
        assert name in title and name in stamp
    assert QUIET not in title + stamp and NOISY not in title + stamp


def test_which_run_a_key_shows(tmp_path):
    data = tmp_path / "data"

    def run(run_id, ended, grids):
        folder = data / "k" / run_id
        folder.mkdir(parents=True)
        (folder / publishing.ARCHIVE).write_bytes(b"")
        doc = {"machine": "k", "run_id": run_id, "ended_utc": ended,
               "config": {"grids": [{"name": g} for g in grids]}}
        (folder / publishing.RUN_JSON).write_text(json.dumps(doc))

    run("2026-01-01-aaaaaaa", "2026-01-01T10:00:00Z", ["factors", "history", "matmul"])
    run("2026-01-01-aaaaaaa-2", "2026-01-01T12:00:00Z", ["history"])  # a preset, newer
    run("2026-01-02-bbbbbbb", "2026-01-02T10:00:00Z", ["factors", "history", "matmul"])
    shown = republish.shown_per_machine(republish.find_runs(data))
    assert [r["run_id"] for r in shown] == ["2026-01-02-bbbbbbb"]  # the newest full study
    shutil.rmtree(data / "k" / "2026-01-02-bbbbbbb")
    shown = republish.shown_per_machine(republish.find_runs(data))[0]
    assert shown["run_id"] == "2026-01-01-aaaaaaa" and "2026-01-01-aaaaaaa-2" in shown["shown_why"]
    assert publish.main(["--docs", str(tmp_path), "--show", "2026-01-01-aaaaaaa-2", "--why",
                         "the headline preset", "--no-regenerate"]) == 0
    shown = republish.shown_per_machine(republish.find_runs(data))[0]
    assert shown["run_id"] == "2026-01-01-aaaaaaa-2" and "the headline preset" in \
        shown["shown_why"]
    (data / "k" / publishing.SHOWN).write_text(json.dumps({"run": "2026-09-09-none"}))
    with pytest.raises(republish.RepublishError, match="shown.json names run '2026-09-09-none'"):
        republish.shown_per_machine(republish.find_runs(data))
    assert publish.main(["--docs", str(tmp_path), "--show", "nope", "--no-regenerate"]) == 1


def test_publish_and_republish_share_a_module_not_each_other():
    for script, other in (("republish.py", "publish"), ("publish.py", "republish")):
        tree = ast.parse((REPO / "scripts" / script).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "driver.study.publishing" in imported, script
        if script == "republish.py":
            assert other not in imported  # one way only: publish -> republish


def test_the_published_data_hold_two_machines_and_no_home_path():
    runs = republish.find_runs(REPO / "docs" / "data")
    if not runs:
        pytest.skip("docs/data holds no run")
    assert len({r["machine"] for r in runs}) >= 2
    homes = ("/root/", "/home/", "/Users/", '"/root"', str(REPO) + "/")
    for name, text in _texts(REPO / "docs"):
        assert not [h for h in homes if h in text], name
    shown = {r["machine"]: r for r in republish.shown_per_machine(runs)}
    for run in shown.values():  # the default study, not a preset, for every key
        assert publishing.breadth(run) == max(publishing.breadth(r) for r in runs
                                              if r["machine"] == run["machine"])
