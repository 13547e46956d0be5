"""Stability: every timed step of every cell as stem plots, drifting and noisy cells flagged."""
import numpy as np
import pandas as pd

from driver.report.figures import MAX_PLOT_POINTS, stability_grid
from driver.report.fmt import cell, config_label, fmt_ms, fmt_num, is_true, num, records, text
from tfspeed.cells import AXES

ID, TITLE, ORDER = "stability", "Stability", 70


def build(data) -> dict:
    return {**stability_view(data.ok, data.samples, data.order),
            "max_points": MAX_PLOT_POINTS}


def stability_view(ok: pd.DataFrame, samples: dict, order: list[str]) -> dict:
    """Small multiples per machine and env, and the table of flagged cells."""
    flags = {}
    for r in records(ok):
        flags[(text(r.get("machine")), text(r.get("env")), text(r.get("cell_id")))] = r
    groups = {}
    for key, s in samples.items():
        groups.setdefault((key[0], key[1]), []).append((key, s))
    env_rank = {e: i for i, e in enumerate(order)}
    figures = []
    flagged = []
    for (machine, env), items in sorted(groups.items(),
                                        key=lambda kv: (kv[0][0], env_rank.get(kv[0][1], 1e9),
                                                        kv[0][1])):
        panels = []
        for key, s in sorted(items, key=lambda kv: kv[0][2]):
            row = flags.get(key, {})
            summ = s["summary"]
            drift = is_true(row.get("drift")) if "drift" in row else is_true(summ.get("drift"))
            noisy = is_true(row.get("noisy")) if "noisy" in row else is_true(summ.get("noisy"))
            ratio = num(row.get("drift_ratio")) if "drift_ratio" in row else num(
                summ.get("drift_ratio"))
            axes = {a: text(row.get(a), text(s["axes"].get(a))) for a in AXES}
            title = (f"{axes['model']}-{axes['data']} · {axes['keras']}\n{axes['mode']} · "
                     f"{axes['api']} · {axes['input']} · "
                     f"{axes['device']}")
            panels.append({"title": title, "samples": s["samples"], "bounds": s["bounds"],
                           "drift": drift, "noisy": noisy, "drift_ratio": ratio})
            med = float(np.median(s["samples"]))
            q75, q25 = np.percentile(s["samples"], [75, 25])
            if drift or noisy:
                flagged.append([
                    cell(env), cell(config_label(axes, AXES)),
                    cell(str(s["samples"].size), "num", v=s["samples"].size),
                    cell(fmt_ms(med), "num", v=med),
                    cell("drift" if drift else "", "neg" if drift else ""),
                    cell(fmt_num(ratio, ".2f"), "num", v=ratio),
                    cell("noisy" if noisy else "", "warn" if noisy else ""),
                    cell(f"{(q75 - q25) / med:.1%}" if med > 0 else "–", "num",
                         v=(q75 - q25) / med if med > 0 else None),
                    cell(fmt_num(num(row.get("between_sd")), ".1%"), "num",
                         v=num(row.get("between_sd"))),
                ])
        n_big = sum(1 for p in panels if np.asarray(p["samples"]).size > MAX_PLOT_POINTS)
        figures.append({"machine": machine, "env": env, "n": len(panels),
                        "n_drift": sum(p["drift"] for p in panels),
                        "n_noisy": sum(p["noisy"] for p in panels), "downsampled": n_big,
                        "svg": stability_grid(panels)})
    columns = [{"label": c, "num": n} for c, n in (
        ("env", False), ("cell", False), ("samples", True), ("median ms", True),
        ("drift", False), ("last / first quarter", True), ("noisy", False),
        ("IQR / median", True), ("between processes", True))]
    return {"figures": figures, "several_machines": len({f["machine"] for f in figures}) > 1,
            "flagged": {"id": "t-flagged", "columns": columns, "rows": flagged}}
