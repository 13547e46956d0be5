"""The comparison tables as the report shows them: every registered comparison (driver/tables.py,
so a table added there appears here), its rows split by what they change. Rows that change one
factor come first; rows whose sides also use different Keras flavours, and the matmul micro-case
(whose `numpy` mode runs no TensorFlow), get their own tables. The aggregation's CSVs keep every
row; only the report separates them.

The frameworks answer: each framework's fastest cell per model and data against TensorFlow's
fastest, compared at the process level as the study's verdicts are (driver/verdicts.py), with
Benjamini-Hochberg over these comparisons."""
import numpy as np
import pandas as pd

from driver import verdicts
from driver.answer import norm_verdict, row_kind
from driver.fmt import cell, col, fmt_ms, fmt_p, fmt_ratio, ncol, num, records, text
from driver.tables import BY_NAME, COMPARISONS
from driver.views import comparison_view

KIND_TITLE = {"cross": "rows that also change the Keras flavour",
              "micro": "the matmul micro-case"}


def split_views(tabs: dict) -> list[dict]:
    """One entry per registered comparison: its one-factor view and, where there are any, its
    cross-flavour rows; the matmul rows of every table are gathered at the end."""
    out, micro = [], []
    for name in COMPARISONS:
        df = tabs.get(name, pd.DataFrame())
        kinds = pd.Series([row_kind(r, name) for r in records(df)], index=df.index, dtype=object)
        one = comparison_view(name, df[kinds == "one"] if len(df) else df)
        entry = {"name": name, "main": one, "extra": [], "n_all": len(df)}
        if name == "frameworks":
            one["title"] = "Frameworks: every env and mode vs one TF reference cell"
        cross = df[kinds == "cross"] if len(df) else df
        if len(cross):
            view = comparison_view(name, cross)
            view["title"] = f"{one['title']}: {KIND_TITLE['cross']}"
            view["note"] = ("Not one-factor comparisons: the sides differ in the Keras flavour "
                            "too (from TF 2.16, tf.keras is Keras 3 and Keras 2 is the tf_keras "
                            "package). They are not counted in the answer above, except "
                            "tf_keras vs tf.keras, which the answer names.")
            _rename(view, f"{name}-cross")
            entry["extra"].append(view)
        if len(df) and (kinds == "micro").any():
            part = df[kinds == "micro"].assign(_table=BY_NAME[name].title if name in BY_NAME
                                               else name)
            micro.append(part)
        out.append(entry)
    if micro:
        df = pd.concat(micro, ignore_index=True)
        view = comparison_view("micro", df)
        view["title"] = "The matmul micro-case (seed 004), from every table"
        view["sign"] = "+ when the first-named side is faster"
        modes = set(col(df, "mode").map(text)) | set(col(df, "left_mode").map(text)) \
            | set(col(df, "right_mode").map(text))
        view["note"] = ("1000 x 1000 matmul, not training. " + (
            "Rows in mode numpy run NumPy alone, no TensorFlow (NumPy versions differ between "
            "envs): they say nothing about TensorFlow." if "numpy" in modes else ""))
        _rename(view, "micro")
        out.append({"name": "micro", "main": view, "extra": [], "n_all": len(df)})
    return out


def _rename(view: dict, name: str) -> None:
    view["name"] = name
    if view.get("full"):
        view["full"]["id"] = f"t-{name}"


def family(row) -> str:
    fw, keras = text(row.get("framework")), text(row.get("keras"))
    names = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}
    if fw != "tensorflow" and keras == "keras3":
        return f"Keras 3 on {names.get(fw, fw)}"
    return names.get(fw, fw or "?")


def process_logs(samples: dict, key: tuple) -> np.ndarray | None:
    """Log medians of a cell's processes, from its pooled samples and repeat boundaries."""
    s = samples.get(key)
    if not s:
        return None
    x = np.asarray(s["samples"], dtype=float)
    cuts = [int(b + 0.5) for b in s.get("bounds") or []]
    parts = [p for p in np.split(x, cuts) if p.size]
    meds = [float(np.median(p)) for p in parts]
    return np.log(meds) if meds and min(meds) > 0 else None


