"""The source study's claims, judged on this study's comparison tables (never on cell files),
and the DO / DON'T lists as the report shows them."""

import pandas as pd

from driver.report.answer import like_for_like, row_kind
from driver.report.fmt import col, is_true, ncol, records, text
from driver.tables.registry import COMPARISONS
from tfspeed.cells import APIS, task


def oriented(df: pd.DataFrame, fast_side: str) -> pd.DataFrame:
    """Rows with `speedup` (how many times faster the side claimed to be faster is) and
    `sig` (the table's significance verdict). fast_side: 'left' or 'right'."""
    if df.empty or "ratio" not in df.columns:
        return pd.DataFrame(columns=["speedup", "sig"])
    ratio = ncol(df, "ratio")
    if ratio.isna().all() and {"left_median_s", "right_median_s"} <= set(df.columns):
        ratio = ncol(df, "left_median_s") / ncol(df, "right_median_s")
    out = pd.DataFrame({"speedup": 1.0 / ratio if fast_side == "left" else ratio,
                        "sig": col(df, "significant", False).map(is_true)}, index=df.index)
    return out[out["speedup"].notna()]


def oriented_by_axis(df: pd.DataFrame, axis: str, fast: str, slow: str) -> pd.DataFrame:
    """As `oriented`, for tables whose sides are named by left_<axis>/right_<axis> values."""
    lcol, rcol = f"left_{axis}", f"right_{axis}"
    if df.empty or lcol not in df.columns or rcol not in df.columns:
        return pd.DataFrame(columns=["speedup", "sig"])
    left, right = col(df, lcol).map(text), col(df, rcol).map(text)
    a = oriented(df[(left == fast) & (right == slow)], "left")
    b = oriented(df[(left == slow) & (right == fast)], "right")
    return pd.concat([a, b])


def judge(rows: pd.DataFrame, min_factor=1.0) -> dict:
    """A claim "X is faster than Y (by at least min_factor)" against comparison rows."""
    n = len(rows)
    if n == 0:
        return {"status": "no data", "cls": "nodata", "n": 0,
                "evidence": "no comparison in this study's tables"}
    sig = rows["sig"].astype(bool)
    faster = rows["speedup"] > 1.0
    n_for = int((sig & faster & (rows["speedup"] >= min_factor)).sum())
    n_weak = int((sig & faster & (rows["speedup"] < min_factor)).sum())
    n_against = int((sig & ~faster).sum())
    n_ns = int((~sig).sum())
    top = float(rows["speedup"].max())
    if n_for > n / 2:
        status, cls = "holds", "holds"
    elif n_against > n / 2:
        status, cls = "does not hold", "fails"
    elif min_factor > 1 and n_for + n_weak > n / 2:
        status, cls = f"does not hold: faster, but less than {min_factor:g}x", "fails"
    elif min_factor > 1 and top < min_factor:
        # Not even a point estimate reaches the claimed factor: the claim fails whatever the
        # noise, even where single pairs are not significant.
        status, cls = f"does not hold: at most {top:.2f}x, never {min_factor:g}x", "fails"
    elif n_for + n_weak + n_against == 0:
        status, cls = "not significant", "ns"
    else:
        status, cls = "mixed", "mixed"
    med = float(rows["speedup"].median())
    lo, hi = float(rows["speedup"].min()), float(rows["speedup"].max())
    parts = [f"{n} pair{'s' if n != 1 else ''}: {n_for} significant in favour"]
    if min_factor > 1:
        parts.append(f"{n_weak} significant but under {min_factor:g}x")
    parts += [f"{n_against} significant against", f"{n_ns} not significant"]
    evidence = (", ".join(parts) + f"; claimed-faster side's speed-up: median {med:.2f}x "
                f"(range {lo:.2f}x to {hi:.2f}x)")
    return {"status": status, "cls": cls, "n": n, "evidence": evidence}


