"""The order of envs and rows everywhere: envs by framework and version number (2.3 before 2.15),
axis values in the order tfspeed.cells and tfspeed.models list them, not the alphabet."""
from collections.abc import Sequence

import pandas as pd

from tfspeed import cells as tfcells
from tfspeed import frameworks
from tfspeed import models as tfmodels
from tfspeed.versions import version_tuple

_FRAMEWORK_ORDER = {f.name: f.order for f in frameworks.CATALOGUE}

_MODEL_ORDER = {m: i for i, m in enumerate(tfmodels.MODELS)}

_DATA_ORDER = {d: i for i, d in enumerate(tfmodels.DATA)}

AXIS_ORDER = {
    "keras": {k: i for i, k in enumerate(tfcells.KERAS)},
    "mode": {k: i for i, k in enumerate(tfcells.MODES)},
    "api": {k: i for i, k in enumerate(tfcells.APIS)},
    "input": {k: i for i, k in enumerate(tfcells.INPUTS)},
    "device": {k: i for i, k in enumerate(tfcells.DEVICES)},
    "model": _MODEL_ORDER,
    "data": _DATA_ORDER,
}


def env_sort_key(framework, framework_version, env) -> tuple:
    """Envs in version order: TensorFlow first, then other frameworks, each by version number
    (so 2.3 comes before 2.15), envs without a framework (failed builds) last."""
    fw = framework if isinstance(framework, str) else None
    version = version_tuple(framework_version) if isinstance(framework_version, str) else ()
    return (fw is None, _FRAMEWORK_ORDER.get(fw, 9), fw or "", version, str(env))


def env_order(cells: pd.DataFrame) -> list[str]:
    facts = cells.drop_duplicates("env").set_index("env")
    return sorted(facts.index, key=lambda e: env_sort_key(facts.at[e, "framework"],
                                                          facts.at[e, "framework_version"], e))

SORT_ORDER = ["machine", "env", "left_env", "right_env", "model", "data", "keras", "left_keras",
               "right_keras", "mode", "left_mode", "right_mode", "api", "left_api", "right_api",
               "input", "left_input", "right_input", "device", "left_device", "right_device"]


def sort_rows(df: pd.DataFrame, envs: Sequence[str], order: Sequence[str] = SORT_ORDER
          ) -> pd.DataFrame:
    """Sort rows by machine, env (version order) and the axes in their natural order (the order
    of tfspeed.cells and tfspeed.models, not the alphabet)."""
    if df.empty:
        return df.reset_index(drop=True)
    env_rank = {e: i for i, e in enumerate(envs)}
    cols = [c for c in order if c in df.columns]

    def key(col: pd.Series) -> pd.Series:
        base = col.name.removeprefix("left_").removeprefix("right_")
        rank = env_rank if base == "env" else AXIS_ORDER.get(base)
        if rank is None:
            return col
        return col.map(lambda v: rank.get(v, len(rank)))

    return df.sort_values(cols, key=key, kind="stable").reset_index(drop=True)