def _label(r) -> str:
    parts = [text(r.get("env")), text(r.get("keras")), text(r.get("mode")), text(r.get("api")),
             text(r.get("input"))]
    return " · ".join(p for p in parts if p and p != "none")


def best_vs_best(cells: pd.DataFrame, samples: dict, level: float, q: float,
                 min_effect: float) -> dict:
    """Per (machine, model, data, device): each framework's fastest ok cell vs TensorFlow's."""
    ok = cells[col(cells, "status").map(text) == "ok"] if len(cells) else cells
    ok = ok[col(ok, "api").map(text) != "matmul"] if len(ok) else ok
    rows = []
    if len(ok):
        ok = ok.assign(_family=[family(r) for r in records(ok)], _m=ncol(ok, "median_s"))
        for key, group in ok.groupby(["machine", "model", "data", "device"], sort=True):
            best = {fam: part.loc[part["_m"].idxmin()] for fam, part in group.groupby("_family")
                    if part["_m"].notna().any()}
            tf = best.pop("TensorFlow", None)
            if tf is None:
                continue
            for fam, other in sorted(best.items()):
                lk = process_logs(samples, (key[0], text(other["env"]), text(other["cell_id"])))
                rk = process_logs(samples, (key[0], text(tf["env"]), text(tf["cell_id"])))
                res = (verdicts.welch(lk, rk, level) if lk is not None and rk is not None else
                       {"ratio": num(other["_m"]) / num(tf["_m"]), "ratio_ci_low": np.nan,
                        "ratio_ci_high": np.nan, "p": np.nan})
                rows.append({"key": key, "family": fam, "other": other, "tf": tf, **res})
    if rows:
        decided = verdicts.decide(pd.DataFrame(rows)[["ratio_ci_low", "ratio_ci_high", "p"]],
                                  q=q, min_effect=min_effect)
        for r, pa, v in zip(rows, decided["p_adjusted"], decided["verdict"]):
            r["p_adjusted"], r["verdict"] = pa, norm_verdict(v)
    columns = [{"label": c, "num": n} for c, n in (
        ("model · data · device", False), ("framework", False), ("its best cell", False),
        ("ms", True), ("TF's best cell", False), ("TF ms", True), ("ratio [CI]", True),
        ("who wins", False), ("p (BH)", True))]
    out = []
    for r in rows:
        ratio, fam = num(r["ratio"]), r["family"]
        if r["verdict"] == "left_faster":
            win, cls = f"{fam}, {1 / ratio:.2f}x as fast", "pos"
        elif r["verdict"] == "right_faster":
            win, cls = f"TensorFlow, {ratio:.2f}x as fast", "neg"
        elif r["verdict"] == "equivalent":
            win, cls = f"neither (within {min_effect:.0%})", ""
        else:
            win, cls = "undecided", "ns"
        m, d, dev = r["key"][1:]
        out.append([cell(f"{m} · {d} · {dev}"), cell(fam), cell(_label(r["other"])),
                    cell(fmt_ms(r["other"]["_m"]), "num", v=num(r["other"]["_m"])),
                    cell(_label(r["tf"])), cell(fmt_ms(r["tf"]["_m"]), "num", v=num(r["tf"]["_m"])),
                    cell(f"{fmt_ratio(ratio)} [{fmt_ratio(r['ratio_ci_low'])}, "
                         f"{fmt_ratio(r['ratio_ci_high'])}]", "num", v=ratio),
                    cell(win, cls), cell(fmt_p(r.get("p_adjusted")), "num",
                                         v=num(r.get("p_adjusted")))])
    return {"id": "t-best", "columns": columns, "rows": out, "n": len(out)}
