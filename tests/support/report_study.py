"""A small synthetic study for the report tests: cell files of three TF envs (three processes a
cell), one failed cell whose reason and log tail carry `<script>alert(1)</script>`, and the real
aggregation on them. `synthetic_study` returns the keyword arguments of `render.render`;
`render_synthetic` renders the page once (with a selfbench file) for the page tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from driver.report import render as report
from driver.tables import aggregate as tab
from driver.tables.registry import NAMES

REPO = Path(__file__).resolve().parents[2]
# the sections every study has (an OPTIONAL one, the own model's answer, only some)
SECTION_IDS = [m.ID for m in report.MODULES if not getattr(m, "OPTIONAL", False)]
TEMPLATE = REPO / "report" / "template.html.j2"
XSS = "<script>alert(1)</script>"
ENVS = {"tf1.14": "1.14.0", "tf2.3": "2.3.4", "tf2.21": "2.21.0"}
MACHINE = "xeon-test"
CONFIG = {"envs": "cpu", "reference_env": "tf1.14", "repeats": 1, "noisy_threshold": 0.1,
          "cell_timeout_s": 900, "cell_memory_mb": 16000,
          "stop": {"rule": "adaptive", "target_rel": 0.01, "min_samples": 30,
                   "max_samples": 5000, "budget_s": 6, "level": 0.95},
          "grids": [{"name": "factors", "pairs": [["small", "small"]]}]}
MACHINE_FACTS = {"cpu_model": "Intel(R) Xeon(R) Test CPU <b>bold</b>", "cpu_count": 2,
                 "cpu_flags": ["avx2", "fma"], "gpus": None, "hostname": "vm",
                 "mem_total_gb": 23.5, "platform": "Linux-test"}


def _axes(keras, mode, api, inp, model="small", data="small", device="cpu"):
    return {"model": model, "data": data, "keras": keras, "mode": mode, "api": api,
            "input": inp, "device": device}


def _cell_id(axes):
    slug = {"tf.keras": "tfkeras", "tf.python.keras": "tfpykeras"}.get(axes["keras"],
                                                                       axes["keras"])
    return "%s-%s.%s.%s.%s.%s.%s" % (axes["model"], axes["data"], slug, axes["mode"],
                                     axes["api"], axes["input"], axes["device"])


def synthetic_study(root: Path, n_samples=60, big_cell_samples=0):
    """Write a small study: cell files, cells.csv and every table. Returns the render kwargs."""
    rng = np.random.default_rng(7)
    records = []
    for env, version in ENVS.items():
        flavours = ["keras", "tf.keras"] if env == "tf1.14" else ["tf.keras", "tf.python.keras"]
        for keras in flavours:
            for mode in ("eager", "graph"):
                for api in ("train_on_batch", "fit"):
                    for inp in ("numpy", "tfdata"):
                        axes = _axes(keras, mode, api, inp)
                        base = 0.020 * (1.3 if env != "tf1.14" else 1.0) * (
                            0.8 if mode == "graph" else 1.0) * (2.0 if api == "fit" else 1.0) * (
                            15 if keras == "tf.python.keras" else 1.0)
                        n = n_samples
                        samples = base * rng.lognormal(0.0, 0.05, n)
                        if env == "tf2.21" and keras == "tf.keras" and mode == "eager" \
                                and api == "train_on_batch" and inp == "numpy":
                            samples = samples * np.linspace(1.0, 1.5, n)  # a rising stem plot
                            if big_cell_samples:
                                samples = base * rng.lognormal(0, 0.05, big_cell_samples) * \
                                    np.linspace(1.0, 1.5, big_cell_samples)
                        # three fresh processes per cell: verdicts come from processes
                        for rep in range(3):
                            rec = _record(env, version, axes, "ok",
                                          samples=samples * (1.0 + 0.01 * (rep - 1)))
                            rec["repeat"] = rep
                            records.append(rec)
    # fit over an epoch (50 steps per call), tf.keras in every env: 1.05x train_on_batch's step
    for env, version in ENVS.items():
        for mode in ("eager", "graph"):
            for inp in ("numpy", "tfdata"):
                base = 0.021 * (1.3 if env != "tf1.14" else 1.0) * (0.8 if mode == "graph"
                                                                    else 1.0)
                samples = base * rng.lognormal(0.0, 0.05, 6)
                for rep in range(3):
                    rec = _record(env, version, _axes("tf.keras", mode, "fit_epoch", inp), "ok",
                                  samples=samples * (1.0 + 0.01 * (rep - 1)))
                    rec.update(repeat=rep, steps_per_call=50)
                    records.append(rec)
    records.append(_record("tf2.21", "2.21.0", _axes("keras3", "eager", "fit", "numpy"), "failed",
                           reason="crashed: " + XSS, log_tail="Traceback\n  " + XSS + "\nEOF"))
    records.append(_record("tf2.21", "2.21.0", _axes("keras3", "graph", "fit", "numpy"),
                           "skipped", reason="Keras 3 has no v1 graph mode & <no> graph"))
    cell_dir = root / "results" / "cells" / MACHINE
    paths = []
    for rec in records:
        path = cell_dir / rec["env"] / ("%s.r%d.json" % (rec["cell_id"], rec["repeat"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec))
        paths.append(str(path))
    return aggregate(root, paths)


def aggregate(root: Path, paths):
    """The real aggregation on cell files; returns the render kwargs for what it wrote."""
    tables_dir = root / "results" / "tables"
    result = tab.tabulate(paths, "tf1.14", 0.1, 0.95, config=CONFIG)
    tables = {name: str(tables_dir / ("%s.csv" % name)) for name in NAMES}
    tab.write_outputs(result, tables_dir / "cells.csv", tables, root / "results" / "study.xlsx",
                      tables_dir / "processes.json", tables_dir / "facts.json")
    return {"cells_csv": str(tables_dir / "cells.csv"), "tables": list(tables.values()),
            "processes_json": str(tables_dir / "processes.json"),
            "facts_json": str(tables_dir / "facts.json"), "template": str(TEMPLATE),
            "machine": MACHINE, "config": CONFIG}


def _record(env, version, axes, status, samples=None, reason="", log_tail=None):
    rec = dict(axes, schema_version=1, cell_id=_cell_id(axes), env=env, machine=MACHINE,
               repeat=0, status=status, reason=reason, framework="tensorflow",
               framework_version=version, python="3.7.17" if env == "tf1.14" else "3.11.9",
               started_utc="2026-05-0%dT10:00:00+00:00" % (1 + len(env) % 3),
               flops_per_step=1033777152,
               provenance={"machine": MACHINE_FACTS,
                           "env": {"python": "3.7.17", "python_executable": "/x/%s/bin/python"
                                   % env, "spec_hash": "abc123" + env, "install_s": 42.0,
                                   "spec_file": "envs/%s.yaml" % env,
                                   "package_sources": {
                                       "find_links": ["/opt/wheels"], "extra_index_urls": [],
                                       "packages": ["tensorflow"],
                                       "skipped": ["extra_index_urls https://idx.example/simple/:"
                                                   " does not answer (dns)"]},
                                   "resolved": {"tensorflow": version + "+local"},
                                   "packages": {"tensorflow": version, "numpy": "1.21.6",
                                                "evil<pkg>": "<1.0>"}},
                           "load_before": [0.5, 0.4, 0.3], "load_after": [0.9, 0.5, 0.3]})
    if samples is not None:
        s = np.asarray(samples)
        rec.update(stopped_by="count", rule={"kind": "fixed", "iterations": len(s)},
                   python_executable="/x/bin/python")
        lo, hi = np.percentile(s, [40, 60])
        drift = bool(s[-len(s) // 4:].mean() / s[: len(s) // 4].mean() > 1.1)
        rec.update(samples_s=s.tolist(), first_call_s=float(s[0] * 30),
                   summary={"median_s": float(np.median(s)), "ci_low_s": float(lo),
                            "ci_high_s": float(hi), "noisy": False, "drift": drift,
                            "drift_ratio": float(np.median(s[-len(s) // 4:]) /
                                                 np.median(s[: len(s) // 4])),
                            "n": len(s)})
    if log_tail is not None:
        rec["log_tail"] = log_tail
    return rec


def render_synthetic(root: Path):
    """The synthetic study rendered once, with a selfbench file; what the page tests read."""
    kwargs = synthetic_study(root)
    out = root / "results" / "report.html"
    selfbench = root / "results" / "selfbench.json"
    selfbench.write_text(json.dumps({"overhead_rel": 3.2e-5, "ci_rel_median": 0.011,
                                     "spread_ours": 0.02, "spread_seed": 0.11,
                                     "timed_share": 0.41, "note": "<i>synthetic</i>"}))
    info = report.render(out_html=str(out), selfbench_path=str(selfbench), **kwargs)
    return {"root": root, "html": out.read_text(encoding="utf-8"), "path": out, "info": info,
            "kwargs": kwargs}
