"""The "What more time would decide" section: one sentence per machine, recomputed here from that
machine's rows of a planted not_decided table (two machines whose rows differ, so a sentence over
both machines' rows, or over the other's, fails), the continuation command shown per machine."""
import math
from types import SimpleNamespace

import pandas as pd

from driver.report.sections import not_decided as section
from driver.tables.not_decided import COLUMNS, NOT_REACHED, STILL_OPEN


def row(machine, env, state, minutes, replicates, command=None):
    return dict(dict.fromkeys(COLUMNS), machine=machine, paired_table="duets", env=env,
                cell_id="small-small.tf_keras.graph.train_on_batch.numpy.cpu", state=state,
                n=4 if state == NOT_REACHED else 10, n_max=10, ratio=1.05, replicates=replicates,
                minutes=minutes, command=command)


class Data(SimpleNamespace):
    def table(self, name):
        return self.tables.get(name, pd.DataFrame())


def test_one_sentence_per_machine_from_its_own_rows():
    cmd = 'make study ARGS="--config time_budget_min=61"'
    rows = [row("amd-epyc-2c-aaaa", "tf2.1", NOT_REACHED, 1.5, 6, cmd),
            row("amd-epyc-2c-aaaa", "tf2.2", NOT_REACHED, 2.0, 6, cmd),
            row("amd-epyc-2c-aaaa", "tf2.3", STILL_OPEN, 4.0, 30),
            row("intel-xeon-2c-bbbb", "tf2.4", STILL_OPEN, math.nan, None),
            dict(row("intel-xeon-2c-bbbb", None, NOT_REACHED, 1.6, 21), paired_table="cells",
                 cell_id="round 0"),
            dict(row("intel-xeon-2c-bbbb", None, NOT_REACHED, 8.4, 159), paired_table="cells",
                 cell_id="round 1")]
    data = Data(tables={"not_decided": pd.DataFrame(rows, columns=COLUMNS),
                        "duets": pd.DataFrame([{"x": 1}])},
                machine_facts={"amd-epyc-2c-aaaa": {"cpu_model": "AMD EPYC"},
                               "intel-xeon-2c-bbbb": {"cpu_model": "Intel Xeon"}})
    built = {m["name"]: m for m in section.build(data)["machines"]}
    amd, intel = built["2-core AMD EPYC"], built["2-core Intel Xeon"]
    assert amd["sentence"] == (
        "On the 2-core AMD EPYC, 3 paired rows are undecided: 2 open after the first look whose "
        "second look did not fit the time budget (about 4 min of duets would reach them); 1 still "
        "open after their second look; at their measured spread, 1 of them would take about 4 "
        "min more.")
    assert amd["commands"] == [cmd] and len(amd["rows"]) == 3
    # the cells' round not run is said apart, never counted as a paired row
    assert intel["sentence"] == ("On the 2-core Intel Xeon, 1 paired row is undecided: 1 still "
                                 "open after their second look. The cells' 21 processes of "
                                 "round 0, round 1 (159 processes) did not fit either (about 10 "
                                 "min).")
    assert intel["commands"] == [] and len(intel["rows"]) == 3


def test_a_run_with_every_row_decided_says_so():
    data = Data(tables={"not_decided": pd.DataFrame(columns=COLUMNS),
                        "duets": pd.DataFrame([{"x": 1}])}, machine_facts={})
    assert section.build(data) == {"machines": [], "any_paired": True}
    assert section.sentence("2-core AMD EPYC", []) == (
        "On the 2-core AMD EPYC, every paired row was decided.")


def test_releases_are_said_apart_from_the_paired_rows():
    rel = [dict(row("m", "tf2.2", NOT_REACHED, 1.0, 6), paired_table="duets_releases",
                cell_id="eager against tf2.1"),
           dict(row("m", "tf2.3", STILL_OPEN, math.nan, 12), paired_table="duets_releases",
                cell_id="eager against tf2.2"),
           dict(row("m", "tf2.4", STILL_OPEN, math.nan, 20), paired_table="duets_releases",
                cell_id="eager against tf2.3")]
    assert section.sentence("2-core AMD EPYC", rel) == (
        "On the 2-core AMD EPYC, every paired row was decided. Undecided releases: 1 not "
        "reached; 2 open after their rows' second look.")
    one = section.sentence("2-core AMD EPYC", [row("m", "tf2.9", STILL_OPEN, 1.0, 4)] + rel[:1])
    assert one.startswith("On the 2-core AMD EPYC, 1 paired row is undecided: 1 still open")
    assert one.endswith("Undecided releases: 1 not reached.")
