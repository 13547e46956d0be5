"""Guidance a reader can act on (driver/report/guidance.py, source_claims.py): rules per task
merged across versions, the line of code per mode, seed lines split by TF major version where
they split, and configurations that cannot exist named as such."""
import pandas as pd

from driver.report import guidance, source_claims


def _g(version, lst, ratio, mode="graph", api="train_on_batch", keras="tf.keras", env=None,
       task=None):
    task = task or ("infer" if api in ("call", "predict", "predict_on_batch") else "train")
    return {"machine": "m", "model": "small", "data": "small", "task": task, "list": lst,
            "configuration": "x", "ratio_to_fastest": ratio, "median_s": 0.01 * ratio,
            "fastest_median_s": 0.01, "env": env or f"tf{version}", "framework_version": version,
            "keras": keras, "mode": mode, "api": api, "input": "numpy", "device": "cpu"}


def _cell(version, mode="graph", api="train_on_batch", keras="tf.keras"):
    return {"machine": "m", "model": "small", "data": "small", "env": f"tf{version}",
            "framework": "tensorflow", "framework_version": version, "status": "ok",
            "keras": keras, "mode": mode, "api": api, "input": "numpy", "device": "cpu"}


def test_rules_merge_versions_and_keep_tasks_apart():
    vers = ["1.14.0", "2.1.0", "2.2.0", "2.3.0"]
    rows = [_g(v, "DO", 1.0 + i / 100) for i, v in enumerate(vers[1:])]
    rows += [_g("2.1.0", "DONT", 3.0, mode="eager"),
             _g("2.1.0", "DO", 1.0, api="call"), _g("2.1.0", "DONT", 8.0, mode="eager",
                                                    api="predict")]
    cells = pd.DataFrame([_cell(v) for v in vers] + [_cell("2.1.0", mode="eager")])
    blocks = guidance.rules(pd.DataFrame(rows), cells)
    assert [b["task"] for b in blocks] == ["Training", "Inference"]
    train = blocks[0]
    assert len(train["do"]) == 1  # three versions, one rule
    rule = train["do"][0]
    assert rule["rule"] == "graph · train_on_batch() · numpy · tf.keras"
    # measured in 1.14.0 too, where it is no DO (a table without intervals: none shown)
    assert rule["where"] == "TF 2.1.0–2.3.0" and rule["ratio"] == "1.00–1.02x"
    assert "disable_eager_execution" in rule["switch"]
    assert train["dont"][0]["where"] == "TF 2.1.0"
    assert [i["key"][3] for i in blocks[1]["do"] + blocks[1]["dont"]] == ["call", "predict"]
    assert ("graph (TF)", guidance.SWITCH[("tensorflow", "graph")]) in \
        guidance.switch_lines(blocks)


def test_rules_take_the_task_from_the_guidance_table():
    """The table's task column decides training vs inference; the API's name is not re-read."""
    rows = [_g("2.1.0", "DO", 1.0), _g("2.1.0", "DO", 1.0, api="call"),
            _g("2.1.0", "DONT", 4.0, api="custom_step", task="infer")]
    blocks = guidance.rules(pd.DataFrame(rows))
    assert [b["task"] for b in blocks] == ["Training", "Inference"]
    assert [i["key"][3] for i in blocks[1]["dont"]] == ["custom_step"]
    assert blocks[0]["dont"] == []


def test_rules_of_a_table_without_task_column_take_it_from_the_api():
    """Tables written before the task column (an earlier run's) still split by task."""
    rows = pd.DataFrame([_g("2.1.0", "DO", 1.0), _g("2.1.0", "DO", 1.0, api="predict")])
    blocks = guidance.rules(rows.drop(columns=["task"]))
    assert [b["task"] for b in blocks] == ["Training", "Inference"]


def test_versions_text():
    measured = ["1.14.0", "2.0.0", "2.1.0", "2.2.0"]
    assert guidance.versions_text(["1.14.0", "2.1.0", "2.2.0"], measured, "TF") == \
        "TF 1.14.0, 2.1.0–2.2.0"
    assert guidance.versions_text(measured, measured, "TF").endswith(
        "(every version it was measured in, 4)")


def test_seed_line_split_by_major_and_impossible_configuration():
    assert source_claims._split(["tf2.0", "tf2.1"], ["tf1.14"], ["tf1.14", "tf2.0", "tf2.1"]) \
        == "split: holds in TF 2 (tf2.0, tf2.1); does not hold in TF 1 (tf1.14)"
    assert source_claims._split(["tf2.0"], [], ["tf1.14", "tf2.0"]).endswith(
        "undecided in TF 1 (tf1.14)")
    assert source_claims._split(["tf2.0", "tf1.14"], [], ["tf1.14", "tf2.0"]) == ""
    cells = pd.DataFrame([_cell("1.14.0"), _cell("2.0.0")])
    spec = {"api": ["train_on_batch"], "input": ["numpy"], "keras": ["keras"], "tf": [1],
            "mode": ["eager"]}
    assert "graph mode only on TF 1" in source_claims.impossible_reason(spec, cells)
    possible = dict(spec, keras=["tf.keras"])
    assert source_claims.impossible_reason(possible, cells) == ""
    line = source_claims.check_line("DONT", "words", spec, {}, cells)
    assert line["status"] == "impossible"
