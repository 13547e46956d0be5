"""Synthetic duet records (what scripts/supervise_duet.py writes) for the table, bottom-line and
report tests: each configuration's log ratios drawn around a true value."""
import numpy as np

CELL = {"model": "small", "data": "small", "input": "numpy", "device": "cpu",
        "api": "train_on_batch"}


def duet_records(rows, sd=0.01, n=5, seed=0, machine="m"):
    """rows: (env, version, mode, keras, true log ratio); n duets each, log ratios with spread sd."""
    rng = np.random.default_rng(seed)
    recs = []
    for env, version, mode, keras, truth in rows:
        for i, x in enumerate(rng.normal(truth, sd, n)):
            recs.append({"machine": machine, "env": env, "replicate": i, "status": "ok",
                         "cell": dict(CELL, mode=mode, keras=keras), "reference_env": "tf1.14",
                         "reference_cell": dict(CELL, mode=mode, keras="tf.keras"),
                         "left_framework_version": version, "right_framework_version": "1.14.0",
                         "log_ratio": float(x), "left_median_s": 0.007,
                         "right_median_s": 0.007})
    return recs
