"""Guidance decided on intervals (driver/tables/summaries.py: guidance_table, ratio_interval;
driver/report/guidance.py: rules, merge_range, call_vs_predict): a point estimate past 2x whose
interval reaches below it is no AVOID, no configuration in both lists, version ranges merged
across versions the run cannot decide, and the call-vs-predict rule from its table."""
from pathlib import Path

import jinja2
import pandas as pd
import pytest

from driver.report import guidance
from driver.stats import verdicts
from driver.tables import summaries


def _cell(version, median, half=0.02, mode="graph", api="train_on_batch", keras="tf.keras",
          framework="tensorflow", env=None):
    """A cell whose median's CI is median * (1 -+ half)."""
    return {"machine": "m", "model": "small", "data": "small", "env": env or f"tf{version}",
            "framework": framework, "framework_version": version, "status": "ok",
            "keras": keras, "mode": mode, "api": api, "input": "numpy", "device": "cpu",
            "median_s": median, "ci_low_s": median * (1 - half),
            "ci_high_s": median * (1 + half), "cell_id": f"{mode}.{api}.{keras}"}


def _lists(table):
    return {(r["framework_version"], r["mode"]): r["list"] for r in table.to_dict("records")}


def test_avoid_is_decided_on_the_interval_not_the_point_estimate():
    cells = pd.DataFrame([
        _cell("2.1.0", 0.010),  # the fastest
        _cell("2.1.0", 0.0205, half=0.20, mode="eager"),  # 2.05x, interval well below 2x
        _cell("2.1.0", 0.0250, half=0.02, mode="run_eagerly"),  # 2.5x, interval above 2x
    ])
    table = summaries.guidance_table(cells)
    lists = _lists(table)
    assert lists[("2.1.0", "eager")] == "neither"
    assert lists[("2.1.0", "run_eagerly")] == "DONT"
    assert lists[("2.1.0", "graph")] == "DO"
    eager = table[table["mode"] == "eager"].iloc[0]
    assert eager["ratio_to_fastest"] == pytest.approx(2.05)
    assert eager["ratio_ci_low"] < 2 < eager["ratio_ci_high"]
    blocks = guidance.rules(table, cells)
    assert [i["key"][2] for i in blocks[0]["dont"]] == ["run_eagerly"]
    assert "interval" in blocks[0]["dont"][0]["ratio"]


def test_use_needs_an_interval_that_reaches_the_fastest():
    cells = pd.DataFrame([_cell("2.1.0", 0.010), _cell("2.1.0", 0.0102, mode="eager"),
                          _cell("2.1.0", 0.0130, mode="function")])
    lists = _lists(summaries.guidance_table(cells))
    assert lists[("2.1.0", "eager")] == "DO"  # 1.02x, intervals +-2 %: cannot be told apart
    assert lists[("2.1.0", "function")] == "neither"  # 1.3x: slower, not 2x


def test_no_configuration_in_both_lists():
    """eager: within the fastest's interval in 2.1 (DO), 3x in 2.2 and 2.3 (DONT): one rule,
    in the list of its newest version, 2.1 named as the exception."""
    cells = pd.DataFrame([
        _cell("2.1.0", 0.010), _cell("2.1.0", 0.010, mode="eager"),
        _cell("2.2.0", 0.010), _cell("2.2.0", 0.030, mode="eager"),
        _cell("2.3.0", 0.010), _cell("2.3.0", 0.030, mode="eager")])
    block = guidance.rules(summaries.guidance_table(cells), cells)[0]
    do = {i["key"] for i in block["do"]}
    dont = {i["key"] for i in block["dont"]}
    assert not do & dont
    eager = [i for i in block["dont"] if i["key"][2] == "eager"]
    assert len(eager) == 1 and eager[0]["where"] == "TF 2.2.0–2.3.0"
    assert eager[0]["exceptions"] and eager[0]["exceptions"][0].startswith("2.1.0: 1.00x")


def test_range_merges_across_an_undecided_version():
    """3x in 2.1 and 2.3, 2.05x with a wide interval in 2.2: one range 2.1-2.3; 1.5x (decided
    under 2x) in 2.4: the exception."""
    cells = [_cell(v, 0.010) for v in ("2.1.0", "2.2.0", "2.3.0", "2.4.0")]
    cells += [_cell("2.1.0", 0.030, mode="eager"), _cell("2.2.0", 0.0205, half=0.2, mode="eager"),
              _cell("2.3.0", 0.030, mode="eager"), _cell("2.4.0", 0.015, mode="eager")]
    cells = pd.DataFrame(cells)
    block = guidance.rules(summaries.guidance_table(cells), cells)[0]
    (eager,) = [i for i in block["dont"] if i["key"][2] == "eager"]
    assert eager["where"] == "TF 2.1.0–2.3.0"
    assert [e.split(":")[0] for e in eager["exceptions"]] == ["2.4.0"]


def test_merge_range():
    got = guidance.merge_range({"2.1.0": "in", "2.10.0": "in", "2.2.0": "open", "2.9.0": "out",
                                "2.11.0": "open"})
    assert (got["first"], got["last"]) == ("2.1.0", "2.10.0")  # numeric order, 2.10 after 2.9
    assert got["inside"] == ["2.1.0", "2.2.0", "2.10.0"] and got["exceptions"] == ["2.9.0"]
    assert not got["all"]