def one_factor(name: str, df: pd.DataFrame) -> pd.DataFrame:
    """The rows that change the table's factor alone (tf2_vs_tf1: the like-for-like rows the
    answer counts); cross-flavour and matmul rows never count toward a claim."""
    if df.empty:
        return df
    if name == "tf2_vs_tf1":
        return like_for_like(df)
    keep = [row_kind(r, name) == "one" for r in records(df)]
    return df[pd.Series(keep, index=df.index, dtype=bool)]


def claims(tables: dict, cells: pd.DataFrame | None = None) -> list[dict]:
    """The seed's claims, judged on this study's one-factor comparison rows; failed
    tf.python.keras cells (cells.csv) are named as support for the seed's DON'T."""
    t = {name: one_factor(name, tables.get(name, pd.DataFrame())) for name in COMPARISONS}

    def where(df, **values):
        for key, allowed in values.items():
            if df.empty:
                return df
            if key not in df.columns:
                return df.iloc[0:0]
            allowed = allowed if isinstance(allowed, (list, tuple, set)) else [allowed]
            df = df[col(df, key).map(text).isin(allowed)]
        return df

    # The question's claims are about training: inference rows (same tables) are not evidence.
    train = [a for a in APIS if task(a) != "infer"]
    tfpy = oriented_by_axis(t["keras_vs_tfkeras"], "keras", "tf.keras", "tf.python.keras")
    tfpy_source = "keras_vs_tfkeras"
    specs = [
        ("TF2 is slower than TF1 (every training API and input, the cells' rows; the answer "
         "per mode is the duets')", "the question; TF1 ran 47 % to 276 % faster",
         "tf2_vs_tf1", oriented(where(t["tf2_vs_tf1"], api=train), "right"), 1.0),
        ("TF2 eager is slower than TF1 eager", "answer 2: \"TF2 Eager is slower than TF1 "
         "Eager\"", "tf2_vs_tf1, mode eager",
         oriented(where(t["tf2_vs_tf1"], mode="eager", api=train), "right"), 1.0),
        ("Graph is faster than eager", "answer 2's Eager vs Graph section",
         "graph_vs_eager", oriented(where(t["graph_vs_eager"], api=train), "left"), 1.0),
        ("fit() + numpy is slower than train_on_batch() for small models",
         "DON'T: fit() + numpy ... for small & medium models and data",
         "fit_vs_train_on_batch, numpy input, small and medium models",
         oriented(where(t["fit_vs_train_on_batch"], input="numpy", model=["small", "medium"]),
                  "right"), 1.0),
        ("standalone keras is slower than tf.keras with fit() + numpy",
         "DON'T: fit() + numpy + keras for small & medium models and data",
         "keras_vs_tfkeras, fit, numpy, small and medium models",
         oriented_by_axis(where(t["keras_vs_tfkeras"], api="fit", input="numpy",
                                model=["small", "medium"]), "keras", "tf.keras", "keras"), 1.0),
        ("tf.python.keras is 10-100x slower than tf.keras",
         "[Major] tf.python.keras; it can run 10-100x slower", tfpy_source, tfpy, 10.0),
    ]
    out = []
    cells = cells if cells is not None else pd.DataFrame()
    tfpy_failed = cells[(col(cells, "keras").map(text) == "tf.python.keras")
                        & col(cells, "status").map(text).isin(["failed", "skipped"])] \
        if len(cells) else cells
    for claim, seed, source, rows, factor in specs:
        verdict = judge(rows, factor)
        if rows is tfpy and len(tfpy_failed):
            envs = ", ".join(sorted(set(col(tfpy_failed, "env").map(text))))
            verdict["evidence"] += (f"; {len(tfpy_failed)} tf.python.keras cells failed or were "
                                    f"unusable ({envs}): support for the seed's [Major] DON'T")
            if verdict["cls"] in ("fails", "ns", "nodata"):
                verdict["status"] = "speed claim " + verdict["status"] + "; the DON'T holds"
                verdict["cls"] = "mixed"
        out.append({"claim": claim, "seed": seed, "source": source, **verdict})
    return out


