"""Write tests/fixtures/stats/squeezevar_limma.json: limma's squeezeVar (the Python port inmoose,
https://pypi.org/project/inmoose/) on seeded synthetic residual variances, the reference that
tests/unit/stats/test_moderated.py checks driver/stats/moderated.py against.

inmoose is not a dependency of the workflow (it pins its own pandas); run this in any environment
that has it, e.g.
    pip install --target /tmp/inmoose inmoose==0.9.1
    PYTHONPATH=/tmp/inmoose .venv/bin/python tests/support/make_limma_reference.py
"""
import json
from pathlib import Path

import inmoose
import numpy as np
from inmoose.limma import squeezeVar

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "stats" / "squeezevar_limma.json"
# (cells, sd of the log true variances around the common one): 0 and small spreads give
# d0 = inf (no variation beyond chi-square noise), larger ones a finite prior df
CASES = [(50, 0.0), (120, 0.5), (30, 0.8), (200, 0.3), (125, 1.0), (60, 0.6)]


def main():
    rng = np.random.default_rng(1)
    cases = []
    for n, spread in CASES:
        df = rng.choice([1, 2, 3, 4, 7], n).astype(float)
        s2 = rng.chisquare(df) / df * 0.05 ** 2 * np.exp(rng.normal(0, spread, n))
        ref = squeezeVar(s2, df)
        d0 = float(ref["df_prior"])
        cases.append({"s2": s2.tolist(), "df": df.tolist(),
                      "df_prior": None if np.isinf(d0) else d0,
                      "var_prior": float(ref["var_prior"]),
                      "var_post": np.asarray(ref["var_post"], dtype=float).tolist()})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"generator": f"inmoose {inmoose.__version__} limma.squeezeVar",
                               "cases": cases}) + "\n")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