def test_tf_today_scope_takes_tf_216_on_against_its_own_fastest():
    cells = pd.DataFrame([
        _cell("0.10.2", 0.005, framework="jax", keras="keras3", mode="eager", env="keras3-jax"),
        _cell("2.15.1", 0.008), _cell("2.16.2", 0.010, keras="tf_keras"),
        _cell("2.21.0", 0.011, keras="keras3", mode="eager")])
    today = summaries.guidance_table(cells, scope="tf_today")
    assert set(today["framework_version"]) == {"2.16.2", "2.21.0"}
    assert today["fastest_median_s"].eq(0.010).all()
    with pytest.raises(ValueError, match="scope"):
        summaries.guidance_table(cells, scope="today")
    rule = guidance.rules(today, cells)[0]["do"][0]
    assert "TF_USE_LEGACY_KERAS=1" in rule["switch"]  # tf_keras on TF >= 2.16
    assert "disable_eager_execution" in rule["switch"]


def _cvp(version, mode, ratio, verdict, left="call", right="predict"):
    return {"framework_version": version, "mode": mode, "left_api": left, "right_api": right,
            "ratio": ratio, "ratio_ci_low": ratio * 0.95, "ratio_ci_high": ratio * 1.05,
            "verdict": verdict}


def test_call_vs_predict_rule_present_with_rows_and_absent_without():
    assert guidance.call_vs_predict(pd.DataFrame()) is None
    assert guidance.call_vs_predict(None) is None
    table = pd.DataFrame([
        _cvp("1.14.0", "eager", 1.13, verdicts.RIGHT_FASTER),  # predict faster: the exception
        _cvp("2.0.4", "eager", 0.15, verdicts.LEFT_FASTER),
        _cvp("2.10.1", "eager", 1 / 8, verdicts.INCONCLUSIVE),  # undecided: merged into the range
        _cvp("2.21.0", "eager", 0.10, verdicts.LEFT_FASTER),
        _cvp("2.15.1", "graph", 0.75, verdicts.LEFT_FASTER)])
    rule = guidance.call_vs_predict(table)
    eager = rule["modes"][0]
    assert eager["mode"] == "eager" and eager["where"] == "TF 2.0.4–2.21.0"
    assert eager["ratio"].startswith("6.67–10.00x")  # predict / call
    assert eager["exceptions"] == ["1.14.0: predict() 1.13x as fast"]
    assert [m["mode"] for m in rule["modes"]] == ["eager", "graph"]
    # one machine: unnamed, but the key is there (the guidance template reads `m.machine` under
    # StrictUndefined; without it a one-machine run whose call beat predict() failed to render)
    assert [m["machine"] for m in rule["modes"]] == ["", ""]
    template = (Path(__file__).resolve().parents[3] / "report" / "sections"
                / "_guidance.html.j2").read_text()
    line = next(t for t in template.splitlines() if "guidance.predict.modes" in t)
    jinja = jinja2.Environment(undefined=jinja2.StrictUndefined)
    html = jinja.from_string(line).render(guidance={"predict": rule})
    assert "in eager mode: 6.67" in html and "<b>" not in html
    # the other side order gives the same rule
    flipped = pd.DataFrame([_cvp("2.0.4", "eager", 1 / 0.15, verdicts.RIGHT_FASTER, "predict", "call")])
    assert guidance.call_vs_predict(flipped)["modes"][0]["ratio"].startswith("6.67x")
    # no call-vs-predict pair: no rule
    assert guidance.call_vs_predict(pd.DataFrame([_cvp("2.0.4", "eager", 0.5, verdicts.LEFT_FASTER,
                                                       "call", "predict_on_batch")])) is None


def test_call_vs_predict_of_two_machines_is_each_machines_own():
    """Two machines of one table: each machine's versions and ratios, named (the old rule let
    the second machine's rows overwrite the first's, unnamed)."""
    amd = [dict(_cvp("2.0.4", "eager", 1 / 6.2, verdicts.LEFT_FASTER), machine="amd-epyc-2c-a"),
           dict(_cvp("2.15.1", "graph", 1 / 1.03, verdicts.INCONCLUSIVE), machine="amd-epyc-2c-a")]
    intel = [dict(_cvp("2.0.4", "eager", 1 / 10.9, verdicts.LEFT_FASTER), machine="intel-xeon-2c-b"),
             dict(_cvp("2.15.1", "graph", 1 / 1.3, verdicts.LEFT_FASTER), machine="intel-xeon-2c-b")]
    rule = guidance.call_vs_predict(pd.DataFrame(amd + intel),
                                    {"amd-epyc-2c-a": "2-core AMD EPYC",
                                     "intel-xeon-2c-b": "2-core Intel Xeon"})
    got = [(m["machine"], m["mode"], m["ratio"][:5]) for m in rule["modes"]]
    assert got == [("2-core AMD EPYC", "eager", "6.20x"), ("2-core Intel Xeon", "eager", "10.90"),
                   ("2-core Intel Xeon", "graph", "1.30x")]
