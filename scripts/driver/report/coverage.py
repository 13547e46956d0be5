"""What the study measured and what it did not, and why: factors, model and data sizes, devices,
versions. From cells.csv, the machines' facts and the config; never a guess about a cell file."""
from collections import Counter

import numpy as np
import pandas as pd

from driver.report.fmt import col, records, text, version_key
from driver.study import layout
from tfspeed import cells as tfcells
from tfspeed import models as tfmodels

# Versions the source study used that no env can install, and why (docs/reference/cells.md, "What
# could not be installed").
NOT_INSTALLABLE = [
    ("TensorFlow 2.0.0b1 (seed 001: 2.0.0-beta1 vs 2.0.0 on CPU)",
     "not installable: PyPI holds no files for TensorFlow pre-releases before 2.6.0rc0"),
]

SEED_GPU = "GTX 1070"


def _configured_pairs(config: dict) -> set:
    pairs = set()
    for grid in (config or {}).get("grids") or []:
        for pair in grid.get("pairs") or []:
            if isinstance(pair, (list, tuple)) and len(pair) == 2:
                pairs.add((text(pair[0]), text(pair[1])))
    return pairs


def _list(counter: Counter) -> str:
    return ", ".join(f"{k} ({n})" for k, n in counter.items()) or "none"


def coverage(cells: pd.DataFrame, machines: dict, config: dict) -> dict:
    """Rows {what, measured, missing: [(value, why)]}, and a one-line summary for the top."""
    status = col(cells, "status").map(text)
    ok = cells[status == "ok"] if len(cells) else cells
    rows = []

    def count(axis, frame=ok):
        return Counter(col(frame, axis).map(text).dropna())

    # Versions: every TF env with its ok cells; envs that never ran ok; what cannot be installed.
    per_env = Counter()
    versions = {}
    for r in records(cells):
        env = text(r.get("env"))
        versions.setdefault(env, (text(r.get("framework")), text(r.get("framework_version"))))
        if text(r.get("status")) == "ok" and not layout.is_twin(text(r.get("machine"))):
            per_env[env] += 1  # the twin keys' cells are copies of the A/A check, not versions
    tf_envs = sorted((e for e, (fw, _) in versions.items() if fw in ("tensorflow", "")),
                     key=lambda e: version_key(versions[e][1] or e))
    ok_counts = [per_env[e] for e in tf_envs if per_env[e]]
    missing = [(e, "no cell ran ok (see Failed cells)") for e in tf_envs if not per_env[e]]
    missing += NOT_INSTALLABLE
    spread = (f"; {min(ok_counts)}–{max(ok_counts)} ok cells per version, median "
              f"{np.median(ok_counts):g}" if ok_counts else "")
    rows.append({"what": "TensorFlow versions",
                 "measured": ", ".join(versions[e][1] or e for e in tf_envs if per_env[e])
                 + spread, "missing": missing})
    others = sorted({f"{fw} {v}" for e, (fw, v) in versions.items()
                     if fw not in ("tensorflow", "") and per_env[e]})
    if others:
        rows.append({"what": "other frameworks", "measured": ", ".join(others), "missing": []})

    # Model and data sizes: the seed's 3 x 3 grid.
    pairs = Counter(f"{m}-{d}" for m, d in zip(col(ok, "model").map(text),
                                               col(ok, "data").map(text)))
    configured = _configured_pairs(config)
    want = [(m, d) for m in tfmodels.MODELS for d in tfmodels.DATA
            if m in ("small", "medium", "large") and d in ("small", "medium", "large")]
    missing = []
    for m, d in want:
        if f"{m}-{d}" in pairs:
            continue
        why = ("in the grids, but no cell ran ok" if (m, d) in configured else
               "not in this study's grids (out of its budget; presets/seed_full.yaml runs the "
               "seed's full grid)")
        missing.append((f"{m} model, {d} data", why))
    rows.append({"what": "model × data", "measured": _list(pairs), "missing": missing})

    # Devices: a GPU needs a GPU on the machine and a GPU env.
    gpus = [g for f in (machines or {}).values() for g in (f.get("gpus") or [])]
    devices = count("device")
    missing = []
    if "gpu" not in devices:
        keys = [k for k in (machines or {}) if not str(k).endswith(".twin")]
        where = "this machine" if len(keys) < 2 else f"any of the {len(keys)} machines"
        why = (f"no GPU visible on {where} (the seed ran on a {SEED_GPU})" if not gpus
               else "no GPU env in this study (config `envs`)")
        missing.append(("GPU", why))
    rows.append({"what": "devices", "measured": _list(devices), "missing": missing})

    # The factors.
    for axis, values in (("Keras", tfcells.KERAS), ("mode", tfcells.MODES),
                         ("API", tfcells.APIS), ("input", tfcells.INPUTS)):
        seen = count(axis.lower())
        extra = [v for v in seen if v not in values]  # values this code does not know yet
        missing = [(v, "not in this study's grids") for v in values if v not in seen]
        rows.append({"what": axis, "measured": _list(Counter({k: seen[k] for k in
                                                              [*values, *extra] if k in seen})),
                     "missing": missing})
    gpu_text = "no GPU" if "gpu" not in devices else "GPU and CPU"
    sizes = ", ".join(pairs) or "no"
    summary = (f"Measured here: {len([e for e in tf_envs if per_env[e]])} TensorFlow versions, "
               f"{sizes} model-data only, {gpu_text}"
               + (f"; {common_count(ok_counts)}" if ok_counts else "") + ".")
    return {"rows": rows, "summary": summary}


def common_count(ok_counts: list[int]) -> str:
    """'10 of 24 versions hold 2 ok cells': the most common number of ok cells per version (the
    larger on a tie) and how many versions hold it, from the same counts as the row above."""
    tally = Counter(ok_counts)
    cells, k = max(tally.items(), key=lambda kv: (kv[1], kv[0]))
    return f"{k} of {len(ok_counts)} versions hold {cells} ok cell{'s' * (cells != 1)}"
